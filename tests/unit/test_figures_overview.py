"""The all-benchmarks figure names the part of a benchmark with parts that its bars show
(CREPE systematicity: one part per training corpus), as the markdown overview does."""

import pytest

from tests.unit.test_benchmark_table import _table
from vlcomp.figure_files import plt
from vlcomp.report.all_benchmarks import overview_figure, overview_table


@pytest.fixture()
def tables(tmp_path):
    pairs = _table(tmp_path / "pairs.parquet", [
        ("a", None, "all", "all", "accuracy_micro", 0.75, 40, 0.6, 0.9),
        ("b", None, "all", "all", "accuracy_micro", 0.5, 40, 0.35, 0.65),
        ("c", None, "all", "all", "accuracy_micro", 0.55, 40, 0.4, 0.7),
        ("chance", None, "all", "all", "accuracy_micro", 0.5, 40, 0.5, 0.5),
    ])  # fmt: skip
    syst = _table(tmp_path / "syst.parquet", [
        *[(m, part, "all", "all", "R@1_micro", v, n, v - 0.1, v + 0.1)
          for m, part, v, n in [("a", "cc12m", 0.6, 30), ("a", "laion", 0.4, 31),
                                ("b", "cc12m", 0.3, 30), ("b", "laion", 0.35, 31)]],
        ("chance", "cc12m", "all", "all", "R@1_micro", 0.28, 30, 0.28, 0.28),
        ("chance", "laion", "all", "all", "R@1_micro", 0.29, 31, 0.29, 0.29),
    ])  # fmt: skip
    return [pairs, syst]


def _panels(table):
    fig = overview_figure(table)
    fig.draw_without_rendering()
    panels = {ax.get_title(): ax for ax in fig.axes if ax.get_visible() and ax.get_title()}
    return fig, panels


def _ticks(ax):
    return [t.get_text() for t in ax.get_xticklabels()]


def test_one_part_for_every_bar_is_named_once_under_the_panel(tables):
    fig, panels = _panels(overview_table(tables))  # no corpus known: each model's first part
    assert panels["syst R@1"].get_xlabel() == "part: cc12m"
    assert _ticks(panels["syst R@1"]) == []
    # a benchmark without parts names none
    assert panels["pairs accuracy"].get_xlabel() == "" and _ticks(panels["pairs accuracy"]) == []
    plt.close(fig)


def test_bars_of_different_parts_each_name_theirs(tables):
    # a: its own corpus laion; b: cc12m; c: not evaluated on syst (no bar, no part)
    table = overview_table(tables, {"a": "laion", "b": "cc12m", "c": "laion"})
    fig, panels = _panels(table)
    syst = panels["syst R@1"]
    assert _ticks(syst) == ["laion", "cc12m", ""]
    assert list(syst.get_xticks()) == [0, 1, 2]  # under the bars of a, b and c
    assert syst.get_xlabel() == "part shown"
    # the bars carry the chosen part's numbers: laion's n for a, cc12m's for b
    labels = [t.get_text() for t in syst.texts]
    assert "0.40 n=31" in labels and "0.30 n=30" in labels
    plt.close(fig)
