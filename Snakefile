# vlcomp: vision-language compositionality benchmarks from a model's own training captions.
# The stages live in workflow/rules/<stage>.smk; the logic lives in the vlcomp package (src/).
from snakemake.utils import min_version

min_version("9.0")


# The embedded default (the synthetic world); a --configfile replaces it rather than
# merging into it, so a preset for real data carries no world.
if not workflow.overwrite_configfiles:

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
include: "workflow/rules/metrics.smk"
include: "workflow/rules/figures.smk"
include: "workflow/rules/benchmarks.smk"


def benchmark_targets():
    """Every benchmark's outputs: candidates, exports, metrics, figures, statistics."""
    targets = []
    for name, entry in BENCHMARKS.items():
        kind = entry["kind"]
        targets += [f"results/metrics/{name}.csv", f"results/figures/{name}.png"]
        if kind == "crepe_systematicity":
            targets += [f"results/figures/{name}_bindsplit.png"]
            targets += expand(
                "results/export/crepe/{name}/{corpus}/summary.json",
                name=name,
                corpus=entry["corpora"],
            )
        if kind == "crepe_productivity":
            targets.append(f"results/export/crepe/{name}/files.json")
        if kind in ("pairs", "imported"):
            targets += expand(
                "results/{what}/{name}/{corpus}.parquet",
                what=["blind"],
                name=name,
                corpus=entry["corpora"],
            )
            targets += expand(
                "results/figures/refine_{name}_{corpus}.png",
                name=name,
                corpus=entry["corpora"],
            )
            targets += [
                f"results/figures/priors_{model}_{name}.png"
                for model in EVAL_MODELS
                if model_corpus(model) in entry["corpora"]
            ]
        if kind != "retrieval" and len(EVAL_MODELS) > 1:
            targets.append(f"results/stats/{name}_mcnemar.parquet")
    return targets


rule all:
    default_target: True
    input:
        expand("results/counts/{corpus}/atoms.parquet", corpus=CORPORA),
        "results/parser/quality.md",
        benchmark_targets(),
        "results/metrics/summary.md",
        world_targets(),
