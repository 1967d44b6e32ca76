"""What became of each benchmark's items, for the metrics summary, and how to read it.

Per benchmark: the items it holds (per part, e.g. once per training corpus of a
systematicity benchmark), those excluded from every metric because their image is unusable
(by image status: missing, unreadable; pooled over the evaluated models), and the records
of its source files that were rejected before they became items (per reason, from the
benchmark's or its eval set's rejected tables, ``contracts.REJECTED_SCHEMA``).

What each model's values are computed from (the metric tables' ``score_kind``:
``score_kinds_text``), for the summary and the figures.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from vlcomp.contracts import ITEMS_KEY
from vlcomp.io import read_parquet_metadata
from vlcomp.vocabulary import CHANCE

# The image statuses of ``evaluate.embed`` (not imported: it loads torch).
IMAGE_STATUSES: tuple[str, ...] = ("missing", "unreadable")

ITEMS_SCHEMA: dict[str, pl.DataType] = {
    "benchmark": pl.String,
    "kind": pl.String,
    "items": pl.Int64,  # null: no model evaluated it
    "evaluated": pl.Int64,
    **{f"excluded_{status}": pl.Int64 for status in IMAGE_STATUSES},
    "excluded_share": pl.Float64,
    "rejected": pl.Int64,  # records of its rejected tables
}
REJECTED_REASONS_SCHEMA: dict[str, pl.DataType] = {
    "benchmark": pl.String,
    "table": pl.String,
    "reason": pl.String,
    "records": pl.Int64,
}


def _excluded(paths: Sequence[str]) -> tuple[int | None, pl.DataFrame]:
    """Items the evaluations were given (the largest count over models) and the excluded
    items of all models, each (part, item_id) once."""
    totals, frames = [], []
    for path in paths:
        meta = read_parquet_metadata(path)
        if ITEMS_KEY not in meta:
            raise ValueError(
                f"{path}: no item count in its metadata ({ITEMS_KEY}): written by an older "
                "vlcomp; rerun its evaluation (snakemake --forcerun evaluate_benchmark ...)"
            )
        totals.append(int(meta[ITEMS_KEY]))
        frame = pl.read_parquet(path, columns=["part", "item_id", "status"])
        unknown = sorted(set(frame["status"].to_list()) - set(IMAGE_STATUSES))
        if unknown:
            raise ValueError(f"{path}: unknown image status(es) {unknown}")
        frames.append(frame)
    excluded = (
        pl.concat(frames).sort("part", "item_id", "status", nulls_last=False)
        if frames
        else pl.DataFrame(schema={"part": pl.String, "item_id": pl.String, "status": pl.String})
    )
    return (max(totals) if totals else None), excluded.unique(["part", "item_id"], keep="first")


def benchmark_items(
    benchmarks: Mapping[str, Mapping[str, Any]],
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """``ITEMS_SCHEMA`` (one row per benchmark, in the given order) and
    ``REJECTED_REASONS_SCHEMA`` (per benchmark, rejected table and reason).

    ``benchmarks``: name -> {"kind": str, "excluded": [excluded tables of the models'
    evaluations, with the item count in their metadata], "rejected": [rejected tables]}."""
    rows, reasons = [], []
    for name, entry in benchmarks.items():
        total, excluded = _excluded(list(entry.get("excluded", [])))
        by_status = dict(excluded.group_by("status").len().iter_rows())
        n_excluded = excluded.height
        n_rejected = 0
        for path in entry.get("rejected", []):
            table = pl.read_parquet(path, columns=["reason"])
            n_rejected += table.height
            counts = table.group_by("reason").len().sort("len", "reason", descending=[True, False])
            reasons += [(name, str(path), reason, n) for reason, n in counts.iter_rows()]
        rows.append(
            (
                name,
                entry.get("kind"),
                total,
                None if total is None else total - n_excluded,
                *(by_status.get(status, 0) for status in IMAGE_STATUSES),
                n_excluded / total if total else None,
                n_rejected,
            )
        )
    return (
        pl.DataFrame(rows, schema=ITEMS_SCHEMA, orient="row"),
        pl.DataFrame(reasons, schema=REJECTED_REASONS_SCHEMA, orient="row"),
    )


def items_markdown(items: pl.DataFrame, reasons: pl.DataFrame) -> list[str]:
    """The summary's section on items: the per-benchmark table, a line for each benchmark
    that lost items to unusable images, and the rejected records per reason."""
    lines = [
        "## Items per benchmark",
        "",
        "items: what the benchmark holds (per part: a systematicity benchmark counts its items "
        "once per training corpus); excluded: left out of every metric because the image is "
        "missing or unreadable (any evaluated model); rejected: source records that never "
        "became items (the benchmark's or its eval set's rejected tables).",
        "",
        "| benchmark | kind | items | evaluated | excluded (image missing) "
        "| excluded (image unreadable) | excluded share | rejected records |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in items.iter_rows(named=True):
        share = f"{r['excluded_share']:.1%}" if r["excluded_share"] is not None else ""
        total = "" if r["items"] is None else r["items"]
        evaluated = "" if r["evaluated"] is None else r["evaluated"]
        lines.append(
            f"| {r['benchmark']} | {r['kind'] or ''} | {total} | {evaluated} "
            f"| {r['excluded_missing']} | {r['excluded_unreadable']} | {share} "
            f"| {r['rejected']} |"
        )
    lines.append("")
    for r in items.filter(pl.col("excluded_share") > 0).iter_rows(named=True):
        lines.append(
            f"- **{r['benchmark']}**: {r['excluded_share']:.0%} of its items "
            f"({r['items'] - r['evaluated']} of {r['items']}) are excluded because their image "
            f"is unusable ({r['excluded_missing']} missing, {r['excluded_unreadable']} "
            f"unreadable); its metrics rest on {r['evaluated']} "
            + ("item." if r["evaluated"] == 1 else "items.")
        )
    lines += ["", "### Records rejected before they became items", ""]
    if reasons.is_empty():
        return [*lines, "No record was rejected.", ""]
    lines += ["| benchmark | table | reason | records |", "|---|---|---|---:|"]
    for r in reasons.iter_rows(named=True):
        reason = r["reason"].replace("|", "\\|")
        lines.append(f"| {r['benchmark']} | {r['table']} | {reason} | {r['records']} |")
    return [*lines, ""]


def eval_set_markdown(benchmarks: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """A line per eval set summary (``eval_sets`` of a benchmark entry: the eval items
    job's ``items_summary.json``) that has something to say: warnings (no attribute or no
    relation in any item), boxes clipped to their image, what joining annotation files
    merged. Each summary once, under the first benchmark that uses it."""
    lines: list[str] = []
    seen: set[str] = set()
    for name, entry in benchmarks.items():
        for path in entry.get("eval_sets", []):
            if path in seen:
                continue
            seen.add(path)
            summary = json.loads(Path(path).read_text())
            eval_set = Path(path).parent.name
            notes = [f"**warning:** {w}" for w in summary.get("warnings", [])]
            if summary.get("clipped_boxes"):
                notes.append(f"{summary['clipped_boxes']} region boxes clipped to their image")
            merged = summary.get("merged") or {}
            if merged.get("attributes_joined") or merged.get("attributes_unmatched"):
                notes.append(
                    f"{merged.get('attributes_joined', 0)} attribute values joined from the "
                    f"annotation files ({merged.get('attributes_not_stated', 0)} left out as not "
                    f"stated by the region's phrase, {merged.get('attributes_unmatched', 0)} "
                    "annotated objects in no region)"
                )
            items = summary.get("items")
            head = (
                f"- eval set **{eval_set}** ({name}): {items} items, "
                f"{summary.get('items_with_attributes')} with attributes, "
                f"{summary.get('items_with_relations')} with relations"
            )
            lines.append("; ".join([head, *notes]) + ".")
    return ["### Evaluation sets", "", *lines, ""] if lines else []


# ------------------------------------------------------------------ legend and provenance

# The metric tables' score kinds (``evaluate.metrics.SCORE_KINDS``, not imported: the report
# reads tables), each with its short name in figures and what it is.
SCORE_KIND_TEXT: dict[str, tuple[str, str]] = {
    "cosine": (
        "cosine",
        "the cosine of the image and text embeddings (dual encoders: open_clip, transformers "
        "dual_encoder; SugarCrepe++'s text-only accuracy, for every model: the cosine of two "
        "text embeddings)",
    ),
    "itm_log_odds": (
        "ITM log-odds",
        "logit(match) - logit(no match) of an image-text matching head (BLIP ITM, matching_head)",
    ),
    "itm_logit_plus_cosine": (
        "ITM logit + ITC cosine",
        "the ITM match logit plus the ITC cosine, by which BLIP's retrieval evaluation reranks "
        "the top of an ITC-cosine ranking (matching_head, salesforce definition; retrieval only)",
    ),
    "log_probability": (
        "log-probability",
        "log P(answer | image, question about the text) of a generative model (VQAScore, vqascore)",
    ),
}
NO_SCORE_KIND = "no score kind"


def score_kinds_text(table: pl.DataFrame, source: str | Path = "metric table") -> str:
    """What the models' values in a metric table are computed from, one clause per score
    kind naming its models ("Scores: cosine: m1, m2; ITM log-odds: blip."); a model whose
    rows have several kinds (SugarCrepe++: ITT and TOT) is named with the metrics of each.
    Models whose rows have none (ground-truth oracles; tables written before the kind was
    recorded) close the line as "no score kind"; "" when no row has a kind. ``ValueError``
    naming ``source`` for a kind not in ``SCORE_KIND_TEXT``."""
    if "score_kind" not in table.columns:
        return ""
    rows = table.filter(pl.col("model") != CHANCE)
    if rows["score_kind"].is_null().all():
        return ""
    unknown = sorted(set(rows["score_kind"].drop_nulls().to_list()) - set(SCORE_KIND_TEXT))
    if unknown:
        raise ValueError(
            f"{source}: unknown score kind(s) {unknown} in column score_kind; known: "
            f"{sorted(SCORE_KIND_TEXT)}"
        )
    per_model = rows.group_by("model", "score_kind").agg(pl.col("metric").unique().sort())
    kinds_of = dict(per_model.group_by("model").agg(pl.col("score_kind").n_unique()).iter_rows())
    clauses = []
    for kind in [*SCORE_KIND_TEXT, None]:
        models = per_model.filter(pl.col("score_kind").eq_missing(kind)).sort("model")
        named = [
            model if kinds_of[model] == 1 else f"{model} ({', '.join(metrics)})"
            for model, _, metrics in models.iter_rows()
        ]
        if named:
            label = SCORE_KIND_TEXT[kind][0] if kind is not None else NO_SCORE_KIND
            clauses.append(f"{label}: {', '.join(named)}")
    return "Scores: " + "; ".join(clauses) + "."


# What the evaluation's ``split_columns`` metadata names, in the summary's words.
SPLIT_RULES = {
    "crepe_split": "CREPE SC / UC / UA",
    "split_loose": "BindSplit LOOSE",
    "split_strict": "BindSplit STRICT",
}
# Run settings every evaluation writes into its tables' metadata, in the order said.
RUN_SETTINGS = ("precision", "device", "tie_policy", "ci", "bootstrap_resamples", "bootstrap_seed")


def legend_markdown() -> list[str]:
    """How to read the summary's tables: their columns and split labels."""
    return [
        "## How to read this summary",
        "",
        "- **value**: R@1 of a candidate set (the positive ranked strictly above every "
        "negative; for pairs the same, called accuracy), or retrieval Recall@K. A tie counts "
        "as wrong everywhere.",
        "- **type**: the negative type (family). **all** is the micro average: every item of "
        "every type counts once (`<metric>_micro`). The macro average, the mean of the "
        "per-type values with each type weighted equally (`<metric>_macro`), is in each "
        "benchmark's CSV and Parquet table, not here. Retrieval: i2t (image to text) and t2i "
        "(text to image).",
        "- **95% CI**: percentile bootstrap over the row's items (resamples and seed in each "
        "benchmark's provenance line). **n**: the items the value is computed over, after "
        "those excluded for an unusable image. **chance**: the expectation of a random "
        "ranking of the same candidates.",
        "- **Scores**: every value is computed from ranks, but what a model ranks by differs "
        "(each benchmark's *Scores* line; the tables' `score_kind` column): "
        + "; ".join(
            f"**{label}** (`{kind}`), {meaning}"
            for kind, (label, meaning) in SCORE_KIND_TEXT.items()
        )
        + ". Scores of different kinds are on different scales: compare the models' values "
        "here, never their raw scores. Chance rows and ground-truth oracles have no score "
        "kind.",
        "- **part**: the training corpus a systematicity benchmark's items and splits were "
        "built against; every model is scored on every part, and a model's own corpus's part "
        "is the one that says what it saw in training.",
        "- **split** `all`: every item. An atom, compound or binding is *seen* when the "
        "training corpus holds it in at least min_count captions (the splits' setting).",
        "  - **SC / UC / UA** (CREPE systematicity, against the corpus in `part`): SC, every "
        "atom and every compound of the item is seen; UC, every atom is seen and some "
        "compound is not; UA, some atom (object, attribute or relation) is unseen.",
        "  - **seen / mixed / unseen** (BindSplit): every, some or none of the item's "
        "attribute-object bindings (its positive and its swapped negatives together) is seen. "
        "**LOOSE** counts a binding seen when the corpus has it as a perfect binding (exactly "
        "this attribute on this object) or only inside a longer attributive phrase "
        "(close-only); **STRICT** counts only perfect bindings. Pairs benchmarks are split "
        "against the evaluated model's own training corpus.",
        "  - **no_binding** (no attribute-object binding), **no_compound** (no compound), "
        "**no_split** / **not_in_splits** (the splits table gives the item no split, or lacks "
        "it): items without a split. They keep their own rows here; the CREPE and BindSplit "
        "figures count them under the figure instead of drawing a bar, the pairs figures draw "
        "them as a grey bar.",
        "",
    ]


def _settings(paths: Sequence[str]) -> tuple[dict[str, str], dict[str, str]]:
    """Per model its fingerprint, and the run settings (distinct values joined by " / "),
    from the metadata of the models' evaluation tables."""
    fingerprints: dict[str, str] = {}
    values: dict[str, list[str]] = {key: [] for key in (*RUN_SETTINGS, "split_columns")}
    for path in paths:
        meta = read_parquet_metadata(path)
        if "model" in meta:
            fingerprints[meta["model"]] = meta.get("fingerprint", "")
        for key, seen in values.items():
            # split_columns names one column per part, comma-separated
            found = meta.get(key, "")
            for value in found.split(",") if key == "split_columns" else [found]:
                if value and value not in seen:
                    seen.append(value)
    return fingerprints, {key: " / ".join(seen) for key, seen in values.items() if seen}


def provenance_line(
    table: str | Path, frame: pl.DataFrame, entry: Mapping[str, Any] | None, view: str = ""
) -> str:
    """One line on where a metric table's numbers come from: its eval set, what its splits
    were computed against (and by which rule), the models with their training corpus and
    fingerprint, the run settings and the library versions.

    ``entry``: the benchmark's entry of ``metrics_markdown``'s ``benchmarks`` (keys used
    here: ``eval_set``, ``models`` (model -> training corpus or None), ``excluded`` or, for
    the ``view`` "bindsplit", ``bindsplit_excluded``: the models' evaluation tables, whose
    metadata holds the settings)."""
    entry = entry or {}
    paths = entry.get("bindsplit_excluded" if view == "bindsplit" else "excluded", [])
    fingerprints, settings = _settings(list(paths))
    said = []
    if entry.get("eval_set"):
        said.append(f"eval set `{entry['eval_set']}`")
    splits = set(frame["split"].drop_nulls().to_list()) - {"all"}
    parts = sorted(set(frame["part"].drop_nulls().to_list())) if "part" in frame.columns else []
    if splits:
        rules = [SPLIT_RULES.get(c, c) for c in settings.get("split_columns", "").split(" / ")]
        rule = f" ({', '.join(r for r in rules if r)})" if any(rules) else ""
        against = (
            f"the training corpora {', '.join(parts)} (column part)"
            if parts
            else "each model's own training corpus"
        )
        said.append(f"splits{rule} against {against}")
    models = dict(entry.get("models") or {})
    if not models:
        models = {m: None for m in sorted(set(frame["model"].to_list()) - {"chance"})}
    described = []
    for model, corpus in models.items():
        notes = [f"trained on {corpus}" if corpus else "", fingerprints.get(model, "")]
        notes = [n for n in notes if n]
        described.append(f"{model} ({'; '.join(notes)})" if notes else model)
    said.append("models " + ", ".join(described))
    if "precision" in settings:
        said.append(
            settings["precision"] + (f" on {settings['device']}" if "device" in settings else "")
        )
    if "tie_policy" in settings:
        said.append(f"ties: {settings['tie_policy']}")
    if "ci" in settings:
        forms = (("bootstrap_resamples", "{} resamples"), ("bootstrap_seed", "seed {}"))
        resampling = [form.format(settings[k]) for k, form in forms if k in settings]
        said.append(f"CI: {settings['ci']}" + (f" ({', '.join(resampling)})" if resampling else ""))
    versions = read_parquet_metadata(table)
    if versions:
        ordered = sorted(versions, key=lambda k: (k != "vlcomp", k))
        said.append("versions " + ", ".join(f"{k} {versions[k]}" for k in ordered))
    return "Provenance: " + "; ".join(said) + "."
