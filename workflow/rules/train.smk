rule train_model:
    input:
        unpack(training_inputs),
        captions=lambda wc: caption_shards(
            config["models"][wc.model]["train"]["corpus"]
        ),
        images=lambda wc: config["corpora"][
            config["models"][wc.model]["train"]["corpus"]
        ]["images"],
    output:
        checkpoint="results/models/{model}/checkpoint.pt",
        history="results/models/{model}/history.parquet",
        info="results/models/{model}/info.json",
        rejected="results/models/{model}/rejected.parquet",
    log:
        "logs/train/{model}.log",
    benchmark:
        "benchmarks/train/{model}.tsv"
    # Training needs only ingested captions and is the longest job: start it first.
    priority: 10
    conda:
        "../envs/vlcomp.yaml"
    threads: lambda wc: config["models"][wc.model]["train"]["threads"]
    params:
        model=lambda wc: model_training(wc.model),
        images=lambda wc: config["corpora"][
            config["models"][wc.model]["train"]["corpus"]
        ]["images"],
    message:
        "Training {wildcards.model} with open_clip's contrastive loss"
    script:
        "../scripts/train_model.py"


rule model_available:
    output:
        "results/models/{model}/available.json",
    log:
        "logs/models/{model}_available.log",
    conda:
        "../envs/vlcomp.yaml"
    params:
        model=lambda wc: model_source(wc.model),
    message:
        "Checking that the weights of {wildcards.model} are in the local cache"
    script:
        "../scripts/model_available.py"


rule training_negatives:
    input:
        captions=lambda wc: caption_shards(wc.corpus),
        graphs=lambda wc: graph_shards(wc.corpus),
    output:
        "results/negatives/training/{corpus}.parquet",
    log:
        "logs/negatives/training_{corpus}.log",
    # NegCLIP's fine-tuning waits for it: ready before its start model is.
    priority: 10
    conda:
        "../envs/vlcomp.yaml"
    params:
        seed=config["negatives"]["seed"],
    message:
        "One-change hard negatives of {wildcards.corpus}'s training captions (NegCLIP)"
    script:
        "../scripts/training_negatives.py"
