rule eval_items:
    input:
        lambda wc: eval_set_inputs(wc.evalset),
        predicate_map=predicate_map_input(),
    output:
        eval_items="results/eval_sets/{evalset}/items.parquet",
        rejected="results/eval_sets/{evalset}/items_rejected.parquet",
        summary="results/eval_sets/{evalset}/items_summary.json",
    log:
        "logs/eval_sets/{evalset}_items.log",
    wildcard_constraints:
        evalset=names_re(
            n
            for n, e in EVAL_SETS.items()
            if e["format"] in ("visual_genome", "coco_captions")
        ),
    # On the longest chain after training (eval set -> pairs -> MiniLM -> debiasing):
    # started as soon as it can, it runs beside the other jobs instead of alone at the end.
    priority: 5
    conda:
        "../envs/vlcomp.yaml"
    params:
        format=lambda wc: EVAL_SETS[wc.evalset]["format"],
        source=lambda wc: eval_set_source(wc.evalset),
        parse=lambda wc: eval_items_parse(wc.evalset),
        text_layer=TEXT_LAYER_VERSION,
    message:
        "Evaluation items of {wildcards.evalset} (regions with CREPE's filters, or captions)"
    script:
        "../scripts/eval_items.py"


rule image_index:
    input:
        references=lambda wc: image_references(wc.evalset),
        annotations=lambda wc: eval_set_inputs(wc.evalset),
    output:
        "results/eval_sets/{evalset}/images.parquet",
    log:
        "logs/eval_sets/{evalset}_images.log",
    conda:
        "../envs/vlcomp.yaml"
    threads: 2
    params:
        format=lambda wc: EVAL_SETS[wc.evalset]["format"],
        source=lambda wc: eval_set_source(wc.evalset),
        # decode results by (path, size, mtime): a rerun decodes only changed files
        cache="results/cache/image_checks/{evalset}.parquet",
    message:
        "Finding and decoding the image files of {wildcards.evalset}"
    script:
        "../scripts/image_index.py"


rule assign_splits:
    input:
        eval_items="results/eval_sets/{evalset}/items.parquet",
        counts=expand("results/counts/{{corpus}}/{table}.parquet", table=COUNT_TABLES),
    output:
        splits="results/splits/{evalset}/{corpus}.parquet",
        summary="results/splits/{evalset}/{corpus}_summary.parquet",
    log:
        "logs/splits/{evalset}_{corpus}.log",
    conda:
        "../envs/vlcomp.yaml"
    params:
        min_count=config["splits"]["min_count"],
    message:
        "CREPE and BindSplit splits of {wildcards.evalset} against {wildcards.corpus}"
    script:
        "../scripts/assign_splits.py"
