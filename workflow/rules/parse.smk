rule parse_shard:
    input:
        "results/captions/{corpus}/captions-{shard}.parquet",
        predicate_map=predicate_map_input(),
    output:
        "results/graphs/{corpus}/graphs-{shard}.parquet",
    log:
        "logs/parse/{corpus}/{shard}.log",
    benchmark:
        "benchmarks/parse/{corpus}/{shard}.tsv"
    # Parsing feeds everything but the plain trainings: start it first.
    priority: 20
    conda:
        "../envs/vlcomp.yaml"
    threads: config["parse"]["n_process"]
    resources:
        mem_mb=3000,
    params:
        parse=parse_settings(),
        rules_version=PARSER_RULES_VERSION,
    message:
        "Parsing captions of {wildcards.corpus} shard {wildcards.shard} into scene graphs"
    script:
        "../scripts/parse_shard.py"


rule parser_quality:
    input:
        factual=lambda wc: factual_csv() or [],
        gold=GOLD_GRAPHS,
        predicate_map=predicate_map_input(),
    output:
        table="results/parser/quality.parquet",
        markdown=report(
            "results/parser/quality.md",
            caption="../report/parser_quality.rst",
            category="Parser",
            labels={"table": "parser precision/recall"},
        ),
    log:
        "logs/parse/quality.log",
    conda:
        "../envs/vlcomp.yaml"
    params:
        parse=parse_settings(
            "backend", "model", "batch_size", "predicate_map", "strip_verbs"
        ),
        limit=config["parser_quality"]["limit"],
        with_sng=config["parser_quality"]["with_sng"],
    message:
        "Parser precision/recall (ours vs SceneGraphParser) on gold scene graphs"
    script:
        "../scripts/parser_quality.py"
