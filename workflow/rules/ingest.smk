rule ingest:
    input:
        lambda wc: corpus_source(wc.corpus)[1],
    output:
        captions=shard_files("results/captions/{corpus}/captions-{shard}.parquet"),
        rejected="results/captions/{corpus}/rejected.parquet",
        summary="results/captions/{corpus}/summary.json",
    log:
        "logs/ingest/{corpus}.log",
    benchmark:
        "benchmarks/ingest/{corpus}.tsv"
    conda:
        "../envs/vlcomp.yaml"
    params:
        source=lambda wc: corpus_source(wc.corpus),
        n_shards=N_SHARDS,
    message:
        "Ingesting corpus {wildcards.corpus} into {params.n_shards} caption shards"
    script:
        "../scripts/ingest.py"
