"""The all-benchmarks overview (one row per model, one column per benchmark and headline
metric, CIs, chance in the header, "—" where a model was not evaluated) on small metric
tables, its figure, and the all-benchmarks preset skipping what is not on disk."""

from pathlib import Path

import polars as pl
import pytest
import yaml

from vlcomp.config import ConfigError, drop_absent_eval_sets, validate_config
from vlcomp.evaluate.metrics import METRIC_SCHEMA
from vlcomp.report.all_benchmarks import (
    NOT_EVALUATED,
    headline_metric,
    overview_figure,
    overview_markdown,
    overview_table,
)
from vlcomp.report.figures_crepe import metrics_markdown
from vlcomp.report.plots import NO_ITEMS, value_labels

REPO = Path(__file__).resolve().parents[2]
PRESET = REPO / "config" / "presets" / "all_benchmarks.yaml"


def _table(path: Path, rows: list[tuple]) -> Path:
    """rows: (model, part, split, family, metric, value, n, ci_low, ci_high)."""
    full = [
        {
            "model": m, "benchmark": path.stem, "part": p, "split": s, "family": f,
            "metric": k, "value": v, "n": n, "tie_policy": "tie_counts_as_wrong",
            "complexity": None, "ci_low": lo, "ci_high": hi, "n_indistinguishable": None,
            "n_tied": None,
        }
        for m, p, s, f, k, v, n, lo, hi in rows
    ]  # fmt: skip
    pl.DataFrame(full, schema=METRIC_SCHEMA).write_parquet(path)
    return path


@pytest.fixture()
def tables(tmp_path):
    pairs = _table(tmp_path / "pairs.parquet", [
        ("a", None, "all", "all", "accuracy_micro", 0.75, 40, 0.6, 0.9),
        ("a", None, "all", "all", "accuracy_macro", 0.7, 40, 0.55, 0.85),
        ("a", None, "all", "swap_att", "accuracy", 0.8, 20, 0.6, 1.0),
        ("a", None, "SC", "all", "accuracy_micro", 0.9, 10, 0.7, 1.0),
        ("b", None, "all", "all", "accuracy_micro", 0.5, 40, 0.35, 0.65),
        ("chance", None, "all", "all", "accuracy_micro", 0.5, 40, 0.5, 0.5),
    ])  # fmt: skip
    wino = _table(tmp_path / "wino.parquet", [
        ("a", None, "all", "all", "text_score_micro", 0.25, 8, 0.0, 0.5),
        ("a", None, "all", "all", "group_score_micro", 0.125, 8, 0.0, 0.375),
        ("chance", None, "all", "all", "text_score_micro", 0.25, 8, 0.25, 0.25),
        ("chance", None, "all", "all", "group_score_micro", 1 / 6, 8, 1 / 6, 1 / 6),
    ])  # fmt: skip
    syst = _table(tmp_path / "syst.parquet", [
        *[(m, part, "all", "all", k, v, 30, v - 0.1, v + 0.1)
          for m, part, v in [("a", "cc12m", 0.6), ("a", "laion", 0.4), ("b", "cc12m", 0.3),
                             ("b", "laion", 0.35)]
          for k in ("R@1_micro", "R@3_micro", "mean_R@K_micro")],
        ("chance", "cc12m", "all", "all", "R@1_micro", 0.28, 30, 0.28, 0.28),
        ("chance", "laion", "all", "all", "R@1_micro", 0.29, 30, 0.29, 0.29),
    ])  # fmt: skip
    # a BindSplit table repeats its systematicity table's split "all": left out
    bind = _table(tmp_path / "syst_bindsplit.parquet", [
        ("a", "cc12m", "all", "all", "R@1_micro", 0.6, 30, 0.5, 0.7),
    ])  # fmt: skip
    return [pairs, wino, syst, bind]


def test_headline_metrics():
    keep = ["R@1_micro", "accuracy_micro", "i2t_R@1", "t2i_R@1", "text_score_micro",
            "itt_accuracy_micro"]  # fmt: skip
    drop = ["R@3_micro", "R@1_macro", "mean_R@K_micro", "i2t_R@5", "accuracy_macro"]
    assert [m for m in keep + drop if headline_metric(m)] == keep


def test_overview_cells_parts_and_chance(tables):
    table = overview_table(tables, {"a": "laion", "b": None})
    assert table.select("column", "model", "part", "value", "ci_low", "chance").rows() == [
        ("pairs accuracy", "a", None, 0.75, 0.6, 0.5),
        ("pairs accuracy", "b", None, 0.5, 0.35, 0.5),
        ("wino text_score", "a", None, 0.25, 0.0, 0.25),
        ("wino group_score", "a", None, 0.125, 0.0, pytest.approx(1 / 6)),
        # a's own corpus is laion; b has none: the first part
        ("syst R@1", "a", "laion", 0.4, pytest.approx(0.3), 0.29),
        ("syst R@1", "b", "cc12m", 0.3, pytest.approx(0.2), 0.28),
    ]


def test_overview_markdown_one_row_per_model(tables):
    lines = overview_markdown(overview_table(tables, {"a": "laion"}))
    header = next(line for line in lines if line.startswith("| model |"))
    assert header == (
        "| model | pairs accuracy (chance 0.500) | wino text_score (chance 0.250) | "
        "wino group_score (chance 0.167) | syst R@1 (chance 0.280–0.290) |"
    )
    rows = {line.split(" | ")[0]: line for line in lines if line.startswith("| a ") or
            line.startswith("| b ")}  # fmt: skip
    assert rows["| a"] == (
        "| a | 0.750 [0.600, 0.900] | 0.250 [0.000, 0.500] | 0.125 [0.000, 0.375] | "
        "0.400 [0.300, 0.500] (laion) |"
    )
    # b was not evaluated on wino
    assert rows["| b"] == (
        f"| b | 0.500 [0.350, 0.650] | {NOT_EVALUATED} | {NOT_EVALUATED} | "
        "0.300 [0.200, 0.400] (cc12m) |"
    )
    assert overview_markdown(overview_table(tables[:1])) == []  # one benchmark: no section


def _debiased(path: Path) -> Path:
    """The metric table as a model's table scored on the debiased variant, collected."""
    from vlcomp.evaluate.jobs import collect_metrics
    from vlcomp.io import write_parquet

    per_model = path.with_name(f"model_{path.name}")
    write_parquet(pl.read_parquet(path), per_model, metadata={"variants": "debiased"})
    collect_metrics([str(per_model)], str(path), str(path.with_suffix(".csv")), kind="pairs")
    return path


def _certificate(path: Path, rows: list[tuple]) -> Path:
    """rows: (benchmark, part, variant, type, attack, accuracy, ci_low, ci_high)."""
    from vlcomp.blind.jobs import ATTACK_CERTIFICATE_SCHEMA

    full = [
        {"benchmark": b, "panel": "certify", "part": p, "variant": v, "type": t, "attack": a,
         "accuracy": acc, "ci_low": lo, "ci_high": hi, "n": 120, "items": 120,
         "answered": 120, "chance": 0.5, "note": ""}
        for b, p, v, t, a, acc, lo, hi in rows
    ]  # fmt: skip
    pl.DataFrame(full, schema=ATTACK_CERTIFICATE_SCHEMA).write_parquet(path)
    return path


def test_overview_names_the_variant_and_the_best_blind_attack(tables, tmp_path):
    from vlcomp.certificate import best_attack_table

    tables[0] = _debiased(tables[0])
    certificate = _certificate(tmp_path / "attacks.parquet", [
        ("pairs", "pairs", "as_generated", "all", "length", 0.70, 0.65, 0.75),
        ("pairs", "pairs", "debiased", "all", "length", 0.52, 0.47, 0.57),
        ("pairs", "pairs", "debiased", "all", "context", 0.54, 0.49, 0.59),
        ("syst", "laion", "as_generated", "all", "generator", 0.81, 0.75, 0.86),
        ("syst", "cc12m", "as_generated", "all", "generator", 0.61, 0.55, 0.66),
    ])  # fmt: skip
    lines = overview_markdown(
        overview_table(tables, {"a": "laion"}), best_attack_table([certificate])
    )
    header = next(line for line in lines if line.startswith("| model |"))
    assert header.startswith("| model | pairs accuracy (debiased, chance 0.500) |")
    assert "syst R@1 (chance 0.280–0.290) |" in header
    # the debiased variant's best attack; the first model's part of a benchmark with parts
    assert lines[-2] == (
        "| *best blind attack* | 0.540 [0.490, 0.590] (context) | — | — | "
        "0.810 [0.750, 0.860] (generator, pairwise) |"
    )


def test_summary_md_carries_the_overview(tables, tmp_path):
    out = tmp_path / "summary.md"
    metrics_markdown(tables, out)
    text = out.read_text()
    assert "## All benchmarks" in text
    assert text.index("## All benchmarks") < text.index("## pairs")


def test_overview_figure_marks_not_evaluated(tables):
    import matplotlib.pyplot as plt

    fig = overview_figure(overview_table(tables))
    labels = value_labels(fig)
    assert "0.75 n=40" in labels and "0.12 n=8" in labels
    assert labels.count(NO_ITEMS) == 2  # b on wino's two columns
    assert [ax.get_title() for ax in fig.axes if ax.get_visible()][:4] == [
        "pairs accuracy", "wino text_score", "wino group_score", "syst R@1",
    ]  # fmt: skip
    plt.close(fig)


# --- the preset ---------------------------------------------------------------------------


def _preset(root: Path, present: set[str]) -> dict:
    """The preset with the eval sets in ``present`` pointing at files that exist."""
    raw = yaml.safe_load(PRESET.read_text())
    for name, entry in raw["eval_sets"].items():
        if name not in present:
            continue
        for key in ("files", "images"):
            paths = entry[key] if isinstance(entry[key], list) else [entry[key]]
            moved = []
            for value in paths:
                path = root / value.removeprefix("/data/")
                if path.suffix:
                    path.parent.mkdir(parents=True, exist_ok=True)
                    path.touch()
                else:
                    path.mkdir(parents=True, exist_ok=True)
                moved.append(str(path))
            entry[key] = moved if isinstance(entry[key], list) else moved[0]
    return raw


def test_preset_lists_every_imported_format_as_optional():
    from vlcomp.importers.registry import FORMATS

    raw = yaml.safe_load(PRESET.read_text())
    assert {e["format"] for e in raw["eval_sets"].values()} == set(FORMATS)
    assert all(e["optional"] for e in raw["eval_sets"].values())
    assert {b["eval_set"] for b in raw["benchmarks"].values()} == set(raw["eval_sets"])


def test_absent_benchmarks_are_skipped_with_a_line_each(tmp_path, capsys):
    config = validate_config(_preset(tmp_path, {"svo_probes", "winoground"}))
    assert set(config["benchmarks"]) == {"svo_probes", "winoground"}
    assert set(config["eval_sets"]) == {"svo_probes", "winoground"}
    lines = capsys.readouterr().err.splitlines()
    skipped = [line for line in lines if line.startswith("skipping benchmark")]
    assert len(skipped) == len(yaml.safe_load(PRESET.read_text())["benchmarks"]) - 2
    assert (
        "skipping benchmark 'cola' (eval set 'cola'): not found: "
        "/data/cola/COLA_multiobjects_matching_benchmark.json (eval_sets.cola.files[0]); "
        "/data/cola/images (eval_sets.cola.images)"
    ) in skipped


def test_no_benchmark_present_fails_with_the_reason(tmp_path):
    with pytest.raises(ConfigError, match="no benchmark is present on disk.*svo_probes: not found"):
        validate_config(_preset(tmp_path, set()))


def test_a_missing_path_of_a_required_eval_set_is_still_an_error(tmp_path):
    raw = _preset(tmp_path, {"svo_probes", "winoground"})
    raw["eval_sets"]["winoground"]["optional"] = False
    raw["eval_sets"]["winoground"]["images"] = str(tmp_path / "nowhere")
    with pytest.raises(ConfigError, match="eval_sets.winoground.images': not found"):
        validate_config(raw)
    said: list[str] = []
    unchanged = {"eval_sets": {}, "benchmarks": {}}
    assert drop_absent_eval_sets(unchanged, said.append) is unchanged and not said
