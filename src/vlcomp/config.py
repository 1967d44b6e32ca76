"""Loading and validating the workflow configuration, with messages that name the key."""

from __future__ import annotations

import contextlib
import copy
import difflib
import functools
import json
import sys
from collections.abc import Callable
from importlib.resources import files
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from vlcomp.importers.registry import (
    CANDIDATES,
    IMAGE_SELECTION,
    TWO_IMAGES,
    TWO_POSITIVES,
    formats_of,
)
from vlcomp.importers.registry import FORMATS as IMPORTED_FORMATS
from vlcomp.models.hf_models import TransformersSource, source_problem


class ConfigError(ValueError):
    """A configuration problem; the message names the offending key or path."""


@functools.cache
def _parsed_schema() -> dict[str, Any]:
    """The schema file with the eval-set formats filled in from their registries (the two
    eval-set readers and ``vlcomp.importers.registry.FORMATS``): a new importer is registered
    in one place."""
    schema = yaml.safe_load(files("vlcomp").joinpath("schemas/config.schema.yaml").read_text())
    schema["$defs"]["eval_set"]["properties"]["format"]["enum"] = list(EVAL_SET_SOURCES)
    return schema


def load_schema() -> dict[str, Any]:
    """The config schema (a copy: callers may change it; parsed once per process)."""
    return copy.deepcopy(_parsed_schema())


def _key_path(path: Any) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "<top level>"


_TYPE_NAMES = {
    "integer": "an integer",
    "number": "a number",
    "string": "a string",
    "boolean": "true or false",
    "null": "null",
    "array": "a list",
    "object": "a mapping",
}
_BOUNDS = {
    "minimum": ">= {}",
    "exclusiveMinimum": "> {}",
    "maximum": "<= {}",
    "exclusiveMaximum": "< {}",
    "multipleOf": "a multiple of {}",
}


def _wanted(schema: dict[str, Any]) -> str:
    """What a (scalar) schema takes, in words: ``an integer >= 2, a multiple of 2``."""
    if "const" in schema:
        return repr(schema["const"])
    if "enum" in schema:
        return "one of " + ", ".join(map(repr, schema["enum"]))
    types = schema.get("type", [])
    words = " or ".join(_TYPE_NAMES[t] for t in ([types] if isinstance(types, str) else types))
    bounds = [text.format(schema[key]) for key, text in _BOUNDS.items() if key in schema]
    return ", ".join([" ".join([words, bounds[0]]) if bounds else words, *bounds[1:]])


def _describe(error: jsonschema.ValidationError, root: dict[str, Any]) -> str:
    """One line per problem, naming the key. A schema's ``x-message`` replaces the
    validator's message (which quotes the value: never for a key that may hold a secret),
    and ``x-forbidden`` gives the reason a key must not be there."""
    where = _key_path(error.absolute_path)
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        allowed = sorted(error.schema.get("properties", {}))
        extra = sorted(set(error.instance) - set(allowed))
        forbidden = error.schema.get("x-forbidden", {})
        lines = [
            f"config key '{where}.{key}': {forbidden[key]}" for key in extra if key in forbidden
        ]
        extra = [key for key in extra if key not in forbidden]
        hint = f" (allowed: {', '.join(allowed)})" if allowed else ""
        if extra:
            lines.append(
                f"config key '{where}': unknown key(s) {', '.join(map(repr, extra))}{hint}"
            )
        return "\n  ".join(lines)
    if "x-message" in error.schema:
        return f"config key '{where}': {' '.join(error.schema['x-message'].split())}"
    if error.validator == "oneOf" and isinstance(error.instance, dict):
        return (
            f"config key '{where}': give exactly one of 'pretrained', 'checkpoint' or 'train' "
            "(with open_clip), or a transformers block"
        )
    if error.validator == "not" and isinstance(error.instance, dict):
        return f"config key '{where}': give either open_clip or transformers, not both"
    if error.validator in ("anyOf", "oneOf"):
        options = " or ".join(_wanted(_resolve(s, root)) for s in error.validator_value)
        return f"config key '{where}': {error.instance!r} is not {options}"
    message = f"config key '{where}': {error.message}"
    array = error.validator == "type" and "array" in error.validator_value
    if array and not isinstance(error.instance, dict | list):
        message += f" (a list: [{error.instance}])"
    return message


def _new_entry_hint(path: list[Any], config: dict[str, Any], root: dict[str, Any]) -> str:
    """For an incomplete entry of a map of named entries (models, benchmarks, ...) whose
    name is close to another's: the override that made it probably misspelt that name
    (``--config 'models={world_cc21m: {...}}'`` adds a model rather than changing one)."""
    if not path or not isinstance(path[-1], str):
        return ""
    schema, siblings = root, config
    for part in path[:-1]:
        schema = _resolve(schema, root)
        schema = schema.get("properties", {}).get(part, schema.get("additionalProperties"))
        siblings = siblings.get(part) if isinstance(siblings, dict) else None
        if not isinstance(schema, dict):
            return ""
    if not isinstance(siblings, dict):
        return ""
    if not isinstance(_resolve(schema, root).get("additionalProperties"), dict):
        return ""
    others = [str(name) for name in siblings if name != path[-1]]
    close = difflib.get_close_matches(path[-1], others, n=1, cutoff=0.75)
    return f" (a new entry: is '{path[-1]}' a misspelling of '{close[0]}'?)" if close else ""


def _fill_defaults(instance: Any, schema: dict[str, Any], root: dict[str, Any]) -> Any:
    schema = _resolve(schema, root)
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


def expand_dotted_keys(config: dict[str, Any]) -> dict[str, Any]:
    """``config`` with each top-level key ``a.b.c`` set as ``config[a][b][c]``, into the
    section as it is (its other keys kept: ``refine.grid: 20`` changes only the grid). A
    dotted key wins over the same key written nested. The input is not changed.

    Snakemake's ``--config`` refuses a dotted name before the workflow is read (Snakemake
    8.17+: "Config entry must start with a valid identifier"); a dotted key arrives from a
    config file or Snakemake's Python API. A name with a dot of its own (a model
    ``vit.b32``) needs the nested form."""
    out = {key: value for key, value in config.items() if not _dotted(key)}
    for key, value in config.items():
        if not _dotted(key):
            continue
        *sections, leaf = key.split(".")
        if not all([*sections, leaf]):
            raise ConfigError(f"invalid configuration:\n  config key '{key}': an empty name")
        node = out
        for depth, name in enumerate(sections):
            child = node.get(name)
            if child is not None and not isinstance(child, dict):
                section = ".".join(sections[: depth + 1])
                raise ConfigError(
                    f"invalid configuration:\n  config key '{key}': '{section}' is "
                    f"{child!r}, not a section"
                )
            node[name] = dict(child or {})
            node = node[name]
        node[leaf] = value
    return out


def _dotted(key: Any) -> bool:
    return isinstance(key, str) and "." in key


def coerce_to_schema(instance: Any, schema: dict[str, Any], root: dict[str, Any]) -> Any:
    """``instance`` with strings read as the values the schema asks for.

    ``snakemake --config key={a: 1}`` reads nested values with YAML's BaseLoader, which keeps
    every scalar a string ("400000", "true", "null"). A string is read as YAML reads the same
    text in a config file (or as a float: YAML 1.1 keeps "1e-3" a string) where the schema
    takes that reading: "null" is null where the key may be null, "3" is 3 where it takes a
    name or a column index. Otherwise a string the schema takes stays a string ("007" for a
    string key); one whose reading has the key's type but not its range becomes that
    reading, so that the error names the value (0 is less than the minimum of 1). An
    integral float is an int where the schema wants an integer (1e3: 1000). Anything else is
    left for the validator to report, naming the key."""
    schema = _resolve(schema, root)
    if isinstance(instance, dict):
        properties = schema.get("properties", {})
        extra = schema.get("additionalProperties")
        return {
            key: coerce_to_schema(
                value,
                properties.get(key, extra if isinstance(extra, dict) else {}),
                root,
            )
            for key, value in instance.items()
        }
    if isinstance(instance, list) and isinstance(schema.get("items"), dict):
        return [coerce_to_schema(value, schema["items"], root) for value in instance]
    if not schema:
        return instance
    if isinstance(instance, float) and instance.is_integer() and _wants_integer(schema):
        return int(instance)
    if not isinstance(instance, str):
        return instance
    readings = _readings(instance, _wants_integer(schema))
    for reading in readings:
        if _accepts(schema, root, reading):
            return reading
    if _accepts(schema, root, instance):
        return instance
    for reading in readings:  # the type the key wants, out of range: the range is reported
        if "type" in schema and _accepts({"type": schema["type"]}, root, reading):
            return reading
    return instance


def _wants_integer(schema: dict[str, Any]) -> bool:
    types = schema.get("type", [])
    types = [types] if isinstance(types, str) else types
    return "integer" in types and "number" not in types


def _readings(text: str, integer: bool) -> list[Any]:
    """What ``text`` says as YAML, and as a float, other than a string: the readings a
    --config string may stand for (integral floats as integers where the key wants one)."""
    readings = []
    with contextlib.suppress(yaml.YAMLError):
        readings.append(yaml.safe_load(text))
    with contextlib.suppress(ValueError):
        readings.append(float(text))
    if integer:
        readings = [int(r) if isinstance(r, float) and r.is_integer() else r for r in readings]
    return [r for r in readings if not isinstance(r, str)]


def _accepts(schema: dict[str, Any], root: dict[str, Any], value: Any) -> bool:
    return jsonschema.Draft202012Validator({**schema, "$defs": root.get("$defs", {})}).is_valid(
        value
    )


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
            line, path = _describe(error, schema), list(error.absolute_path)
            if error.validator in ("required", "dependentRequired") and str(path) not in hinted:
                hinted.add(str(path))
                line += _new_entry_hint(path, config, schema)
            lines.append(line)
        raise ConfigError("invalid configuration:\n  " + "\n  ".join(lines))
    return _fill_defaults(copy.deepcopy(config), schema, schema)


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

EVAL_SET_SOURCES = {
    "visual_genome": ("dir",),
    "coco_captions": ("captions",),
    **{fmt: ("files",) for fmt in IMPORTED_FORMATS},
}
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


def _resolve(schema: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        return {**root["$defs"][name], **{k: v for k, v in schema.items() if k != "$ref"}}
    return schema


def _doc_rows(schema: dict[str, Any], root: dict[str, Any], prefix: str) -> list[str]:
    schema = _resolve(schema, root)
    rows = []
    for key, sub in schema.get("properties", {}).items():
        sub = _resolve(sub, root)
        path = f"{prefix}.{key}" if prefix else key
        kind = sub.get("type", "enum" if "enum" in sub else "")
        if "enum" in sub:
            kind = " \\| ".join(f"`{v}`" for v in sub["enum"])
        default = (
            f"`{json.dumps(sub['default'])}`"
            if "default" in sub
            else "required"
            if key in schema.get("required", [])
            else ""
        )
        text = " ".join(str(sub.get("description", "")).split())
        rows.append(f"| `{path}` | {kind} | {default} | {text} |")
        rows += _doc_rows(sub, root, path)
        extra = sub.get("additionalProperties")
        if isinstance(extra, dict):
            rows += _doc_rows(extra, root, f"{path}.<name>")
    return rows


FORMATS_BEGIN = (
    "<!-- corpus formats: rendered from the format registry (vlcomp.ingest.readers.FORMATS) "
    "by vlcomp.ingest.job.format_docs; a test fails when they differ -->"
)
FORMATS_END = "<!-- end of corpus formats -->"

# (label, where it appears, meaning): the legend of config/README.md. A test checks that it
# names every label the split assignment and the image index write.
SPLIT_LABELS: tuple[tuple[str, str, str], ...] = (
    (
        "`SC`",
        "CREPE split of an item, per training corpus",
        "Seen Compounds: every atom and every compound of the item's scene graph occurs in "
        "the corpus (in at least `splits.min_count` captions).",
    ),
    (
        "`UC`",
        "CREPE split",
        "Unseen Compounds: every atom is seen, at least one compound (attribute-object or "
        "object-relation-object) is not.",
    ),
    ("`UA`", "CREPE split", "Unseen Atoms: some object, attribute or relation is not seen."),
    (
        "`no_compound`",
        "CREPE split",
        "The item has no compound, so no split (CREPE's sets hold only items with one).",
    ),
    (
        "`perfect`",
        "BindSplit label of one attribute-object binding",
        "The corpus has this attribute on this object as a phrase of its own (object "
        "lemmatised, attribute case-folded).",
    ),
    ("`close`", "BindSplit binding label", "Seen only inside a longer attributive phrase."),
    ("`none`", "BindSplit binding label", "Not seen at all."),
    (
        "`perfect`, `close`, `none`, `perfect+close`, `perfect+none`, `close+none`, "
        "`perfect+close+none`",
        "BindSplit bucket of a sample (a positive text with its attribute-swapped negatives)",
        "The labels that occur among the sample's bindings.",
    ),
    (
        "`seen`, `mixed`, `unseen`",
        "BindSplit split of a sample, under a rule",
        "Every binding of the sample counts as seen under the rule / some do / none does.",
    ),
    ("`strict` (STRICT)", "BindSplit rule", "Only `perfect` counts as seen."),
    ("`loose` (LOOSE)", "BindSplit rule", "`perfect` and `close` count as seen."),
    (
        "`no_binding`",
        "BindSplit",
        "The text has no attribute-object binding: no bucket and no split.",
    ),
    (
        "`excluded` (`missing`, `unreadable`)",
        "any benchmark, per model (`results/metrics/<model>/<benchmark>_excluded.parquet`)",
        "The item's image is missing or cannot be decoded (its status in the image index): "
        "the item is not evaluated, and counted.",
    ),
)


def _appendix() -> list[str]:
    from vlcomp.ingest.job import format_docs

    return [
        "",
        "## Corpus formats and their options",
        "",
        "`corpora.<name>.format` says how the files of `corpora.<name>.inputs` are read and",
        "`corpora.<name>.options` sets that format's options (any other key is an error",
        "before any job runs). A file key is the file name without its suffixes.",
        "",
        FORMATS_BEGIN,
        format_docs().rstrip("\n"),
        FORMATS_END,
        "",
        "## Split labels",
        "",
        "The labels the split tables, metric tables and figures use (`splits.min_count` sets",
        "how many captions make a unit seen).",
        "",
        "| label | where | meaning |",
        "|---|---|---|",
        *(f"| {label} | {where} | {meaning} |" for label, where, meaning in SPLIT_LABELS),
    ]


def config_docs() -> str:
    """Markdown reference of every key, generated from the schema (config/README.md), then
    the corpus formats (from the format registry) and the legend of split labels."""
    schema = load_schema()
    header = [
        "# Configuration reference",
        "",
        "Generated from `src/vlcomp/schemas/config.schema.yaml` by",
        "`python -m vlcomp.config > config/README.md`; a test keeps it in sync.",
        "`config/config.yaml` is the embedded default (the synthetic world). A file given",
        "with `--configfile` replaces it (presets for real data: `config/presets/`, see",
        "`config/presets/README.md`). Unknown keys are errors; a key with a default may be",
        "left out. A model needs exactly one of `pretrained`, `checkpoint` or `train`.",
        "Paths under `results/` are produced by the workflow and not checked up front.",
        "",
        "| key | type | default | meaning |",
        "|---|---|---|---|",
    ]
    return "\n".join(header + _doc_rows(schema, schema, "") + _appendix()) + "\n"


if __name__ == "__main__":
    print(config_docs(), end="")
