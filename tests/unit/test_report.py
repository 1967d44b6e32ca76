"""The Markdown summary of metric tables."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from vlcomp.contracts import ITEMS_KEY, REJECTED_SCHEMA
from vlcomp.evaluate.jobs import collect_metrics
from vlcomp.io import write_parquet
from vlcomp.report.accounting import benchmark_items
from vlcomp.report.figures import save_figure
from vlcomp.report.figures_crepe import metrics_markdown, plot_split_accuracy
from vlcomp.report.plots import plot_benchmark


def table(rows: list[tuple], path: Path) -> Path:
    columns = ["model", "benchmark", "part", "split", "family", "metric", "value", "n"]
    frame = pl.DataFrame(rows, schema=columns, orient="row").with_columns(
        ci_low=pl.col("value") - 0.1, ci_high=pl.col("value") + 0.1, complexity=pl.lit(None)
    )
    frame.write_parquet(path)
    return path


def test_each_cell_once_per_table_with_parts_and_retrieval(tmp_path: Path) -> None:
    crepe = table(
        [
            ("m", "crepe", "cc12m", "all", "all", "R@1_micro", 0.5, 10),
            ("m", "crepe", "cc12m", "SC", "atom_att", "R@1", 0.6, 4),
            ("m", "crepe", "cc12m", "all", "atom_att", "R@1", 0.55, 10),
            ("m", "crepe", "laion", "all", "atom_att", "R@1", 0.45, 10),
            ("chance", "crepe", "cc12m", "all", "atom_att", "R@1", 0.2, 10),
        ],
        tmp_path / "crepe.parquet",
    )
    bindsplit = table(
        [
            ("m", "crepe", "cc12m", "all", "atom_att", "R@1", 0.55, 10),
            ("m", "crepe", "cc12m", "seen", "atom_att", "R@1", 0.7, 3),
        ],
        tmp_path / "crepe_bindsplit.parquet",
    )
    retrieval = table(
        [
            ("m", "ret", None, "all", "all", "i2t_R@1", 0.3, 60),
            ("m", "ret", None, "all", "all", "t2i_R@1", 0.2, 180),
            ("m", "ret", None, "all", "all", "i2t_R@5", 0.9, 60),
        ],
        tmp_path / "ret.parquet",
    )
    out = tmp_path / "summary.md"
    metrics_markdown([crepe, bindsplit, retrieval], out)
    text = out.read_text()
    sections = text.split("\n## ")[1:]
    assert [s.splitlines()[0] for s in sections] == ["crepe", "crepe_bindsplit", "ret"]
    crepe_rows = [line for line in sections[0].splitlines() if line.startswith("| m |")]
    assert crepe_rows == [
        "| m | cc12m | all | all | 0.500 | [0.400, 0.600] | 10 |  |",
        "| m | cc12m | all | atom_att | 0.550 | [0.450, 0.650] | 10 | 0.200 |",
        "| m | cc12m | SC | atom_att | 0.600 | [0.500, 0.700] | 4 |  |",
        "| m | laion | all | atom_att | 0.450 | [0.350, 0.550] | 10 |  |",
    ]
    bindsplit_rows = [line for line in sections[1].splitlines() if line.startswith("| m |")]
    assert len(bindsplit_rows) == 2
    retrieval_rows = [line for line in sections[2].splitlines() if line.startswith("| m |")]
    assert retrieval_rows == [
        "| m | all | i2t | 0.300 | [0.200, 0.400] | 60 |  |",
        "| m | all | t2i | 0.200 | [0.100, 0.300] | 180 |  |",
    ]


def metric_table(benchmark: str, splits: dict[str, int], path: Path) -> Path:
    """A per-model metric table of a systematicity benchmark's BindSplit view: accuracy of
    model m (and chance) per split, ``splits`` split -> n."""
    rows = [
        (who, benchmark, "shapes", split, "all", "accuracy_micro", value, n)
        for split, n in {"all": sum(splits.values()), **splits}.items()
        for who, value in (("m", 0.7), ("chance", 0.5))
    ]
    return table(rows, path)


def saved_texts(monkeypatch: pytest.MonkeyPatch, module: object) -> list[str]:
    """Figure texts (the suptitle too) and axes texts, whitespace collapsed, of every figure
    ``module`` saves."""
    texts: list[str] = []

    def capture(fig, png, pdf):
        found = [*fig.texts, *(t for ax in fig.axes for t in ax.texts)]
        texts.extend(" ".join(t.get_text().split()) for t in found)
        save_figure(fig, png, pdf)

    monkeypatch.setattr(module, "save_figure", capture)
    return texts


def test_two_benchmarks_of_one_kind_keep_their_names(tmp_path, monkeypatch):
    import vlcomp.report.figures_crepe as figures_crepe

    collected = {}
    for name in ("my_crepe", "other_crepe"):
        per_model = metric_table(name, {"seen": 3, "unseen": 2}, tmp_path / f"m_{name}.parquet")
        collected[name] = tmp_path / f"{name}.parquet"
        collect_metrics([str(per_model)], str(collected[name]), str(tmp_path / f"{name}.csv"),
                        kind="crepe_systematicity")  # fmt: skip
    frames = [pl.read_parquet(path) for path in collected.values()]
    assert all(f.columns[:3] == ["model", "benchmark", "kind"] for f in frames)
    assert [sorted(set(f["benchmark"])) for f in frames] == [["my_crepe"], ["other_crepe"]]
    assert {k for f in frames for k in f["kind"]} == {"crepe_systematicity"}
    texts = saved_texts(monkeypatch, figures_crepe)
    for name, path in collected.items():
        plot_benchmark("bindsplit", path, tmp_path / f"{name}.png", tmp_path / f"{name}.pdf")
    titles = [t for t in texts if "per model and split" in t]
    assert [t.split(") ")[-1] for t in titles] == ["my_crepe vs shapes", "other_crepe vs shapes"]
    out = tmp_path / "summary.md"
    metrics_markdown(list(collected.values()), out)
    sections = out.read_text().split("\n## ")[1:]
    assert [s.splitlines()[0] for s in sections] == ["my_crepe", "other_crepe"]
    assert all("Kind: crepe_systematicity." in s for s in sections)


def test_a_bindsplit_figure_without_a_split_says_why(tmp_path, monkeypatch):
    import vlcomp.report.figures_crepe as figures_crepe

    texts = saved_texts(monkeypatch, figures_crepe)
    empty = metric_table("my_crepe", {"no_binding": 5}, tmp_path / "empty.parquet")
    plot_split_accuracy(empty, tmp_path / "e.png", tmp_path / "e.pdf")
    assert (
        "no item of my_crepe vs shapes has a BindSplit split (seen / mixed / unseen): 5 items "
        "have no attribute-object binding (no_binding)"
    ) in texts
    texts.clear()
    some = metric_table("my_crepe", {"seen": 3, "no_binding": 2}, tmp_path / "some.parquet")
    plot_split_accuracy(some, tmp_path / "s.png", tmp_path / "s.pdf")
    assert "Not shown: 2 items have no attribute-object binding (no_binding)." in texts
    assert not any("has a BindSplit split" in t for t in texts)


def excluded_table(rows: list[tuple], items: int, path: Path) -> str:
    frame = pl.DataFrame(rows, schema=EXCLUDED_COLUMNS, orient="row")
    write_parquet(frame, path, {ITEMS_KEY: str(items)})
    return str(path)


EXCLUDED_COLUMNS = {c: pl.String for c in ("part", "item_id", "image_id", "status", "detail")}


def test_summary_counts_items_excluded_and_rejected(tmp_path):
    missing = [(None, f"i{k}", f"{k}.jpg", "missing", "not in the image index") for k in range(34)]
    unreadable = (None, "i40", "40.jpg", "unreadable", "truncated")
    rejected = pl.DataFrame(
        [("a.json", "key=3", "no caption", "{}"), ("a.json", "key=9", "no caption", "{}"),
         ("a.json", "key=5", "duplicate key", "{}")],
        schema=REJECTED_SCHEMA, orient="row",
    )  # fmt: skip
    rejected.write_parquet(tmp_path / "rejected.parquet")
    benchmarks = {
        "photo_pairs": {
            "kind": "imported",
            # two models: the same 34 missing images, one image only the second could not read
            "excluded": [
                excluded_table(missing, 35 + 5, tmp_path / "m1.parquet"),
                excluded_table([*missing, unreadable], 40, tmp_path / "m2.parquet"),
            ],
            "rejected": [str(tmp_path / "rejected.parquet")],
        },
        "mine": {"kind": "pairs", "excluded": [excluded_table([], 12, tmp_path / "e.parquet")]},
    }
    items, reasons = benchmark_items(benchmarks)
    assert items.rows() == [
        ("photo_pairs", "imported", 40, 5, 34, 1, 35 / 40, 3),
        ("mine", "pairs", 12, 12, 0, 0, 0.0, 0),
    ]
    assert reasons.select("reason", "records").rows() == [("no caption", 2), ("duplicate key", 1)]
    out = tmp_path / "summary.md"
    metrics_markdown([], out, benchmarks=benchmarks)
    text = out.read_text()
    assert "| photo_pairs | imported | 40 | 5 | 34 | 1 | 87.5% | 3 |" in text
    assert (
        "- **photo_pairs**: 88% of its items (35 of 40) are excluded because their image is "
        "unusable (34 missing, 1 unreadable); its metrics rest on 5 items."
    ) in text
    assert f"| photo_pairs | {tmp_path / 'rejected.parquet'} | no caption | 2 |" in text
    assert "**mine**" not in text
    with pytest.raises(ValueError, match="no item count in its metadata"):
        pl.DataFrame(schema=EXCLUDED_COLUMNS).write_parquet(tmp_path / "old.parquet")
        benchmark_items({"old": {"kind": "pairs", "excluded": [str(tmp_path / "old.parquet")]}})


def test_summary_says_what_each_eval_set_holds(tmp_path: Path) -> None:
    from vlcomp.report.accounting import eval_set_markdown

    summary = tmp_path / "vg" / "items_summary.json"
    summary.parent.mkdir()
    summary.write_text(
        json.dumps(
            {
                "items": 8,
                "items_with_attributes": 0,
                "items_with_relations": 8,
                "clipped_boxes": 2,
                "merged": {"attributes_joined": 0, "attributes_unmatched": 0},
                "warnings": ["none of 8 items has an attribute"],
            }
        )
    )
    entry = {"kind": "pairs", "eval_sets": [str(summary)]}
    lines = eval_set_markdown({"a": entry, "b": entry})
    said = [line for line in lines if line.startswith("- ")]
    assert len(said) == 1  # one eval set, said once
    assert "eval set **vg** (a): 8 items, 0 with attributes, 8 with relations" in said[0]
    assert "**warning:** none of 8 items has an attribute" in said[0]
    assert "2 region boxes clipped to their image" in said[0]
    assert eval_set_markdown({"c": {"kind": "imported"}}) == []
