# The embedded synthetic world: a data preset. Its rules write files in the formats users
# bring (Visual Genome JSON, COCO captions JSON, CC12M TSV, LAION Parquet); the config
# registers them as eval sets and corpora (vlcomp.world.preset). The ground-truth checks
# below are the only rules that know where those files came from.
from vlcomp.world import preset as world_preset

WORLD = config["world"]
WORLD_CORPORA = list(WORLD["corpora"]) if WORLD else []
GROUND_TRUTH_SETS = [name for name, entry in EVAL_SETS.items() if entry["ground_truth"]]


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
        "../envs/vlcomp.yaml"
    params:
        world=world_preset.shared_settings(WORLD) if WORLD else {},
    message:
        "Rendering the synthetic evaluation set (Visual Genome + COCO formats)"
    script:
        "../scripts/world_eval.py"


rule world_corpus:
    output:
        directory("results/world/corpora/{corpus}"),
    log:
        "logs/world/corpus_{corpus}.log",
    wildcard_constraints:
        corpus=names_re(WORLD_CORPORA),
    conda:
        "../envs/vlcomp.yaml"
    params:
        world=lambda wc: world_preset.corpus_settings(WORLD, wc.corpus),
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
        "../envs/vlcomp.yaml"
    params:
        world=world_preset.shared_settings(WORLD) if WORLD else {},
    message:
        "Writing the hold-out manifest (ground truth for the splits)"
    script:
        "../scripts/world_manifest.py"


rule check_world_splits:
    input:
        eval_items="results/eval_sets/{evalset}/items.parquet",
        splits="results/splits/{evalset}/{corpus}.parquet",
        manifest=lambda wc: EVAL_SETS[wc.evalset]["ground_truth"],
    output:
        report(
            "results/splits/{evalset}/{corpus}_agreement.json",
            category="Splits",
            labels={
                "table": "agreement with the world's hold-outs",
                "corpus": "{corpus}",
            },
        ),
    log:
        "logs/splits/{evalset}_{corpus}_agreement.log",
    wildcard_constraints:
        evalset=names_re(GROUND_TRUTH_SETS),
        corpus=names_re(WORLD_CORPORA),
    conda:
        "../envs/vlcomp.yaml"
    message:
        "Agreement of the derived splits with the world's known hold-outs ({wildcards.corpus})"
    script:
        "../scripts/check_world_splits.py"


rule world_heldout:
    input:
        predictions=expand(
            "results/metrics/{model}/{{benchmark}}_predictions.parquet", model=EVAL_MODELS
        ),
        holdout="results/world/eval/holdout.parquet",
    output:
        metrics="results/world/heldout/{benchmark}.parquet",
        predictions="results/world/heldout/{benchmark}_predictions.parquet",
    log:
        "logs/world/heldout_{benchmark}.log",
    wildcard_constraints:
        benchmark=names_re(benchmarks_of("pairs")),
    conda:
        "../envs/vlcomp.yaml"
    params:
        training_corpus={model: model_corpus(model) for model in EVAL_MODELS},
        settings=set_eval_settings(),
    message:
        "Held-in vs held-out metrics of {wildcards.benchmark} (the world's ground truth)"
    script:
        "../scripts/world_heldout.py"


rule world_heldout_retrieval:
    input:
        ranks=expand("results/metrics/{model}/{{benchmark}}_ranks.parquet", model=EVAL_MODELS),
        holdout="results/world/eval/holdout.parquet",
    output:
        metrics="results/world/heldout/{benchmark}.parquet",
    log:
        "logs/world/heldout_{benchmark}.log",
    wildcard_constraints:
        benchmark=names_re(benchmarks_of("retrieval")),
    conda:
        "../envs/vlcomp.yaml"
    params:
        training_corpus={model: model_corpus(model) for model in EVAL_MODELS},
        settings={**set_eval_settings(), "recall_at": config["evaluate"]["recall_at"]},
    message:
        "Held-in vs held-out retrieval of {wildcards.benchmark} (the world's ground truth)"
    script:
        "../scripts/world_heldout_retrieval.py"


def world_targets():
    """Ground-truth checks for every eval set the world registered."""
    targets = [
        f"results/splits/{name}/{corpus}_agreement.json"
        for benchmark in benchmarks_of("crepe_systematicity")
        for name in [eval_set_of(benchmark)]
        if name in GROUND_TRUTH_SETS
        for corpus in BENCHMARKS[benchmark]["corpora"]
        if corpus in WORLD_CORPORA
    ]
    targets += [
        f"results/figures/{benchmark}_heldout.png"
        for benchmark in benchmarks_of("pairs", "retrieval")
        if eval_set_of(benchmark) in GROUND_TRUTH_SETS
    ]
    return sorted(set(targets))


rule figure_world_heldout:
    input:
        "results/world/heldout/{benchmark}.parquet",
    output:
        png=report(
            "results/figures/{benchmark}_heldout.png",
            category="Figures",
            labels={"figure": "held-in vs held-out", "benchmark": "{benchmark}"},
        ),
        pdf="results/figures/{benchmark}_heldout.pdf",
    log:
        "logs/figures/{benchmark}_heldout.log",
    conda:
        "../envs/vlcomp.yaml"
    params:
        kind=lambda wc: BENCHMARKS[wc.benchmark]["kind"],
    message:
        "Plotting {wildcards.benchmark} on held-in vs held-out images"
    script:
        "../scripts/figure_benchmark.py"


# Graph tables whose scene graphs are known to be right: the parser is scored on them.
GOLD_GRAPHS.extend(
    ["results/world/eval/truth.parquet"]
    + [world_preset.corpus_dir(corpus) for corpus in WORLD_CORPORA]
    if WORLD
    else []
)
