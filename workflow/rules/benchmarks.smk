# Throughput benchmarks: not part of the default run; `snakemake benchmarks` runs them all
# and writes one report, results/benchmarks/report.md. Each number stands next to a
# baseline measured in the same run. The parser and counting benchmarks read the first
# configured corpus; the scale run reads SCALE_CORPORA (the world's, or the corpora that
# give n_captions). Settings: config `throughput`.


rule benchmarks:
    input:
        "results/benchmarks/report.md",


rule benchmark_report:
    input:
        BENCHMARK_JSONS,
    output:
        "results/benchmarks/report.md",
    log:
        "logs/benchmarks/report.log",
    conda:
        "../envs/vlcomp.yaml"
    message:
        "One report of every throughput benchmark, each against its baseline"
    script:
        "../scripts/benchmark_report.py"


rule benchmark_parser:
    input:
        captions=lambda wc: caption_shards(bench_corpus()),
        factual=lambda wc: factual_csv() or [],
    output:
        "results/benchmarks/parser.json",
    log:
        "logs/benchmarks/parser.log",
    conda:
        "../envs/vlcomp.yaml"
    threads: 2
    params:
        captions=lookup("throughput/parser_captions", within=config),
        model=lookup("parse/model", within=config),
    message:
        "Parser throughput: raw spaCy pipe (ceiling) vs ours (1 and 2 processes) vs SceneGraphParser"
    script:
        "../scripts/benchmark_parser.py"


rule benchmark_counting:
    input:
        lambda wc: f"results/graphs/{bench_corpus()}/graphs-{corpus_shards(bench_corpus())[0]}.parquet",
    output:
        "results/benchmarks/counting.json",
    log:
        "logs/benchmarks/counting.log",
    conda:
        "../envs/vlcomp.yaml"
    params:
        rows=lookup("throughput/counting_rows", within=config),
    message:
        "Counting throughput and peak memory: columnar vs a Python loop"
    script:
        "../scripts/benchmark_counting.py"


rule benchmark_scale:
    input:
        lambda wc: [
            path for entry in SCALE_CORPORA.values() for path in entry["inputs"]
        ],
        predicate_map=predicate_map_input(),
    output:
        "results/benchmarks/scale.json",
    log:
        "logs/benchmarks/scale.log",
    conda:
        "../envs/vlcomp.yaml"
    threads: lookup("throughput/scale_cores", within=config)
    params:
        corpora=SCALE_CORPORA,
        parse=parse_settings(),
        captions_per_shard=lookup("throughput/scale_captions_per_shard", within=config),
        snakefile=workflow.main_snakefile,
    message:
        "Scale run: ingest -> parse -> count of {params.corpora} through the workflow's rules"
    script:
        "../scripts/benchmark_scale.py"


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
        texts=lookup("throughput/scorer_texts", within=config),
        train_captions=lookup("throughput/scorer_train_captions", within=config),
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


rule benchmark_model_families:
    output:
        "results/benchmarks/model_families.json",
    log:
        "logs/benchmarks/model_families.log",
    conda:
        "../envs/vlcomp.yaml"
    message:
        "Items/s of a tiny model of each family (open_clip, transformers dual encoder, matching head, VQAScore) and forward passes per item"
    script:
        "../scripts/benchmark_model_families.py"


rule benchmark_image_index:
    output:
        "results/benchmarks/image_index.json",
    log:
        "logs/benchmarks/image_index.log",
    conda:
        "../envs/vlcomp.yaml"
    threads: 2
    message:
        "Image index: full decode (cold and cached) vs the old header-only check"
    script:
        "../scripts/benchmark_image_index.py"


rule benchmark_attacks:
    output:
        "results/benchmarks/attacks.json",
    log:
        "logs/benchmarks/attacks.log",
    conda:
        "../envs/vlcomp.yaml"
    params:
        sizes=lookup("throughput/attack_pairs", within=config),
    message:
        "Blind-attack panels: pairs/s of both panels and of each attack, against length alone"
    script:
        "../scripts/benchmark_attacks.py"
