# Throughput benchmarks: not part of the default run; `snakemake benchmarks` runs them all.
# Each prints and writes its numbers next to a baseline measured in the same run. They read
# the first configured corpus.


rule benchmarks:
    input:
        "results/benchmarks/parser.json",
        "results/benchmarks/counting.json",
        "results/benchmarks/scorers.json",
        "results/benchmarks/evaluation.json",


rule benchmark_parser:
    input:
        captions=caption_shards(CORPORA[:1]),
        factual=lambda wc: factual_csv() or [],
    output:
        "results/benchmarks/parser.json",
    log:
        "logs/benchmarks/parser.log",
    conda:
        "../envs/vlcomp.yaml"
    message:
        "Parser throughput: raw spaCy pipe (ceiling) vs ours vs SceneGraphParser"
    script:
        "../scripts/benchmark_parser.py"


rule benchmark_counting:
    input:
        expand(
            "results/graphs/{corpus}/graphs-{shard}.parquet",
            corpus=CORPORA[:1],
            shard=SHARDS[:1],
        ),
    output:
        "results/benchmarks/counting.json",
    log:
        "logs/benchmarks/counting.log",
    conda:
        "../envs/vlcomp.yaml"
    params:
        rows=2_000_000,
    message:
        "Atom/compound/binding counting throughput and peak memory"
    script:
        "../scripts/benchmark_counting.py"


rule benchmark_scorers:
    input:
        train=config["audit"]["training_csv"],
        sugarcrepe=config["audit"]["sugarcrepe_dir"],
    output:
        "results/benchmarks/scorers.json",
    log:
        "logs/benchmarks/scorers.log",
    conda:
        "../envs/vlcomp.yaml"
    params:
        column=config["audit"]["text_column"],
    message:
        "Text-only scorer throughput (n-gram, tiny GPT-2, MiniLM familiarity)"
    script:
        "../scripts/benchmark_scorers.py"


rule benchmark_evaluation:
    output:
        "results/benchmarks/evaluation.json",
    log:
        "logs/benchmarks/evaluation.log",
    conda:
        "../envs/vlcomp.yaml"
    message:
        "Candidate texts embedded per second: batched + cached vs a batch-size-1 loop"
    script:
        "../scripts/benchmark_evaluation.py"
