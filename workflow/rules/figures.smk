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


rule figure_productivity:
    input:
        "results/metrics/crepe_productivity.parquet",
    output:
        png=report(
            "results/figures/crepe_complexity.png",
            category="Figures",
            labels={"figure": "R@1 vs complexity"},
        ),
        pdf="results/figures/crepe_complexity.pdf",
    log:
        "logs/figures/crepe_complexity.log",
    conda:
        "../../envs/vlcomp.yaml"
    message:
        "Plotting R@1 against complexity per negative type (CREPE Fig. 5)"
    script:
        "../scripts/figure_complexity.py"


rule figure_systematicity:
    input:
        "results/metrics/crepe_systematicity.parquet",
    output:
        png=report(
            "results/figures/crepe_splits.png",
            category="Figures",
            labels={"figure": "SC vs UC vs UA per negative type"},
        ),
        pdf="results/figures/crepe_splits.pdf",
    log:
        "logs/figures/crepe_splits.log",
    conda:
        "../../envs/vlcomp.yaml"
    message:
        "Plotting R@1 per CREPE split and negative type (CREPE Fig. 4)"
    script:
        "../scripts/figure_splits.py"


rule figure_bindsplit:
    input:
        "results/metrics/crepe_systematicity_bindsplit.parquet",
    output:
        png=report(
            "results/figures/bindsplit_splits.png",
            category="Figures",
            labels={"figure": "seen / mixed / unseen per model"},
        ),
        pdf="results/figures/bindsplit_splits.pdf",
    log:
        "logs/figures/bindsplit_splits.log",
    conda:
        "../../envs/vlcomp.yaml"
    message:
        "Plotting accuracy per BindSplit split and model (BindSplit Fig. 4)"
    script:
        "../scripts/figure_bindsplit.py"
