"""The audit job: one benchmark's candidates, its text-only scores and a reference corpus's
counts in; ``audit.md``, ``audit.html``, the tables (Parquet) and the figures out."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from vlcomp.audit.bindsplit import DEFAULT_MIN_REFERENCE_CAPTIONS, reference_status
from vlcomp.audit.checks import AuditTables, audit_tables
from vlcomp.audit.familiarity import model_accuracy_table
from vlcomp.audit.figures import plot_blind_accuracy, plot_composition, plot_seen_shares
from vlcomp.audit.report import audit_blocks, render_html, render_markdown
from vlcomp.audit.variants import VariantInfo, describe_variant, prepare_candidates, unique_keys
from vlcomp.certificate import best_attack_table
from vlcomp.contracts import GRAPH_SCHEMA, NOTE_KEY, SCORES_SCHEMA, conform
from vlcomp.counts.counts import read_counts, read_totals
from vlcomp.io import atomic_path, read_parquet_metadata, write_parquet
from vlcomp.refine.blind import TiePolicy

Log = Callable[[str], None]
OUTPUT_FILES: tuple[str, ...] = (
    *(
        f"{stem}.parquet"
        for stem in (
            "reference", "blind", "order_blind", "bindsplit_items", "composition",
            "seen_shares", "binding_labels", "buckets", "familiarity", "graphs",
        )
    ),
    *(f"{fig}.{ext}" for fig in ("blind_accuracy", "seen_shares", "composition")
      for ext in ("png", "pdf")),
    "audit.md",
    "audit.html",
)  # fmt: skip
ScoresArg = str | Path | Sequence[str | Path] | Mapping[str, str | Path]


def score_paths(scores: ScoresArg) -> list[Path]:
    """The files of the ``scores`` argument: one path, a sequence, or a mapping label ->
    path (the labels only document where each file comes from)."""
    if isinstance(scores, str | Path):
        return [Path(scores)]
    if isinstance(scores, Mapping):
        return [Path(p) for p in scores.values()]
    return [Path(p) for p in scores]


def read_scores(paths: Sequence[Path]) -> pl.DataFrame:
    """``SCORES_SCHEMA`` rows of several files pooled by (scorer, text_key); the same pair
    with two different scores in two files raises (two scorers under one short name)."""
    if not paths:
        return pl.DataFrame(schema=SCORES_SCHEMA)
    frame = pl.concat([conform(pl.read_parquet(p), SCORES_SCHEMA, str(p)) for p in paths])
    frame = frame.unique(maintain_order=True)
    clash = frame.filter(pl.struct("scorer", "text_key").is_duplicated())
    if clash.height:
        raise ValueError(
            f"scores: scorer {clash['scorer'][0]!r} has different scores for the same text in "
            f"{[str(p) for p in paths]} (text_key {clash['text_key'][0]})"
        )
    return frame.sort("scorer", "text_key")


def parse_texts(
    texts: Sequence[str], parse_settings: Mapping[str, Any], log: Log = print
) -> tuple[pl.DataFrame, dict[str, Any]]:
    """(text + graph columns + ok, parser metadata) of ``texts`` with our parser configured
    by ``parse_settings`` (the ``parse`` config, as for evaluation items)."""
    from vlcomp.splits.items import make_parser

    parser = make_parser(parse_settings)
    log(f"audit: parsing {len(texts)} distinct candidate texts with {parser.parser_name}")
    rows: dict[str, list[Any]] = {"text": [], **{k: [] for k in GRAPH_SCHEMA}, "ok": []}
    graphs = parser.parse(
        list(texts),
        batch_size=int(parse_settings.get("batch_size") or 256),
        n_process=int(parse_settings.get("n_process") or 1),
    )
    for text, graph in zip(texts, graphs, strict=True):
        row = graph.row()
        rows["text"].append(text)
        for key in GRAPH_SCHEMA:
            rows[key].append(row[key])
        rows["ok"].append(graph.ok)
    schema = {"text": pl.String, **GRAPH_SCHEMA, "ok": pl.Boolean}
    return pl.DataFrame(rows, schema=schema), parser.metadata()


def read_model_metrics(paths: Sequence[str | Path]) -> pl.DataFrame:
    """Model metric tables (``METRIC_SCHEMA``) stacked; an empty frame without any."""
    frames = [pl.read_parquet(p) for p in paths]
    return pl.concat(frames, how="diagonal_relaxed") if frames else pl.DataFrame()


def _write_text(path: Path, text: str) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


def audit_job(
    benchmark: str,
    candidates: str,
    scores: ScoresArg,
    refined_candidates: str | None,
    reference_counts: str,
    reference_name: str,
    parse_settings: Mapping[str, Any],
    model_metrics: Sequence[str],
    out_dir: str,
    log: Log = print,
    *,
    scorers: Sequence[str] | None = None,
    familiarity_scorers: Sequence[str] = ("ngram",),
    tie_policy: TiePolicy = "tie_counts_as_wrong",
    min_count: int = 1,
    min_reference_captions: int = DEFAULT_MIN_REFERENCE_CAPTIONS,
    refinement_corpus: str | None = None,
    certificate: str | Path | None = None,
) -> dict[str, Any]:
    """Audit one benchmark (see ``vlcomp.audit.checks`` for the checks) and write under
    ``out_dir``: ``audit.md``, ``audit.html`` (self-contained), the tables as Parquet
    (``OUTPUT_FILES``) and the figures (PNG + PDF). With ``certificate`` (the benchmark's
    ``results/blind/<benchmark>/attacks.parquet``), the report ends with its best attack per
    variant and type and the verdict.

    ``candidates`` and ``refined_candidates``: the audit's variants (``read_variants``).
    ``scores``: ``SCORES_SCHEMA`` files (``score_paths``), pooled by (scorer, text_key);
    ``scorers`` restricts the scorers (default: every one in the files); a scorer lacking
    some text of a variant is left out of that variant with a note. ``reference_counts``: a
    merged counts folder (``vlcomp.counts``) of the reference corpus ``reference_name``;
    with fewer than ``min_reference_captions`` captions or no binding the report says so at
    the top and leaves out the BindSplit sections and the binding-count rules (no parsing is
    done then). ``parse_settings``: the ``parse`` config. ``model_metrics``: model metric
    tables (``METRIC_SCHEMA``) shown next to the familiarity rules (may be empty).
    ``familiarity_scorers``: text scorers shown as familiarity rules (the n-gram). Images
    are never opened. Returns the written paths and headline numbers (also logged).
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    audited = read_variants(
        candidates, refined_candidates, refinement_corpus or reference_name, benchmark, log
    )
    variants, descriptions = audited.variants, audited.descriptions
    paths = score_paths(scores)
    score_table = read_scores(paths)

    totals, parsers = read_totals(Path(reference_counts))
    counts = read_counts(Path(reference_counts))
    status = reference_status(reference_name, totals["n_captions"], counts, min_reference_captions)
    if status.warning:
        log(f"audit {benchmark}: WARNING: {status.warning}")
    graphs, parser_meta = None, None
    if status.usable:  # the BindSplit sections need the candidates' graphs
        texts = sorted(set(pl.concat([v.select("text") for v in variants.values()])["text"]))
        graphs, parser_meta = parse_texts(texts, parse_settings, log)
    models = model_accuracy_table(read_model_metrics(model_metrics), variants)
    tables = audit_tables(
        variants,
        score_table,
        graphs,
        counts,
        status,
        models,
        scorers=scorers,
        familiarity_scorers=familiarity_scorers,
        tie_policy=tie_policy,
        min_count=min_count,
        descriptions=descriptions,
    )
    for note in tables.notes:
        log(f"audit {benchmark}: note: {note}")

    meta = {
        "vlcomp.stage": "audit", "vlcomp.benchmark": benchmark,
        "vlcomp.reference": reference_name, "vlcomp.reference_captions": str(status.n_captions),
        "vlcomp.reference_parsers": json.dumps(parsers), "vlcomp.tie_policy": tie_policy,
        "vlcomp.min_count": str(min_count),
        "vlcomp.parser": json.dumps(parser_meta, sort_keys=True) if parser_meta else "",
    }  # fmt: skip
    written = _write_tables(tables, graphs, meta, out)
    figures = _figures(tables, benchmark, reference_name, out)
    written.update({f"figure_{k}": str(v) for k, v in figures.items()})

    inputs = [
        *audited.input_lines(),
        f"scores: {', '.join(sorted(score_table['scorer'].unique().to_list())) or 'none'} "
        f"({len(paths)} file(s))",
        f"reference corpus `{reference_name}`: {status.n_captions} captions, "
        f"{status.n_bindings} distinct bindings, {status.n_atoms} distinct atoms "
        f"(parser(s) {', '.join(parsers) or 'unknown'})",
        "benchmark captions parsed with "
        + (parser_meta["parser"] if parser_meta else "nothing (reference not usable)"),
        f"model metric tables: {len(model_metrics)}",
    ]
    sizes = {k: (v["item_id"].n_unique(), v.height) for k, v in variants.items()}
    written.update(
        _write_report(tables, benchmark, reference_name, inputs, figures, sizes, certificate, out)
    )
    summary = headline(tables)
    log(f"audit {benchmark}: {json.dumps(summary, sort_keys=True)}")
    return {"paths": written, "summary": summary, "warning": status.warning}


@dataclass(frozen=True)
class AuditedVariants:
    """The candidate sets an audit compares, by variant key, with what each is and why one
    is empty (key -> reason)."""

    variants: dict[str, pl.DataFrame]
    descriptions: dict[str, VariantInfo]
    why_empty: dict[str, str]

    def input_lines(self) -> list[str]:
        """One line per variant for the report's inputs."""
        return [
            f"variant `{k}` ({self.descriptions[k].label}): {v['item_id'].n_unique()} items, "
            f"{v.height} candidate texts (benchmark name(s) "
            f"{sorted(v['benchmark'].unique().to_list())})"
            + (f"; empty because {self.why_empty[k]}" if k in self.why_empty else "")
            for k, v in self.variants.items()
        ]


def read_variants(
    candidates: str,
    refined_candidates: str | None,
    refinement_corpus: str,
    benchmark: str,
    log: Log = print,
) -> AuditedVariants:
    """The benchmark's candidates and, with ``refined_candidates``, its refined subset, each
    named for what it is (``variants.describe_variant``): a published set by its release
    (``published_refined``: "as published (refined by its authors)", ``published_unrefined``,
    ``published``), our generated set as ``generated``, and a refined subset whose metadata
    names the refine stage's two scorers as ``re-refined`` ("re-refined here with <scorers>
    trained on ``refinement_corpus``"), whose blind accuracy for those two scorers is 0.5 by
    construction (the report says so). Logs each variant's size."""
    main = prepare_candidates(pl.read_parquet(candidates), str(candidates))
    sets: list[tuple[VariantInfo, pl.DataFrame]] = [(describe_variant(main), main)]
    if refined_candidates is not None:
        refined = prepare_candidates(pl.read_parquet(refined_candidates), str(refined_candidates))
        meta = read_parquet_metadata(refined_candidates)
        info = describe_variant(refined, meta, refinement_corpus, refined_subset=True)
        if info.note:
            info = VariantInfo(
                info.key, info.label, info.balanced, f"{info.note} A subset of the "
                f"`{sets[0][0].key}` items ({sets[0][0].label})."
            )  # fmt: skip
        sets.append((info, refined))
    infos = unique_keys([info for info, _ in sets])
    variants = {info.key: frame for info, (_, frame) in zip(infos, sets, strict=True)}
    descriptions = {info.key: info for info in infos}
    why_empty: dict[str, str] = {}
    if refined_candidates is not None and sets[1][1].is_empty():
        why_empty[infos[1].key] = read_parquet_metadata(refined_candidates).get(
            NOTE_KEY, "the refine stage gave no reason (an output of an older vlcomp)"
        )
    for name, frame in variants.items():
        why = f": {why_empty[name]}" if name in why_empty else ""
        log(
            f"audit {benchmark}: {name} ({descriptions[name].label}): "
            f"{frame['item_id'].n_unique()} items, {frame.height} texts{why}"
        )
    return AuditedVariants(variants, descriptions, why_empty)


def _write_report(
    tables: AuditTables,
    benchmark: str,
    reference_name: str,
    inputs: list[str],
    figures: dict[str, Path],
    sizes: dict[str, tuple[int, int]],
    certificate: str | Path | None,
    out: Path,
) -> dict[str, str]:
    """``audit.md`` and ``audit.html``, ending with the certificate's best attacks."""
    best = best_attack_table([certificate]) if certificate is not None else None
    if certificate is not None:
        inputs = [*inputs, f"blind-attack certificate: {certificate}"]
    blocks = audit_blocks(tables, benchmark, inputs, figures, sizes, best)
    md, page = out / "audit.md", out / "audit.html"
    _write_text(md, render_markdown(blocks, out))
    _write_text(page, render_html(blocks, f"Audit of {benchmark} against {reference_name}"))
    return {"markdown": str(md), "html": str(page)}


def _write_tables(
    tables: AuditTables, graphs: pl.DataFrame | None, meta: dict[str, str], out: Path
) -> dict[str, str]:
    """The audit's tables as Parquet under ``out`` (stem -> path), after removing the files
    of an earlier run that computed more (a larger reference)."""
    for stale in OUTPUT_FILES:
        (out / stale).unlink(missing_ok=True)
    frames = tables.tables()
    if graphs is not None:
        frames["graphs"] = graphs.sort("text")
    written: dict[str, str] = {}
    for stem, frame in frames.items():
        path = out / f"{stem}.parquet"
        write_parquet(frame, path, meta)
        written[stem] = str(path)
    return written


def _figures(tables: AuditTables, benchmark: str, reference: str, out: Path) -> dict[str, Path]:
    figures: dict[str, Path] = {}
    if tables.blind.height:
        figures["blind"] = out / "blind_accuracy.png"
        plot_blind_accuracy(
            tables.blind, tables.order_blind, benchmark, reference,
            figures["blind"], out / "blind_accuracy.pdf", tables.variants,
        )  # fmt: skip
    if tables.seen_shares is not None:
        figures["seen"] = out / "seen_shares.png"
        plot_seen_shares(
            tables.seen_shares, benchmark, reference, figures["seen"], out / "seen_shares.pdf",
            infos=tables.variants,
        )  # fmt: skip
    if tables.composition is not None:
        figures["composition"] = out / "composition.png"
        plot_composition(
            tables.composition, benchmark, reference, figures["composition"],
            out / "composition.pdf", infos=tables.variants,
        )  # fmt: skip
    return figures


def headline(tables: AuditTables) -> dict[str, Any]:
    """Per variant: blind accuracy (all) per scorer, same-words share and ceilings, and the
    positive / negative seen shares (all types) per rule."""
    out: dict[str, Any] = {"reference_usable": tables.reference.usable}
    for row in tables.order_blind.filter(pl.col("type") == "all").iter_rows(named=True):
        v = out.setdefault(row["variant"], {})
        info = tables.variants.get(row["variant"])
        v["label"] = info.label if info else row["variant"]
        v["items"] = row["n_items"]
        v["same_words_share"] = round(row["share"], 4)
        v["ceiling_ties_wrong"] = round(row["ceiling_ties_wrong"], 4)
    for row in tables.blind.filter(pl.col("type") == "all").iter_rows(named=True):
        out[row["variant"]][f"blind_{row['scorer']}"] = round(row["accuracy"], 4)
    if tables.seen_shares is not None:
        for row in tables.seen_shares.filter(pl.col("type") == "all").iter_rows(named=True):
            v = out[row["variant"]]
            for side in ("positive", "negative"):
                value = row[f"{side}_seen_share"]
                v[f"{side}_seen_{row['rule']}"] = None if value is None else round(value, 4)
    return out
