# Linear probes on the world models' frozen features (vlcomp.world.checks.probes): do the image
# embedding, the feature map before pooling and the text tower carry relations and
# bindings? Only when world.probes.models names models (config/presets/world_science.yaml).

PROBES = WORLD["probes"] if WORLD else {}
PROBE_MODELS = list(PROBES.get("models", []))
PROBE_PAIRS = [
    name for name in benchmarks_of("pairs") if eval_set_of(name) in GROUND_TRUTH_SETS
]


PROBE_TARGETS = (
    ["results/world/probes/probes.md"] if PROBE_MODELS and PROBE_PAIRS else []
)
PROBE_CORPUS = (PROBES.get("corpus") or WORLD_CORPORA[0]) if PROBE_MODELS else None


rule world_probes:
    input:
        checkpoints=expand("results/models/{model}/checkpoint.pt", model=PROBE_MODELS),
        corpus=world_preset.corpus_dir(PROBE_CORPUS) if PROBE_MODELS else [],
        eval_scenes="results/world/eval/scenes.parquet",
        eval_images="results/world/eval/images",
        candidates=expand(
            "results/negatives/{benchmark}/candidates.parquet",
            benchmark=PROBE_PAIRS[:1],
        ),
        manifest="results/world/manifest.json",
    output:
        table="results/world/probes/probes.parquet",
        report="results/world/probes/probes.md",
    log:
        "logs/world/probes.log",
    benchmark:
        "benchmarks/world/probes.tsv"
    conda:
        "../envs/vlcomp.yaml"
    params:
        models=probe_models(PROBE_MODELS),
        settings=probe_settings(),
    message:
        "Linear probes on frozen features of {PROBE_MODELS}"
    script:
        "../scripts/world_probes.py"
