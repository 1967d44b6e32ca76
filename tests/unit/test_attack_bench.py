"""The blind-attack panel benchmark: its table, its JSON and its report section (no timing
is asserted)."""

import json

import polars as pl

from vlcomp.blind.attacks import LENGTH, TEXT_ATTACKS, attack_pairs
from vlcomp.blind.families import FAMILIES
from vlcomp.blind.jobs import AttackSettings
from vlcomp.contracts import CANDIDATES_SCHEMA
from vlcomp.io import write_json
from vlcomp_dev.bench.attacks import PANEL, benchmark_attacks, size_numbers, synthetic_candidates
from vlcomp_dev.bench.report import write_report


def test_synthetic_table_is_seeded_one_plus_one_one_change_away():
    table = synthetic_candidates(40, seed=3)
    assert table.schema == pl.Schema(CANDIDATES_SCHEMA)
    assert table.equals(synthetic_candidates(40, seed=3))
    assert not table.equals(synthetic_candidates(40, seed=4))
    pairs = attack_pairs(table)
    assert pairs.height == 40 and pairs["item_id"].n_unique() == 40
    assert set(pairs["type"]) == {"replace_att", "replace_obj", "replace_rel", "swap_att"}
    for positive, negative in pairs.select("positive", "negative").iter_rows():
        a, b = positive.split(), negative.split()
        assert len(a) == len(b) and positive != negative
        assert sum(x != y for x, y in zip(a, b, strict=True)) in (1, 2)  # a swap changes two


def test_benchmark_json_structure_and_same_run_ratios(tmp_path):
    settings = AttackSettings(bootstrap_resamples=20)
    result = benchmark_attacks([60, 120], repeats=2, settings=settings, log=lambda _: None)
    runs = {PANEL, *TEXT_ATTACKS, "certify_panel", *(f"certify:{f}" for f in FAMILIES)}
    assert (result["sizes"], result["baseline"], result["panel"]) == ([60, 120], LENGTH, PANEL)
    assert (result["bootstrap_resamples"], result["folds"]) == (20, settings.folds)
    assert {"cpu", "cores", "versions", "load_average_1min"} <= set(result["machine"])
    for n in (60, 120):
        numbers = result["by_size"][str(n)]
        assert numbers["pairs"] == n
        assert set(numbers["seconds_all_repeats"]) == set(numbers["vs_length"]) == runs
        repeats = {name: len(t) for name, t in numbers["seconds_all_repeats"].items()}
        assert repeats == {name: 1 if "certify" in name else 2 for name in runs}
    path = tmp_path / "attacks.json"
    write_json(result, path)
    write_report({"attacks": path}, tmp_path / "report.md")
    report = (tmp_path / "report.md").read_text()
    assert "## Blind-attack panel" in report and "`length` alone (baseline)" in report
    assert "certification panel: every family" in report and "`certify:whole_text` alone" in report
    assert json.loads(path.read_text())["by_size"]["120"]["pairs"] == 120


def test_rates_and_ratios_come_from_the_recorded_seconds():
    """Given seconds (no clock read): medians, rates, ratios to length, growth per pair."""
    times = {
        "100": {PANEL: [2.0, 6.0, 4.0], LENGTH: [1.0, 0.5, 0.5], "context": [1.0, 1.0, 1.0]},
        "400": {PANEL: [16.0, 16.0, 16.0], LENGTH: [2.0, 2.0, 2.0], "context": [4.0, 4.0, 4.0]},
    }
    numbers = size_numbers(times)
    small, large = numbers["100"], numbers["400"]
    assert small["seconds"] == {PANEL: 4.0, LENGTH: 0.5, "context": 1.0}
    assert small["pairs_per_s"] == {PANEL: 25.0, LENGTH: 200.0, "context": 100.0}
    assert small["vs_length"] == {PANEL: 8.0, LENGTH: 1.0, "context": 2.0}
    assert (small["panel_us_per_pair"], large["panel_us_per_pair"]) == (40_000.0, 40_000.0)
    assert (small["panel_per_pair_vs_smallest"], large["panel_per_pair_vs_smallest"]) == (1.0, 1.0)
    assert large["vs_length"][PANEL] == 8.0 and large["pairs"] == 400
