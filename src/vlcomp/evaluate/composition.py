"""What the items of each split are made of, and split contrasts on matched items.

A split contrast (CREPE's SC vs UC, BindSplit's seen vs unseen) compares different items:
an unseen compound comes with its own atoms, region sizes and caption lengths, and a model
that finds those atoms easy scores higher on "unseen" for reasons that have nothing to do
with novelty. This module describes each split's items and repeats the contrast on items
matched by what they contain.

Every benchmark item comes from one evaluation item (``eval_item_id`` of the benchmark's
boxes / regions table) whose scene graph says what it holds. Per (model, part, split):
- composition: items, accuracy, mean objects, relations and words of the positive text,
  mean region area, and the share of items stating each atom (object lemma, attribute
  value, predicate);
- matched contrasts: each split against the reference split (the first of SC, seen,
  held_in present), raw and within strata of (negative type, object lemmas) and of
  (negative type, attribute values): the reference's accuracy is standardised to the
  split's strata (each stratum weighted by the split's items in it), over the strata both
  splits have; ``coverage`` is the share of the split's items in such strata;
- with matched image pairs (two images that differ only in what a split is about, e.g.
  the world's twins: a scene with an unseen compound and the same scene with a seen
  neighbour), also within strata of (negative type, image pair, region box): an item
  against the item of the same region in the other image of its pair;
- novelty on twins: on those strata, the split's gap (split - reference) of the model
  trained on the part's corpus minus the same gap of a model trained on another corpus,
  which has seen the compounds. Twins hold the scene fixed and the other model holds the
  items fixed, so what is left is what not having seen the compound costs. Percentile
  bootstrap over image pairs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import numpy as np
import polars as pl

from vlcomp.evaluate.metrics import cell_rng
from vlcomp.evaluate.stats import split_order
from vlcomp.io import write_parquet, write_with
from vlcomp.resampling import ratio_of_sums
from vlcomp.vocabulary import REFERENCE_SPLITS

Log = Callable[[str], None]

MATCHINGS = ("none", "objects", "attributes", "twins")
# Matched image pairs: an image and its counterpart (image ids as in the eval items).
PAIRS_SCHEMA: dict[str, pl.DataType] = {"image_id": pl.String, "twin_image_id": pl.String}

COMPOSITION_SCHEMA: dict[str, pl.DataType] = {
    "model": pl.String,
    "part": pl.String,
    "split": pl.String,
    "n": pl.Int64,
    "accuracy": pl.Float64,
    "objects": pl.Float64,  # mean objects per item's graph
    "relations": pl.Float64,
    "words": pl.Float64,  # of the eval item's text
    "area": pl.Float64,  # mean region area in pixels (null: whole images)
}
ATOM_SHARES_SCHEMA: dict[str, pl.DataType] = {
    "model": pl.String,
    "part": pl.String,
    "split": pl.String,
    "kind": pl.String,  # object, attribute, predicate
    "atom": pl.String,
    "share": pl.Float64,  # of the split's items whose graph states the atom
}
MATCHED_SCHEMA: dict[str, pl.DataType] = {
    "model": pl.String,
    "part": pl.String,
    "split": pl.String,
    "reference": pl.String,
    "matched_on": pl.String,  # none, objects, attributes, twins
    "n": pl.Int64,  # the split's items in strata the reference also has
    "n_reference": pl.Int64,
    "coverage": pl.Float64,  # n / the split's items
    "accuracy": pl.Float64,
    "accuracy_reference": pl.Float64,  # standardised to the split's strata
    "gap": pl.Float64,  # accuracy - accuracy_reference
}


TWIN_NOVELTY_SCHEMA: dict[str, pl.DataType] = {
    "part": pl.String,  # the corpus whose splits the items carry
    "split": pl.String,
    "reference": pl.String,
    "model_own": pl.String,  # trained on ``part``
    "model_other": pl.String,  # trained on another corpus
    "pairs": pl.Int64,  # image pairs with matched strata
    "n": pl.Int64,  # the split's items in those strata
    "gap_own": pl.Float64,  # split - reference (standardised), own model
    "gap_other": pl.Float64,
    "novelty": pl.Float64,  # gap_own - gap_other
    "novelty_low": pl.Float64,  # percentile bootstrap over image pairs
    "novelty_high": pl.Float64,
}


def item_features(
    items: pl.DataFrame, boxes: pl.DataFrame, pairs: pl.DataFrame | None = None
) -> pl.DataFrame:
    """Per benchmark item (part, item_id): its eval item's graph summarised, and with
    ``pairs`` (PAIRS_SCHEMA) its region's key within its image pair (null off pairs)."""
    lemmas = pl.col("objects").list.eval(pl.element().struct.field("lemma"))
    values = pl.col("attributes").list.eval(pl.element().struct.field("value"))
    predicates = pl.col("relations").list.eval(pl.element().struct.field("pred"))
    graphs = items.select(
        eval_item_id="item_id",
        n_objects=pl.col("objects").list.len(),
        n_relations=pl.col("relations").list.len(),
        words=pl.col("text").str.split(" ").list.len(),
        area=pl.col("width") * pl.col("height"),
        object_atoms=lemmas.list.unique().list.sort(),
        attribute_atoms=values.list.unique().list.sort(),
        predicate_atoms=predicates.list.unique().list.sort(),
        objects_key=lemmas.list.sort().list.join("|"),
        attributes_key=values.list.unique().list.sort().list.join("|"),
        twins_key=_twins_key(items, pairs),
    )
    return boxes.select("part", "item_id", "eval_item_id").join(
        graphs, on="eval_item_id", how="left"
    )


def _twins_key(items: pl.DataFrame, pairs: pl.DataFrame | None) -> pl.Series:
    """Per eval item whose image is in a pair: "<pair>|<x>|<y>|<width>|<height>" ("<pair>"
    for a whole-image item); null for the others."""
    if pairs is None or pairs.height == 0:
        return pl.Series("twins_key", [None] * items.height, pl.String)
    pairs = pairs.select(pl.col(c).cast(t) for c, t in PAIRS_SCHEMA.items())
    pair = pl.concat_str(
        pl.min_horizontal("image_id", "twin_image_id"),
        pl.max_horizontal("image_id", "twin_image_id"),
        separator="~",
    )
    of_image = pl.concat(
        [
            pairs.select("image_id", pair=pair),
            pairs.select(image_id="twin_image_id", pair=pair),
        ]
    ).unique("image_id", keep="first", maintain_order=True)
    keyed = items.select("image_id", "x", "y", "width", "height").join(
        of_image, on="image_id", how="left", maintain_order="left"
    )
    box = pl.concat_str("pair", "x", "y", "width", "height", separator="|", ignore_nulls=True)
    return keyed.select(
        twins_key=pl.when(pl.col("pair").is_null()).then(None).otherwise(box)
    ).to_series()


def composition_tables(
    predictions: pl.DataFrame, features: pl.DataFrame
) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """(composition, atom shares, matched contrasts) of per-item predictions."""
    frame = predictions.with_columns(pl.col("part").fill_null("")).join(
        features.with_columns(pl.col("part").fill_null("")), on=["part", "item_id"], how="left"
    )
    missing = frame.filter(pl.col("eval_item_id").is_null())
    if missing.height:
        raise ValueError(
            f"{missing.height} predicted items have no eval item, e.g. {missing['item_id'][0]}"
        )
    keys = ["model", "part", "split"]
    composition = (
        frame.group_by(keys, maintain_order=True)
        .agg(
            n=pl.len(),
            accuracy=pl.col("correct").mean(),
            objects=pl.col("n_objects").mean(),
            relations=pl.col("n_relations").mean(),
            words=pl.col("words").mean(),
            area=pl.col("area").mean(),
        )
        .sort(keys)
    )
    shares = []
    for kind, column in (
        ("object", "object_atoms"),
        ("attribute", "attribute_atoms"),
        ("predicate", "predicate_atoms"),
    ):
        n = frame.group_by(keys).len("total")
        counted = (
            frame.select(*keys, atom=column)
            .explode("atom")
            .drop_nulls("atom")
            .group_by(*keys, "atom")
            .len("count")
        )
        shares.append(
            counted.join(n, on=keys).select(
                *keys, kind=pl.lit(kind), atom="atom", share=pl.col("count") / pl.col("total")
            )
        )
    atom_shares = pl.concat(shares).sort(*keys, "kind", "share", "atom", descending=[
        False, False, False, False, True, False
    ])  # fmt: skip
    matched = _matched(frame)
    return (
        _cast(composition.with_columns(pl.col("part").replace("", None)), COMPOSITION_SCHEMA),
        _cast(atom_shares.with_columns(pl.col("part").replace("", None)), ATOM_SHARES_SCHEMA),
        _cast(matched, MATCHED_SCHEMA),
    )


def _cast(frame: pl.DataFrame, schema: Mapping[str, pl.DataType]) -> pl.DataFrame:
    return frame.select([pl.col(c).cast(t) for c, t in schema.items()])


def _matched(frame: pl.DataFrame) -> pl.DataFrame:
    rows: list[dict[str, object]] = []
    for (model, part), cell in sorted(frame.group_by(["model", "part"]), key=lambda g: g[0]):
        splits = split_order(cell["split"].drop_nulls().to_list())
        reference = next((s for s in REFERENCE_SPLITS if s in splits), None)
        if reference is None:
            continue
        ref = cell.filter(pl.col("split") == reference)
        for split in splits:
            if split == reference:
                continue
            mine = cell.filter(pl.col("split") == split)
            for matched_on in MATCHINGS:
                strata = ["family"] + ([] if matched_on == "none" else [f"{matched_on}_key"])
                if matched_on == "twins" and cell["twins_key"].null_count() == cell.height:
                    continue
                correct = pl.col("correct").mean()
                a = mine.group_by(strata, maintain_order=True).agg(n=pl.len(), acc=correct)
                b = ref.group_by(strata, maintain_order=True).agg(n_ref=pl.len(), acc_ref=correct)
                # sorted: float sums in a fixed order (group_by's order is not)
                both = a.join(b, on=strata, how="inner").sort(strata)
                n = int(both["n"].sum()) if both.height else 0
                if n == 0:
                    continue
                accuracy = float((both["acc"] * both["n"]).sum() / n)
                standardised = float((both["acc_ref"] * both["n"]).sum() / n)
                rows.append(
                    {
                        "model": model, "part": part or None, "split": split,
                        "reference": reference, "matched_on": matched_on, "n": n,
                        "n_reference": int(both["n_ref"].sum()),
                        "coverage": n / mine.height, "accuracy": accuracy,
                        "accuracy_reference": standardised, "gap": accuracy - standardised,
                    }
                )  # fmt: skip
    return pl.DataFrame(rows, schema=MATCHED_SCHEMA)


def twin_novelty(
    frame: pl.DataFrame,
    model_corpus: Mapping[str, str | None],
    resamples: int = 1000,
    seed: int = 0,
    level: float = 0.95,
) -> pl.DataFrame:
    """Novelty on twins (module docstring) for every part named after a corpus, split
    other than the reference, model trained on it and model trained elsewhere."""
    rows: list[dict[str, object]] = []
    if "twins_key" not in frame.columns:
        return pl.DataFrame(schema=TWIN_NOVELTY_SCHEMA)
    on_twins = frame.filter(pl.col("twins_key").is_not_null()).with_columns(
        pair=pl.col("twins_key").str.split("|").list.first()
    )
    for part in sorted(set(on_twins["part"].drop_nulls().to_list())):
        owns = sorted(m for m, c in model_corpus.items() if c == part)
        others = sorted(m for m, c in model_corpus.items() if c is not None and c != part)
        cell = on_twins.filter(pl.col("part") == part)
        splits = split_order(cell["split"].drop_nulls().to_list())
        reference = next((s for s in REFERENCE_SPLITS if s in splits), None)
        if reference is None or not owns or not others:
            continue
        for split in splits:
            if split == reference:
                continue
            strata = {m: _twin_strata(cell, m, split, reference) for m in [*owns, *others]}
            for own in owns:
                for other in others:
                    both = strata[own].join(
                        strata[other].select("family", "twins_key", "diff"),
                        on=["family", "twins_key"], how="inner", suffix="_other",
                    ).sort("pair", "family", "twins_key")  # fmt: skip
                    if both.height == 0:
                        continue
                    by_pair = both.group_by("pair", maintain_order=True).agg(
                        n=pl.col("n").sum(),
                        own=(pl.col("n") * pl.col("diff")).sum(),
                        other=(pl.col("n") * pl.col("diff_other")).sum(),
                    )
                    n = by_pair["n"].to_numpy().astype(float)
                    a, b = by_pair["own"].to_numpy(), by_pair["other"].to_numpy()
                    low = high = float("nan")
                    if resamples:
                        rng = cell_rng(seed, "twin_novelty", part, split, own, other)
                        stats = ratio_of_sums(a - b, n, resamples, rng)
                        tail = (1.0 - level) / 2.0
                        low, high = (float(x) for x in np.quantile(stats, [tail, 1.0 - tail]))
                    rows.append(
                        {
                            "part": part, "split": split, "reference": reference,
                            "model_own": own, "model_other": other, "pairs": len(n),
                            "n": int(n.sum()), "gap_own": float(a.sum() / n.sum()),
                            "gap_other": float(b.sum() / n.sum()),
                            "novelty": float((a - b).sum() / n.sum()),
                            "novelty_low": low, "novelty_high": high,
                        }
                    )  # fmt: skip
    return pl.DataFrame(rows, schema=TWIN_NOVELTY_SCHEMA)


def _twin_strata(cell: pl.DataFrame, model: str, split: str, reference: str) -> pl.DataFrame:
    """Per (family, twins_key) stratum both splits have: the split's items and its accuracy
    minus the reference's."""
    mine = cell.filter((pl.col("model") == model) & (pl.col("split") == split))
    ref = cell.filter((pl.col("model") == model) & (pl.col("split") == reference))
    keys = ["family", "twins_key"]
    a = mine.group_by([*keys, "pair"]).agg(n=pl.len(), acc=pl.col("correct").mean())
    b = ref.group_by(keys).agg(acc_ref=pl.col("correct").mean())
    return a.join(b, on=keys, how="inner").select(
        *keys, "pair", "n", diff=pl.col("acc") - pl.col("acc_ref")
    )


def composition_markdown(
    benchmark: str,
    composition: pl.DataFrame,
    atom_shares: pl.DataFrame,
    matched: pl.DataFrame,
    top_atoms: int = 6,
    novelty: pl.DataFrame | None = None,
) -> str:
    """The three tables as Markdown, one section per (model, part), and the novelty on
    twins when given."""
    lines = [
        f"# What the splits of {benchmark} are made of",
        "",
        "Accuracy: R@1 or pair accuracy per benchmark item (a tie counts as wrong). Matched: "
        "the reference split's accuracy standardised to the split's strata of (negative "
        "type, object lemmas), (negative type, attribute values) or, on matched image pairs "
        "(twins), (negative type, image pair, region box), over the strata both splits "
        "have.",
    ]
    for (model, part), comp in sorted(
        composition.with_columns(pl.col("part").fill_null("")).group_by(["model", "part"]),
        key=lambda g: g[0],
    ):
        where = (pl.col("model") == model) & (pl.col("part").fill_null("") == part)
        lines += ["", f"## {model}" + (f" on the splits of {part}" if part else ""), ""]
        lines += [
            "| split | items | accuracy | objects | relations | words | area | most stated |",
            "|---|---:|---:|---:|---:|---:|---:|---|",
        ]
        order = split_order(comp["split"].drop_nulls().to_list())
        for split in order:
            row = comp.filter(pl.col("split") == split).row(0, named=True)
            top = atom_shares.filter(where & (pl.col("split") == split)).filter(
                pl.col("kind") != "predicate"
            )
            stated = ", ".join(
                f"{a} {s:.0%}"
                for a, s in top.sort("share", "atom", descending=[True, False])
                .head(top_atoms)
                .select("atom", "share")
                .rows()
            )
            area = "" if row["area"] is None else f"{row['area']:.0f}"
            lines.append(
                f"| {split} | {row['n']} | {row['accuracy']:.3f} | {row['objects']:.2f} | "
                f"{row['relations']:.2f} | {row['words']:.1f} | {area} | {stated} |"
            )
        cell = matched.filter(where)
        if cell.height:
            lines += [
                "",
                "| split vs reference | matched on | items | coverage | accuracy | reference "
                "| gap |",
                "|---|---|---:|---:|---:|---:|---:|",
            ]
            for row in cell.iter_rows(named=True):
                lines.append(
                    f"| {row['split']} vs {row['reference']} | {row['matched_on']} | {row['n']} "
                    f"| {row['coverage']:.0%} | {row['accuracy']:.3f} | "
                    f"{row['accuracy_reference']:.3f} | {row['gap']:+.3f} |"
                )
    if novelty is not None and novelty.height:
        lines += [
            "",
            "## Novelty on twins",
            "",
            "On twin regions (an item and the same region of its twin image, same negative "
            "type): the split's gap to the reference for the model trained on the corpus, "
            "minus the same gap for a model trained elsewhere, which has seen the compounds; "
            "95% percentile bootstrap over image pairs. Negative: not having seen the "
            "compound costs accuracy.",
            "",
            "| splits of | split vs reference | own | other | pairs | items | gap own "
            "| gap other | novelty | 95% CI |",
            "|---|---|---|---|---:|---:|---:|---:|---:|---|",
        ]
        for row in novelty.iter_rows(named=True):
            lines.append(
                f"| {row['part']} | {row['split']} vs {row['reference']} | {row['model_own']} "
                f"| {row['model_other']} | {row['pairs']} | {row['n']} | {row['gap_own']:+.3f} "
                f"| {row['gap_other']:+.3f} | {row['novelty']:+.3f} | "
                f"[{row['novelty_low']:+.3f}, {row['novelty_high']:+.3f}] |"
            )
    return "\n".join(lines) + "\n"


def composition_job(
    predictions: Sequence[str | Path],
    items: str | Path,
    boxes: Mapping[str, str | Path],
    benchmark: str,
    composition_out: str | Path,
    matched_out: str | Path,
    markdown_out: str | Path,
    pairs: str | Path | None = None,
    model_corpus: Mapping[str, str | None] | None = None,
    settings: Mapping[str, int] | None = None,
    novelty_out: str | Path | None = None,
    log: Log = print,
) -> None:
    """Job: per-item predictions of one benchmark (one file per model), the eval items and
    the benchmark's boxes / regions per part (``""``: a benchmark without parts), and
    optionally matched image pairs (``PAIRS_SCHEMA`` columns) -> the composition table
    (with the atom shares as ``kind``/``atom`` rows in the Markdown), the matched contrasts,
    the novelty on twins (``model_corpus``: each model's training corpus; ``settings``:
    bootstrap_resamples, bootstrap_seed) and a Markdown report."""
    eval_items = pl.read_parquet(items)
    pair_table = None
    if pairs is not None:
        pair_table = pl.read_parquet(pairs)
        missing = sorted(set(PAIRS_SCHEMA) - set(pair_table.columns))
        if missing:
            raise ValueError(f"{pairs}: image pairs need the column(s) {missing}")
    features = pl.concat(
        [
            item_features(
                eval_items,
                pl.read_parquet(path).with_columns(part=pl.lit(part or None, pl.String)),
                pair_table,
            )
            for part, path in boxes.items()
        ]
    )
    frame = pl.concat([pl.read_parquet(p) for p in predictions], how="diagonal_relaxed")
    composition, atom_shares, matched = composition_tables(frame, features)
    settings = dict(settings or {})
    novelty = twin_novelty(
        frame.with_columns(pl.col("part").fill_null("")).join(
            features.select(pl.col("part").fill_null(""), "item_id", "twins_key"),
            on=["part", "item_id"], how="left",
        ),
        model_corpus or {},
        resamples=int(settings.get("bootstrap_resamples", 1000)),
        seed=int(settings.get("bootstrap_seed", 0)),
    )  # fmt: skip
    write_parquet(composition, composition_out, metadata={"benchmark": benchmark})
    write_parquet(matched, matched_out, metadata={"benchmark": benchmark})
    if novelty_out is not None:
        write_parquet(novelty, novelty_out, metadata={"benchmark": benchmark})
    report = composition_markdown(benchmark, composition, atom_shares, matched, novelty=novelty)
    write_with(markdown_out, lambda tmp: tmp.write_text(report))
    for row in matched.filter(pl.col("matched_on") != "attributes").iter_rows(named=True):
        log(
            f"{row['model']} {row['part'] or ''} {row['split']} vs {row['reference']} "
            f"(matched on {row['matched_on']}, {row['coverage']:.0%} of items): "
            f"{row['accuracy']:.3f} vs {row['accuracy_reference']:.3f} ({row['gap']:+.3f})"
        )
    for row in novelty.iter_rows(named=True):
        log(
            f"novelty on twins, {row['part']} {row['split']}: {row['model_own']} vs "
            f"{row['model_other']} {row['novelty']:+.3f} "
            f"[{row['novelty_low']:+.3f}, {row['novelty_high']:+.3f}] ({row['pairs']} pairs)"
        )
