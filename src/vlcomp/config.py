"""Loading and validating the workflow configuration, with messages that name the key."""

from __future__ import annotations

import copy
import json
from importlib.resources import files
from pathlib import Path
from typing import Any

import jsonschema
import yaml


class ConfigError(ValueError):
    """A configuration problem; the message names the offending key or path."""


def load_schema() -> dict[str, Any]:
    return yaml.safe_load(files("vlcomp").joinpath("schemas/config.schema.yaml").read_text())


def _key_path(path: Any) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "<top level>"


def _describe(error: jsonschema.ValidationError) -> str:
    where = _key_path(error.absolute_path)
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        allowed = sorted(error.schema.get("properties", {}))
        extra = sorted(set(error.instance) - set(allowed))
        hint = f" (allowed: {', '.join(allowed)})" if allowed else ""
        return f"config key '{where}': unknown key(s) {', '.join(map(repr, extra))}{hint}"
    if error.validator == "oneOf" and isinstance(error.instance, dict):
        return f"config key '{where}': give exactly one of 'pretrained', 'checkpoint' or 'train'"
    return f"config key '{where}': {error.message}"


def _fill_defaults(instance: Any, schema: dict[str, Any], root: dict[str, Any]) -> Any:
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        schema = {**root["$defs"][name], **{k: v for k, v in schema.items() if k != "$ref"}}
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
    return instance


def validate_config(config: dict[str, Any]) -> dict[str, Any]:
    """Return a validated copy with defaults filled; raise ConfigError naming every bad key."""
    schema = load_schema()
    validator = jsonschema.Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(config), key=lambda e: list(map(str, e.absolute_path)))
    if errors:
        raise ConfigError("invalid configuration:\n  " + "\n  ".join(map(_describe, errors)))
    filled = _fill_defaults(copy.deepcopy(config), schema, schema)
    _check_references(filled)
    return filled


def _check_references(config: dict[str, Any]) -> None:
    from vlcomp.world import parse_world_config

    try:
        parse_world_config(config["world"])
    except ValueError as error:
        key, _, message = str(error).partition(": ")
        raise ConfigError(f"invalid configuration:\n  config key '{key}': {message}") from None
    corpora = config["world"]["corpora"]
    problems = []
    for key, entry in config["models"].items():
        corpus = entry.get("train", {}).get("corpus") or entry.get("training_corpus")
        field = "train.corpus" if "train" in entry else "training_corpus"
        if corpus is not None and corpus not in corpora:
            problems.append(
                f"config key 'models.{key}.{field}': no world corpus named '{corpus}' "
                f"(world.corpora has: {', '.join(corpora)})"
            )
        if "checkpoint" in entry and not Path(entry["checkpoint"]).is_file():
            problems.append(
                f"config key 'models.{key}.checkpoint': file not found: {entry['checkpoint']}"
            )
    problems += _check_stage_options(config)
    for index, name in enumerate(config["evaluate"]["models"]):
        if name not in config["models"]:
            problems.append(
                f"config key 'evaluate.models[{index}]': no model named '{name}' "
                f"(models has: {', '.join(config['models'])})"
            )
    if problems:
        raise ConfigError("invalid configuration:\n  " + "\n  ".join(problems))


def _check_stage_options(config: dict[str, Any]) -> list[str]:
    """Options that the stages validate themselves, checked before any job runs."""
    from vlcomp.ingest.job import IngestOptions
    from vlcomp.ingest.vg import RegionFilters

    problems = []
    if config["priors"]["lm_scorer"] not in config["scorers"]["use"]:
        problems.append(
            f"config key 'priors.lm_scorer': '{config['priors']['lm_scorer']}' is not in "
            f"scorers.use {config['scorers']['use']}"
        )
    clashes = sorted(set(config["corpora"]) & set(config["world"]["corpora"]))
    if clashes:
        problems.append(f"config key 'corpora': names also used by world.corpora: {clashes}")
    rules = config["ingest"]["rules"]
    for name, entry in config["corpora"].items():
        try:
            IngestOptions.parse(entry["format"], {"rules": rules, **entry["options"]})
        except ValueError as error:
            problems.append(f"config key 'corpora.{name}.options': {error}")
        for path in entry["inputs"]:
            if not Path(path).exists():
                problems.append(f"config key 'corpora.{name}.inputs': not found: {path}")
    try:
        IngestOptions.parse("cc12m_tsv", {"rules": rules})
    except ValueError as error:
        problems.append(f"config key 'ingest.rules': {error}")
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
    try:
        RegionFilters.from_options(config["eval_items"]["vg_regions"])
    except ValueError as error:
        problems.append(f"config key 'eval_items.vg_regions': {error}")
    return problems


def training_corpus(config: dict[str, Any], model: str) -> str | None:
    entry = config["models"][model]
    return entry.get("train", {}).get("corpus") or entry.get("training_corpus")


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


def config_docs() -> str:
    """Markdown reference of every key, generated from the schema (config/README.md)."""
    schema = load_schema()
    header = [
        "# Configuration reference",
        "",
        "Generated from `src/vlcomp/schemas/config.schema.yaml` by",
        "`python -m vlcomp.config > config/README.md`; a test keeps it in sync.",
        "`config/config.yaml` is the embedded default (the synthetic world). A file given",
        "with `--configfile` is merged over it. Unknown keys are errors; a key with a",
        "default may be left out. A model needs exactly one of `pretrained`, `checkpoint` or",
        "`train`.",
        "",
        "| key | type | default | meaning |",
        "|---|---|---|---|",
    ]
    return "\n".join(header + _doc_rows(schema, schema, "")) + "\n"


if __name__ == "__main__":
    print(config_docs(), end="")
