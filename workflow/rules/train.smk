rule train_model:
    input:
        corpus=lambda wc: f"results/world/corpora/{config['models'][wc.model]['train']['corpus']}",
    output:
        checkpoint="results/models/{model}/checkpoint.pt",
        history="results/models/{model}/history.parquet",
        info="results/models/{model}/info.json",
    log:
        "logs/train/{model}.log",
    benchmark:
        "benchmarks/train/{model}.tsv"
    conda:
        "../../envs/vlcomp.yaml"
    threads: lambda wc: config["models"][wc.model]["train"]["threads"]
    params:
        model=lambda wc: config["models"][wc.model],
        corpus_format=lambda wc: config["world"]["corpora"][
            config["models"][wc.model]["train"]["corpus"]
        ]["format"],
    message:
        "Training {wildcards.model} with open_clip's contrastive loss"
    script:
        "../scripts/train_model.py"
