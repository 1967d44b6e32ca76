"""The config schema (``schemas/config.schema.yaml``) as the validator reads it: loaded once,
its eval-set formats filled in from their registries, its ``$ref``s resolved, and each of its
violations in words that name the key."""

from __future__ import annotations

import copy
import difflib
import functools
from importlib.resources import files
from typing import Any

import jsonschema
import yaml

from vlcomp.importers.registry import FORMATS as IMPORTED_FORMATS


class ConfigError(ValueError):
    """A configuration problem; the message names the offending key or path."""


# The files an eval set of each format names (the other keys of its entry are options).
EVAL_SET_SOURCES = {
    "visual_genome": ("dir",),
    "coco_captions": ("captions",),
    **{fmt: ("files",) for fmt in IMPORTED_FORMATS},
}


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


def resolve_ref(schema: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with its ``$ref`` (into ``root``'s ``$defs``) replaced by the definition,
    its own keys on top."""
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        return {**root["$defs"][name], **{k: v for k, v in schema.items() if k != "$ref"}}
    return schema


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


def describe_error(error: jsonschema.ValidationError, root: dict[str, Any]) -> str:
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
        options = " or ".join(_wanted(resolve_ref(s, root)) for s in error.validator_value)
        return f"config key '{where}': {error.instance!r} is not {options}"
    message = f"config key '{where}': {error.message}"
    array = error.validator == "type" and "array" in error.validator_value
    if array and not isinstance(error.instance, dict | list):
        message += f" (a list: [{error.instance}])"
    return message


def new_entry_hint(path: list[Any], config: dict[str, Any], root: dict[str, Any]) -> str:
    """For an incomplete entry of a map of named entries (models, benchmarks, ...) whose
    name is close to another's: the override that made it probably misspelt that name
    (``--config 'models={world_cc21m: {...}}'`` adds a model rather than changing one)."""
    if not path or not isinstance(path[-1], str):
        return ""
    schema, siblings = root, config
    for part in path[:-1]:
        schema = resolve_ref(schema, root)
        schema = schema.get("properties", {}).get(part, schema.get("additionalProperties"))
        siblings = siblings.get(part) if isinstance(siblings, dict) else None
        if not isinstance(schema, dict):
            return ""
    if not isinstance(siblings, dict):
        return ""
    if not isinstance(resolve_ref(schema, root).get("additionalProperties"), dict):
        return ""
    others = [str(name) for name in siblings if name != path[-1]]
    close = difflib.get_close_matches(path[-1], others, n=1, cutoff=0.75)
    return f" (a new entry: is '{path[-1]}' a misspelling of '{close[0]}'?)" if close else ""
