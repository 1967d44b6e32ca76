"""The Markdown summary of metric tables, and the report figures' conventions."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from vlcomp.contracts import ITEMS_KEY, REJECTED_SCHEMA
from vlcomp.evaluate.jobs import collect_metrics
from vlcomp.figure_files import save_figure
from vlcomp.io import write_parquet
from vlcomp.report.accounting import benchmark_items
from vlcomp.report.figures_crepe import metrics_markdown, plot_split_accuracy
from vlcomp.report.jobs import plot_benchmark


def table(rows: list[tuple], path: Path) -> Path:
    columns = ["model", "benchmark", "part", "split", "family", "metric", "value", "n"]
    frame = pl.DataFrame(rows, schema=columns, orient="row").with_columns(
        ci_low=pl.col("value") - 0.1, ci_high=pl.col("value") + 0.1, complexity=pl.lit(None)
    )
    frame.write_parquet(path)
    return path


def metric_sections(text: str) -> list[str]:
    """The summary's "## " sections of metric tables: after its legend and item counts."""
    sections = text.split("\n## ")[1:]
    assert sections[0].startswith("How to read this summary")
    skip = ("Items per benchmark", "All benchmarks")
    return [s for s in sections[1:] if not s.startswith(skip)]


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
    sections = metric_sections(text)
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
    assert all(f.columns[:4] == ["model", "benchmark", "kind", "variant"] for f in frames)
    assert {v for f in frames for v in f["variant"]} == {"as_generated"}  # no metadata
    assert [sorted(set(f["benchmark"])) for f in frames] == [["my_crepe"], ["other_crepe"]]
    assert {k for f in frames for k in f["kind"]} == {"crepe_systematicity"}
    texts = saved_texts(monkeypatch, figures_crepe)
    for name, path in collected.items():
        plot_benchmark("bindsplit", path, tmp_path / f"{name}.png", tmp_path / f"{name}.pdf")
    titles = [t for t in texts if "per model and split" in t]
    assert [t.split(") ")[-1] for t in titles] == ["my_crepe vs shapes", "other_crepe vs shapes"]
    out = tmp_path / "summary.md"
    metrics_markdown(list(collected.values()), out)
    sections = metric_sections(out.read_text())
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


# --------------------------------------------------------------------------- figure conventions


def captured_figures(monkeypatch: pytest.MonkeyPatch, module: object) -> list:
    """Every figure ``module`` saves (still saved, so that its PNG can be measured)."""
    figures: list = []

    def capture(fig, png, pdf):
        save_figure(fig, png, pdf)
        figures.append(fig)

    monkeypatch.setattr(module, "save_figure", capture)
    return figures


def pairs_table(missing: tuple[str, str, str], zero: tuple[str, str, str]) -> pl.DataFrame:
    """Accuracy of four models per split and negative type, chance 0.5; the (model, split,
    family) ``missing`` has no row, ``zero`` is 0.0."""
    rows = []
    for model in ("m1", "m2", "m3", "m4", "chance"):
        for split in ("all", "seen", "mixed", "unseen"):
            for k, family in enumerate(("replace_att", "replace_obj", "replace_rel", "swap_att")):
                if (model, split, family) == missing:
                    continue
                value = 0.5 if model == "chance" else 0.0 if (model, split, family) == zero else 0.9
                rows.append((model, "my_pairs", None, split, family, "accuracy", value, 1000 + k))
    frame = pl.DataFrame(
        rows, orient="row",
        schema=["model", "benchmark", "part", "split", "family", "metric", "value", "n"],
    )  # fmt: skip
    return frame.with_columns(
        ci_low=(pl.col("value") - 0.05).clip(0, 1), ci_high=(pl.col("value") + 0.05).clip(0, 1)
    )


def inside(inner, outer, slack: float = 1.0) -> bool:
    return (
        inner.x0 >= outer.x0 - slack and inner.x1 <= outer.x1 + slack
        and inner.y0 >= outer.y0 - slack and inner.y1 <= outer.y1 + slack
    )  # fmt: skip


def test_pair_figure_wraps_labels_every_bar_and_tells_missing_from_zero(tmp_path):
    """Four models x four splits x four types: a grid, a label per bar inside its axes, one
    legend outside them, a missing cell hatched and a zero one labelled 0.00."""
    from vlcomp.figure_files import DPI
    from vlcomp.report.figures import pair_accuracy_figure
    from vlcomp.report.plots import MAX_COLUMNS, MAX_WIDTH_PX, VALUE_LABEL, value_labels

    fig = pair_accuracy_figure(
        pairs_table(missing=("m2", "unseen", "replace_rel"), zero=("m3", "mixed", "swap_att"))
    )
    # four wide panels wrap into a grid no wider than MAX_WIDTH_PX at the saved dpi
    assert fig.get_figwidth() * DPI <= MAX_WIDTH_PX
    grid = fig.axes[0].get_subplotspec().get_gridspec()
    assert grid.ncols <= MAX_COLUMNS and grid.nrows * grid.ncols >= 4 and grid.nrows > 1
    labels = value_labels(fig)
    assert len(labels) == 4 * 4 * 4  # a label on every (model, split, type), missing included
    assert labels.count("no items") == 1
    assert sum(label.startswith("0.00 n=1003") for label in labels) == 1  # swap_att's n
    assert all(" n=" in label for label in labels if label != "no items")
    hatched = [p for ax in fig.axes for p in ax.patches if p.get_hatch()]
    assert len(hatched) == 1 and not hatched[0].get_fill()
    fig.draw_without_rendering()  # the layout as saved
    renderer = fig.canvas.get_renderer()
    figure_box = fig.bbox
    for ax in fig.axes:
        for text in (t for t in ax.texts if t.get_gid() == VALUE_LABEL):
            assert inside(text.get_window_extent(renderer), ax.get_window_extent(renderer))
    (legend,) = fig.legends
    box = legend.get_window_extent(renderer)
    assert inside(box, figure_box)
    assert not any(box.overlaps(ax.get_window_extent(renderer)) for ax in fig.axes)
    texts = [t.get_text() for t in legend.get_texts()]
    assert texts == ["all", "seen", "mixed", "unseen", "chance", "no items (hatched, split colour)",
                     "0.00 (line on the axis)"]  # fmt: skip
    assert inside(fig._suptitle.get_window_extent(renderer), figure_box)
    assert not fig._suptitle.get_window_extent(renderer).overlaps(box)
    save_figure(fig, tmp_path / "p.png", tmp_path / "p.pdf")


def crepe_table(benchmarks: dict[str, list[str]], models: int) -> pl.DataFrame:
    """R@1 of ``models`` models per negative type on CREPE splits, one benchmark per key with
    the splits its items have (an item without a split is counted as no_compound)."""
    rows = []
    for benchmark, splits in benchmarks.items():
        for m in [*(f"model_{i}" for i in range(models)), "chance"]:
            for split in splits:
                for family in ("atom_att", "atom_obj", "comp_att", "comp_rel", "atom_rel"):
                    value = 0.3 if m == "chance" else 0.6
                    rows.append((m, benchmark, None, split, family, "R@1", value, 40))
    frame = pl.DataFrame(
        rows, orient="row",
        schema=["model", "benchmark", "part", "split", "family", "metric", "value", "n"],
    )  # fmt: skip
    return frame.with_columns(
        ci_low=pl.col("value") - 0.1, ci_high=pl.col("value") + 0.1,
        complexity=pl.lit(None, dtype=pl.Int64),
    )  # fmt: skip


def test_crepe_figure_fits_a_page_and_says_why_a_panel_is_empty(tmp_path, monkeypatch):
    from PIL import Image

    import vlcomp.report.figures_crepe as figures_crepe
    from vlcomp.report.plots import EMPTY_PANEL, MAX_WIDTH_PX, value_labels

    figures = captured_figures(monkeypatch, figures_crepe)
    table = crepe_table({"set_a": ["SC", "UC"], "set_b": ["no_compound"]}, models=4)
    table.write_parquet(tmp_path / "crepe.parquet")
    figures_crepe.plot_splits_by_type(tmp_path / "crepe.parquet", tmp_path / "c.png",
                                      tmp_path / "c.pdf")  # fmt: skip
    (fig,) = figures
    with Image.open(tmp_path / "c.png") as image:
        assert image.width <= MAX_WIDTH_PX
    # eight panels; set_a's four have SC and UC bars and "no items" for UA (absent there)
    labels = value_labels(fig)
    assert len(labels) == 4 * 5 * 3
    assert labels.count("no items") == 4 * 5
    assert set(labels) - {"no items"} == {"0.60 n=40"}
    reasons = [t.get_text() for ax in fig.axes for t in ax.texts if t.get_gid() == EMPTY_PANEL]
    assert len(reasons) == 4  # set_b's panels, one per model
    assert {" ".join(r.split()) for r in reasons} == {
        "no item of set_b has a CREPE split (SC / UC / UA): 200 items have no compound "
        "(no_compound)"
    }
    title = " ".join(fig._suptitle.get_text().split())
    assert title == "set_a, set_b: R@1 per negative type and split (95% bootstrap CI)"
    footnote = " ".join(fig._supxlabel.get_text().split())
    assert footnote == "Not shown: set_b: 200 items have no compound (no_compound)."


def test_split_figure_draws_an_absent_split_as_no_items(tmp_path, monkeypatch):
    import vlcomp.report.figures_crepe as figures_crepe
    from vlcomp.report.plots import value_labels

    figures = captured_figures(monkeypatch, figures_crepe)
    small = metric_table("my_crepe", {"seen": 3, "no_binding": 2}, tmp_path / "small.parquet")
    plot_split_accuracy(small, tmp_path / "s.png", tmp_path / "s.pdf")
    (fig,) = figures
    # seen for model m, then mixed and unseen: in no item of this small set
    assert value_labels(fig) == ["0.70 n=3", "no items", "no items"]
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert legend == ["seen", "mixed", "unseen", "chance", "no items (hatched, split colour)"]
    footnote = " ".join(fig._supxlabel.get_text().split())
    assert footnote == "Not shown: 2 items have no attribute-object binding (no_binding)."


def test_complexity_figure_names_n_under_each_tick(tmp_path, monkeypatch):
    import vlcomp.report.figures_crepe as figures_crepe

    figures = captured_figures(monkeypatch, figures_crepe)
    rows = [
        (m, "prod", None, "all", family, "R@1", 0.5, n, level)
        for m in ("m1", "m2", "chance")
        for family, levels in (("swap_att", {5: 12, 6: 9}), ("atom_obj", {4: 30, 5: 20, 6: 10}))
        for level, n in levels.items()
    ]
    frame = pl.DataFrame(
        rows, orient="row",
        schema=["model", "benchmark", "part", "split", "family", "metric", "value", "n",
                "complexity"],
    ).with_columns(ci_low=pl.col("value") - 0.1, ci_high=pl.col("value") + 0.1)  # fmt: skip
    frame.write_parquet(tmp_path / "prod.parquet")
    figures_crepe.plot_complexity(tmp_path / "prod.parquet", tmp_path / "x.png",
                                  tmp_path / "x.pdf")  # fmt: skip
    (fig,) = figures
    ticks = {ax.get_title(): [t.get_text() for t in ax.get_xticklabels()] for ax in fig.axes}
    assert ticks == {
        "atom_obj": ["4\nn=30", "5\nn=20", "6\nn=10"],
        "swap_att": ["4\nno items", "5\nn=12", "6\nn=9"],
    }
    assert [t.get_text() for t in fig.legends[0].get_texts()] == ["chance", "m1", "m2"]


# --------------------------------------------------------------------------- summary legend


def test_summary_has_a_legend_and_a_provenance_line_per_table(tmp_path):
    settings = {
        "precision": "fp32", "device": "cpu", "tie_policy": "tie_counts_as_wrong",
        "ci": "percentile bootstrap over items, level 0.95", "bootstrap_resamples": "200",
        "bootstrap_seed": "7", ITEMS_KEY: "10",
    }  # fmt: skip
    excluded, bindsplit = [], []
    for model, fingerprint in (("m", "arch@sha256:aa"), ("n", "arch@sha256:bb")):
        meta = {**settings, "model": model, "fingerprint": fingerprint}
        for paths, columns in ((excluded, "crepe_split,crepe_split"),
                               (bindsplit, "split_loose,split_loose")):  # fmt: skip
            path = tmp_path / f"{model}_{len(paths)}_{columns[:5]}.parquet"
            write_parquet(pl.DataFrame(schema=EXCLUDED_COLUMNS), path,
                          {**meta, "split_columns": columns})  # fmt: skip
            paths.append(str(path))
    rows = [("m", "crepe", corpus, split, "all", "R@1_micro", 0.5, 10)
            for corpus in ("cc12m", "laion") for split in ("all", "SC")]  # fmt: skip
    crepe = table(rows, tmp_path / "crepe.parquet")
    write_parquet(pl.read_parquet(crepe), crepe, {"vlcomp": "0.1.0", "torch": "2.0"})
    view = table([(*r[:3], "seen", *r[4:]) for r in rows], tmp_path / "crepe_bindsplit.parquet")
    retrieval = table([("m", "ret", None, "all", "all", "i2t_R@1", 0.3, 60)],
                      tmp_path / "ret.parquet")  # fmt: skip
    benchmarks = {
        "crepe": {
            "kind": "crepe_systematicity", "excluded": excluded, "eval_set": "vg",
            "models": {"m": "cc12m", "n": None}, "bindsplit_excluded": bindsplit,
        },
    }  # fmt: skip
    out = tmp_path / "summary.md"
    metrics_markdown([crepe, view, retrieval], out, benchmarks=benchmarks)
    text = out.read_text()
    legend = text.split("\n## ")[1]
    for said in ("**SC / UC / UA**", "**seen / mixed / unseen**", "**LOOSE**", "**STRICT**",
                 "**no_binding**", "**no_compound**", "**part**", "micro average",
                 "`<metric>_macro`", "**95% CI**", "**chance**", "**n**"):  # fmt: skip
        assert said in legend, said
    lines = [line for line in text.splitlines() if line.startswith("Provenance: ")]
    settings_text = (
        "fp32 on cpu; ties: tie_counts_as_wrong; CI: percentile bootstrap over items, level "
        "0.95 (200 resamples, seed 7)"
    )
    assert lines == [
        "Provenance: eval set `vg`; splits (CREPE SC / UC / UA) against the training corpora "
        "cc12m, laion (column part); models m (trained on cc12m; arch@sha256:aa), "
        f"n (arch@sha256:bb); {settings_text}; versions vlcomp 0.1.0, torch 2.0.",
        "Provenance: eval set `vg`; splits (BindSplit LOOSE) against the training corpora "
        "cc12m, laion (column part); models m (trained on cc12m; arch@sha256:aa), "
        f"n (arch@sha256:bb); {settings_text}.",
        "Provenance: models m.",  # a table no benchmark entry names: what the table says
    ]
    # each line sits under its own table's heading
    sections = metric_sections(text)
    assert [s.splitlines()[0] for s in sections] == ["crepe", "crepe_bindsplit", "ret"]
    assert all(sum(line.startswith("Provenance: ") for line in s.splitlines()) == 1
               for s in sections)  # fmt: skip
