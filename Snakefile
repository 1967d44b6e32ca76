# vlcomp: vision-language compositionality benchmarks from a model's own training captions.
# The stages live in workflow/rules/<stage>.smk; the logic lives in the vlcomp package (src/).
from snakemake.utils import min_version

min_version("9.0")


configfile: "config/config.yaml"


include: "workflow/rules/common.smk"
include: "workflow/rules/world.smk"
include: "workflow/rules/ingest.smk"
include: "workflow/rules/parse.smk"
include: "workflow/rules/atoms.smk"
include: "workflow/rules/splits.smk"
include: "workflow/rules/train.smk"
include: "workflow/rules/negatives.smk"
include: "workflow/rules/scorers.smk"
include: "workflow/rules/refine.smk"
include: "workflow/rules/embed.smk"
include: "workflow/rules/metrics.smk"
include: "workflow/rules/figures.smk"
include: "workflow/rules/benchmarks.smk"


rule all:
    default_target: True
    input:
        "results/world/manifest.json",
        expand("results/world/corpora/{corpus}", corpus=config["world"]["corpora"]),
        "results/metrics/world_retrieval.parquet",
        "results/metrics/world_retrieval.csv",
        "results/figures/world_retrieval.png",
        "results/figures/world_retrieval.pdf",
        expand("results/splits/world_vg/{corpus}_agreement.json", corpus=WORLD_CORPORA),
        expand("results/counts/{corpus}/atoms.parquet", corpus=config["corpora"]),
        "results/parser/quality.md",
        "results/metrics/world_pairs.csv",
        expand("results/blind/world_pairs/{corpus}.parquet", corpus=WORLD_CORPORA),
        expand("results/figures/refine_world_pairs_{corpus}.png", corpus=WORLD_CORPORA),
        expand(
            "results/figures/priors_{model}_world_pairs.png",
            model=[m for m in EVAL_MODELS if training_corpus(config, m)],
        ),
        "results/figures/world_pairs.png",
        "results/figures/world_pairs.pdf",
        "results/metrics/crepe_productivity.csv",
        "results/figures/crepe_complexity.png",
        "results/metrics/crepe_systematicity.csv",
        "results/figures/crepe_splits.png",
        "results/figures/bindsplit_splits.png",
        "results/metrics/summary.md",
        "results/export/crepe/productivity/files.json",
        expand(
            "results/export/crepe/world_vg/{corpus}/summary.json", corpus=WORLD_CORPORA
        ),
        "results/stats/world_pairs_mcnemar.parquet" if len(EVAL_MODELS) > 1 else [],
