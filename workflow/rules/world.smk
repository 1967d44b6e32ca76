rule world_eval:
    output:
        images=directory("results/world/eval/images"),
        vg=directory("results/world/eval/vg"),
        coco="results/world/eval/coco_captions.json",
        truth="results/world/eval/truth.parquet",
        holdout="results/world/eval/holdout.parquet",
        scenes="results/world/eval/scenes.parquet",
    log:
        "logs/world/eval.log",
    conda:
        "../../envs/vlcomp.yaml"
    params:
        world=config["world"],
    message:
        "Rendering the synthetic evaluation set (Visual Genome + COCO formats)"
    script:
        "../scripts/world_eval.py"


rule world_corpus:
    output:
        directory("results/world/corpora/{corpus}"),
    log:
        "logs/world/corpus_{corpus}.log",
    conda:
        "../../envs/vlcomp.yaml"
    params:
        world=config["world"],
    message:
        "Rendering training corpus {wildcards.corpus} in its native format"
    script:
        "../scripts/world_corpus.py"


rule world_manifest:
    output:
        "results/world/manifest.json",
    log:
        "logs/world/manifest.log",
    conda:
        "../../envs/vlcomp.yaml"
    params:
        world=config["world"],
    message:
        "Writing the hold-out manifest (ground truth for the splits)"
    script:
        "../scripts/world_manifest.py"
