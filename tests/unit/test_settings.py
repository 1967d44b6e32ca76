"""``vlcomp.settings.settings_from``: typed settings from a config section, by its fields."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import pytest

from vlcomp.settings import SettingsError, settings_from


@dataclass(frozen=True)
class Inner:
    a: int
    b: float = 0.5


@dataclass(frozen=True)
class Outer:
    name: str
    size: int = 1
    rate: float = 1.0
    axes: tuple[str, ...] = ()
    pair: tuple[int, str] | None = None
    inner: Inner = field(default_factory=lambda: Inner(1))
    table: Mapping[str, Inner] = field(default_factory=dict)
    limit: float | None = None
    flag: bool = False
    column: str | int = 0


def test_fields_take_the_keys_and_the_defaults_the_rest():
    built = settings_from(Outer, {"name": "x", "rate": 2, "axes": ["h", "v"]}, "s")
    assert built == Outer("x", 1, 2.0, ("h", "v"))
    assert isinstance(built.rate, float) and isinstance(built.axes, tuple)
    assert settings_from(Outer, {"name": "x", "size": 3.0}, "s").size == 3  # integral float
    assert settings_from(Outer, {"name": "x", "limit": None}, "s").limit is None
    assert settings_from(Outer, {"name": "x", "limit": 2}, "s").limit == 2.0
    assert settings_from(Outer, {"name": "x", "pair": [1, "a"]}, "s").pair == (1, "a")
    assert settings_from(Outer, {"name": "x", "column": "id"}, "s").column == "id"
    assert settings_from(Outer, {"name": "x", "column": 2, "flag": True}, "s").column == 2


def test_nested_dataclasses_and_mappings_of_them_are_built():
    built = settings_from(
        Outer, {"name": "x", "inner": {"a": 2}, "table": {"m": {"a": 3, "b": 1}}}, "s"
    )
    assert built.inner == Inner(2, 0.5)
    assert built.table == {"m": Inner(3, 1.0)} and isinstance(built.table["m"].b, float)
    given = Inner(5)
    assert settings_from(Outer, {"name": "x", "inner": given}, "s").inner is given


@pytest.mark.parametrize(
    ("mapping", "message"),
    [
        ({"name": "x", "sise": 2}, "s.sise: unknown key (known: ["),
        ({}, "s.name: required"),
        ({"name": "x", "inner": {"a": 1, "c": 2}}, "s.inner.c: unknown key"),
        ({"name": "x", "table": {"m": {"b": 1}}}, "s.table.m.a: required"),
        ({"name": "x", "axes": "hv"}, "s.axes: expected a list, got 'hv'"),
        ({"name": "x", "pair": [1]}, "s.pair: expected 2 items, got 1"),
        ({"name": "x", "inner": 3}, "s.inner: expected a mapping, got 3"),
        # a scalar of the wrong type: named here, not where a job uses it
        ({"name": "x", "size": "3"}, "s.size: expected an integer, got '3'"),
        ({"name": "x", "size": True}, "s.size: expected an integer, got True"),
        ({"name": "x", "size": 2.5}, "s.size: expected an integer, got 2.5"),
        ({"name": "x", "size": None}, "s.size: expected an integer, got None"),
        ({"name": "x", "rate": "1e-3"}, "s.rate: expected a number, got '1e-3'"),
        ({"name": 3}, "s.name: expected a string, got 3"),
        ({"name": "x", "limit": "none"}, "s.limit: expected a number, got 'none'"),
        ({"name": "x", "axes": ["h", 1]}, "s.axes[1]: expected a string, got 1"),
        ({"name": "x", "inner": {"a": "1"}}, "s.inner.a: expected an integer, got '1'"),
        ({"name": "x", "flag": "true"}, "s.flag: expected true or false, got 'true'"),
        ({"name": "x", "column": 1.5}, "s.column: expected a string or an integer, got 1.5"),
    ],
)
def test_errors_name_the_key(mapping, message):
    with pytest.raises(SettingsError) as error:
        settings_from(Outer, mapping, "s")
    assert str(error.value).startswith(message)
    assert isinstance(error.value, ValueError)


def test_renamed_keys_and_shared_mappings():
    keys = {"size": "n", "rate": "per_second"}
    built = settings_from(Outer, {"name": "x", "n": 4, "per_second": 3}, "s", keys=keys)
    assert (built.size, built.rate) == (4, 3.0)
    with pytest.raises(SettingsError, match=r"s\.size: unknown key"):
        settings_from(Outer, {"name": "x", "size": 4}, "s", keys=keys)
    shared = {"name": "x", "device": "cpu", "threads": 2}
    assert settings_from(Outer, shared, "s", shared=True) == Outer("x")
    with pytest.raises(TypeError, match="no field"):
        settings_from(Outer, {}, "s", keys={"nope": "n"})
    with pytest.raises(TypeError, match="not a dataclass"):
        settings_from(dict, {}, "s")
    with pytest.raises(SettingsError, match=r"^s\.name: required"):
        settings_from(Outer, None, "s")  # None: every default
