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
        "../envs/vlcomp.yaml"
    threads: 1
    params:
        settings=lambda wc: scorer_training_settings(wc.scorer),
        text_layer=TEXT_LAYER_VERSION,
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
        "../envs/vlcomp.yaml"
    threads: 1
    params:
        settings=scorer_training_settings("tiny_gpt2"),
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
        "../envs/vlcomp.yaml"
    params:
        column=config["audit"]["text_column"],
    message:
        "Reading the audit's training captions"
    script:
        "../scripts/audit_training_text.py"
