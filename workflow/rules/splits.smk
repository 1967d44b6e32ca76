rule world_eval_items:
    input:
        "results/world/eval/vg",
    output:
        eval_items="results/eval_items/world_vg.parquet",
        rejected="results/eval_items/world_vg_rejected.parquet",
    log:
        "logs/splits/world_eval_items.log",
    conda:
        "../../envs/vlcomp.yaml"
    params:
        filters=config["eval_items"]["vg_regions"],
    message:
        "Evaluation items from the world's Visual Genome regions (CREPE's filters)"
    script:
        "../scripts/eval_items.py"


rule assign_splits:
    input:
        eval_items="results/eval_items/{evalset}.parquet",
        counts=expand("results/counts/{{corpus}}/{table}.parquet", table=COUNT_TABLES),
    output:
        splits="results/splits/{evalset}/{corpus}.parquet",
        summary="results/splits/{evalset}/{corpus}_summary.parquet",
    log:
        "logs/splits/{evalset}_{corpus}.log",
    conda:
        "../../envs/vlcomp.yaml"
    params:
        min_count=config["splits"]["min_count"],
    message:
        "CREPE and BindSplit splits of {wildcards.evalset} against {wildcards.corpus}"
    script:
        "../scripts/assign_splits.py"


rule check_world_splits:
    input:
        eval_items="results/eval_items/{evalset}.parquet",
        splits="results/splits/{evalset}/{corpus}.parquet",
        manifest="results/world/manifest.json",
    output:
        report(
            "results/splits/{evalset}/{corpus}_agreement.json",
            category="Splits",
            labels={
                "table": "agreement with the world's hold-outs",
                "corpus": "{corpus}",
            },
        ),
    log:
        "logs/splits/{evalset}_{corpus}_agreement.log",
    conda:
        "../../envs/vlcomp.yaml"
    message:
        "Agreement of the derived splits with the world's known hold-outs ({wildcards.corpus})"
    script:
        "../scripts/check_world_splits.py"
