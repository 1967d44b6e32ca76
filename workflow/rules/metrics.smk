rule evaluate_benchmark:
    input:
        weights=model_weights,
        sets=evaluation_inputs("split"),
        images=image_index,
    output:
        predictions="results/metrics/{model}/{benchmark}_predictions.parquet",
        metrics="results/metrics/{model}/{benchmark}.parquet",
        excluded="results/metrics/{model}/{benchmark}_excluded.parquet",
    log:
        "logs/metrics/{model}_{benchmark}.log",
    benchmark:
        "benchmarks/metrics/{model}_{benchmark}.tsv"
    wildcard_constraints:
        benchmark=names_re(SET_BENCHMARKS),
    conda:
        "../envs/vlcomp.yaml"
    threads: embed_threads()
    resources:
        gpu=gpu_request(),
    params:
        model=lambda wc: model_source(wc.model),
        checkpoint=lambda wc: trained_checkpoint(wc.model),
        settings=set_eval_settings(),
        parts=lambda wc: evaluation_parts(
            wc.benchmark,
            wc.model,
            (
                "crepe_split"
                if BENCHMARKS[wc.benchmark]["kind"] == "crepe_systematicity"
                else "split_loose"
            ),
        ),
        cache="results/cache/embeddings",
    message:
        "Scoring {wildcards.model} on {wildcards.benchmark}"
    script:
        "../scripts/evaluate_benchmark.py"


rule evaluate_bindsplit:
    input:
        weights=model_weights,
        sets=evaluation_inputs("split_loose"),
        images=image_index,
    output:
        predictions="results/metrics/{model}/{benchmark}_bindsplit_predictions.parquet",
        metrics="results/metrics/{model}/{benchmark}_bindsplit.parquet",
        excluded="results/metrics/{model}/{benchmark}_bindsplit_excluded.parquet",
    log:
        "logs/metrics/{model}_{benchmark}_bindsplit.log",
    wildcard_constraints:
        benchmark=names_re(benchmarks_of("crepe_systematicity")),
    conda:
        "../envs/vlcomp.yaml"
    threads: embed_threads()
    resources:
        gpu=gpu_request(),
    params:
        model=lambda wc: model_source(wc.model),
        checkpoint=lambda wc: trained_checkpoint(wc.model),
        settings=set_eval_settings(),
        parts=lambda wc: evaluation_parts(wc.benchmark, wc.model, "split_loose"),
        cache="results/cache/embeddings",
    message:
        "Scoring {wildcards.model} on {wildcards.benchmark} per BindSplit split (LOOSE)"
    script:
        "../scripts/evaluate_benchmark.py"


rule evaluate_retrieval:
    input:
        weights=model_weights,
        eval_items=lambda wc: f"results/eval_sets/{eval_set_of(wc.benchmark)}/items.parquet",
        images=image_index,
    output:
        ranks="results/metrics/{model}/{benchmark}_ranks.parquet",
        metrics="results/metrics/{model}/{benchmark}.parquet",
        excluded="results/metrics/{model}/{benchmark}_excluded.parquet",
    log:
        "logs/metrics/{model}_{benchmark}.log",
    benchmark:
        "benchmarks/metrics/{model}_{benchmark}.tsv"
    wildcard_constraints:
        benchmark=names_re(benchmarks_of("retrieval")),
    conda:
        "../envs/vlcomp.yaml"
    threads: embed_threads()
    resources:
        gpu=gpu_request(),
    params:
        model=lambda wc: model_source(wc.model),
        checkpoint=lambda wc: trained_checkpoint(wc.model),
        settings={**embed_settings(), "recall_at": config["evaluate"]["recall_at"]},
        cache="results/cache/embeddings",
    message:
        "Image-text retrieval Recall@K of {wildcards.model} on {wildcards.benchmark}"
    script:
        "../scripts/retrieval.py"


rule evaluate_two_positives:
    input:
        weights=model_weights,
        candidates="results/negatives/{benchmark}/candidates.parquet",
        boxes="results/negatives/{benchmark}/boxes.parquet",
        images=image_index,
    output:
        predictions="results/metrics/{model}/{benchmark}_predictions.parquet",
        metrics="results/metrics/{model}/{benchmark}.parquet",
        excluded="results/metrics/{model}/{benchmark}_excluded.parquet",
    log:
        "logs/metrics/{model}_{benchmark}.log",
    wildcard_constraints:
        benchmark=names_re(TWO_POSITIVE_BENCHMARKS),
    conda:
        "../envs/vlcomp.yaml"
    threads: embed_threads()
    resources:
        gpu=gpu_request(),
    params:
        model=lambda wc: model_source(wc.model),
        checkpoint=lambda wc: trained_checkpoint(wc.model),
        settings=set_eval_settings(),
        cache="results/cache/embeddings",
    message:
        "SugarCrepe++ ITT and TOT accuracy of {wildcards.model} on {wildcards.benchmark}"
    script:
        "../scripts/evaluate_two_positives.py"


rule evaluate_two_image:
    input:
        weights=model_weights,
        two_image="results/negatives/{benchmark}/two_image.parquet",
        images=image_index,
    output:
        predictions="results/metrics/{model}/{benchmark}_predictions.parquet",
        metrics="results/metrics/{model}/{benchmark}.parquet",
        excluded="results/metrics/{model}/{benchmark}_excluded.parquet",
    log:
        "logs/metrics/{model}_{benchmark}.log",
    wildcard_constraints:
        benchmark=names_re([*TWO_IMAGE_BENCHMARKS, *IMAGE_SELECTION_BENCHMARKS]),
    conda:
        "../envs/vlcomp.yaml"
    threads: embed_threads()
    resources:
        gpu=gpu_request(),
    params:
        model=lambda wc: model_source(wc.model),
        checkpoint=lambda wc: trained_checkpoint(wc.model),
        settings=set_eval_settings(),
        cache="results/cache/embeddings",
        shape=lambda wc: (
            "image_selection"
            if wc.benchmark in IMAGE_SELECTION_BENCHMARKS
            else "two_images"
        ),
    message:
        "Scoring {wildcards.model} on the image pairs of {wildcards.benchmark}"
    script:
        "../scripts/evaluate_two_image.py"


rule collect_metrics:
    input:
        expand("results/metrics/{model}/{{table}}.parquet", model=EVAL_MODELS),
    output:
        parquet="results/metrics/{table}.parquet",
        csv=report(
            "results/metrics/{table}.csv",
            caption="../report/metrics_table.rst",
            category="Metrics",
            subcategory=lambda wc: table_benchmark(wc.table),
            labels={"table": "{table}"},
        ),
    log:
        "logs/metrics/collect_{table}.log",
    wildcard_constraints:
        table=names_re(
            [
                *BENCHMARKS,
                *(f"{b}_bindsplit" for b in benchmarks_of("crepe_systematicity")),
            ]
        ),
    conda:
        "../envs/vlcomp.yaml"
    params:
        kind=lambda wc: BENCHMARKS[table_benchmark(wc.table)]["kind"],
    message:
        "Collecting the {wildcards.table} metrics of all models"
    script:
        "../scripts/collect_metrics.py"


rule significance:
    input:
        expand(
            "results/metrics/{model}/{{benchmark}}_predictions.parquet",
            model=EVAL_MODELS,
        ),
    output:
        tests="results/stats/{benchmark}_mcnemar.parquet",
        tests_csv=report(
            "results/stats/{benchmark}_mcnemar.csv",
            caption="../report/mcnemar.rst",
            category="Comparisons",
            subcategory="{benchmark}",
            labels={
                "table": "McNemar (mid-p, BH) between models",
                "benchmark": "{benchmark}",
            },
        ),
        flips="results/stats/{benchmark}_rank_flips.parquet",
    log:
        "logs/metrics/significance_{benchmark}.log",
    wildcard_constraints:
        benchmark=names_re(SET_BENCHMARKS),
    conda:
        "../envs/vlcomp.yaml"
    params:
        alpha=config["evaluate"]["alpha"],
    message:
        "McNemar tests (mid-p, Benjamini-Hochberg) and rank flips between models on "
        "{wildcards.benchmark}"
    script:
        "../scripts/significance.py"


rule crossover:
    input:
        lambda wc: sorted({f for files in crossover_tables().values() for f in files}),
    output:
        "results/stats/crossover.parquet",
    log:
        "logs/metrics/crossover.log",
    conda:
        "../envs/vlcomp.yaml"
    params:
        tables=crossover_tables(),
        model_corpus={model: model_corpus(model) for model in EVAL_MODELS},
        settings={
            k: config["evaluate"][k] for k in ("bootstrap_resamples", "bootstrap_seed")
        },
        alpha=config["evaluate"]["alpha"],
    message:
        "Crossover: each corpus's splits, its own model against models trained elsewhere"
    script:
        "../scripts/crossover.py"


rule split_composition:
    input:
        predictions=expand(
            "results/metrics/{model}/{{table}}_predictions.parquet", model=EVAL_MODELS
        ),
        eval_items=lambda wc: f"results/eval_sets/{eval_set_of(table_benchmark(wc.table))}/items.parquet",
        boxes=lambda wc: list(composition_boxes(wc.table).values()),
        pairs=lambda wc: IMAGE_PAIRS.get(eval_set_of(table_benchmark(wc.table)), []),
    output:
        composition="results/stats/{table}_composition.parquet",
        matched="results/stats/{table}_matched.parquet",
        novelty="results/stats/{table}_twin_novelty.parquet",
        markdown=report(
            "results/stats/{table}_composition.md",
            caption="../report/split_composition.rst",
            category="Comparisons",
            subcategory=lambda wc: table_benchmark(wc.table),
            labels={
                "table": "split composition and matched contrasts",
                "benchmark": "{table}",
            },
        ),
    log:
        "logs/metrics/composition_{table}.log",
    wildcard_constraints:
        table=names_re(COMPOSITION_TABLES),
    conda:
        "../envs/vlcomp.yaml"
    params:
        boxes=lambda wc: composition_boxes(wc.table),
        model_corpus={model: model_corpus(model) for model in EVAL_MODELS},
        settings={
            k: config["evaluate"][k] for k in ("bootstrap_resamples", "bootstrap_seed")
        },
    message:
        "What the splits of {wildcards.table} are made of, and its split contrasts on "
        "matched items"
    script:
        "../scripts/split_composition.py"


rule metrics_summary:
    input:
        unpack(
            lambda wc: (
                {"crossover": "results/stats/crossover.parquet"}
                if crossover_tables()
                else {}
            )
        ),
        tables=expand(
            "results/metrics/{table}.parquet",
            table=[
                *BENCHMARKS,
                *(f"{b}_bindsplit" for b in benchmarks_of("crepe_systematicity")),
            ],
        ),
        excluded=[f for b in summary_benchmarks().values() for f in b["excluded"]],
        rejected=sorted(
            {f for b in summary_benchmarks().values() for f in b["rejected"]}
        ),
        eval_sets=sorted(
            {f for b in summary_benchmarks().values() for f in b["eval_sets"]}
        ),
        bindsplit_excluded=expand(
            "results/metrics/{model}/{benchmark}_bindsplit_excluded.parquet",
            model=EVAL_MODELS,
            benchmark=benchmarks_of("crepe_systematicity"),
        ),
        oracles=[path for tables in ORACLE_TABLES.values() for path in tables.values()],
        attacks=expand(
            "results/blind/{benchmark}/attacks.parquet", benchmark=ATTACK_BENCHMARKS
        ),
        # candidate-set benchmarks: each model beside the best attack on the same pairs
        predictions=expand(
            "results/metrics/{model}/{benchmark}_predictions.parquet",
            model=EVAL_MODELS,
            benchmark=SET_BENCHMARKS,
        ),
        decisions=expand(
            "results/blind/{benchmark}/attack_predictions.parquet",
            benchmark=SET_BENCHMARKS,
        ),
    output:
        report(
            "results/metrics/summary.md",
            caption="../report/metrics_summary.rst",
            category="Metrics",
            subcategory="across benchmarks",
            labels={"table": "summary"},
        ),
    log:
        "logs/metrics/summary.log",
    conda:
        "../envs/vlcomp.yaml"
    params:
        oracles=ORACLE_TABLES,
        # the intervals of the models' margins over the best attack: the certificate's
        attack_bootstrap=config_keys(("attacks",), ("seed", "bootstrap_resamples")),
        # provenance: the eval set, the models' training corpora, the BindSplit tables
        benchmarks={
            name: {
                **entry,
                "eval_set": BENCHMARKS[name].get("eval_set"),
                "models": {m: model_corpus(m) for m in EVAL_MODELS},
                "bindsplit_excluded": (
                    expand(
                        "results/metrics/{model}/{name}_bindsplit_excluded.parquet",
                        model=EVAL_MODELS,
                        name=name,
                    )
                    if entry["kind"] == "crepe_systematicity"
                    else []
                ),
            }
            for name, entry in summary_benchmarks().items()
        },
    message:
        "Markdown summary of every benchmark's metrics"
    script:
        "../scripts/metrics_summary.py"
