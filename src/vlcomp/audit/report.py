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
from vlcomp.vocabulary import CERTIFICATE_MARGIN

_NUMBER_LIKE = re.compile(r"^(?:[+-]?\d|n/a)")

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


def _numeric(column: pl.Series) -> bool:
    """Right-aligned: numbers, and text cells that are numbers with their count
    ("0.424 (61 of 144)")."""
    if column.dtype.is_numeric():
        return True
    if column.dtype != pl.String:
        return False
    values = column.drop_nulls().to_list()
    return bool(values) and all(_NUMBER_LIKE.match(v) for v in values)


def md_table(frame: pl.DataFrame, digits: int = 3) -> str:
    """``markdown_table`` with share columns ("0.424 (61 of 144)") right-aligned too."""
    lines = markdown_table(frame, digits).split("\n")
    lines[1] = "|" + "|".join("---:" if _numeric(frame[c]) else "---" for c in frame.columns) + "|"
    return "\n".join(lines)


def html_table(frame: pl.DataFrame, digits: int = 3) -> str:
    numeric = [_numeric(frame[c]) for c in frame.columns]
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
            parts.append(md_table(block[1], digits))
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


def count_text(value: float) -> str:
    """A count: an integer, or one decimal for a credit that is not whole (tie credit)."""
    return str(round(value)) if abs(value - round(value)) < 1e-9 else f"{value:.1f}"


def share_text(k: float | None, n: int | None, digits: int = 3) -> str:
    """A share followed by its count: ``0.424 (61 of 144)``; ``n/a (0 of 0)`` for none."""
    if k is None or not n:
        return f"n/a (0 of {n or 0})"
    return f"{k / n:.{digits}f} ({count_text(k)} of {n})"


def _gap_text(value: float | None) -> str:
    return "n/a" if value is None else f"{value:+.3f}"


def _with_share(frame: pl.DataFrame, k: str | pl.Expr, n: str | pl.Expr, name: str) -> pl.Series:
    """A column of ``share_text`` cells of ``frame``."""
    rows = frame.select(k=k, n=n).rows()
    return pl.Series(name, [share_text(a, b) for a, b in rows], dtype=pl.String)


def _wide(frame: pl.DataFrame, index: Sequence[str], on: str, value: str) -> pl.DataFrame:
    """``frame`` pivoted (``on`` values become columns, in first-seen order)."""
    if frame.height == 0:
        return frame
    columns = list(dict.fromkeys(frame[on].to_list()))
    wide = frame.pivot(on, index=list(index), values=value, maintain_order=True)
    return wide.select(*index, *columns)


def _variant_frame(tables: Any, counts: dict[str, tuple[int, int]]) -> pl.DataFrame:
    rows = [(key, info.label, *counts.get(key, (0, 0))) for key, info in tables.variants.items()]
    return pl.DataFrame(
        rows,
        schema={"variant": pl.String, "what it is": pl.String, "items": pl.Int64,
                "candidate texts": pl.Int64},
        orient="row",
    )  # fmt: skip


def _how_to_read(tables: Any, ref: str, ties_text: str) -> list[str]:
    from vlcomp.audit.bindsplit import RULE_TEXT

    items = [
        "**What is compared.** The candidate sets listed under *Variants* (each named by a key "
        f"used in every table and figure) against the captions of `{ref}`. Every check is "
        "text-only: no image is opened and no model is run (model accuracies appear only "
        "when metric tables were given).",
        "**Numbers.** Every share is written `0.424 (61 of 144)`: the share, then how many of "
        "how many. Each table names the set its denominator counts: all items of the type "
        "(`n_items`), the `paired` items (a binding on both sides), or bindings. "
        f"Ties: {ties_text}.",
        "**1. Blind baselines**: a text-only scorer well above 0.5 means the positive can be "
        "told from its negatives without the image.",
    ]
    for key, info in tables.variants.items():
        if info.balanced:
            items.append(
                f"On `{key}`, {' and '.join(info.balanced)} are at 0.5 **by construction** "
                "(its refinement balanced them): not a finding about the benchmark."
            )
    items += [
        "**2. Order-blind ceiling**: the best accuracy any model that ignores word order can "
        "reach (pairs whose two captions have the same words tie).",
        f"**3. BindSplit**: whether the (attribute, object) bindings of positives and "
        f"negatives occur in `{ref}`. {RULE_TEXT['strict']}: a binding counts as seen only "
        f"when `{ref}` has it with no other attribute on the object. {RULE_TEXT['loose']}: "
        "also when it occurs there only next to other attributes. STRICT `seen` is therefore "
        f'not "occurs in `{ref}`": that is LOOSE. Definitions at the start of section 3.',
        f'**4. Familiarity shortcut**: how far "pick the caption whose bindings are more '
        f'frequent in `{ref}`" gets, next to the blind scorers and any model.',
    ]
    return items


def _definitions(ref: str, min_count: int) -> list[str]:
    from vlcomp.audit.bindsplit import EXCLUSIONS, PAIRED, RULE_TEXT
    from vlcomp.vocabulary import BUCKETS

    times = "one caption" if min_count == 1 else f"{min_count} captions"
    exclusions = "; ".join(f"`{name}`: {why}" for name, why in EXCLUSIONS.items())
    return [
        "**binding**: an (attribute, object) pair of a caption's parse, e.g. (red, car) in "
        '"a red car"; matched on the normalised attribute and the object\'s lemma; each '
        "caption's bindings are counted once.",
        f"**perfect**: `{ref}` has at least {times} in which this attribute is the only "
        'attribute on this object ("a red car").',
        f"**close**: not perfect, but `{ref}` has at least {times} in which the pair "
        'occurs on an object that carries other attributes too ("a shiny red car").',
        f"**none**: neither: the binding does not occur in `{ref}`.",
        f"**STRICT** ({RULE_TEXT['strict']}): only perfect bindings count as seen. "
        f"**LOOSE** ({RULE_TEXT['loose']}): perfect and close bindings count as seen.",
        "**seen / mixed / unseen** (of one side: the positive, or the item's negatives "
        "pooled, or the sample): all / some but not all / none of its bindings count as seen "
        "under the rule. **no_binding**: the parser found no binding on that side.",
        "**sample**: the positive with its negative(s). Its **bucket** says which of "
        "(n_perfect, n_close, n_none) are non-zero over its distinct bindings (four for a "
        f"swap of two bindings): seven buckets, {', '.join(f'`{b}`' for b in BUCKETS)}. "
        "Under STRICT, `perfect` is seen, a bucket without perfect is unseen, the rest "
        "mixed; under LOOSE, a bucket without none is seen, `none` is unseen, the rest mixed.",
        "**Denominators**: the composition and the buckets are shares of all items of the "
        f"type (`n_items`); the seen shares are shares of the `{PAIRED}` items (a binding on "
        "both sides); the binding labels are shares of the side's distinct bindings "
        f"(`n_bindings`). An item is left out of the seen shares for one of three reasons, "
        f"counted per type: {exclusions}. n_items = {PAIRED} + the three; "
        "`no_binding_both` is the sample's `no_binding` in the composition.",
    ]


def _headline(tables: Any, variant: str) -> str:
    from vlcomp.audit.bindsplit import PAIRED, RULE_TEXT
    from vlcomp.vocabulary import ALL

    info = tables.variants[variant]
    ob = tables.order_blind.filter((pl.col("variant") == variant) & (pl.col("type") == ALL))
    if not ob.height:
        return f"**{variant}** ({info.label}): no items, nothing to audit."
    n = ob["n_items"][0]
    text = f"**{variant}** ({info.label}; {n} items):"
    blind = tables.blind.filter((pl.col("variant") == variant) & (pl.col("type") == ALL))
    informative = blind.filter(~pl.col("scorer").is_in(list(info.balanced)))
    if informative.height:
        top = informative.sort("accuracy", "scorer", descending=[True, False]).row(0, named=True)
        text += f" best blind scorer {top['scorer']} {share_text(top['correct'], top['n'])};"
    if info.balanced:
        text += f" {' and '.join(info.balanced)} at 0.5 by construction;"
    items_same = ob["items_same_words"][0]
    text += (
        f" pairs with the same words {share_text(ob['same_words'][0], ob['n_pairs'][0])}; "
        f"order-blind ceiling with ties wrong {share_text(n - items_same, n)}, with ties at "
        f"chance {share_text(ob['ceiling_ties_chance'][0] * n, n)}"
    )
    if tables.seen_shares is not None:
        for rule in ("strict", "loose"):
            s = tables.seen_shares.filter(
                (pl.col("variant") == variant) & (pl.col("type") == ALL) & (pl.col("rule") == rule)
            )
            if s.height and s["n_paired"][0]:
                m = s["n_paired"][0]
                text += (
                    f"; {RULE_TEXT[rule]}, of the {m} {PAIRED} items: every binding seen for "
                    f"positives {share_text(s['positive_seen'][0], m)} vs negatives "
                    f"{share_text(s['negative_seen'][0], m)}"
                )
    return text + "."


def _blind_blocks(tables: Any, ties_text: str) -> list[Block]:
    from vlcomp.vocabulary import ALL

    blocks: list[Block] = [
        (
            "p",
            "Accuracy of each text-only scorer at preferring the positive caption without the "
            f"image, of the items of the type; {ties_text}. `all`: over all items (micro); "
            "`macro`: mean over types (no count: a mean of shares). Table `blind.parquet` has "
            "the tie counts.",
        )  # fmt: skip
    ]
    for key, info in tables.variants.items():
        if info.note:
            blocks.append(("p", f"**{key}** ({info.label}): {info.note}"))
    if not tables.blind.height:
        return [*blocks, ("p", "No scorer has scores for these candidates.")]
    blind = tables.blind
    cells = pl.Series(
        "cell",
        [
            f"{acc:.3f} (mean of types)" if t == "macro" else share_text(c, n)
            for t, c, n, acc in blind.select("type", "correct", "n", "accuracy").rows()
        ],
        dtype=pl.String,
    )
    labelled = blind.with_columns(cells, column=pl.format("{} ({})", "scorer", "variant"))
    blocks.append(("table", _wide(labelled, ["type"], "column", "cell")))
    ties = labelled.filter(pl.col("type") == ALL).select("variant", "scorer", "n", "ties")
    blocks.append(("p", "Ties over all items (`n`: items):"))
    blocks.append(("table", ties))
    return blocks


def _order_blind_table(ob: pl.DataFrame) -> pl.DataFrame:
    return ob.select(
        "variant",
        "type",
        "n_items",
        "n_pairs",
        _with_share(ob, "same_words", "n_pairs", "same-words pairs (of n_pairs)"),
        pl.col("identical").alias("identical pairs"),
        _with_share(ob, "items_same_words", "n_items", "items with a same-words negative"),
        _with_share(
            ob, pl.col("n_items") - pl.col("items_same_words"), "n_items",
            "ceiling, ties wrong (items)",
        ),
        _with_share(
            ob, pl.col("ceiling_ties_chance") * pl.col("n_items"), "n_items",
            "ceiling, ties at chance (expected items)",
        ),
    )  # fmt: skip


def _seen_table(seen: pl.DataFrame) -> pl.DataFrame:
    from vlcomp.audit.bindsplit import EXCLUSIONS, PAIRED, RULE_TEXT

    return seen.select(
        "variant",
        "type",
        pl.col("rule").replace_strict(RULE_TEXT, return_dtype=pl.String),
        "n_items",
        pl.col("n_paired").alias(PAIRED),
        *EXCLUSIONS,
        _with_share(seen, "positive_seen", "n_paired", f"positives seen (of {PAIRED})"),
        _with_share(seen, "negative_seen", "n_paired", f"negatives seen (of {PAIRED})"),
        pl.Series("gap (pos - neg)", [_gap_text(v) for v in seen["seen_gap"]], dtype=pl.String),
    )


def _share_wide(
    frame: pl.DataFrame, index: Sequence[str], on: str, k: str, n: str, n_name: str | None
) -> pl.DataFrame:
    """``frame`` pivoted with ``share_text(k, n)`` cells; ``n`` kept as column ``n_name``
    (one value per row of ``index``) unless None."""
    cells = frame.with_columns(_with_share(frame, k, n, "_cell"))
    if n_name is None:
        return _wide(cells, index, on, "_cell")
    return _wide(cells.with_columns(pl.col(n).alias(n_name)), [*index, n_name], on, "_cell")


def _bindsplit_blocks(tables: Any, benchmark: str, figures: dict[str, Path]) -> list[Block]:
    from vlcomp.audit.bindsplit import PAIRED, RULE_TEXT

    ref = tables.reference
    blocks: list[Block] = [
        (
            "p",
            "Captions are parsed with our parser; each distinct (attribute, object) binding "
            f"is labelled against {ref.name}'s bindings table ({ref.n_captions} captions, "
            f"{ref.n_bindings} distinct bindings). Definitions (BindSplit's):",
        ),
        ("ul", _definitions(ref.name, tables.min_count)),
        ("p", "Per item labels, buckets and splits: `bindsplit_items.parquet`."),
        ("h", 3, "Positives vs negatives whose bindings are all seen"),
        (
            "p",
            f"Shares of the `{PAIRED}` items (a binding on both sides); the items left out "
            "are counted by reason in the three `no_binding_*` columns. `gap`: positives' "
            "share minus negatives' share.",
        ),
        ("table", _seen_table(tables.seen_shares)),
    ]
    if "seen" in figures:
        blocks.append(
            ("figure", figures["seen"],
             f"{benchmark}: positives vs negatives with every binding seen, per type, over "
             f"the {PAIRED} items ({RULE_TEXT['strict']}; {RULE_TEXT['loose']})")
        )  # fmt: skip
    blocks.append(("h", 3, "Split composition (shares of all items of the type)"))
    blocks.append(
        (
            "p",
            "Each side of each item is seen, mixed, unseen or no_binding; the four add up to "
            "`n_items`. `negative` pools an item's negatives; `sample` is the positive with "
            "its negative(s) (the BindSplit split).",
        )
    )
    for rule in ("strict", "loose"):
        part = tables.composition.filter(pl.col("rule") == rule)
        blocks.append(("p", f"**{RULE_TEXT[rule]}**"))
        blocks.append(
            ("table", _share_wide(part, ["variant", "type", "side"], "split", "count", "n",
                                  "n_items"))
        )  # fmt: skip
    if "composition" in figures:
        blocks.append(
            ("figure", figures["composition"],
             f"{benchmark}: BindSplit composition, shares of all items of the type "
             f"({RULE_TEXT['strict']}; {RULE_TEXT['loose']})")
        )  # fmt: skip
    if tables.buckets is not None:
        blocks.append(("h", 3, "Buckets of the sample (shares of all items of the type)"))
        sample = tables.buckets.filter(pl.col("side") == "sample")
        blocks.append(
            ("table", _share_wide(sample, ["variant", "type"], "bucket", "count", "n", "n_items"))
        )
    blocks.append(("h", 3, "Binding labels (shares of the side's distinct bindings)"))
    blocks.append(
        (
            "table",
            _share_wide(
                tables.binding_labels,
                ["variant", "type", "side"],
                "label",
                "bindings",
                "n",
                "n_bindings",
            ),
        )  # fmt: skip
    )
    return blocks


def _familiarity_blocks(tables: Any, ties_text: str) -> list[Block]:
    from vlcomp.vocabulary import MACRO

    ref = tables.reference
    blocks: list[Block] = [
        (
            "p",
            'Accuracy of "pick the more familiar caption" rules, of the items of the type: '
            "`bindings_strict` / `bindings_loose` pick the caption with the larger sum over "
            f"its distinct bindings of log(1 + count in {ref.name}) (count: perfect_count, "
            "resp. perfect_count + close_count; a caption without seen bindings scores 0, so "
            f"it ties with another such caption); text scorers as in section 1; {ties_text}. "
            "Models: their accuracy from the given metric tables (split `all`), chance "
            "included.",
        ),
        (
            "p",
            "A sum of log counts never prefers a positive whose negative only *adds* "
            "bindings (add_att, add_obj), and ties whenever both captions have the same or "
            "no seen bindings; the second table per variant therefore gives, for the rules "
            "and scorers, the items they decide (no tie, of all items) and their accuracy on "
            "those (of the decided items).",
        ),
    ]
    fam = tables.familiarity.filter(pl.col("type") != MACRO)
    if not fam.height:
        return [*blocks, ("p", "Nothing to compare (no rule, scorer or model table).")]
    for variant in dict.fromkeys(fam["variant"].to_list()):
        part = fam.filter(pl.col("variant") == variant)
        label = tables.variants[variant].label if variant in tables.variants else variant
        blocks.append(("p", f"**{variant}** ({label}): accuracy"))
        blocks.append(("table", _share_wide(part, ["type"], "predictor", "correct", "n", None)))
        decided = part.filter(pl.col("decided").is_not_null())
        if not decided.height:
            continue
        long = pl.concat(
            [
                decided.select(
                    "type",
                    pl.format("{} decided", "predictor").alias("column"),
                    _with_share(decided, "decided", "n", "value"),
                ),
                decided.select(
                    "type",
                    pl.format("{} acc. decided", "predictor").alias("column"),
                    _with_share(decided, "wins", "decided", "value"),
                ),
            ]
        )
        order = {t: i for i, t in enumerate(dict.fromkeys(decided["type"].to_list()))}
        long = long.with_columns(
            _t=pl.col("type").replace_strict(order, return_dtype=pl.Int64)
        ).sort("_t", maintain_order=True)
        blocks.append(("p", f"**{variant}**: items decided, accuracy on decided items"))
        blocks.append(("table", _wide(long.drop("_t"), ["type"], "column", "value")))
    return blocks


def audit_blocks(
    tables: Any,  # checks.AuditTables
    benchmark: str,
    inputs: Sequence[str],
    figures: dict[str, Path],
    variant_sizes: dict[str, tuple[int, int]] | None = None,
    certificate: pl.DataFrame | None = None,
) -> list[Block]:
    """The report's blocks for ``tables`` (``vlcomp.audit.checks.AuditTables``);
    ``variant_sizes``: variant key -> (items, candidate texts) for the variants table;
    ``certificate``: the benchmark's blind-attack certificate read
    (``certificate.best_attack_table``), a last section."""
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
    blocks.append(("h", 2, "How to read this"))
    blocks.append(("ul", _how_to_read(tables, ref.name, ties_text)))
    blocks.append(("h", 2, "Variants"))
    blocks.append(("table", _variant_frame(tables, variant_sizes or {})))
    blocks.append(("h", 2, "Inputs"))
    blocks.append(("ul", list(inputs)))
    blocks.append(
        ("p", f"Tie policy: `{tie}`: {ties_text}. Images are not used: every check is text-only.")
    )

    blocks.append(("h", 2, "Headlines"))
    blocks.append(("ul", [_headline(tables, v) for v in tables.variants]))
    if tables.notes:
        blocks.append(("h", 3, "Notes"))
        blocks.append(("ul", list(tables.notes)))

    blocks.append(("h", 2, "1. Blind baselines (text only)"))
    blocks += _blind_blocks(tables, ties_text)
    if "blind" in figures:
        blocks.append(("figure", figures["blind"], f"{benchmark}: blind accuracy per type"))

    blocks.append(("h", 2, "2. Order-blind ceiling"))
    blocks.append(
        (
            "p",
            "Pairs whose positive and negative are the same multiset of words (lower-cased; a "
            "word is a run of letters/digits, joined across an internal apostrophe). A model "
            "that ignores word order scores such two texts identically, so it ties on the "
            "item: with ties counted wrong it can get right at most the items without such a "
            "negative; with random tie-breaking it expects 1 / (1 + k) of an item with k such "
            "negatives (= 1 - share / 2 for pairs). `identical pairs`: same-words pairs whose "
            "two texts are equal.",
        )  # fmt: skip
    )
    blocks.append(("table", _order_blind_table(tables.order_blind)))

    blocks.append(("h", 2, f"3. BindSplit binding overlap with {ref.name}"))
    if tables.seen_shares is None:
        blocks.append(("warn", ref.warning or "not computed"))
    else:
        blocks += _bindsplit_blocks(tables, benchmark, figures)

    blocks.append(("h", 2, "4. Familiarity shortcut"))
    blocks += _familiarity_blocks(tables, ties_text)
    if certificate is not None:
        blocks.append(("h", 2, "5. Blind attacks (the benchmark's certificate)"))
        blocks += certificate_blocks(certificate)
    return blocks


def certificate_blocks(best: pl.DataFrame) -> list[Block]:
    """The certificate's best attack per part, variant and type
    (``certificate.best_attack_table`` rows) with its interval, n and verdict."""
    if best.is_empty():
        return [("p", "The certificate holds no row.")]
    table = best.select(
        "part",
        "variant",
        "type",
        pl.col("attack").fill_null("—").alias("best attack"),
        "accuracy",
        pl.format("[{}, {}]", pl.col("ci_low").round(3), pl.col("ci_high").round(3))
        .fill_null("")
        .alias("95% CI"),
        (pl.col("accuracy") - pl.col("chance")).alias("over chance"),
        "n",
        pl.col("status").alias("verdict"),
    )
    return [
        (
            "p",
            "The most accurate of the panel of text-only attacks (`vlcomp.blind.attacks`: "
            "length, changed-word prior, logistic regressions on the changed words and their "
            "bigrams, the training corpora's text scorers, a model trained on the generator's "
            "own training negatives), cross-fitted over folds of the items, bootstrap 95 % "
            "interval, a tie counts 1/2, over (positive, negative) pairs. *at chance*: every "
            f"attack at most chance + {CERTIFICATE_MARGIN} with its interval covering chance.",
        ),
        ("table", table),
    ]
