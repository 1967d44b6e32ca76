# One ingest rule per corpus: its shard count (the list of its outputs) is its own.
for corpus in CORPORA:

    rule:
        name:
            f"ingest_{corpus}"
        input:
            corpus_source(corpus)[1],
        output:
            captions=caption_shards(corpus),
            rejected=f"results/captions/{corpus}/rejected.parquet",
            summary=f"results/captions/{corpus}/summary.json",
        log:
            f"logs/ingest/{corpus}.log",
        benchmark:
            f"benchmarks/ingest/{corpus}.tsv"
        # Every training and the parse stage wait for it.
        priority: 20
        conda:
            "../envs/vlcomp.yaml"
        params:
            corpus=corpus,
            source=corpus_source(corpus),
            n_shards=n_shards(corpus),
        message:
            f"Ingesting corpus {corpus} into {n_shards(corpus)} caption shards"
        script:
            "../scripts/ingest.py"
