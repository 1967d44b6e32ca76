"""Typed settings from config sections: the one way a stage builds its settings object.

The config schema (``schemas/config.schema.yaml``, checked by ``vlcomp.config`` before any
job runs) does the validation: types, ranges, enums and the defaults it fills in. A stage
is handed a section (or the keys a rule picked of it) and turns it into a frozen dataclass
with ``settings_from(cls, mapping, where)``, by the dataclass's fields:

- a key is a field (``keys`` maps a field to a key of another name); a key that is no
  field is an error naming ``where.key``, unless the mapping is ``shared`` with other
  readers (a rule's settings that also hold the embedding's keys);
- a key left out takes the field's default (a field without one is an error);
- values follow the field's type: a list becomes a tuple, a mapping a nested dataclass
  (recursively) or a dict of them, an integer a float where the field is a float (and an
  integral float an int);
- a value where the field is a bool, int, float or str (or a union of them, None
  included) must be of that type: "3" for an int field is an error naming the key and the
  value, not a job that fails later (reading "3" as 3 is the config's work,
  ``vlcomp.config.overrides.coerce_to_schema``). Other types are taken as they are: the schema
  checked them.

Nothing here knows the config or a stage: this is ground, it imports nothing of vlcomp.
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from collections.abc import Mapping
from typing import Any, TypeVar

T = TypeVar("T")


class SettingsError(ValueError):
    """A mapping that does not fit its settings class; the message starts with the key."""


def settings_from(
    cls: type[T],
    mapping: Mapping[str, Any] | None,
    where: str,
    *,
    keys: Mapping[str, str] | None = None,
    shared: bool = False,
) -> T:
    """An instance of the frozen dataclass ``cls`` from ``mapping`` (None: every default).

    ``where`` is the mapping's config key (``evaluate``, ``llm``, ``models.m.train``), named
    in errors as ``where.key``. ``keys``: field -> key, for fields whose key has another
    name. ``shared``: the mapping also holds keys for other readers, which are skipped."""
    if not (isinstance(cls, type) and dataclasses.is_dataclass(cls)):
        raise TypeError(f"settings_from: {cls!r} is not a dataclass")
    if mapping is None:
        mapping = {}
    if not isinstance(mapping, Mapping):
        raise SettingsError(f"{where}: expected a mapping, got {type(mapping).__name__}")
    fields = [f for f in dataclasses.fields(cls) if f.init]
    renamed = dict(keys or {})
    stray = sorted(set(renamed) - {f.name for f in fields})
    if stray:
        raise TypeError(f"settings_from: {cls.__name__} has no field(s) {stray}")
    key_of = {f.name: renamed.get(f.name, f.name) for f in fields}
    if not shared:
        unknown = sorted(set(mapping) - set(key_of.values()), key=str)
        if unknown:
            known = sorted(key_of.values())
            raise SettingsError(f"{where}.{unknown[0]}: unknown key (known: {known})")
    hints = _hints(cls)
    values = {}
    for f in fields:
        key = key_of[f.name]
        if key in mapping:
            values[f.name] = _convert(mapping[key], hints.get(f.name, Any), f"{where}.{key}")
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            raise SettingsError(f"{where}.{key}: required (it has no default)")
    return cls(**values)


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    """The fields' types, resolved (modules use ``from __future__ import annotations``)."""
    try:
        return typing.get_type_hints(cls)
    except (NameError, TypeError):  # a name only imported for type checking: take as given
        return {}


_SCALARS = {bool: "true or false", int: "an integer", float: "a number", str: "a string"}


def _is_scalar(value: Any, hint: type) -> bool:
    """``value`` fits a field of type ``hint``: as in the config schema, true is no integer
    (though Python's bool is an int) and an integer is a number."""
    if hint is bool or isinstance(value, bool):
        return hint is bool and isinstance(value, bool)
    if hint is float:
        return isinstance(value, int | float)
    return isinstance(value, hint)


def _convert(value: Any, hint: Any, where: str) -> Any:
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        options = [a for a in args if a is not type(None)]
        if len(options) == 1:
            return _convert(value, options[0], where)
        scalars = [a for a in options if a in _SCALARS]
        if len(scalars) == len(options) and not any(_is_scalar(value, a) for a in scalars):
            wanted = " or ".join(_SCALARS[a] for a in scalars)
            raise SettingsError(f"{where}: expected {wanted}, got {value!r}")
        return value
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        if isinstance(value, hint):
            return value
        if not isinstance(value, Mapping):
            raise SettingsError(f"{where}: expected a mapping, got {value!r}")
        return settings_from(hint, value, where)
    if origin is tuple:
        return _tuple(value, args, where)
    if origin in (dict, Mapping):
        if not isinstance(value, Mapping):
            raise SettingsError(f"{where}: expected a mapping, got {value!r}")
        item = args[1] if len(args) == 2 else Any
        return {k: _convert(v, item, f"{where}.{k}") for k, v in value.items()}
    if hint is int and isinstance(value, float) and value.is_integer():
        value = int(value)
    if hint in _SCALARS and not _is_scalar(value, hint):
        raise SettingsError(f"{where}: expected {_SCALARS[hint]}, got {value!r}")
    return float(value) if hint is float else value


def _tuple(value: Any, args: tuple[Any, ...], where: str) -> tuple[Any, ...]:
    if isinstance(value, str | bytes) or not isinstance(value, list | tuple):
        raise SettingsError(f"{where}: expected a list, got {value!r}")
    if len(args) == 2 and args[1] is Ellipsis:
        items = [args[0]] * len(value)
    elif args:
        if len(args) != len(value):
            raise SettingsError(f"{where}: expected {len(args)} items, got {len(value)}")
        items = list(args)
    else:
        items = [Any] * len(value)
    pairs = enumerate(zip(value, items, strict=True))
    return tuple(_convert(v, t, f"{where}[{i}]") for i, (v, t) in pairs)
