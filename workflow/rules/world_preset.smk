# The embedded synthetic world: a data preset. Its rules write files in the formats users
# bring (Visual Genome JSON, COCO captions JSON, CC12M TSV, LAION Parquet); the config
# registers them as eval sets and corpora (vlcomp.world.preset). The ground-truth checks in
# world.smk are the only rules that know where those files came from.
from vlcomp.world import preset as world_preset

WORLD = config["world"]
WORLD_CORPORA = list(WORLD["corpora"]) if WORLD else []
GROUND_TRUTH_SETS = [name for name, entry in EVAL_SETS.items() if entry["ground_truth"]]
# What the world's scenes, images and captions are made of (vlcomp.world.config), not the
# probes of its models (world_probes.smk): a probe setting renders nothing again.
WORLD_SCENE_KEYS = tuple(
    "seed image_size objects_per_scene shapes colours sizes relations eval corpora".split()
)


def world_scene():
    return {k: v for k, v in (WORLD or {}).items() if k in WORLD_SCENE_KEYS}


def world_shared_settings():
    """What the evaluation set, the manifest and the oracles depend on."""
    return world_preset.shared_settings(world_scene()) if WORLD else {}


def world_corpus_settings(corpus):
    """What one world corpus's files depend on."""
    return world_preset.corpus_settings(world_scene(), corpus)


# What the probes read of world.probes (vlcomp.world.checks.probes.ProbeSettings).
PROBE_KEYS = ("max_train_scenes", "pca_dims", "c", "bootstrap_resamples", "seed")


def probe_settings():
    probes = WORLD["probes"] if WORLD else {}
    return {k: v for k, v in probes.items() if k in PROBE_KEYS}


def probe_models(models):
    """The architecture of each probed model (its weights are the job's input)."""
    return {m: {"open_clip": config["models"][m]["open_clip"]} for m in models}


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
    targets += [path for tables in ORACLE_TABLES.values() for path in tables.values()]
    return sorted(set(targets))


# Graph tables whose scene graphs are known to be right: the parser is scored on them.
GOLD_GRAPHS.extend(
    ["results/world/eval/truth.parquet"]
    + [world_preset.corpus_dir(corpus) for corpus in WORLD_CORPORA]
    if WORLD
    else []
)

# Its eval images come with matched twins: split composition compares their items.
IMAGE_PAIRS.update(
    {name: "results/world/eval/twins.parquet" for name in GROUND_TRUTH_SETS}
)

# The world knows which evaluation images hold each corpus's held-out items: the crossover
# also compares models on those (world_heldout).
CROSSOVER_TABLES.update(
    {
        f"{benchmark}_heldout": [
            f"results/world/heldout/{benchmark}_predictions.parquet"
        ]
        for benchmark in benchmarks_of("pairs")
        if eval_set_of(benchmark) in GROUND_TRUTH_SETS
    }
)

# The world knows every scene: oracles check each generated negative against it.
ORACLE_TABLES.update(
    {
        benchmark: {
            "metrics": f"results/world/oracles/{benchmark}.parquet",
            "false_negatives": f"results/world/oracles/{benchmark}_false_negatives.parquet",
        }
        for benchmark in benchmarks_of(
            "pairs", "crepe_systematicity", "crepe_productivity"
        )
        if eval_set_of(benchmark) in GROUND_TRUTH_SETS
    }
)


def oracle_parts(benchmark):
    """The candidate sets the oracles read (as evaluation_parts gives a model them, in the
    variant the models are scored on, every corpus's of a systematicity benchmark, in config
    order), without splits."""
    root = f"results/negatives/{benchmark}"
    if BENCHMARKS[benchmark]["kind"] == "crepe_systematicity":
        return [
            {
                "candidates": variant_table(
                    benchmark, f"{root}/{corpus}/candidates.parquet"
                ),
                "boxes": f"{root}/{corpus}/regions.parquet",
                "label": corpus,
            }
            for corpus in BENCHMARKS[benchmark]["corpora"]
        ]
    return [
        {
            "candidates": variant_table(benchmark, f"{root}/candidates.parquet"),
            "boxes": f"{root}/boxes.parquet",
            "label": None,
        }
    ]


# The scale benchmark runs on captions the world writes (world_scale_corpus).
if WORLD:
    SCALE_CORPORA.clear()
    SCALE_CORPORA.update(
        world_preset.scale_corpora(WORLD, config["throughput"]["scale_captions"])
    )
