"""Build a scorer from a config entry such as ``{kind: ngram, model: results/lm.parquet}``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from vlcomp.scorers.base import TextScorer

CAUSAL_LM_OPTIONS: dict[str, Any] = {
    "batch_size": 32,
    "score": "mean_logprob",  # or neg_perplexity
    "add_bos": True,
    "max_length": None,  # None: the model's position limit
    "device": "cpu",  # or cuda, auto
    "dtype": "float32",  # or bfloat16, float16
}

# Options of each kind besides ``kind``: (required, optional with their defaults).
SPEC_KEYS: dict[str, tuple[set[str], dict[str, Any]]] = {
    "ngram": ({"model"}, {"order": None}),
    "causal_lm": ({"model"}, CAUSAL_LM_OPTIONS),
    "causal_lm_average": ({"models"}, CAUSAL_LM_OPTIONS),
    "cola": (
        set(),
        {
            "model": "textattack/distilbert-base-uncased-CoLA",
            "batch_size": 64,
            "max_length": 128,
            "acceptable_label": None,
            "device": "cpu",
        },
    ),
    "vera": (
        set(),
        {
            "model": "liujch1998/vera",
            "batch_size": 16,
            "max_length": 128,
            "device": "cpu",
            "dtype": "float32",
        },
    ),
    "minilm_familiarity": (
        {"index"},
        {"k": 10, "batch_size": 128, "device": "cpu", "queries": None},
    ),
}


def _options(spec: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    kind = spec.get("kind")
    if kind not in SPEC_KEYS:
        raise ValueError(f"scorer kind must be one of {sorted(SPEC_KEYS)}, got {kind!r}")
    required, optional = SPEC_KEYS[kind]
    given = {key: value for key, value in spec.items() if key != "kind"}
    missing = sorted(required - set(given))
    unknown = sorted(set(given) - required - set(optional))
    if missing or unknown:
        raise ValueError(
            f"scorer '{kind}': missing {missing}, unknown {unknown}; "
            f"takes {sorted(required)} and optionally {sorted(optional)}"
        )
    return kind, {**optional, **given}


def _ngram(options: dict[str, Any]) -> TextScorer:
    from vlcomp.scorers.ngram import NgramLM

    model = NgramLM.load(options["model"])
    if options["order"] is not None and options["order"] != model.order:
        raise ValueError(
            f"{options['model']}: an order-{model.order} model, but the spec asks order "
            f"{options['order']}"
        )
    return model


def _causal_lm(options: dict[str, Any]) -> TextScorer:
    from vlcomp.scorers.causal_lm import CausalLMScorer

    return CausalLMScorer(**options)


def _causal_lm_average(options: dict[str, Any]) -> TextScorer:
    from vlcomp.scorers.causal_lm import CausalLMAverageScorer, CausalLMScorer

    models = options.pop("models")
    if isinstance(models, str) or not models:
        raise ValueError("causal_lm_average: `models` must be a non-empty list")
    return CausalLMAverageScorer([CausalLMScorer(model, **options) for model in models])


def _cola(options: dict[str, Any]) -> TextScorer:
    from vlcomp.scorers.classifiers import ColaScorer

    return ColaScorer(options.pop("model"), **options)


def _vera(options: dict[str, Any]) -> TextScorer:
    from vlcomp.scorers.classifiers import VeraScorer

    return VeraScorer(options.pop("model"), **options)


def _familiarity(options: dict[str, Any]) -> TextScorer:
    from vlcomp.scorers.familiarity import MiniLMFamiliarityScorer

    return MiniLMFamiliarityScorer(options.pop("index"), **options)


BUILDERS: dict[str, Callable[[dict[str, Any]], TextScorer]] = {
    "ngram": _ngram,
    "causal_lm": _causal_lm,
    "causal_lm_average": _causal_lm_average,
    "cola": _cola,
    "vera": _vera,
    "minilm_familiarity": _familiarity,
}


def make_scorer(spec: dict[str, Any]) -> TextScorer:
    """A scorer from a config mapping; unknown or missing keys fail naming the allowed ones.

    Kinds and keys (defaults in ``SPEC_KEYS``): ``ngram`` (model: a ``train_ngram`` file;
    order: checked against it), ``causal_lm`` (model: hub id or ``save_pretrained``
    directory), ``causal_lm_average`` (models: a list of those), ``cola``, ``vera`` (model:
    hub id or directory), ``minilm_familiarity`` (index: a ``build_minilm_index`` file; k;
    queries: an ``embed_queries`` file of texts already embedded).
    """
    kind, options = _options(dict(spec))
    return BUILDERS[kind](options)
