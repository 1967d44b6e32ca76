SCORER_FILES = {
    "ngram": "ngram.parquet",
    "minilm": "minilm.parquet",
    "tiny_gpt2": "tiny_gpt2",
}


def scorer_training_text(wildcards):
    """Caption tables a text set's scorers train on: a corpus's shards, or the audit's."""
    if wildcards.textset == "sugarcrepe_audit":
        return "results/audit/training_text.parquet"
    return expand(
        "results/captions/{corpus}/captions-{shard}.parquet",
        corpus=wildcards.textset,
        shard=SHARDS,
    )


def trained_scorers(textset):
    return [
        f"results/scorers/{textset}/{SCORER_FILES[name]}"
        for name in config["scorers"]["use"]
    ]


rule train_scorer:
    input:
        scorer_training_text,
    output:
        "results/scorers/{textset}/{scorer}.parquet",
    log:
        "logs/scorers/{textset}/{scorer}.log",
    benchmark:
        "benchmarks/scorers/{textset}/{scorer}.tsv"
    wildcard_constraints:
        scorer="ngram|minilm",
    conda:
        "../../envs/vlcomp.yaml"
    threads: 1
    params:
        settings=config["scorers"],
    message:
        "Training the {wildcards.scorer} text-only scorer on {wildcards.textset}"
    script:
        "../scripts/train_scorer.py"


rule train_tiny_gpt2:
    input:
        scorer_training_text,
    output:
        directory("results/scorers/{textset}/tiny_gpt2"),
    log:
        "logs/scorers/{textset}/tiny_gpt2.log",
    benchmark:
        "benchmarks/scorers/{textset}/tiny_gpt2.tsv"
    conda:
        "../../envs/vlcomp.yaml"
    threads: 1
    params:
        settings=config["scorers"],
    message:
        "Training a tiny GPT-2 on the captions of {wildcards.textset}"
    script:
        "../scripts/train_scorer.py"


rule audit_training_text:
    input:
        config["audit"]["training_csv"],
    output:
        "results/audit/training_text.parquet",
    log:
        "logs/audit/training_text.log",
    conda:
        "../../envs/vlcomp.yaml"
    params:
        column=config["audit"]["text_column"],
    message:
        "Reading the audit's training captions"
    script:
        "../scripts/audit_training_text.py"
