"""Overrides as the schema reads them: dotted top-level keys (``refine.grid: 20``) set into
their sections, and strings (``snakemake --config``) read as the values the schema asks for."""

from __future__ import annotations

import contextlib
from typing import Any

import jsonschema
import yaml

from vlcomp.config.schema import ConfigError, resolve_ref


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
    schema = resolve_ref(schema, root)
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
