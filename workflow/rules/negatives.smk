rule world_pairs:
    input:
        truth="results/world/eval/truth.parquet",
        scenes="results/world/eval/scenes.parquet",
    output:
        candidates="results/negatives/world_pairs/candidates.parquet",
        failures="results/negatives/world_pairs/failures.parquet",
    log:
        "logs/negatives/world_pairs.log",
    conda:
        "../../envs/vlcomp.yaml"
    params:
        world=config["world"],
        seed=config["negatives"]["seed"],
    message:
        "Hard negatives for the world's captions (replace/swap attribute, object, relation)"
    script:
        "../scripts/world_pairs.py"


rule world_productivity:
    input:
        "results/world/eval/vg",
    output:
        candidates="results/negatives/crepe_productivity/candidates.parquet",
        boxes="results/negatives/crepe_productivity/items.parquet",
        failures="results/negatives/crepe_productivity/failures.parquet",
        summary=report(
            "results/negatives/crepe_productivity/summary.parquet",
            category="Benchmarks",
            labels={"table": "productivity sizes"},
        ),
    log:
        "logs/negatives/world_productivity.log",
    conda:
        "../../envs/vlcomp.yaml"
    params:
        world=config["world"],
        settings=config["negatives"]["productivity"],
        seed=config["negatives"]["seed"],
    message:
        "CREPE productivity: random walks, template captions and HN-ATOM/SWAP/NEG"
    script:
        "../scripts/world_productivity.py"
