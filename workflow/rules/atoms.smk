COUNT_TABLES = ["atoms", "compounds", "bindings"]


rule count_shard:
    input:
        "results/graphs/{corpus}/graphs-{shard}.parquet",
    output:
        expand(
            "results/counts/{{corpus}}/partial/{{shard}}/{table}.parquet",
            table=COUNT_TABLES,
        ),
    log:
        "logs/atoms/{corpus}/{shard}.log",
    benchmark:
        "benchmarks/atoms/{corpus}/partial/{shard}.tsv"
    conda:
        "../envs/vlcomp.yaml"
    params:
        # words are compared in the text layer's form: a new form recounts
        text_layer=TEXT_LAYER_VERSION,
    message:
        "Counting atoms, compounds and bindings of {wildcards.corpus} shard {wildcards.shard}"
    script:
        "../scripts/count_shard.py"


rule merge_counts:
    input:
        lambda wc: shard_files(
            "results/counts/{corpus}/partial/{shard}/atoms.parquet", wc.corpus
        ),
    output:
        expand("results/counts/{{corpus}}/{table}.parquet", table=COUNT_TABLES),
    log:
        "logs/atoms/{corpus}/merge.log",
    benchmark:
        "benchmarks/atoms/{corpus}/merge.tsv"
    conda:
        "../envs/vlcomp.yaml"
    message:
        "Merging the per-shard counts of {wildcards.corpus}"
    script:
        "../scripts/merge_counts.py"
