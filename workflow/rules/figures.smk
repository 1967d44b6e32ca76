rule figure_world_retrieval:
    input:
        "results/metrics/world_retrieval.parquet",
    output:
        png=report(
            "results/figures/world_retrieval.png",
            category="Figures",
            caption="../report/world_retrieval.rst",
            labels={"figure": "world retrieval"},
        ),
        pdf="results/figures/world_retrieval.pdf",
    log:
        "logs/figures/world_retrieval.log",
    conda:
        "../../envs/vlcomp.yaml"
    message:
        "Plotting retrieval Recall@K per split"
    script:
        "../scripts/figure_world_retrieval.py"


rule figure_world_pairs:
    input:
        "results/metrics/world_pairs.parquet",
    output:
        png=report(
            "results/figures/world_pairs.png",
            category="Figures",
            caption="../report/world_pairs.rst",
            labels={"figure": "world pairs"},
        ),
        pdf="results/figures/world_pairs.pdf",
    log:
        "logs/figures/world_pairs.log",
    conda:
        "../../envs/vlcomp.yaml"
    message:
        "Plotting pair accuracy per negative type and split"
    script:
        "../scripts/figure_world_pairs.py"
