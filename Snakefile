# vlcomp: vision-language compositionality benchmarks from a model's own training captions.
# The stages live in workflow/rules/<stage>.smk; the logic lives in the vlcomp package (src/).
from snakemake.utils import min_version

min_version("9.0")


configfile: "config/config.yaml"


include: "workflow/rules/common.smk"
include: "workflow/rules/world.smk"
include: "workflow/rules/train.smk"
include: "workflow/rules/negatives.smk"
include: "workflow/rules/embed.smk"
include: "workflow/rules/metrics.smk"
include: "workflow/rules/figures.smk"


rule all:
    default_target: True
    input:
        "results/world/manifest.json",
        expand("results/world/corpora/{corpus}", corpus=config["world"]["corpora"]),
        "results/metrics/world_retrieval.parquet",
        "results/metrics/world_retrieval.csv",
        "results/figures/world_retrieval.png",
        "results/figures/world_retrieval.pdf",
        "results/metrics/world_pairs.csv",
        "results/figures/world_pairs.png",
        "results/figures/world_pairs.pdf",
