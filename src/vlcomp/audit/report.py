"""The audit report: a list of blocks rendered to Markdown and to self-contained HTML.

Blocks are (kind, ...) tuples: ``("h", level, text)``, ``("p", text)``, ``("warn", text)``,
``("ul", [items])``, ``("table", frame)``, ``("figure", png_path, caption)``. Text may use
``**bold**`` and ```code```. In HTML, figures are embedded as ``data:`` URIs (the file needs
nothing beside it); in Markdown they are relative links to the PNGs next to ``audit.md``.
"""

from __future__ import annotations

import base64
import html
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import polars as pl

from vlcomp.refine.report import markdown_table

Block = tuple[Any, ...]

CSS = """
body{font-family:system-ui,sans-serif;max-width:70rem;margin:2rem auto;padding:0 1rem;
line-height:1.4;color:#222}
table{border-collapse:collapse;margin:0.6rem 0 1.2rem;font-size:0.85rem}
th,td{border:1px solid #ccc;padding:0.2rem 0.5rem}th{background:#f2f2f2}
td.num{text-align:right;font-variant-numeric:tabular-nums}
.warn{border:3px solid #c00;background:#fff0f0;padding:0.8rem 1rem;font-weight:600;margin:1rem 0}
figure{margin:1rem 0}figure img{max-width:100%}figcaption{font-size:0.85rem;color:#555}
code{background:#f4f4f4;padding:0 0.2rem}
"""


def _fmt(value: object, digits: int) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.{digits}f}" if value == value else "nan"
    return str(value)


def _inline_html(text: str) -> str:
    out = html.escape(text)
    out = re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", out)
    return re.sub(r"`(.+?)`", r"<code>\1</code>", out)


def html_table(frame: pl.DataFrame, digits: int = 3) -> str:
    numeric = [frame[c].dtype.is_numeric() for c in frame.columns]
    head = "".join(f"<th>{html.escape(c)}</th>" for c in frame.columns)
    rows = []
    for row in frame.iter_rows():
        cells = "".join(
            f'<td class="num">{_fmt(v, digits)}</td>'
            if num
            else f"<td>{html.escape(_fmt(v, digits))}</td>"
            for v, num in zip(row, numeric, strict=True)
        )
        rows.append(f"<tr>{cells}</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def render_markdown(blocks: Sequence[Block], base: Path, digits: int = 3) -> str:
    """Markdown of ``blocks``; figure links are relative to ``base`` (the report's folder)."""
    parts = []
    for block in blocks:
        kind = block[0]
        if kind == "h":
            parts.append(f"{'#' * block[1]} {block[2]}\n")
        elif kind == "p":
            parts.append(f"{block[1]}\n")
        elif kind == "warn":
            parts.append(f"> **WARNING.** {block[1]}\n")
        elif kind == "ul":
            parts.append("".join(f"- {item}\n" for item in block[1]))
        elif kind == "table":
            parts.append(markdown_table(block[1], digits))
        elif kind == "figure":
            link = Path(block[1]).resolve().relative_to(base.resolve()).as_posix()
            parts.append(f"![{block[2]}]({link})\n\n*{block[2]}*\n")
        else:
            raise ValueError(f"unknown report block {kind!r}")
    return "\n".join(parts)


def render_html(blocks: Sequence[Block], title: str, digits: int = 3) -> str:
    """A self-contained HTML page of ``blocks`` (figures inlined as base64 PNG)."""
    parts = []
    for block in blocks:
        kind = block[0]
        if kind == "h":
            parts.append(f"<h{block[1]}>{_inline_html(block[2])}</h{block[1]}>")
        elif kind == "p":
            parts.append(f"<p>{_inline_html(block[1])}</p>")
        elif kind == "warn":
            parts.append(f'<div class="warn">WARNING. {_inline_html(block[1])}</div>')
        elif kind == "ul":
            items = "".join(f"<li>{_inline_html(item)}</li>" for item in block[1])
            parts.append(f"<ul>{items}</ul>")
        elif kind == "table":
            parts.append(html_table(block[1], digits))
        elif kind == "figure":
            data = base64.b64encode(Path(block[1]).read_bytes()).decode("ascii")
            caption = html.escape(block[2])
            parts.append(
                f'<figure><img alt="{caption}" src="data:image/png;base64,{data}">'
                f"<figcaption>{caption}</figcaption></figure>"
            )
        else:
            raise ValueError(f"unknown report block {kind!r}")
    body = "\n".join(parts)
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{html.escape(title)}</title><style>{CSS}</style></head>\n"
        f"<body>\n{body}\n</body></html>\n"
    )


# ------------------------------------------------------------------- the audit's content


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f} %"


def _wide(frame: pl.DataFrame, index: Sequence[str], on: str, value: str) -> pl.DataFrame:
    """``frame`` pivoted (``on`` values become columns, in first-seen order)."""
    if frame.height == 0:
        return frame
    columns = list(dict.fromkeys(frame[on].to_list()))
    wide = frame.pivot(on, index=list(index), values=value, maintain_order=True)
    return wide.select(*index, *columns)


def audit_blocks(
    tables: Any,  # checks.AuditTables
    benchmark: str,
    inputs: Sequence[str],
    figures: dict[str, Path],
) -> list[Block]:
    """The report's blocks for ``tables`` (``vlcomp.audit.checks.AuditTables``)."""
    from vlcomp.audit.checks import ALL, MACRO

    ref = tables.reference
    tie = tables.tie_policy
    ties_text = (
        "ties (positive scored exactly as the best negative) count as **wrong**"
        if tie == "tie_counts_as_wrong"
        else "a tie earns 1 / (1 + tied negatives), the expectation of a random tie-break"
    )
    blocks: list[Block] = [("h", 1, f"Benchmark audit: {benchmark} (reference corpus: {ref.name})")]
    if ref.warning:
        blocks.append(("warn", ref.warning))
    blocks.append(("ul", list(inputs)))
    blocks.append(
        ("p", f"Tie policy: `{tie}`: {ties_text}. Images are not used: every check is text-only.")
    )

    # Headlines.
    blocks.append(("h", 2, "Headlines"))
    lines = []
    for variant in dict.fromkeys(tables.order_blind["variant"].to_list()):
        ob = tables.order_blind.filter((pl.col("variant") == variant) & (pl.col("type") == ALL))
        best = tables.blind.filter((pl.col("variant") == variant) & (pl.col("type") == ALL))
        text = f"**{variant}** ({ob['n_items'][0]} items):"
        if best.height:
            top = best.sort("accuracy", "scorer", descending=[True, False]).row(0, named=True)
            text += f" best blind scorer {top['scorer']} {_pct(top['accuracy'])};"
        text += (
            f" {ob['same_words'][0]} of {ob['n_pairs'][0]} pairs ({_pct(ob['share'][0])}) have "
            f"the same words, order-blind ceiling {_pct(ob['ceiling_ties_wrong'][0])} (ties "
            f"wrong) / {_pct(ob['ceiling_ties_chance'][0])} (ties at chance)"
        )
        if tables.seen_shares is not None:
            for rule in ("strict", "loose"):
                s = tables.seen_shares.filter(
                    (pl.col("variant") == variant)
                    & (pl.col("type") == ALL)
                    & (pl.col("rule") == rule)
                )
                if s.height and s["n_paired"][0]:
                    pos, neg = s["positive_seen_share"][0], s["negative_seen_share"][0]
                    text += (
                        f"; {rule.upper()}: bindings all seen for {_pct(pos)} of positives "
                        f"vs {_pct(neg)} of negatives"
                    )
        lines.append(text + ".")
    blocks.append(("ul", lines))
    if tables.notes:
        blocks.append(("h", 3, "Notes"))
        blocks.append(("ul", list(tables.notes)))

    # 1. Blind baselines.
    blocks.append(("h", 2, "1. Blind baselines (text only)"))
    blocks.append(
        (
            "p",
            "Accuracy of each text-only scorer at preferring the positive caption without the "
            f"image; {ties_text}. `all`: over all items (micro); `macro`: mean over types. "
            "Table `blind.parquet` has the tie counts.",
        )  # fmt: skip
    )
    if tables.blind.height:
        labelled = tables.blind.with_columns(column=pl.format("{} ({})", "scorer", "variant"))
        blocks.append(("table", _wide(labelled, ["type"], "column", "accuracy")))
        ties = labelled.filter(pl.col("type") == ALL).select("variant", "scorer", "n", "ties")
        blocks.append(("p", "Ties over all items:"))
        blocks.append(("table", ties))
    else:
        blocks.append(("p", "No scorer has scores for these candidates."))
    if "blind" in figures:
        blocks.append(("figure", figures["blind"], f"{benchmark}: blind accuracy per type"))

    # 2. Order-blind ceiling.
    blocks.append(("h", 2, "2. Order-blind ceiling"))
    blocks.append(
        (
            "p",
            "Pairs whose positive and negative are the same multiset of words (lower-cased; a "
            "word is a run of letters/digits, joined across an internal apostrophe). A model "
            "that ignores word order scores such two texts identically, so it ties on the "
            "item: with ties counted wrong its accuracy is at most 1 - (items with such a "
            "negative) / items (= 1 - share for one negative per item), with random "
            "tie-breaking at most the mean of 1 / (1 + k) over items with k such negatives "
            "(= 1 - share / 2 for pairs). `identical`: pairs whose two texts are equal.",
        )  # fmt: skip
    )
    blocks.append(("table", tables.order_blind))

    # 3. BindSplit.
    blocks.append(("h", 2, f"3. BindSplit binding overlap with {ref.name}"))
    if tables.seen_shares is None:
        blocks.append(("warn", ref.warning or "not computed"))
    else:
        blocks.append(
            (
                "p",
                "Captions are parsed with our parser; each distinct (attribute, object) "
                f"binding is labelled against {ref.name}'s bindings table ({ref.n_captions} "
                f"captions, {ref.n_bindings} distinct bindings): `perfect` (seen as a perfect "
                f"binding at least {tables.min_count} time(s)), `close` (seen only as a close "
                "binding), `none`. STRICT counts only perfect as seen, LOOSE perfect and "
                "close. A caption is `seen` when all its bindings are, `unseen` when none is, "
                "else `mixed`; `no_binding` when it has no binding. The negative side pools an "
                "item's negatives; `sample` pools both sides (the BindSplit split). Per item "
                "labels: `bindsplit_items.parquet`.",
            )  # fmt: skip
        )
        blocks.append(("h", 3, "Positives vs negatives whose bindings are all seen"))
        blocks.append(("p", "Over the items with a binding on both sides (`n_paired`)."))
        blocks.append(("table", tables.seen_shares))
        if "seen" in figures:
            blocks.append(("figure", figures["seen"], f"{benchmark}: seen share per type"))
        blocks.append(("h", 3, "Split composition (share of all items of the type)"))
        for rule in ("strict", "loose"):
            part = tables.composition.filter(pl.col("rule") == rule)
            wide = _wide(part, ["variant", "type", "side", "n"], "split", "share")
            blocks.append(("p", f"**{rule.upper()}**"))
            blocks.append(("table", wide))
        if "composition" in figures:
            blocks.append(("figure", figures["composition"], f"{benchmark}: BindSplit composition"))
        blocks.append(("h", 3, "Binding labels"))
        labels = _wide(tables.binding_labels, ["variant", "type", "side", "n"], "label", "share")
        blocks.append(("table", labels))

    # 4. Familiarity shortcut.
    blocks.append(("h", 2, "4. Familiarity shortcut"))
    blocks.append(
        (
            "p",
            'Accuracy of "pick the more familiar caption" rules: `bindings_strict` / '
            "`bindings_loose` pick the caption with the larger sum over its distinct bindings "
            f"of log(1 + count in {ref.name}) (count: perfect_count, resp. perfect_count + "
            "close_count; a caption without seen bindings scores 0, so it ties with another "
            f"such caption); text scorers as in section 1; {ties_text}. Models: their "
            "accuracy from the given metric tables (split `all`), chance included.",
        )  # fmt: skip
    )
    blocks.append(
        (
            "p",
            "A sum of log counts never prefers a positive whose negative only *adds* "
            "bindings (add_att, add_obj), and ties whenever both captions have the same or "
            "no seen bindings; the second table per variant therefore gives, for the rules "
            "and scorers, the share of items they decide (no tie) and their accuracy on "
            "those (`accuracy_decided`).",
        )  # fmt: skip
    )
    fam = tables.familiarity.filter(pl.col("type") != MACRO)
    if fam.height:
        for variant in dict.fromkeys(fam["variant"].to_list()):
            part = fam.filter(pl.col("variant") == variant)
            blocks.append(("p", f"**{variant}**: accuracy"))
            blocks.append(("table", _wide(part, ["type"], "predictor", "accuracy")))
            decided = part.filter(pl.col("decided").is_not_null())
            if decided.height:
                long = pl.concat(
                    [
                        decided.select(
                            "type",
                            pl.format("{} decided", "predictor").alias("column"),
                            (pl.col("decided") / pl.col("n")).alias("value"),
                        ),
                        decided.select(
                            "type",
                            pl.format("{} acc. decided", "predictor").alias("column"),
                            pl.col("accuracy_decided").alias("value"),
                        ),
                    ]
                )
                order = list(dict.fromkeys(decided["type"].to_list()))
                long = long.with_columns(
                    _t=pl.col("type").replace_strict(
                        {t: i for i, t in enumerate(order)}, return_dtype=pl.Int64
                    )
                ).sort("_t", maintain_order=True)
                blocks.append(("p", f"**{variant}**: share decided, accuracy on decided items"))
                blocks.append(("table", _wide(long.drop("_t"), ["type"], "column", "value")))
    else:
        blocks.append(("p", "Nothing to compare (no rule, scorer or model table)."))
    return blocks
