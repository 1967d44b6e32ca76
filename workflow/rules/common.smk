import re
import os
import sys

# The library lives in src/ (rule scripts add it to sys.path themselves).
sys.path.insert(0, os.path.join(workflow.basedir, "src"))
# Offline by default: a missing pretrained weight must fail at once, not retry for ~47 s.
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from vlcomp.config import ConfigError, training_corpus, validate_config  # noqa: E402
from vlcomp.scorers.trained import SCORER_FILES, scorer_specs  # noqa: E402

try:
    config.update(validate_config(config))
except ConfigError as error:
    raise WorkflowError(str(error)) from None


def check_models_available():
    from vlcomp.evaluate.models import ModelSpec, ModelUnavailableError, check_available

    for name in config["evaluate"]["models"]:
        entry = config["models"][name]
        try:
            check_available(
                ModelSpec.from_config(name, entry, checkpoint=trained_checkpoint(name)),
                produced_by_workflow="train" in entry,
            )
        except ModelUnavailableError as error:
            raise WorkflowError(str(error)) from None


def trained_checkpoint(model):
    if "train" in config["models"][model]:
        return f"results/models/{model}/checkpoint.pt"
    return None


def model_weights(wildcards):
    """The checkpoint a model's jobs depend on (none for pretrained tags)."""
    entry = config["models"][wildcards.model]
    if "train" in entry:
        return trained_checkpoint(wildcards.model)
    return entry.get("checkpoint", [])


check_models_available()

EVAL_MODELS = config["evaluate"]["models"]


wildcard_constraints:
    model="|".join(map(re.escape, config["models"])),
    corpus="|".join(map(re.escape, [*config["world"]["corpora"], *config["corpora"]])),
    shard=r"\d+-of-\d+",
    evalset="world_vg",
    textset="|".join(
        map(
            re.escape,
            [*config["world"]["corpora"], *config["corpora"], "sugarcrepe_audit"],
        )
    ),


WORLD_CORPORA = list(config["world"]["corpora"])
ALL_CORPORA = WORLD_CORPORA + list(config["corpora"])
N_SHARDS = config["ingest"]["n_shards"]
SHARDS = [f"{i}-of-{N_SHARDS}" for i in range(N_SHARDS)]
WORLD_FILE_GLOB = {"cc12m_tsv": "captions.tsv", "laion_parquet": "part-*.parquet"}


def corpus_source(corpus):
    """Loader format, inputs and options of a training corpus (world or user)."""
    rules = {"rules": config["ingest"]["rules"]}
    if corpus in config["world"]["corpora"]:
        fmt = config["world"]["corpora"][corpus]["format"]
        options = {**rules, "glob": WORLD_FILE_GLOB[fmt]}
        return fmt, [f"results/world/corpora/{corpus}"], options
    entry = config["corpora"][corpus]
    return entry["format"], entry["inputs"], {**rules, **entry["options"]}


def shard_files(pattern):
    """The per-shard files of one corpus: pattern has {{corpus}} and {shard}."""
    return expand(pattern, shard=SHARDS, allow_missing=True)


def factual_csv():
    """FACTUAL's gold scene graphs, when the configured file is there."""
    path = config["parser_quality"]["factual_csv"]
    return path if path and os.path.isfile(path) else None


def scorer_training_text(wildcards):
    """Caption tables a text set's scorers train on: a corpus's shards, or the audit's."""
    if wildcards.textset == "sugarcrepe_audit":
        return "results/audit/training_text.parquet"
    return expand(
        "results/captions/{corpus}/captions-{shard}.parquet",
        corpus=wildcards.textset,
        shard=SHARDS,
    )


def trained_scorers(textset):
    return [
        f"results/scorers/{textset}/{SCORER_FILES[name]}"
        for name in config["scorers"]["use"]
    ]


def corpus_of_model(wildcards):
    corpus = training_corpus(config, wildcards.model)
    if corpus is None:
        raise WorkflowError(
            f"models.{wildcards.model}: linguistic priors need the model's training corpus "
            "(models.<name>.train.corpus or training_corpus)"
        )
    return corpus


def embed_settings():
    """Only what changes embeddings, so that adding a model reruns nothing else."""
    settings = config["evaluate"]
    return {k: settings[k] for k in ("device", "threads", "batch_size")}


def set_eval_settings():
    """Settings of the retrieval-set evaluation (CREPE-style sets, bootstrap CIs)."""
    settings = config["evaluate"]
    return {
        **embed_settings(),
        "recall_at": settings["set_recall_at"],
        "bootstrap_resamples": settings["bootstrap_resamples"],
        "bootstrap_seed": settings["bootstrap_seed"],
    }
