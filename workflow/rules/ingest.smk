# One ingest rule per corpus: its shard count (the list of its outputs) is its own. A corpus
# read in parts (files_per_job) gets a job per part, then its shards and summaries gathered.
for corpus in CORPORA:
    if len(INGEST_PARTS[corpus]) == 1:

        rule:
            name:
                f"ingest_{corpus}"
            input:
                INGEST_PARTS[corpus][0],
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

        continue

    rule:
        name:
            f"ingest_{corpus}_part"
        input:
            lambda wc, corpus=corpus: INGEST_PARTS[corpus][int(wc.part.split("-")[0])],
        output:
            captions=temp(
                shard_files(
                    f"results/captions/{corpus}/parts/{{{{part}}}}/captions-{{shard}}.parquet",
                    corpus,
                )
            ),
            rejected=f"results/captions/{corpus}/parts/{{part}}/rejected.parquet",
            summary=f"results/captions/{corpus}/parts/{{part}}/summary.json",
        log:
            f"logs/ingest/{corpus}/{{part}}.log",
        benchmark:
            f"benchmarks/ingest/{corpus}/{{part}}.tsv"
        priority: 20
        conda:
            "../envs/vlcomp.yaml"
        params:
            corpus=corpus,
            source=lambda wc, input, corpus=corpus: (
                corpus_source(corpus)[0],
                list(input),
                corpus_source(corpus)[2],
            ),
            n_shards=n_shards(corpus),
        message:
            f"Ingesting part {{wildcards.part}} of corpus {corpus} into {n_shards(corpus)} "
            "caption shards"
        script:
            "../scripts/ingest.py"

    rule:
        name:
            f"gather_{corpus}_captions"
        input:
            lambda wc, corpus=corpus: part_files(
                f"results/captions/{corpus}/parts/{{part}}/captions-{wc.shard}.parquet",
                corpus,
            ),
        output:
            f"results/captions/{corpus}/captions-{{shard}}.parquet",
        log:
            f"logs/ingest/{corpus}/gather/{{shard}}.log",
        benchmark:
            f"benchmarks/ingest/{corpus}/gather/{{shard}}.tsv"
        priority: 20
        conda:
            "../envs/vlcomp.yaml"
        message:
            f"Gathering caption shard {{wildcards.shard}} of corpus {corpus} from its parts"
        script:
            "../scripts/gather_captions.py"

    rule:
        name:
            f"merge_{corpus}_ingest_parts"
        input:
            summaries=part_files(
                f"results/captions/{corpus}/parts/{{part}}/summary.json", corpus
            ),
            rejected=part_files(
                f"results/captions/{corpus}/parts/{{part}}/rejected.parquet", corpus
            ),
        output:
            rejected=f"results/captions/{corpus}/rejected.parquet",
            summary=f"results/captions/{corpus}/summary.json",
        log:
            f"logs/ingest/{corpus}/merge.log",
        conda:
            "../envs/vlcomp.yaml"
        message:
            f"Summing the ingest summaries and rejected rows of corpus {corpus}'s parts"
        script:
            "../scripts/merge_ingest_parts.py"
