rule world_retrieval:
    input:
        images="results/embeddings/{model}/world_eval_images.parquet",
        texts="results/embeddings/{model}/world_eval_texts.parquet",
        holdout="results/world/eval/holdout.parquet",
    output:
        metrics="results/metrics/{model}/world_retrieval.parquet",
        ranks="results/metrics/{model}/world_retrieval_ranks.parquet",
    log:
        "logs/metrics/{model}_world_retrieval.log",
    conda:
        "../../envs/vlcomp.yaml"
    params:
        training_corpus=lambda wc: training_corpus(config, wc.model),
        recall_at=config["evaluate"]["recall_at"],
    message:
        "Image-text retrieval Recall@K for {wildcards.model}"
    script:
        "../scripts/world_retrieval.py"


rule collect_world_retrieval:
    input:
        expand("results/metrics/{model}/world_retrieval.parquet", model=EVAL_MODELS),
    output:
        parquet="results/metrics/world_retrieval.parquet",
        csv=report(
            "results/metrics/world_retrieval.csv",
            category="Metrics",
            labels={"table": "world retrieval"},
        ),
    log:
        "logs/metrics/collect_world_retrieval.log",
    conda:
        "../../envs/vlcomp.yaml"
    message:
        "Collecting retrieval metrics of all models"
    script:
        "../scripts/collect_metrics.py"


rule world_pairs_accuracy:
    input:
        weights=model_weights,
        candidates="results/negatives/world_pairs/candidates.parquet",
        images="results/world/eval/images",
        holdout="results/world/eval/holdout.parquet",
    output:
        predictions="results/metrics/{model}/world_pairs_predictions.parquet",
        metrics="results/metrics/{model}/world_pairs.parquet",
    log:
        "logs/metrics/{model}_world_pairs.log",
    benchmark:
        "benchmarks/metrics/{model}_world_pairs.tsv"
    conda:
        "../../envs/vlcomp.yaml"
    threads: config["evaluate"]["threads"]
    params:
        model=lambda wc: config["models"][wc.model],
        checkpoint=lambda wc: trained_checkpoint(wc.model),
        evaluate=embed_settings(),
        training_corpus=lambda wc: training_corpus(config, wc.model),
        cache="results/cache/embeddings",
    message:
        "Positive-vs-hard-negative accuracy of {wildcards.model} on the world's pairs"
    script:
        "../scripts/world_pairs_accuracy.py"


rule collect_world_pairs:
    input:
        expand("results/metrics/{model}/world_pairs.parquet", model=EVAL_MODELS),
    output:
        parquet="results/metrics/world_pairs.parquet",
        csv=report(
            "results/metrics/world_pairs.csv",
            category="Metrics",
            labels={"table": "world pairs"},
        ),
    log:
        "logs/metrics/collect_world_pairs.log",
    conda:
        "../../envs/vlcomp.yaml"
    message:
        "Collecting pair accuracies of all models"
    script:
        "../scripts/collect_metrics.py"


rule evaluate_productivity:
    input:
        weights=model_weights,
        candidates="results/negatives/crepe_productivity/candidates.parquet",
        boxes="results/negatives/crepe_productivity/items.parquet",
        images="results/world/eval/images",
    output:
        predictions="results/metrics/{model}/crepe_productivity_predictions.parquet",
        metrics="results/metrics/{model}/crepe_productivity.parquet",
    log:
        "logs/metrics/{model}_crepe_productivity.log",
    benchmark:
        "benchmarks/metrics/{model}_crepe_productivity.tsv"
    conda:
        "../../envs/vlcomp.yaml"
    threads: config["evaluate"]["threads"]
    params:
        model=lambda wc: config["models"][wc.model],
        checkpoint=lambda wc: trained_checkpoint(wc.model),
        settings=set_eval_settings(),
        cache="results/cache/embeddings",
    message:
        "Recall@K of {wildcards.model} on the productivity sets, per complexity"
    script:
        "../scripts/evaluate_sets.py"


rule collect_set_metrics:
    input:
        expand("results/metrics/{model}/{{benchmark}}.parquet", model=EVAL_MODELS),
    output:
        parquet="results/metrics/{benchmark}.parquet",
        csv=report(
            "results/metrics/{benchmark}.csv",
            category="Metrics",
            labels={"table": "{benchmark}"},
        ),
    log:
        "logs/metrics/collect_{benchmark}.log",
    wildcard_constraints:
        benchmark="crepe_productivity|crepe_systematicity|crepe_systematicity_bindsplit",
    conda:
        "../../envs/vlcomp.yaml"
    message:
        "Collecting {wildcards.benchmark} metrics of all models"
    script:
        "../scripts/collect_metrics.py"


rule significance_world_pairs:
    input:
        expand(
            "results/metrics/{model}/world_pairs_predictions.parquet",
            model=EVAL_MODELS,
        ),
    output:
        tests=report(
            "results/stats/world_pairs_mcnemar.parquet",
            category="Statistics",
            labels={"table": "McNemar (mid-p, BH) between models"},
        ),
        flips="results/stats/world_pairs_rank_flips.parquet",
    log:
        "logs/metrics/significance_world_pairs.log",
    conda:
        "../../envs/vlcomp.yaml"
    params:
        alpha=config["evaluate"]["alpha"],
    message:
        "McNemar tests (mid-p, Benjamini-Hochberg) and rank flips between models"
    script:
        "../scripts/significance.py"


rule evaluate_systematicity:
    input:
        weights=model_weights,
        candidates=lambda wc: f"results/negatives/crepe_systematicity/world_vg/{corpus_of_model(wc)}/candidates.parquet",
        boxes=lambda wc: f"results/negatives/crepe_systematicity/world_vg/{corpus_of_model(wc)}/regions.parquet",
        splits=lambda wc: f"results/splits/world_vg/{corpus_of_model(wc)}.parquet",
        images="results/world/eval/images",
    output:
        predictions="results/metrics/{model}/crepe_systematicity_predictions.parquet",
        metrics="results/metrics/{model}/crepe_systematicity.parquet",
    log:
        "logs/metrics/{model}_crepe_systematicity.log",
    benchmark:
        "benchmarks/metrics/{model}_crepe_systematicity.tsv"
    conda:
        "../../envs/vlcomp.yaml"
    threads: config["evaluate"]["threads"]
    params:
        model=lambda wc: config["models"][wc.model],
        checkpoint=lambda wc: trained_checkpoint(wc.model),
        settings=set_eval_settings(),
        split_column="crepe_split",
        cache="results/cache/embeddings",
    message:
        "Recall@K of {wildcards.model} on HN-ATOM/HN-COMP sets per CREPE split (SC/UC/UA)"
    script:
        "../scripts/evaluate_sets.py"


rule evaluate_systematicity_bindsplit:
    input:
        weights=model_weights,
        candidates=lambda wc: f"results/negatives/crepe_systematicity/world_vg/{corpus_of_model(wc)}/candidates.parquet",
        boxes=lambda wc: f"results/negatives/crepe_systematicity/world_vg/{corpus_of_model(wc)}/regions.parquet",
        splits=lambda wc: f"results/splits/world_vg/{corpus_of_model(wc)}.parquet",
        images="results/world/eval/images",
    output:
        predictions="results/metrics/{model}/crepe_systematicity_bindsplit_predictions.parquet",
        metrics="results/metrics/{model}/crepe_systematicity_bindsplit.parquet",
    log:
        "logs/metrics/{model}_crepe_systematicity_bindsplit.log",
    conda:
        "../../envs/vlcomp.yaml"
    threads: config["evaluate"]["threads"]
    params:
        model=lambda wc: config["models"][wc.model],
        checkpoint=lambda wc: trained_checkpoint(wc.model),
        settings=set_eval_settings(),
        split_column="split_loose",
        cache="results/cache/embeddings",
    message:
        "Recall@K of {wildcards.model} per BindSplit split (seen/mixed/unseen, LOOSE)"
    script:
        "../scripts/evaluate_sets.py"


rule metrics_summary:
    input:
        "results/metrics/crepe_systematicity.parquet",
        "results/metrics/crepe_systematicity_bindsplit.parquet",
        "results/metrics/crepe_productivity.parquet",
        "results/metrics/world_pairs.parquet",
    output:
        report(
            "results/metrics/summary.md",
            category="Metrics",
            labels={"table": "summary"},
        ),
    log:
        "logs/metrics/summary.log",
    conda:
        "../../envs/vlcomp.yaml"
    message:
        "Markdown summary of every benchmark's metrics"
    script:
        "../scripts/metrics_summary.py"
