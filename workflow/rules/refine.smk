rule minilm_queries:
    input:
        "results/negatives/{benchmark}/candidates.parquet",
    output:
        "results/queries/{benchmark}/minilm.parquet",
    log:
        "logs/refine/minilm_queries_{benchmark}.log",
    wildcard_constraints:
        benchmark=names_re(TEXT_BENCHMARKS),
    # On the longest chain after training (eval set -> pairs -> MiniLM -> debiasing):
    # started as soon as it can, it runs beside the other jobs instead of alone at the end.
    priority: 5
    conda:
        "../envs/vlcomp.yaml"
    message:
        "Embedding the texts of {wildcards.benchmark} with MiniLM once, for every corpus"
    script:
        "../scripts/minilm_queries.py"


rule score_benchmark:
    input:
        candidates="results/negatives/{benchmark}/candidates.parquet",
        scorers=lambda wc: trained_scorers(wc.corpus),
        queries=lambda wc: minilm_queries(wc.benchmark),
    output:
        "results/scores/{benchmark}/{corpus}.parquet",
    log:
        "logs/refine/score_{benchmark}_{corpus}.log",
    wildcard_constraints:
        benchmark=names_re(TEXT_BENCHMARKS),
    conda:
        "../envs/vlcomp.yaml"
    params:
        specs=lambda wc, input: scorer_specs(
            f"results/scorers/{wc.corpus}",
            config["scorers"]["use"],
            scorer_query_settings(),
            input.queries[0] if input.queries else None,
        ),
        cache="results/cache/scores.parquet",
    message:
        "Scoring {wildcards.benchmark} with text-only scorers trained on {wildcards.corpus}"
    script:
        "../scripts/score_benchmark.py"


rule blind_baselines:
    input:
        candidates="results/negatives/{benchmark}/candidates.parquet",
        scores="results/scores/{benchmark}/{corpus}.parquet",
    output:
        "results/blind/{benchmark}/{corpus}.parquet",
    log:
        "logs/refine/blind_{benchmark}_{corpus}.log",
    conda:
        "../envs/vlcomp.yaml"
    message:
        "Blind (text-only) baselines on {wildcards.benchmark} ({wildcards.corpus} scorers)"
    script:
        "../scripts/blind_baselines.py"


rule debias_candidates:
    input:
        unpack(debias_inputs),
    output:
        candidates="results/negatives/{table}/debiased/candidates.parquet",
        types="results/negatives/{table}/debiased/types.parquet",
        dropped="results/negatives/{table}/debiased/dropped.parquet",
    log:
        "logs/negatives/{table}_debiased.log",
    wildcard_constraints:
        table=names_re(DEBIASED_TABLES),
    conda:
        "../envs/vlcomp.yaml"
    params:
        scores=lambda wc: attack_scores(folder_benchmark(wc.table)),
        generators=lambda wc: attack_generators(folder_benchmark(wc.table)),
        part=lambda wc: debias_part(wc.table),
        settings=debias_settings(),
    message:
        "Debiasing {wildcards.table}: dropping what the blind attacks predict"
    script:
        "../scripts/debias_candidates.py"


rule blind_attacks:
    input:
        unpack(attack_inputs),
    output:
        table="results/blind/{benchmark}/attacks.parquet",
        predictions="results/blind/{benchmark}/attack_predictions.parquet",
        png=report(
            "results/figures/{benchmark}_attacks.png",
            caption="../report/blind_attacks.rst",
            category="Figures",
            subcategory="{benchmark}",
            labels={"figure": "blind attacks", "benchmark": "{benchmark}"},
        ),
        pdf="results/figures/{benchmark}_attacks.pdf",
    log:
        "logs/refine/attacks_{benchmark}.log",
    wildcard_constraints:
        benchmark=names_re(ATTACK_BENCHMARKS),
    conda:
        "../envs/vlcomp.yaml"
    params:
        parts=lambda wc: attack_parts(wc.benchmark),
        debiased=lambda wc: debiased_parts(wc.benchmark),
        shape=lambda wc: attack_shape(wc.benchmark),
        scores=lambda wc: attack_scores(wc.benchmark),
        generators=lambda wc: attack_generators(wc.benchmark),
        settings=attack_settings(),
    message:
        "Blind attacks on {wildcards.benchmark}: what its texts give away without the image"
    script:
        "../scripts/blind_attacks.py"


rule refine_benchmark:
    input:
        candidates="results/negatives/{benchmark}/candidates.parquet",
        scores="results/scores/{benchmark}/{corpus}.parquet",
    output:
        refine_items="results/refine/{benchmark}/{corpus}/items.parquet",
        refined="results/refine/{benchmark}/{corpus}/refined_candidates.parquet",
        counts="results/refine/{benchmark}/{corpus}/counts.parquet",
        accuracy="results/refine/{benchmark}/{corpus}/blind_accuracy.parquet",
        png=report(
            "results/figures/refine_{benchmark}_{corpus}.png",
            caption="../report/refinement_figure.rst",
            category="Figures",
            subcategory="{benchmark}",
            labels={"figure": "refinement gaps", "benchmark": "{benchmark}/{corpus}"},
        ),
        pdf="results/figures/refine_{benchmark}_{corpus}.pdf",
    log:
        "logs/refine/refine_{benchmark}_{corpus}.log",
    conda:
        "../envs/vlcomp.yaml"
    params:
        refine=refine_settings(),
        scorers=config["scorers"]["use"][:2],
    message:
        "Adversarial refinement of {wildcards.benchmark} ({wildcards.corpus} scorers)"
    script:
        "../scripts/refine.py"


rule priors:
    input:
        candidates="results/negatives/{benchmark}/candidates.parquet",
        scores=lambda wc: f"results/scores/{wc.benchmark}/{model_corpus(wc.model)}.parquet",
        predictions="results/metrics/{model}/{benchmark}_predictions.parquet",
    output:
        table="results/priors/{model}/{benchmark}.parquet",
        heatmap="results/priors/{model}/{benchmark}_heatmap.parquet",
        png=report(
            "results/figures/priors_{model}_{benchmark}.png",
            caption="../report/priors_figure.rst",
            category="Figures",
            subcategory="{benchmark}",
            labels={
                "figure": "linguistic priors",
                "model": "{model}",
                "benchmark": "{benchmark}",
            },
        ),
        pdf="results/figures/priors_{model}_{benchmark}.pdf",
    log:
        "logs/refine/priors_{model}_{benchmark}.log",
    conda:
        "../envs/vlcomp.yaml"
    params:
        priors=prior_settings(),
    message:
        "Hard test accuracy and linguistic gap of {wildcards.model} on {wildcards.benchmark}"
    script:
        "../scripts/priors.py"


rule audit_benchmark:
    input:
        candidates="results/negatives/{benchmark}/candidates.parquet",
        scores="results/scores/{benchmark}/{corpus}.parquet",
        refined="results/refine/{benchmark}/{corpus}/refined_candidates.parquet",
        counts=expand("results/counts/{{corpus}}/{table}.parquet", table=COUNT_TABLES),
        metrics=lambda wc: (
            f"results/metrics/{wc.benchmark}.parquet" if EVAL_MODELS else []
        ),
        predicate_map=predicate_map_input(),
        certificate="results/blind/{benchmark}/attacks.parquet",
    output:
        report=report(
            "results/audit/{benchmark}/{corpus}/audit.md",
            caption="../report/audit.rst",
            category="Audit",
            subcategory="{benchmark}",
            labels={"benchmark": "{benchmark}", "reference corpus": "{corpus}"},
        ),
    log:
        "logs/audit/{benchmark}_{corpus}.log",
    wildcard_constraints:
        benchmark=names_re(TEXT_BENCHMARKS),
    conda:
        "../envs/vlcomp.yaml"
    params:
        reference=lambda wc: wc.corpus,
        parse=parse_settings(),
        min_count=config["splits"]["min_count"],
    message:
        "Auditing {wildcards.benchmark} for shortcuts against {wildcards.corpus}'s captions"
    script:
        "../scripts/audit_benchmark.py"


rule sugarcrepe_audit:
    input:
        sugarcrepe=config["audit"]["sugarcrepe_dir"],
        scorers=trained_scorers("sugarcrepe_audit"),
    output:
        report(
            "results/audit/sugarcrepe/audit.md",
            caption="../report/sugarcrepe_audit.rst",
            category="Audit",
            subcategory="published SugarCrepe",
            labels={"table": "SugarCrepe blind audit"},
        ),
    log:
        "logs/audit/sugarcrepe.log",
    benchmark:
        "benchmarks/audit/sugarcrepe.tsv"
    conda:
        "../envs/vlcomp.yaml"
    params:
        specs=scorer_specs(
            "results/scorers/sugarcrepe_audit",
            config["scorers"]["use"],
            scorer_query_settings(),
        ),
        refine=refine_settings(),
        cache="results/cache/scores.parquet",
    message:
        "Blind baselines, refinement and word-multiset check on the published SugarCrepe"
    script:
        "../scripts/sugarcrepe_audit.py"
