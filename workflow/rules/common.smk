import os
import re
import sys

# The library lives in src/ (rule scripts add it to sys.path themselves). Parsing the
# workflow imports only light modules: no torch, open_clip or spaCy.
sys.path.insert(0, os.path.join(workflow.basedir, "src"))
# Offline by default: a missing pretrained weight must fail at once, not retry for ~47 s.
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from vlcomp.config import (  # noqa: E402
    IMAGE_SELECTION_FORMATS,
    SET_FORMATS,
    TWO_IMAGE_FORMATS,
    TWO_POSITIVE_FORMATS,
    ConfigError,
    training_corpora,
    validate_config,
)
from vlcomp.ingest.parts import part_name, plan_parts  # noqa: E402
from vlcomp.llm.settings import LLMSettings  # noqa: E402
from vlcomp.parse.parser import RULES_VERSION as PARSER_RULES_VERSION  # noqa: E402
from vlcomp.scorers.trained import SCORER_FILES, scorer_specs  # noqa: E402
from vlcomp.text import TEXT_LAYER_VERSION  # noqa: E402
from vlcomp.vocabulary import AS_GENERATED, DEBIASED  # noqa: E402

try:
    config.update(validate_config(config))
except ConfigError as error:
    raise WorkflowError(str(error)) from None


EVAL_MODELS = config["evaluate"]["models"]
CORPORA = list(config["corpora"])
EVAL_SETS = config["eval_sets"]
BENCHMARKS = config["benchmarks"]
# Graph tables with known-right scene graphs (a data preset may add some): parser quality.
GOLD_GRAPHS = []
# Corpora of the scale benchmark, name -> format, inputs, options, n_captions: the corpora
# that say how many captions they hold (a data preset may put its own in their place).
SCALE_CORPORA = {
    name: {
        k: entry[k]
        for k in ("format", "inputs", "options", "n_captions", "files_per_job")
    }
    for name, entry in config["corpora"].items()
    if entry.get("n_captions")
}


def names_re(names):
    """A wildcard constraint matching exactly these names (and nothing when empty)."""
    names = list(names)
    return "|".join(map(re.escape, names)) if names else "(?!)"


def benchmarks_of(*kinds):
    return [name for name, entry in BENCHMARKS.items() if entry["kind"] in kinds]


def imported_of(formats):
    """Imported benchmarks whose eval set has one of these formats."""
    return [
        name
        for name in benchmarks_of("imported")
        if EVAL_SETS[BENCHMARKS[name]["eval_set"]]["format"] in formats
    ]


# Benchmarks by how they are evaluated: candidate sets with one positive (ranked by one
# ranker), two positives and a negative (SugarCrepe++), two images (Winoground), or one
# caption and two images (image selection: SVO-Probes; imported like two-image sets).
SET_BENCHMARKS = [
    *benchmarks_of("crepe_systematicity", "crepe_productivity", "pairs"),
    *imported_of(SET_FORMATS),
]
TWO_POSITIVE_BENCHMARKS = imported_of(TWO_POSITIVE_FORMATS)
TWO_IMAGE_BENCHMARKS = imported_of(TWO_IMAGE_FORMATS)
IMAGE_SELECTION_BENCHMARKS = imported_of(IMAGE_SELECTION_FORMATS)
# Benchmarks whose items an LLM writes (then validated, and filtered by a human review).
LLM_PAIRS = [b for b in benchmarks_of("pairs") if BENCHMARKS[b]["negatives"] == "llm"]
LLM_PRODUCTIVITY = [
    b for b in benchmarks_of("crepe_productivity") if BENCHMARKS[b]["captions"] == "llm"
]
LLM_BENCHMARKS = [*LLM_PAIRS, *LLM_PRODUCTIVITY]
# Benchmarks with texts to choose between: the blind attacks certify them (two-image and
# image-selection sets are balanced by design, and say so).
ATTACK_BENCHMARKS = [
    *SET_BENCHMARKS,
    *TWO_POSITIVE_BENCHMARKS,
    *TWO_IMAGE_BENCHMARKS,
    *IMAGE_SELECTION_BENCHMARKS,
]
# Text-only analyses (scorers, blind baselines, refinement, priors) take one positive.
TEXT_BENCHMARKS = [*benchmarks_of("pairs"), *imported_of(SET_FORMATS)]


wildcard_constraints:
    model=names_re(config["models"]),
    corpus=names_re(CORPORA),
    shard=r"\d+-of-\d+",
    part=r"\d+-of-\d+",
    evalset=names_re(EVAL_SETS),
    benchmark=names_re(BENCHMARKS),
    textset=names_re([*CORPORA, "sugarcrepe_audit"]),


# ------------------------------------------------------------------ corpora and models


def corpus_source(corpus):
    """Loader format, inputs and options of a training corpus."""
    entry = config["corpora"][corpus]
    options = {"rules": config["ingest"]["rules"], **entry["options"]}
    return entry["format"], entry["inputs"], options


def ingest_parts(corpus):
    """The corpus's input files in the parts its ingest jobs read (one part: one job)."""
    entry = config["corpora"][corpus]
    fmt, inputs, options = corpus_source(corpus)
    return plan_parts(fmt, inputs, options, entry.get("files_per_job"))


INGEST_PARTS = {corpus: ingest_parts(corpus) for corpus in CORPORA}


def part_names(corpus):
    n = len(INGEST_PARTS[corpus])
    return [part_name(j, n) for j in range(n)]


def part_files(pattern, corpus, **fields):
    """One file per ingest part of a corpus: ``pattern`` has {part} (and ``fields``)."""
    return expand(pattern, part=part_names(corpus), **fields)


def n_shards(corpus):
    """Caption shards of a corpus: its n_shards, or n_captions in shards of
    ingest.captions_per_shard, or ingest.n_shards."""
    entry = config["corpora"][corpus]
    if entry.get("n_shards"):
        return entry["n_shards"]
    if entry.get("n_captions"):
        return -(-entry["n_captions"] // config["ingest"]["captions_per_shard"])
    return config["ingest"]["n_shards"]


def corpus_shards(corpus):
    n = n_shards(corpus)
    return [f"{i}-of-{n}" for i in range(n)]


def shard_files(pattern, corpus):
    """The per-shard files of one corpus: ``pattern`` has {corpus} and {shard}."""
    return expand(pattern, corpus=corpus, shard=corpus_shards(corpus))


def caption_shards(corpus):
    return shard_files("results/captions/{corpus}/captions-{shard}.parquet", corpus)


def graph_shards(corpus):
    return shard_files("results/graphs/{corpus}/graphs-{shard}.parquet", corpus)


def training_inputs(wildcards):
    """A training's optional inputs: the corpus's training negatives (NegCLIP-style), the
    checkpoint it starts from (fine-tuning)."""
    train = config["models"][wildcards.model]["train"]
    inputs = {}
    if train["hard_negatives"] != "none":
        inputs["negatives"] = f"results/negatives/training/{train['corpus']}.parquet"
    if train["start_from"] is not None:
        inputs["start_from"] = f"results/models/{train['start_from']}/checkpoint.pt"
    return inputs


def trained_checkpoint(model):
    if "train" in config["models"][model]:
        return f"results/models/{model}/checkpoint.pt"
    return None


def model_weights(wildcards):
    """The checkpoint a model's jobs depend on; a pretrained tag is checked by a job."""
    entry = config["models"][wildcards.model]
    if "train" in entry:
        return trained_checkpoint(wildcards.model)
    if "checkpoint" in entry:
        return entry["checkpoint"]
    return f"results/models/{wildcards.model}/available.json"


def model_corpus(model):
    """The first training corpus of a model, or None when unknown."""
    named = training_corpora(config, model)
    return named[0] if named else None


def embed_settings():
    """Only how embeddings are computed, so that adding a model reruns nothing else
    (workers changes no vector, but the job needs it)."""
    settings = config["evaluate"]
    keys = ("device", "threads", "batch_size", "precision", "workers")
    return {k: settings[k] for k in keys}


def embed_threads():
    """Cores of an embedding job: its torch threads plus its image-decoding workers."""
    return config["evaluate"]["threads"] + config["evaluate"]["workers"]


def gpu_request():
    """resources gpu of an embedding job: 1 when evaluate.device names a CUDA device
    (cuda, cuda:N), else 0. "auto" requests none: whether a GPU exists is only known where
    the job runs; on a cluster a job that asked for no GPU gets none (so embeds on CPU).
    """
    return 1 if config["evaluate"]["device"].startswith("cuda") else 0


def llm_api_slots():
    """resources llm_api of an LLM job: the calls it has in flight at once, llm.max_concurrency
    with the client's default where unset (1 without an endpoint)."""
    if not config["llm"]:
        return 1
    return LLMSettings.from_config(config["llm"]).max_concurrency


def negatives_context_length():
    """negatives.context_length resolved: auto is the smallest text context among the
    evaluated models' open_clip configs (JSON files: no torch while parsing)."""
    from vlcomp.models.catalogue import resolve_context_length

    return resolve_context_length(
        config["negatives"]["context_length"], config["models"], EVAL_MODELS
    )


def set_eval_settings():
    """Settings of the candidate-set evaluation (retrieval sets, pairs, bootstrap CIs)."""
    settings = config["evaluate"]
    return {
        **embed_settings(),
        "recall_at": settings["set_recall_at"],
        "bootstrap_resamples": settings["bootstrap_resamples"],
        "bootstrap_seed": settings["bootstrap_seed"],
    }


# ------------------------------------------------------------------ settings per rule
# A rule's params carry only the config keys its job reads, so that changing a key reruns
# just the jobs that read it (Snakemake's params trigger). Never a whole section: a key
# added to it later would rerun every job handed the section
# (tests/unit/test_rule_params.py checks the rule files). The names below list the keys.

# parse: what the parser makes of a caption; how a job runs it (the same graphs)
PARSER_KEYS = ("backend", "model", "numerals", "strip_verbs", "predicate_map")
PARSE_RUN_KEYS = ("n_process", "batch_size")
# what training each scorer reads of its block (minilm's k is read when scoring)
SCORER_TRAINING_KEYS = {
    "ngram": ("order", "min_count"),
    "minilm": ("sample", "seed"),
    "tiny_gpt2": ("settings", "seed"),
}
# models.<name>: what loading a model reads (ModelSpec.from_config), not its
# train block or training_corpora (a new checkpoint reruns its jobs as an input)
MODEL_SOURCE_KEYS = (
    "open_clip",
    "pretrained",
    "checkpoint",
    "cache_dir",
    "transformers",
)
# Sections a user writes freely, their jobs filling in defaults: every key the job knows
# (vlcomp.negatives.systematicity.DEFAULT_SETTINGS, ...productivity.ProductivitySettings,
# vlcomp.llm.settings.DEFAULTS).
SYSTEMATICITY_KEYS = tuple(
    "min_count atom_negatives comp_negatives compounds allow_fewer max_foils comp_foils "
    "image_scope senses max_hops min_depth image_ref scene_foils balance "
    "max_recurrence".split()
)
PRODUCTIVITY_KEYS = tuple(
    "complexities walks_per_image negatives_per_type min_negatives families min_area "
    "min_area_fraction min_aspect max_aspect dedupe_overlap dedupe_measure "
    "one_relation_per_pair foil_forbid attribute_kinds leading_attributes".split()
)
LLM_KEYS = tuple(
    "base_url model api_key_env mode max_concurrency timeout_s max_retries "
    "structured_output temperatures max_attempts max_chars budget prices dry_run "
    "backoff_base_s backoff_max_s progress_every completion_tokens_estimate batch_poll_s "
    "batch_wait_s batch_backend batch_outputs min_yield breaker_failures breaker_seconds "
    "malformed_retries breaker_malformed".split()
)


def config_at(names):
    """The config section at ``names`` (("negatives", "productivity"))."""
    section = config
    for name in names:
        section = section[name]
    return section


def config_keys(names, keys):
    """The ``keys`` of the config section at ``names`` that it has, in the section's order
    (a rule that reads every key keeps the params it had)."""
    return {k: v for k, v in config_at(names).items() if k in keys}


def free_settings(names, keys):
    """``config_keys`` of a section the user writes freely: ``keys`` are all its job knows,
    another key is an error here (as in the job), not a key the job silently never sees.
    """
    unknown = [k for k in config_at(names) if k not in keys]
    if unknown:
        raise WorkflowError(
            f"config key '{'.'.join(names)}.{unknown[0]}': unknown key (known: "
            f"{', '.join(sorted(keys))}; a new one goes in common.smk too)"
        )
    return config_keys(names, keys)


def parse_settings(*keys):
    """These keys of config `parse`; without any, all: the parser's and how to run it."""
    return config_keys(("parse",), keys or (*PARSER_KEYS, *PARSE_RUN_KEYS))


def predicate_map_input():
    """The parse settings' predicate map when it is a file (a preset's, such as the world's
    results/world/predicates.json): an input of every job that parses, so that it waits for
    the file and reruns when it changes."""
    value = config["parse"]["predicate_map"]
    return [] if value == "generic" else [value]


def eval_items_parse(evalset):
    """What an eval set's items job reads of `parse`: COCO captions are parsed (every key),
    Visual Genome's graphs put in the parser's form (graph_canon: lemmatiser, predicates).
    """
    if EVAL_SETS[evalset]["format"] == "visual_genome":
        return parse_settings("model", "predicate_map", "strip_verbs")
    return parse_settings()


def scorer_training_settings(scorer):
    """What training ``scorer`` reads of config `scorers`, in the section's shape."""
    return {scorer: config_keys(("scorers", scorer), SCORER_TRAINING_KEYS[scorer])}


def scorer_query_settings():
    """What scorer_specs reads of config `scorers` besides `use`: MiniLM's k."""
    return {"minilm": config_keys(("scorers", "minilm"), ("k",))}


def refine_settings():
    """Config `refine` as the refinement reads it: every key."""
    return config_keys(("refine",), ("grid", "seed", "normalisation"))


def prior_settings():
    """Config `priors` as the linguistic priors read it: every key."""
    return config_keys(("priors",), ("lm_scorer", "bins", "min_count"))


def systematicity_settings():
    return free_settings(("negatives", "systematicity"), SYSTEMATICITY_KEYS)


def productivity_settings():
    return free_settings(("negatives", "productivity"), PRODUCTIVITY_KEYS)


def llm_settings():
    """Config `llm` as the LLM jobs read it (every key), or null without an endpoint."""
    return None if config["llm"] is None else free_settings(("llm",), LLM_KEYS)


def model_source(model):
    """What a job that loads ``model`` (evaluation, the weights check) reads of its entry."""
    return config_keys(("models", model), MODEL_SOURCE_KEYS)


def model_training(model):
    """What training ``model`` reads of its entry: the architecture and the train block."""
    return config_keys(("models", model), ("open_clip", "train"))


# ------------------------------------------------------------------ eval sets


def eval_set_of(benchmark):
    return BENCHMARKS[benchmark]["eval_set"]


def eval_set_source(evalset):
    """The eval set's entry as the stage jobs read it (format-specific keys only)."""
    entry = EVAL_SETS[evalset]
    keys = ("dir", "captions", "files", "images", "regions")
    return {**entry["options"], **{k: entry[k] for k in keys if k in entry}}


def import_source(evalset):
    """What importing a published benchmark reads: its files and importer options, not the
    image folder (only the image index and the jobs after it depend on that)."""
    entry = EVAL_SETS[evalset]
    return {**entry["options"], **{k: entry[k] for k in ("dir", "files") if k in entry}}


def eval_set_inputs(evalset):
    """Files an eval set is read from (produced by a preset's rules or given by the user)."""
    entry = EVAL_SETS[evalset]
    return [entry[k] for k in ("dir", "captions") if k in entry] + entry.get(
        "files", []
    )


def image_index(wildcards):
    return f"results/eval_sets/{eval_set_of(wildcards.benchmark)}/images.parquet"


def image_references(evalset):
    """Tables whose image ids the eval set's image index must resolve."""
    if EVAL_SETS[evalset]["format"] in ("visual_genome", "coco_captions"):
        return [f"results/eval_sets/{evalset}/items.parquet"]
    return [
        f"results/negatives/{name}/"
        + (
            "two_image.parquet"
            if name in TWO_IMAGE_BENCHMARKS + IMAGE_SELECTION_BENCHMARKS
            else "candidates.parquet"
        )
        for name in benchmarks_of("imported")
        if eval_set_of(name) == evalset
    ]


# ------------------------------------------------------------------ scorers


def factual_csv():
    """FACTUAL's gold scene graphs, when the configured file is there."""
    path = config["parser_quality"]["factual_csv"]
    return path if path and os.path.isfile(path) else None


def scorer_training_text(wildcards):
    """Caption tables a text set's scorers train on: a corpus's shards, or the audit's."""
    if wildcards.textset == "sugarcrepe_audit":
        return "results/audit/training_text.parquet"
    return caption_shards(wildcards.textset)


def trained_scorers(textset):
    return [
        f"results/scorers/{textset}/{SCORER_FILES[name]}"
        for name in config["scorers"]["use"]
    ]


def minilm_queries(benchmark):
    """The benchmark's texts embedded once by MiniLM, when MiniLM scores them."""
    if "minilm" not in config["scorers"]["use"] or benchmark not in TEXT_BENCHMARKS:
        return []
    return [f"results/queries/{benchmark}/minilm.parquet"]


def scorer_corpora(benchmark):
    return BENCHMARKS[benchmark]["corpora"]


def attack_parts(benchmark):
    """The tables the blind attacks read, by part: a CREPE systematicity set per corpus,
    else the benchmark's candidates (or its two-image sets)."""
    entry = BENCHMARKS[benchmark]
    if entry["kind"] == "crepe_systematicity":
        return {
            corpus: f"results/negatives/{benchmark}/{corpus}/candidates.parquet"
            for corpus in entry["corpora"]
        }
    two_images = TWO_IMAGE_BENCHMARKS + IMAGE_SELECTION_BENCHMARKS
    table = "two_image.parquet" if benchmark in two_images else "candidates.parquet"
    return {benchmark: f"results/negatives/{benchmark}/{table}"}


def attack_shape(benchmark):
    """How the attacks read the benchmark (vlcomp.importers.registry's shapes)."""
    if benchmark in TWO_IMAGE_BENCHMARKS:
        return "two_images"
    if benchmark in IMAGE_SELECTION_BENCHMARKS:
        return "image_selection"
    if benchmark in TWO_POSITIVE_BENCHMARKS:
        return "two_positives"
    return "candidates"


def attack_corpora(benchmark):
    """The corpora whose generated training negatives train the generator attack: the
    benchmark's corpora, or every corpus for a benchmark that names none (an import)."""
    return BENCHMARKS[benchmark].get("corpora") or CORPORA


def attack_scores(benchmark):
    """corpus -> the benchmark's text-only scores by that corpus's scorers."""
    if benchmark not in TEXT_BENCHMARKS:
        return {}
    return {
        corpus: f"results/scores/{benchmark}/{corpus}.parquet"
        for corpus in BENCHMARKS[benchmark]["corpora"]
    }


def attack_generators(benchmark):
    """corpus -> (its generated training negatives, its caption shards)."""
    if attack_shape(benchmark) in ("two_images", "image_selection"):
        return {}
    return {
        corpus: (f"results/negatives/training/{corpus}.parquet", caption_shards(corpus))
        for corpus in attack_corpora(benchmark)
    }


# Generated benchmarks get a debiased variant (blind.debias): per candidate table, the
# table with "debiased/" before its name.
DEBIASED_BENCHMARKS = benchmarks_of(
    "pairs", "crepe_systematicity", "crepe_productivity"
)


def debiased_parts(benchmark):
    """label -> the debiased candidates of each part (none for other benchmarks)."""
    if benchmark not in DEBIASED_BENCHMARKS:
        return {}
    return {
        label: path.replace("candidates.parquet", "debiased/candidates.parquet")
        for label, path in attack_parts(benchmark).items()
    }


DEBIASED_TABLES = [
    os.path.dirname(path).removeprefix("results/negatives/")
    for benchmark in DEBIASED_BENCHMARKS
    for path in attack_parts(benchmark).values()
]


def attack_inputs(wildcards):
    generators = attack_generators(wildcards.benchmark)
    return {
        "embeddings": minilm_queries(wildcards.benchmark),
        "parts": list(attack_parts(wildcards.benchmark).values()),
        "debiased": list(debiased_parts(wildcards.benchmark).values()),
        "scores": list(attack_scores(wildcards.benchmark).values()),
        "negatives": [negatives for negatives, _ in generators.values()],
        "captions": [shard for _, shards in generators.values() for shard in shards],
    }


def folder_benchmark(table):
    """The benchmark of a candidate table's folder ("crepe_systematicity/cc12m")."""
    return table.split("/")[0]


def debias_part(table):
    """A candidate table's label in its benchmark's certificate when that has several parts
    (a CREPE set per corpus), else None."""
    parts = attack_parts(folder_benchmark(table))
    if len(parts) < 2:
        return None
    path = f"results/negatives/{table}/candidates.parquet"
    return next(label for label, part in parts.items() if part == path)


def debias_inputs(wildcards):
    """A candidate table and what its debiasing panel's corpus attacks read (the same as
    the benchmark's certificate)."""
    benchmark = folder_benchmark(wildcards.table)
    generators = attack_generators(benchmark)
    return {
        "candidates": f"results/negatives/{wildcards.table}/candidates.parquet",
        "scores": list(attack_scores(benchmark).values()),
        "negatives": [negatives for negatives, _ in generators.values()],
        "captions": [shard for _, shards in generators.values() for shard in shards],
    }


def attack_settings():
    """What the certificate reads of config `attacks`: every key."""
    return config_keys(
        ("attacks",), ("folds", "seed", "bootstrap_resamples", "certify")
    )


def debias_settings():
    """What the debiasing reads of config `attacks`: not the certification panel's keys,
    which never decide what is kept."""
    return config_keys(("attacks",), ("folds", "seed", "bootstrap_resamples"))


# ------------------------------------------------------------------ what to evaluate


def systematicity_corpora(benchmark, model):
    """The corpora whose sets a model is evaluated on: every corpus of the benchmark, its
    training corpora first (another corpus's splits are the crossover comparison's)."""
    named = BENCHMARKS[benchmark]["corpora"]
    own = [c for c in training_corpora(config, model) if c in named]
    return own + [c for c in named if c not in own]


def evaluated_variant(benchmark):
    """Which variant of a benchmark the models are scored on (config evaluate.variant): the
    debiased one where the benchmark has one, else the benchmark as generated or imported.
    """
    if benchmark in DEBIASED_BENCHMARKS:
        return config["evaluate"]["variant"]
    return AS_GENERATED


def variant_table(benchmark, path):
    """The candidate table of ``path``'s part in the variant the models are scored on."""
    if evaluated_variant(benchmark) == DEBIASED:
        return path.replace("candidates.parquet", "debiased/candidates.parquet")
    return path


def evaluation_parts(benchmark, model, split_column):
    """The candidate sets of one benchmark a model is scored on (in ``evaluated_variant``),
    with their split tables."""
    entry = BENCHMARKS[benchmark]
    evalset = entry["eval_set"]
    variant = evaluated_variant(benchmark)
    if entry["kind"] == "crepe_systematicity":
        return [
            {
                "candidates": variant_table(
                    benchmark,
                    f"results/negatives/{benchmark}/{corpus}/candidates.parquet",
                ),
                "boxes": f"results/negatives/{benchmark}/{corpus}/regions.parquet",
                "splits": f"results/splits/{evalset}/{corpus}.parquet",
                "split_column": split_column,
                "label": corpus,
                "variant": variant,
            }
            for corpus in systematicity_corpora(benchmark, model)
        ]
    part = {
        "candidates": variant_table(
            benchmark, f"results/negatives/{benchmark}/candidates.parquet"
        ),
        "boxes": f"results/negatives/{benchmark}/boxes.parquet",
        "splits": None,
        "split_column": split_column,
        "label": None,
        "variant": variant,
    }
    corpus = model_corpus(model)
    if entry["kind"] == "pairs" and corpus is not None:
        part["splits"] = f"results/splits/{evalset}/{corpus}.parquet"
    return [part]


def evaluation_inputs(split_column):
    def inputs(wildcards):
        parts = evaluation_parts(wildcards.benchmark, wildcards.model, split_column)
        files = [p[k] for p in parts for k in ("candidates", "boxes", "splits") if p[k]]
        return files

    return inputs


def figure_kind(table):
    """Which figure a metric table gets (see vlcomp.report.plots.plot_benchmark)."""
    if table not in BENCHMARKS:
        return "bindsplit"
    if table in TWO_IMAGE_BENCHMARKS:
        return "two_image"
    if table in TWO_POSITIVE_BENCHMARKS:
        return "sugarcrepe_pp"
    return BENCHMARKS[table]["kind"]


def benchmark_targets():
    """Every benchmark's outputs: candidates, exports, audits, and with models to evaluate,
    metrics, figures and statistics."""
    targets = []
    for name, entry in BENCHMARKS.items():
        kind = entry["kind"]
        if kind == "crepe_systematicity":
            targets += expand(
                "results/export/crepe/{name}/{corpus}/summary.json",
                name=name,
                corpus=entry["corpora"],
            )
        if kind == "crepe_productivity":
            targets.append(f"results/export/crepe/{name}/files.json")
        if kind == "pairs":
            targets.append(f"results/export/sugarcrepe/{name}")
        if name in LLM_BENCHMARKS:
            targets.append(f"results/review/{name}/sheet.html")
        if name in ATTACK_BENCHMARKS:
            targets += [
                f"results/blind/{name}/attacks.parquet",
                f"results/figures/{name}_attacks.png",
            ]
        if name in TEXT_BENCHMARKS:
            targets += [
                path
                for corpus in entry["corpora"]
                for path in (
                    f"results/blind/{name}/{corpus}.parquet",
                    f"results/audit/{name}/{corpus}/audit.md",
                    f"results/figures/refine_{name}_{corpus}.png",
                )
            ]
        if not EVAL_MODELS:
            continue
        targets += [f"results/metrics/{name}.csv", f"results/figures/{name}.png"]
        if kind == "crepe_systematicity":
            targets += [f"results/figures/{name}_bindsplit.png"]
        if name in TEXT_BENCHMARKS:
            targets += [
                f"results/figures/priors_{model}_{name}.png"
                for model in EVAL_MODELS
                if model_corpus(model) in entry["corpora"]
            ]
        if name in SET_BENCHMARKS and len(EVAL_MODELS) > 1:
            targets.append(f"results/stats/{name}_mcnemar.parquet")
    if EVAL_MODELS:
        targets.append("results/metrics/summary.md")
    if EVAL_MODELS and len(BENCHMARKS) > 1:
        targets.append("results/figures/all_benchmarks.png")
    if crossover_tables():
        targets.append("results/figures/crossover.png")
    if EVAL_MODELS:
        targets += [
            f"results/stats/{table}_composition.md" for table in COMPOSITION_TABLES
        ]
    return targets


# Metric tables whose items come from eval items with scene graphs: split composition.
COMPOSITION_TABLES = [
    *benchmarks_of("pairs"),
    *benchmarks_of("crepe_systematicity"),
    *(f"{b}_bindsplit" for b in benchmarks_of("crepe_systematicity")),
]


# Matched image pairs of an eval set (image_id, twin_image_id), by eval set name: images
# that differ only in what a split is about (a data preset may add them).
IMAGE_PAIRS = {}


def metric_tables():
    """Every benchmark's collected metric table (a systematicity benchmark's BindSplit
    table too)."""
    return expand(
        "results/metrics/{table}.parquet",
        table=[
            *BENCHMARKS,
            *(f"{b}_bindsplit" for b in benchmarks_of("crepe_systematicity")),
        ],
    )


def table_benchmark(table):
    """The benchmark of a metric table (a systematicity benchmark's BindSplit table too)."""
    return table.removesuffix("_bindsplit") if table not in BENCHMARKS else table


def rejected_tables(benchmark):
    """Tables of the records that never became items of a benchmark: its import's, or its
    eval set's where its items come from the eval set's items table."""
    kind = BENCHMARKS[benchmark]["kind"]
    if kind == "imported":
        return [f"results/negatives/{benchmark}/rejected.parquet"]
    if kind in ("crepe_systematicity", "pairs", "retrieval"):
        return [f"results/eval_sets/{eval_set_of(benchmark)}/items_rejected.parquet"]
    return []


def summary_benchmarks():
    """Per benchmark, what the summary counts its items from: its kind, the models'
    excluded tables and its rejected tables."""
    return {
        name: {
            "kind": BENCHMARKS[name]["kind"],
            "excluded": expand(
                "results/metrics/{model}/{name}_excluded.parquet",
                model=EVAL_MODELS,
                name=name,
            ),
            "rejected": rejected_tables(name),
            "eval_sets": eval_set_summaries(name),
        }
        for name in BENCHMARKS
    }


def eval_set_summaries(benchmark):
    """The eval items summary of a benchmark whose items come from an eval set's items."""
    if BENCHMARKS[benchmark]["kind"] in ("crepe_systematicity", "pairs", "retrieval"):
        return [f"results/eval_sets/{eval_set_of(benchmark)}/items_summary.json"]
    return []


def composition_boxes(table):
    """The boxes / regions table of each part of a benchmark (label "" without parts)."""
    parts = evaluation_parts(table_benchmark(table), EVAL_MODELS[0], "split")
    return {part["label"] or "": part["boxes"] for part in parts}


# Ground-truth oracle tables of a benchmark, by benchmark name: {"metrics": METRIC_SCHEMA
# rows of the oracles, "false_negatives": negatives true of their image per generator and
# type}; the summary shows them beside the models (a data preset that knows its scenes
# may add them).
ORACLE_TABLES = {}


# Per-item predictions of the crossover comparison, by metric table (a data preset may add
# tables whose splits it knows): label -> one file per model, or one file for all models.
CROSSOVER_TABLES = {}


def crossover_tables():
    """The labelled prediction files the crossover compares; none unless two evaluated
    models were trained on different corpora."""
    if len({model_corpus(m) for m in EVAL_MODELS} - {None}) < 2:
        return {}
    per_model = lambda table: expand(
        "results/metrics/{model}/{table}_predictions.parquet",
        model=EVAL_MODELS,
        table=table,
    )
    tables = {}
    for name in benchmarks_of("crepe_systematicity", "pairs"):
        tables[name] = per_model(name)
        if BENCHMARKS[name]["kind"] == "crepe_systematicity":
            tables[f"{name}_bindsplit"] = per_model(f"{name}_bindsplit")
    return {**tables, **CROSSOVER_TABLES}


# ------------------------------------------------------------------ throughput benchmarks

BENCHMARK_JSONS = [
    f"results/benchmarks/{name}.json"
    for name in (
        "parser",
        "counting",
        "scorers",
        "evaluation",
        "model_families",
        "image_index",
        "scale",
        "attacks",
    )
]


def bench_corpus():
    if not CORPORA:
        raise WorkflowError(
            "the throughput benchmarks need a corpus (config `corpora`)"
        )
    return CORPORA[0]
