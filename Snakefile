# vlcomp: vision-language compositionality benchmarks from a model's own training captions.
# The stages live in workflow/rules/<stage>.smk; the logic lives in the vlcomp package (src/).
from snakemake.utils import min_version

min_version("9.0")


# The embedded default (the synthetic world); a --configfile replaces it rather than
# merging into it, so a preset for real data carries no world.
if not workflow.overwrite_configfiles:

    configfile: "config/config.yaml"


include: "workflow/rules/common.smk"
include: "workflow/rules/world_preset.smk"
include: "workflow/rules/world.smk"
include: "workflow/rules/world_probes.smk"
include: "workflow/rules/ingest.smk"
include: "workflow/rules/parse.smk"
include: "workflow/rules/atoms.smk"
include: "workflow/rules/splits.smk"
include: "workflow/rules/train.smk"
include: "workflow/rules/negatives.smk"
include: "workflow/rules/llm.smk"
include: "workflow/rules/scorers.smk"
include: "workflow/rules/refine.smk"
include: "workflow/rules/metrics.smk"
include: "workflow/rules/figures.smk"
include: "workflow/rules/benchmarks.smk"


rule all:
    default_target: True
    input:
        expand("results/counts/{corpus}/atoms.parquet", corpus=CORPORA),
        "results/parser/quality.md",
        benchmark_targets(),
        world_targets(),
        PROBE_TARGETS,
