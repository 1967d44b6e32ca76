"""The candidate sets an audit compares (its variants), and the two columns every audit
table is keyed and ordered by.

``variant``: which candidate set, a key that says what it is (``published_refined``,
``published_unrefined``, ``published``, ``generated``, ``re-refined``; see
:func:`describe_variant`). ``type``: the negative type ``<family>_<target>`` (``<family>``
when the target is null), ``all`` for the micro average over every item of the variant and
``macro`` for the mean over types; tables list the variants in the order given, then the
types sorted with ``all`` and ``macro`` last.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import polars as pl

from vlcomp.contracts import CANDIDATES_SCHEMA, conform
from vlcomp.importers.sugarcrepe import BENCHMARKS as SUGARCREPE_RELEASES
from vlcomp.importers.sugarcrepe import GENERATOR as SUGARCREPE_GENERATOR
from vlcomp.refine.candidates import ITEM_KEY, check_items
from vlcomp.vocabulary import ALL, MACRO, negative_type


def type_expr() -> pl.Expr:
    """The negative type (``family_target``) as column ``type``."""
    return negative_type(pl.col("family"), pl.col("target")).alias("type")


def type_order(types: Sequence[str]) -> list[str]:
    """Types sorted, then ``all`` and ``macro`` last."""
    present = set(types)
    return [*sorted(present - {ALL, MACRO}), *(t for t in (ALL, MACRO) if t in present)]


def sort_types(frame: pl.DataFrame, *first: str, then: Sequence[str] = ()) -> pl.DataFrame:
    order = {t: i for i, t in enumerate(type_order(frame["type"].unique().to_list()))}
    return frame.sort(*first, pl.col("type").replace_strict(order, return_dtype=pl.Int64), *then)


def prepare_candidates(candidates: pl.DataFrame, what: str = "candidates") -> pl.DataFrame:
    """Candidates conformed to the contract and checked (one positive, >= 1 negative, one
    family/target per item). Items are keyed by (benchmark, item_id)."""
    frame = conform(candidates, CANDIDATES_SCHEMA, what)
    if frame["text"].null_count():
        raise ValueError(f"{what}: {frame['text'].null_count()} candidate(s) without text")
    check_items(frame)
    return frame


def variant_sorted(
    table: pl.DataFrame, variants: Mapping[str, object], then: Sequence[str] = ()
) -> pl.DataFrame:
    order = {v: i for i, v in enumerate(variants)}
    frame = table.with_columns(_v=pl.col("variant").replace_strict(order, return_dtype=pl.Int64))
    return sort_types(frame, "_v", then=then).drop("_v")


# ------------------------------------------------------------------------ variants


@dataclass(frozen=True)
class VariantInfo:
    """What one candidate set of an audit is. ``key``: its ``variant`` value in every table;
    ``label``: the words the report and the figures use for it; ``balanced``: the scorers
    whose blind accuracy on it is 0.5 by construction (those its refinement balanced);
    ``note``: why, or None."""

    key: str
    label: str
    balanced: tuple[str, ...] = ()
    note: str | None = None


RELEASE_LABELS: dict[str, tuple[str, str]] = {
    # release -> (key, label)
    "refined": ("published_refined", "as published (refined by its authors)"),
    "unrefined": ("published_unrefined", "as published (unrefined)"),
    "published": ("published", "as published"),
    "generated": ("generated", "as generated here (before refinement)"),
}


def releases(candidates: pl.DataFrame) -> dict[str, int]:
    """Items per release of ``candidates``: ``generated`` (made by this workflow),
    ``refined`` / ``unrefined`` (a SugarCrepe release, from the folder the importer read:
    ``sugarcrepe/<folder>/<type>/<key>``; SugarCrepe's published benchmark is the refined
    one), ``published`` (another imported set, which carries no refinement of its own) or
    ``folder <name>`` (SugarCrepe files from a folder whose name does not say which)."""
    rows = (
        candidates.filter(pl.col("is_positive"))
        .unique(ITEM_KEY, keep="first")
        .select("generator", "item_id")
        .rows()
    )
    out: dict[str, int] = {}
    for generator, item_id in rows:
        if not (generator or "").startswith("imported:"):
            release = "generated"
        elif generator == SUGARCREPE_GENERATOR:
            parts = item_id.split("/")
            folder = parts[1] if len(parts) > 2 else ""
            release = folder if folder in SUGARCREPE_RELEASES else f"folder {folder!r}"
        else:
            release = "published"
        out[release] = out.get(release, 0) + 1
    return dict(sorted(out.items()))


def describe_variant(
    candidates: pl.DataFrame,
    refinement: Mapping[str, str] | None = None,
    corpus: str | None = None,
    refined_subset: bool = False,
) -> VariantInfo:
    """What ``candidates`` are. With ``refinement`` (the metadata ``refine`` writes:
    ``scorer_1``, ``scorer_2``) they are our own refinement with those two scorers trained on
    ``corpus``; else their release (:func:`releases`) says it. ``refined_subset``: the set
    was handed to the audit as a refined subset; generated items without refinement metadata
    are then a refined subset of unknown making, not the generated set."""
    if refinement and refinement.get("scorer_1") and refinement.get("scorer_2"):
        scorers = (refinement["scorer_1"], refinement["scorer_2"])
        label = f"re-refined here with {scorers[0]} and {scorers[1]} trained on {corpus}"
        note = (
            f"Refinement kept the pairs on which {scorers[0]} and {scorers[1]} (the blind "
            f"scorers trained on {corpus}) are balanced: within each type each wins exactly "
            "half of the pairs it does not tie on. Their blind accuracy on this variant is "
            "therefore 0.5 by construction (ties, counted wrong, can only pull it below) and "
            "says nothing about the benchmark; other scorers and models do."
        )
        return VariantInfo("re-refined", label, scorers, note)
    found = releases(candidates)
    if not found:
        return VariantInfo("refined", "an empty refined subset" if refined_subset else "empty")
    if refined_subset and set(found) == {"generated"}:
        return VariantInfo("refined", "a refined subset (its file does not say how it was refined)")
    if len(found) == 1:
        (release,) = found
        if release in RELEASE_LABELS:
            return VariantInfo(*RELEASE_LABELS[release])
        return VariantInfo(
            "published",
            f"as published (SugarCrepe files from {release}: whether refined is unknown)",
        )
    parts = [
        f"{n} items {RELEASE_LABELS.get(r, ('', r))[1]}" for r, n in found.items()
    ]  # fmt: skip
    return VariantInfo("mixed", "mixed: " + "; ".join(parts))


def unique_keys(infos: Sequence[VariantInfo]) -> list[VariantInfo]:
    """``infos`` with repeated keys made unique (``<key>_2``, ...), first one unchanged."""
    out, used = [], set()
    for info in infos:
        key, k = info.key, 1
        while key in used:
            k += 1
            key = f"{info.key}_{k}"
        used.add(key)
        out.append(VariantInfo(key, info.label, info.balanced, info.note))
    return out
