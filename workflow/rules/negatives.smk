# WordNet lives in resources/nltk_data (make setup puts it there). The rule's output is a
# record under results/, not WordNet's own files: Snakemake deletes a job's outputs before
# it runs, and an installed WordNet must never be deleted to be fetched again.
rule wordnet:
    output:
        "results/wordnet.json",
    log:
        "logs/negatives/wordnet.log",
    conda:
        "../envs/vlcomp.yaml"
    params:
        nltk_data="resources/nltk_data",
    message:
        "WordNet 3.0 for NLTK: checked, installed without root where missing"
    script:
        "../scripts/wordnet.py"


rule systematicity_negatives:
    input:
        eval_items=lambda wc: f"results/eval_sets/{eval_set_of(wc.benchmark)}/items.parquet",
        atoms="results/counts/{corpus}/atoms.parquet",
        ngram="results/scorers/{corpus}/ngram.parquet",
        splits=lambda wc: f"results/splits/{eval_set_of(wc.benchmark)}/{wc.corpus}.parquet",
        wordnet="results/wordnet.json",
    output:
        candidates="results/negatives/{benchmark}/{corpus}/candidates.parquet",
        failures="results/negatives/{benchmark}/{corpus}/failures.parquet",
        failures_csv=report(
            "results/negatives/{benchmark}/{corpus}/failures.csv",
            caption="../report/systematicity_failures.rst",
            category="Benchmarks",
            subcategory="{benchmark}",
            labels={
                "table": "systematicity failures",
                "benchmark": "{benchmark}/{corpus}",
            },
        ),
        regions="results/negatives/{benchmark}/{corpus}/regions.parquet",
    log:
        "logs/negatives/{benchmark}_{corpus}.log",
    wildcard_constraints:
        benchmark=names_re(benchmarks_of("crepe_systematicity")),
    conda:
        "../envs/vlcomp.yaml"
    params:
        settings=systematicity_settings(),
        seed=config["negatives"]["seed"],
        context_length=negatives_context_length(),
    message:
        "CREPE systematicity negatives (HN-ATOM, HN-COMP) for {wildcards.benchmark} "
        "with {wildcards.corpus}'s vocabulary"
    script:
        "../scripts/systematicity_negatives.py"


rule export_crepe:
    input:
        candidates=lambda wc: variant_table(
            wc.benchmark,
            f"results/negatives/{wc.benchmark}/{wc.corpus}/candidates.parquet",
        ),
        regions="results/negatives/{benchmark}/{corpus}/regions.parquet",
        splits=lambda wc: f"results/splits/{eval_set_of(wc.benchmark)}/{wc.corpus}.parquet",
    output:
        summary="results/export/crepe/{benchmark}/{corpus}/summary.json",
    log:
        "logs/negatives/export_crepe_{benchmark}_{corpus}.log",
    wildcard_constraints:
        benchmark=names_re(benchmarks_of("crepe_systematicity")),
    conda:
        "../envs/vlcomp.yaml"
    message:
        "Exporting {wildcards.benchmark} ({wildcards.corpus}) in CREPE's CSV layout"
    script:
        "../scripts/export_crepe.py"


rule productivity_negatives:
    input:
        vg=lambda wc: EVAL_SETS[eval_set_of(wc.benchmark)]["dir"],
    output:
        candidates="results/negatives/{benchmark}/candidates.parquet",
        boxes="results/negatives/{benchmark}/boxes.parquet",
        failures="results/negatives/{benchmark}/failures.parquet",
        summary="results/negatives/{benchmark}/summary.parquet",
        summary_csv=report(
            "results/negatives/{benchmark}/summary.csv",
            caption="../report/productivity_summary.rst",
            category="Benchmarks",
            subcategory="{benchmark}",
            labels={"table": "productivity sizes", "benchmark": "{benchmark}"},
        ),
    log:
        "logs/negatives/{benchmark}.log",
    wildcard_constraints:
        benchmark=names_re(
            [
                b
                for b in benchmarks_of("crepe_productivity")
                if b not in LLM_PRODUCTIVITY
            ]
        ),
    conda:
        "../envs/vlcomp.yaml"
    params:
        settings=productivity_settings(),
        seed=config["negatives"]["seed"],
        context_length=negatives_context_length(),
    message:
        "CREPE productivity for {wildcards.benchmark}: random walks, template captions, "
        "HN-ATOM/SWAP/NEG"
    script:
        "../scripts/productivity.py"


rule export_productivity:
    input:
        candidates=lambda wc: variant_table(
            wc.benchmark, f"results/negatives/{wc.benchmark}/candidates.parquet"
        ),
        boxes="results/negatives/{benchmark}/boxes.parquet",
    output:
        "results/export/crepe/{benchmark}/files.json",
    log:
        "logs/negatives/export_{benchmark}.log",
    wildcard_constraints:
        benchmark=names_re(benchmarks_of("crepe_productivity")),
    conda:
        "../envs/vlcomp.yaml"
    message:
        "Exporting {wildcards.benchmark} in CREPE's productivity CSV layout"
    script:
        "../scripts/export_productivity.py"


rule pairs_negatives:
    input:
        eval_items=lambda wc: f"results/eval_sets/{eval_set_of(wc.benchmark)}/items.parquet",
    output:
        candidates="results/negatives/{benchmark}/candidates.parquet",
        boxes="results/negatives/{benchmark}/boxes.parquet",
        failures="results/negatives/{benchmark}/failures.parquet",
        failures_csv=report(
            "results/negatives/{benchmark}/failures.csv",
            caption="../report/pair_failures.rst",
            category="Benchmarks",
            subcategory="{benchmark}",
            labels={"table": "pair failures", "benchmark": "{benchmark}"},
        ),
    log:
        "logs/negatives/{benchmark}.log",
    wildcard_constraints:
        benchmark=names_re([b for b in benchmarks_of("pairs") if b not in LLM_PAIRS]),
    # On the longest chain after training (eval set -> pairs -> MiniLM -> debiasing):
    # started as soon as it can, it runs beside the other jobs instead of alone at the end.
    priority: 5
    conda:
        "../envs/vlcomp.yaml"
    params:
        seed=config["negatives"]["seed"],
        context_length=negatives_context_length(),
    message:
        "One-change hard negatives (replace/swap attribute, object, relation) for "
        "{wildcards.benchmark}"
    script:
        "../scripts/pairs.py"


rule import_benchmark:
    input:
        lambda wc: eval_set_inputs(eval_set_of(wc.benchmark)),
    output:
        candidates="results/negatives/{benchmark}/candidates.parquet",
        boxes="results/negatives/{benchmark}/boxes.parquet",
        rejected="results/negatives/{benchmark}/rejected.parquet",
    log:
        "logs/negatives/{benchmark}.log",
    wildcard_constraints:
        benchmark=names_re([*imported_of(SET_FORMATS), *TWO_POSITIVE_BENCHMARKS]),
    conda:
        "../envs/vlcomp.yaml"
    params:
        format=lambda wc: EVAL_SETS[eval_set_of(wc.benchmark)]["format"],
        source=lambda wc: import_source(eval_set_of(wc.benchmark)),
    message:
        "Importing the published benchmark {wildcards.benchmark}"
    script:
        "../scripts/import_benchmark.py"


rule import_two_image:
    input:
        lambda wc: eval_set_inputs(eval_set_of(wc.benchmark)),
    output:
        two_image="results/negatives/{benchmark}/two_image.parquet",
        rejected="results/negatives/{benchmark}/rejected.parquet",
    log:
        "logs/negatives/{benchmark}.log",
    wildcard_constraints:
        benchmark=names_re([*TWO_IMAGE_BENCHMARKS, *IMAGE_SELECTION_BENCHMARKS]),
    conda:
        "../envs/vlcomp.yaml"
    params:
        format=lambda wc: EVAL_SETS[eval_set_of(wc.benchmark)]["format"],
        source=lambda wc: import_source(eval_set_of(wc.benchmark)),
    message:
        "Importing the published two-image benchmark {wildcards.benchmark}"
    script:
        "../scripts/import_two_image.py"


rule export_sugarcrepe:
    input:
        candidates=lambda wc: variant_table(
            wc.benchmark, f"results/negatives/{wc.benchmark}/candidates.parquet"
        ),
        boxes="results/negatives/{benchmark}/boxes.parquet",
        image_index=image_index,
    output:
        directory("results/export/sugarcrepe/{benchmark}"),
    log:
        "logs/negatives/export_sugarcrepe_{benchmark}.log",
    wildcard_constraints:
        benchmark=names_re(benchmarks_of("pairs")),
    conda:
        "../envs/vlcomp.yaml"
    params:
        format="sugarcrepe",
        config_section=lambda wc: {
            "benchmark": BENCHMARKS[wc.benchmark],
            "eval_set": EVAL_SETS[eval_set_of(wc.benchmark)],
            "negatives": {"seed": config["negatives"]["seed"]},
            "variant": evaluated_variant(wc.benchmark),
        },
    message:
        "Exporting {wildcards.benchmark} in SugarCrepe's JSON layout (CLIP_benchmark reads it)"
    script:
        "../scripts/export_benchmark.py"
