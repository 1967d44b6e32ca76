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
