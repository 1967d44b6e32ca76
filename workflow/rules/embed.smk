rule embed_world_eval:
    input:
        weights=model_weights,
        images="results/world/eval/images",
        truth="results/world/eval/truth.parquet",
    output:
        images="results/embeddings/{model}/world_eval_images.parquet",
        texts="results/embeddings/{model}/world_eval_texts.parquet",
    log:
        "logs/embed/{model}_world_eval.log",
    benchmark:
        "benchmarks/embed/{model}_world_eval.tsv"
    conda:
        "../../envs/vlcomp.yaml"
    threads: config["evaluate"]["threads"]
    params:
        model=lambda wc: config["models"][wc.model],
        checkpoint=lambda wc: trained_checkpoint(wc.model),
        evaluate=embed_settings(),
        cache="results/cache/embeddings",
    message:
        "Embedding the evaluation images and captions with {wildcards.model}"
    script:
        "../scripts/embed_world_eval.py"
