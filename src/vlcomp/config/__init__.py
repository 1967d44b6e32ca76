"""Loading and validating the workflow configuration, with messages that name the key.

``validate_config`` checks the whole config: its schema (``config.schema``, whose messages
name the key), the overrides read as the schema asks (``config.overrides``: dotted keys,
``--config`` strings), then the rules that span sections. The generated reference,
config/README.md (``python -m vlcomp.config``), is ``config.docs``'s.
"""

from __future__ import annotations

import copy
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema

from vlcomp.config.overrides import coerce_to_schema, expand_dotted_keys
from vlcomp.config.schema import (
    EVAL_SET_SOURCES,
    ConfigError,
    describe_error,
    load_schema,
    new_entry_hint,
    resolve_ref,
)
from vlcomp.importers.registry import (
    CANDIDATES,
    IMAGE_SELECTION,
    TWO_IMAGES,
    TWO_POSITIVES,
    formats_of,
)
from vlcomp.models.hf_models import TransformersSource, source_problem


def validate_config(config: dict[str, Any]) -> dict[str, Any]:
    """Return a validated copy with defaults filled and presets registered; raise
    ConfigError naming every bad key. Dotted top-level keys are expanded first
    (``expand_dotted_keys``), and strings where the schema wants numbers, booleans, nulls or
    lists (``--config`` overrides) are read as such (``coerce_to_schema``)."""
    schema = load_schema()
    expanded = expand_dotted_keys(config)
    filled = _checked(expanded, schema)
    if not expanded.get("llm"):  # an empty llm block is no endpoint, as null is
        filled["llm"] = None
    filled = _register_presets(filled)
    filled = drop_absent_eval_sets(filled)
    _check_references(filled)
    return filled


def validate_section(name: str, value: Any) -> Any:
    """One top-level section (``llm``, ``evaluate``, ...) checked against its schema and
    filled with its defaults as ``validate_config`` does, without the rules that span
    sections; ConfigError names every bad key."""
    schema = load_schema()
    if name not in schema["properties"]:
        raise ConfigError(f"invalid configuration:\n  config key '{name}': not a section")
    sub = {
        "$defs": schema["$defs"],
        "type": "object",
        "properties": {name: schema["properties"][name]},
    }
    return _checked({name: value}, sub)[name]


def _checked(config: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    """``config`` coerced, validated against ``schema`` and filled with its defaults."""
    config = coerce_to_schema(config, schema, schema)
    validator = jsonschema.Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(config), key=lambda e: list(map(str, e.absolute_path)))
    if errors:
        lines, hinted = [], set()
        for error in errors:
            line, path = describe_error(error, schema), list(error.absolute_path)
            if error.validator in ("required", "dependentRequired") and str(path) not in hinted:
                hinted.add(str(path))
                line += new_entry_hint(path, config, schema)
            lines.append(line)
        raise ConfigError("invalid configuration:\n  " + "\n  ".join(lines))
    return _fill_defaults(copy.deepcopy(config), schema, schema)


def _fill_defaults(instance: Any, schema: dict[str, Any], root: dict[str, Any]) -> Any:
    schema = resolve_ref(schema, root)
    if isinstance(instance, dict):
        for key, sub in schema.get("properties", {}).items():
            if key not in instance and "default" in sub:
                instance[key] = copy.deepcopy(sub["default"])
            if key in instance:
                instance[key] = _fill_defaults(instance[key], sub, root)
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict):
            for key in instance:
                if key not in schema.get("properties", {}):
                    instance[key] = _fill_defaults(instance[key], extra, root)
        return _canonical_order(instance, schema)
    return instance


def _canonical_order(instance: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    """Keys in the schema's order, free-form keys sorted; maps of named entries (corpora,
    models, ...) keep the user's order. Rules take config sections as params, and Snakemake
    compares params as written: the same settings must look the same however the user
    ordered them."""
    properties = schema.get("properties", {})
    if not properties and isinstance(schema.get("additionalProperties"), dict):
        return instance
    known = [k for k in properties if k in instance]
    return {k: instance[k] for k in [*known, *sorted(set(instance) - set(known))]}


def _absent_paths(key: str, entry: dict[str, Any]) -> list[str]:
    """``<path> (<config key>)`` for each of an eval set's files that is not on disk."""
    paths = [(f"{key}.{f}", entry[f]) for f in ("dir", "captions") if f in entry]
    paths += [(f"{key}.files[{i}]", f) for i, f in enumerate(entry.get("files", []))]
    paths.append((f"{key}.images", entry["images"]))
    return [f"{path} ({k})" for k, path in paths if _missing(path)]


def drop_absent_eval_sets(
    config: dict[str, Any], say: Callable[[str], None] | None = None
) -> dict[str, Any]:
    """The config without its ``optional`` eval sets whose files or images are not on disk,
    and without the benchmarks evaluated on them: one line each on stderr (``say``) naming
    the benchmark, its eval set and the missing paths. When optional eval sets were dropped
    and no benchmark is left, raise ``ConfigError`` listing what was missing."""
    say = say or (lambda line: print(line, file=sys.stderr))
    absent = {
        name: missing
        for name, entry in config["eval_sets"].items()
        if entry.get("optional") and (missing := _absent_paths(f"eval_sets.{name}", entry))
    }
    if not absent:
        return config
    dropped = []
    for name, entry in config["benchmarks"].items():
        if entry["eval_set"] in absent:
            missing = "; ".join(absent[entry["eval_set"]])
            dropped.append(f"{name}: not found: {absent[entry['eval_set']][0]}")
            evalset = entry["eval_set"]
            say(f"skipping benchmark '{name}' (eval set '{evalset}'): not found: {missing}")
    for name in absent:
        if not any(b["eval_set"] == name for b in config["benchmarks"].values()):
            say(f"skipping eval set '{name}': not found: {'; '.join(absent[name])}")
    config = {
        **config,
        "eval_sets": {k: v for k, v in config["eval_sets"].items() if k not in absent},
        "benchmarks": {
            k: v for k, v in config["benchmarks"].items() if v["eval_set"] not in absent
        },
    }
    if not config["benchmarks"]:
        raise ConfigError(
            "invalid configuration:\n  no benchmark is present on disk (each eval set is "
            "optional and absent): " + ("; ".join(dropped) or ", ".join(absent))
        )
    return config


def _register_presets(config: dict[str, Any]) -> dict[str, Any]:
    """A data preset (the world) adds eval sets and corpora under ordinary names."""
    if not config.get("world"):
        return config
    from vlcomp.world.preset import register

    try:
        return register(config)
    except ValueError as error:
        key, _, message = str(error).partition(": ")
        raise ConfigError(f"invalid configuration:\n  config key '{key}': {message}") from None


# Paths under results/ are written by the workflow itself (e.g. a preset's files).
PRODUCED_PREFIX = "results/"

# Imported benchmarks by shape (vlcomp.importers.registry): 1+N candidate sets, two
# positives + a negative, two images, one caption and two images (image selection).
SET_FORMATS = formats_of(CANDIDATES)
TWO_POSITIVE_FORMATS = formats_of(TWO_POSITIVES)
TWO_IMAGE_FORMATS = formats_of(TWO_IMAGES)
IMAGE_SELECTION_FORMATS = formats_of(IMAGE_SELECTION)
BENCHMARK_EVAL_FORMATS = {
    "crepe_systematicity": ("visual_genome",),
    "crepe_productivity": ("visual_genome",),
    "pairs": ("visual_genome", "coco_captions"),
    "retrieval": ("coco_captions",),
    "imported": (
        *SET_FORMATS,
        *TWO_POSITIVE_FORMATS,
        *TWO_IMAGE_FORMATS,
        *IMAGE_SELECTION_FORMATS,
    ),
}


def _missing(path: str) -> bool:
    return not path.startswith(PRODUCED_PREFIX) and not Path(path).exists()


def _check_eval_sets(config: dict[str, Any]) -> list[str]:
    from vlcomp.ingest.vg import RegionFilters

    problems = []
    for name, entry in config["eval_sets"].items():
        key = f"eval_sets.{name}"
        fmt = entry["format"]
        for field in EVAL_SET_SOURCES[fmt]:
            if field not in entry:
                problems.append(f"config key '{key}.{field}': required for format {fmt}")
        paths = [(f"{key}.images", entry["images"])]
        paths += [(f"{key}.{f}", entry[f]) for f in ("dir", "captions") if f in entry]
        paths += [(f"{key}.files[{i}]", f) for i, f in enumerate(entry.get("files", []))]
        problems += [f"config key '{k}': not found: {path}" for k, path in paths if _missing(path)]
        if fmt == "visual_genome":
            try:
                RegionFilters.from_options(entry["regions"])
            except ValueError as error:
                problems.append(f"config key '{key}.regions': {error}")
        if entry["options"] and fmt in ("visual_genome", "coco_captions"):
            problems.append(f"config key '{key}.options': only imported formats have options")
        if entry["regions"] and fmt != "visual_genome":
            problems.append(
                f"config key '{key}.regions': only visual_genome eval sets have regions"
            )
    return problems


def _check_benchmarks(config: dict[str, Any]) -> list[str]:
    problems = []
    for name, entry in config["benchmarks"].items():
        key = f"benchmarks.{name}"
        eval_set = config["eval_sets"].get(entry["eval_set"])
        if eval_set is None:
            problems.append(
                f"config key '{key}.eval_set': no eval set named '{entry['eval_set']}' "
                f"(eval_sets has: {', '.join(config['eval_sets']) or 'none'})"
            )
        elif eval_set["format"] not in BENCHMARK_EVAL_FORMATS[entry["kind"]]:
            wanted = " or ".join(BENCHMARK_EVAL_FORMATS[entry["kind"]])
            problems.append(
                f"config key '{key}.eval_set': a {entry['kind']} benchmark needs a {wanted} "
                f"eval set; '{entry['eval_set']}' is {eval_set['format']}"
            )
        for index, corpus in enumerate(entry["corpora"]):
            if corpus not in config["corpora"]:
                problems.append(
                    f"config key '{key}.corpora[{index}]': no corpus named '{corpus}' "
                    f"(corpora has: {', '.join(config['corpora']) or 'none'})"
                )
        if entry["kind"] == "crepe_systematicity" and not entry["corpora"]:
            problems.append(f"config key '{key}.corpora': name the training corpora to split by")
    return problems


def _check_models(config: dict[str, Any]) -> list[str]:
    corpora = config["corpora"]
    problems = []
    for key, entry in config["models"].items():
        if "train" in entry:
            corpus = entry["train"]["corpus"]
            if corpus not in corpora:
                problems.append(
                    f"config key 'models.{key}.train.corpus': no corpus named '{corpus}' "
                    f"(corpora has: {', '.join(corpora) or 'none'})"
                )
            elif not corpora[corpus].get("images"):
                problems.append(
                    f"config key 'models.{key}.train.corpus': corpus '{corpus}' has no "
                    f"images folder (corpora.{corpus}.images)"
                )
            if (
                entry["train"].get("negatives_per_pair", 1) != 1
                and entry["train"].get("hard_negatives", "none") == "none"
            ):
                problems.append(
                    f"config key 'models.{key}.train.negatives_per_pair': set, but "
                    "train.hard_negatives is none (there are no hard negatives to draw)"
                )
            base = entry["train"].get("start_from")
            base_entry = config["models"].get(base) if base is not None else None
            if base is not None and (base_entry is None or "train" not in base_entry):
                problems.append(
                    f"config key 'models.{key}.train.start_from': '{base}' is not a model "
                    "this workflow trains (a models entry with a train block)"
                )
            elif base_entry is not None and base_entry["open_clip"] != entry["open_clip"]:
                problems.append(
                    f"config key 'models.{key}.train.start_from': '{base}' is a "
                    f"{base_entry['open_clip']}, not a {entry['open_clip']}"
                )
        for index, corpus in enumerate(entry.get("training_corpora", [])):
            if corpus not in corpora:
                problems.append(
                    f"config key 'models.{key}.training_corpora[{index}]': no corpus named "
                    f"'{corpus}' (corpora has: {', '.join(corpora) or 'none'})"
                )
        if "transformers" in entry:
            source = TransformersSource.from_entry(entry["transformers"], entry.get("cache_dir"))
            problem = source_problem(key, source)
            if problem:
                problems.append(f"config key '{problem[0]}': {problem[1]}")
        if "checkpoint" in entry and _missing(entry["checkpoint"]):
            problems.append(
                f"config key 'models.{key}.checkpoint': file not found: {entry['checkpoint']}"
            )
    probes = (config.get("world") or {}).get("probes") or {}
    for index, name in enumerate(probes.get("models", [])):
        if "train" not in config["models"].get(name, {}):
            problems.append(
                f"config key 'world.probes.models[{index}]': '{name}' is not a model this "
                "workflow trains (a models entry with a train block)"
            )
    probe_corpus = probes.get("corpus")
    if probe_corpus is not None and probe_corpus not in config["world"]["corpora"]:
        problems.append(
            f"config key 'world.probes.corpus': no world corpus named '{probe_corpus}' "
            f"(world.corpora has: {', '.join(config['world']['corpora'])})"
        )
    for index, name in enumerate(config["evaluate"]["models"]):
        if name not in config["models"]:
            problems.append(
                f"config key 'evaluate.models[{index}]': no model named '{name}' "
                f"(models has: {', '.join(config['models'])})"
            )
    return problems


def _check_evaluate(config: dict[str, Any]) -> list[str]:
    """Mixed precision needs CUDA: caught here when the device says cpu (for auto, only the
    job knows; it fails as fast, before embedding anything)."""
    settings = config["evaluate"]
    device = settings["device"]
    if settings["precision"] in ("bf16", "fp16") and device != "auto" and "cuda" not in device:
        return [
            f"config key 'evaluate.precision': {settings['precision']} needs a CUDA device, "
            f"but evaluate.device is '{device}' (use auto or fp32 on a CPU)"
        ]
    return []


def _check_references(config: dict[str, Any]) -> None:
    problems = _check_models(config) + _check_eval_sets(config) + _check_benchmarks(config)
    problems += _check_evaluate(config) + _check_stage_options(config)
    if problems:
        raise ConfigError("invalid configuration:\n  " + "\n  ".join(problems))


def _check_stage_options(config: dict[str, Any]) -> list[str]:
    """Options that the stages validate themselves, checked before any job runs."""
    from vlcomp.ingest.job import IngestOptions

    problems = []
    if config["priors"]["lm_scorer"] not in config["scorers"]["use"]:
        problems.append(
            f"config key 'priors.lm_scorer': '{config['priors']['lm_scorer']}' is not in "
            f"scorers.use {config['scorers']['use']}"
        )
    rules = config["ingest"]["rules"]
    for name, entry in config["corpora"].items():
        try:
            IngestOptions.parse(entry["format"], {"rules": rules, **entry["options"]})
        except ValueError as error:
            problems.append(f"config key 'corpora.{name}.options': {error}")
        for index, path in enumerate(entry["inputs"]):
            if _missing(path):
                problems.append(f"config key 'corpora.{name}.inputs[{index}]': not found: {path}")
        if entry.get("files_per_job") is not None:
            from vlcomp.ingest.parts import plan_parts

            try:
                plan_parts(
                    entry["format"], entry["inputs"], entry["options"], entry["files_per_job"]
                )
            except (ValueError, OSError) as error:
                problems.append(f"config key 'corpora.{name}.files_per_job': {error}")
        if entry.get("images") and _missing(entry["images"]):
            problems.append(f"config key 'corpora.{name}.images': not found: {entry['images']}")
    try:
        IngestOptions.parse("cc12m_tsv", {"rules": rules})
    except ValueError as error:
        problems.append(f"config key 'ingest.rules': {error}")
    uses_llm = [
        name
        for name, entry in config["benchmarks"].items()
        if "llm" in (entry["negatives"], entry["captions"])
    ]
    if uses_llm and not config["llm"]:
        problems.append(
            f"config key 'llm': benchmarks {uses_llm} ask for LLM generation; configure an "
            "endpoint (llm.model, llm.base_url, llm.api_key_env)"
        )
    if config["llm"]:
        from vlcomp.llm.settings import LLMSettings

        try:
            LLMSettings.from_config(config["llm"])
        except ValueError as error:
            problems.append(f"config key {error}")
    for name, entry in config["benchmarks"].items():
        key = f"benchmarks.{name}"
        if entry["review"] and _missing(entry["review"]):
            problems.append(f"config key '{key}.review': not found: {entry['review']}")
        if entry["kind"] != "pairs" and entry["negatives"] != "template":
            problems.append(f"config key '{key}.negatives': only pairs benchmarks have negatives")
        if entry["families"] and entry["kind"] != "pairs":
            problems.append(
                f"config key '{key}.families': only a pairs benchmark with negatives llm "
                f"chooses families; '{name}' is a {entry['kind']} benchmark"
            )
        elif entry["families"] and entry["negatives"] != "llm":
            problems.append(
                f"config key '{key}.families': only negatives llm chooses families; '{name}' "
                "has negatives template, which makes every family (set negatives: llm or "
                "remove families)"
            )
        if entry["kind"] != "crepe_productivity" and entry["captions"] != "template":
            problems.append(f"config key '{key}.captions': only crepe_productivity has captions")
        if entry["review"] and "llm" not in (entry["negatives"], entry["captions"]):
            problems.append(f"config key '{key}.review': only LLM-generated items are reviewed")
        if entry["max_items"] is not None and not (
            entry["kind"] == "pairs" and entry["negatives"] == "llm"
        ):
            problems.append(
                f"config key '{key}.max_items': only a pairs benchmark with negatives llm samples "
                "the items sent to the LLM"
            )
    from vlcomp.negatives.productivity import ProductivitySettings
    from vlcomp.negatives.systematicity import resolve_settings

    try:
        resolve_settings(config["negatives"]["systematicity"])
    except ValueError as error:
        problems.append(f"config key 'negatives.systematicity': {error}")

    try:
        ProductivitySettings.from_mapping(config["negatives"]["productivity"])
    except ValueError as error:
        problems.append(f"config key 'negatives.productivity': {error}")
    return problems


def training_corpora(config: dict[str, Any], model: str) -> list[str]:
    """The corpora a model was trained on, when known (a train block implies its corpus)."""
    entry = config["models"][model]
    named = list(entry.get("training_corpora", []))
    if "train" in entry and entry["train"]["corpus"] not in named:
        named.insert(0, entry["train"]["corpus"])
    return named
