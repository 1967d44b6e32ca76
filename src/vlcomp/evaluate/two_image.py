"""Two-image benchmarks (Winoground's formulation) and SugarCrepe++-style items (one image,
two positives, one negative), with the tie policy, metric table and bootstrap intervals of
every other evaluation (``vlcomp.evaluate.metrics``).

**Two-image items** (``contracts.TWO_IMAGE_SCHEMA``; Winoground, BiVLC, VisMin): captions
c0, c1 and images I0, I1, where c0 describes I0 and c1 describes I1. From the 2x2 matrix of
the model's scores s(c_i, I_j) (Thrush et al., 2022; a cosine similarity for dual encoders,
the pair score of a model that scores pairs: ``metrics.SCORE_KINDS``):

- text score:  s(c0, I0) > s(c1, I0) and s(c1, I1) > s(c0, I1)  (each image picks its caption)
- image score: s(c0, I0) > s(c0, I1) and s(c1, I1) > s(c1, I0)  (each caption picks its image)
- group score: text and image score.

**SugarCrepe++ items** (``contracts.CANDIDATES_SCHEMA`` rows, two positives P1, P2 and one
negative N per item and negative type; Dumpala et al., 2024):

- ITT (image-to-text): s(I, P1) > s(I, N) and s(I, P2) > s(I, N);
- TOT (text-only): cos(P1, P2) > cos(P1, N) and cos(P1, P2) > cos(P2, N), with the model's
  text embeddings.

**Image-selection items** (``contracts.IMAGE_SELECTION_SCHEMA``; SVO-Probes): one caption c,
its image I0 and a negative image I1: right when s(c, I0) > s(c, I1). Both images are
embedded as two-image items' are.

Every comparison is strict: a tie counts as wrong (``tie_policy`` column), so a model that
gives every candidate the same score scores 0.

Metrics (``METRIC_SCHEMA``) per model, benchmark, part and split ("all"): each negative type
(``family_target``, as in ``retrieval_sets.negative_type``) under the metric's name, and
family "all" as ``<metric>_micro`` (over items) and ``<metric>_macro`` (mean over types),
each with a percentile bootstrap interval over items seeded per cell (paired across models).
Chance rows (model "chance") hold the expectation when the similarities are i.i.d. and
continuous (``WINOGROUND_CHANCE``, ``SUGARCREPE_PP_CHANCE``, ``IMAGE_SELECTION_CHANCE``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

from vlcomp.contracts import IMAGE_SELECTION_SCHEMA, TWO_IMAGE_SCHEMA, text_key
from vlcomp.evaluate.images import Box, EmbeddingCache, ImageRef
from vlcomp.evaluate.metrics import (
    COSINE,
    SCORE_KIND,
    EvalSettings,
    metric_frame,
    metric_rows,
    split_order,
)
from vlcomp.evaluate.scoring import scorer_of
from vlcomp.evaluate.selection import image_pair_selection, row_dots, triple_selection
from vlcomp.models.parts import LoadedModel
from vlcomp.vocabulary import ALL, CHANCE, UNLABELLED, negative_type

Log = Callable[[str], None]
Progress = Callable[[str], Callable[[int, int], None] | None]

# Random chance with i.i.d. continuous similarities (Winoground's values, Thrush et al. 2022):
# text score: two independent comparisons, each won with probability 1/2 -> 1/4; image score
# likewise 1/4; group score: both diagonal entries above both off-diagonal ones, i.e. the two
# largest of four exchangeable values are a given pair: 2! 2! / 4! = 1/6.
WINOGROUND_CHANCE: dict[str, float] = {
    "text_score": 0.25,
    "image_score": 0.25,
    "group_score": 1.0 / 6.0,
}
# SugarCrepe++: ITT wins when the negative is the lowest of three exchangeable similarities
# s(I, P1), s(I, P2), s(I, N): 1/3; TOT wins when cos(P1, P2) is the largest of the three
# exchangeable pairwise similarities: 1/3.
SUGARCREPE_PP_CHANCE: dict[str, float] = {
    "itt_accuracy": 1.0 / 3.0,
    "tot_accuracy": 1.0 / 3.0,
}

# Image selection: one comparison of two exchangeable similarities.
IMAGE_SELECTION_CHANCE: dict[str, float] = {"accuracy": 0.5}


TWO_IMAGE_PREDICTIONS_SCHEMA: dict[str, pl.DataType] = {
    "model": pl.String,
    "benchmark": pl.String,
    "part": pl.String,  # null: the benchmark has no parts
    "item_id": pl.String,
    "family": pl.String,  # family_target, e.g. "swap_rel" (family alone without a target)
    "split": pl.String,  # "all"
    "image_0": pl.String,  # the eval set's image ids
    "image_1": pl.String,
    "sim_c0_i0": pl.Float64,  # the model's score of caption_0 and image_0, ...
    "sim_c0_i1": pl.Float64,
    "sim_c1_i0": pl.Float64,
    "sim_c1_i1": pl.Float64,
    "text_correct": pl.Boolean,
    "image_correct": pl.Boolean,
    "group_correct": pl.Boolean,
}

SUGARCREPE_PP_PREDICTIONS_SCHEMA: dict[str, pl.DataType] = {
    "model": pl.String,
    "benchmark": pl.String,
    "part": pl.String,  # null: the benchmark has no parts
    "item_id": pl.String,
    "image": pl.String,  # the eval set's image id
    "family": pl.String,  # the negative's family_target, e.g. "swap_att"
    "split": pl.String,  # "all"
    "sim_i_p1": pl.Float64,  # image (or crop) vs first positive, second positive, negative
    "sim_i_p2": pl.Float64,
    "sim_i_n": pl.Float64,
    "cos_p1_p2": pl.Float64,  # text-only cosine similarities
    "cos_p1_n": pl.Float64,
    "cos_p2_n": pl.Float64,
    "itt_correct": pl.Boolean,
    "tot_correct": pl.Boolean,
    "p1_text_key": pl.String,  # sha256 of each text (contracts.text_key)
    "p2_text_key": pl.String,
    "n_text_key": pl.String,
}

IMAGE_SELECTION_PREDICTIONS_SCHEMA: dict[str, pl.DataType] = {
    "model": pl.String,
    "benchmark": pl.String,
    "part": pl.String,  # null: the benchmark has no parts
    "item_id": pl.String,
    "family": pl.String,  # what the negative image changes (subject, verb, object)
    "split": pl.String,  # "all"
    "image_0": pl.String,  # the positive image (eval set's id)
    "image_1": pl.String,  # the negative image
    "sim_pos": pl.Float64,  # the model's score of the caption and image_0
    "sim_neg": pl.Float64,  # ... and image_1
    "correct": pl.Boolean,
}

TWO_IMAGE_METRICS = {"text_score": "text_correct", "image_score": "image_correct",
                     "group_score": "group_correct"}  # fmt: skip
SUGARCREPE_PP_METRICS = {"itt_accuracy": "itt_correct", "tot_accuracy": "tot_correct"}
IMAGE_SELECTION_METRICS = {"accuracy": "correct"}


# --------------------------------------------------------------------------- scores


def winoground_correct(similarity: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Text, image and group correctness per item from ``similarity`` of shape (items, 2, 2),
    indexed [item, caption, image] (``similarity[:, i, j]`` = s(c_i, I_j)). Strict: a tie is
    wrong."""
    s = np.asarray(similarity, dtype=np.float64)
    if s.ndim != 3 or s.shape[1:] != (2, 2):
        raise ValueError(f"similarity must have shape (items, 2, 2), got {s.shape}")
    text = (s[:, 0, 0] > s[:, 1, 0]) & (s[:, 1, 1] > s[:, 0, 1])
    image = (s[:, 0, 0] > s[:, 0, 1]) & (s[:, 1, 1] > s[:, 1, 0])
    return text, image, text & image


def image_selection_correct(sim_pos: np.ndarray, sim_neg: np.ndarray) -> np.ndarray:
    """Image selection: the caption's own image strictly above the negative (tie = wrong)."""
    return np.asarray(sim_pos) > np.asarray(sim_neg)


def itt_correct(sim_p1: np.ndarray, sim_p2: np.ndarray, sim_n: np.ndarray) -> np.ndarray:
    """SugarCrepe++ ITT: both positives strictly above the negative (tie = wrong)."""
    return (np.asarray(sim_p1) > np.asarray(sim_n)) & (np.asarray(sim_p2) > np.asarray(sim_n))


def tot_correct(cos_p1_p2: np.ndarray, cos_p1_n: np.ndarray, cos_p2_n: np.ndarray) -> np.ndarray:
    """SugarCrepe++ TOT: the positives strictly closer to each other than either is to the
    negative (tie = wrong)."""
    pp = np.asarray(cos_p1_p2)
    return (pp > np.asarray(cos_p1_n)) & (pp > np.asarray(cos_p2_n))


# --------------------------------------------------------------------------- predictions


def two_image_predictions(
    model: str, items: pl.DataFrame, similarity: np.ndarray, part: str | None = None
) -> pl.DataFrame:
    """``TWO_IMAGE_PREDICTIONS_SCHEMA`` rows for ``items`` (``TWO_IMAGE_SCHEMA`` columns,
    one row per item, in the order of ``similarity``'s first axis), sorted by benchmark and
    item_id."""
    s = _checked_similarity(similarity, (items.height, 2, 2), "two-image")
    text, image, group = winoground_correct(s)
    frame = _pair_item_columns(model, items, part).with_columns(
        sim_c0_i0=pl.Series(s[:, 0, 0]),
        sim_c0_i1=pl.Series(s[:, 0, 1]),
        sim_c1_i0=pl.Series(s[:, 1, 0]),
        sim_c1_i1=pl.Series(s[:, 1, 1]),
        text_correct=pl.Series(text, dtype=pl.Boolean),
        image_correct=pl.Series(image, dtype=pl.Boolean),
        group_correct=pl.Series(group, dtype=pl.Boolean),
    )
    return _conform(frame, TWO_IMAGE_PREDICTIONS_SCHEMA).sort("benchmark", "item_id")


def image_selection_predictions(
    model: str, items: pl.DataFrame, similarity: np.ndarray, part: str | None = None
) -> pl.DataFrame:
    """``IMAGE_SELECTION_PREDICTIONS_SCHEMA`` rows for ``items`` (``IMAGE_SELECTION_SCHEMA``
    columns, in the order of ``similarity``: shape (items, 2), s(c, image_0), s(c, image_1)),
    sorted by benchmark and item_id."""
    s = _checked_similarity(similarity, (items.height, 2), "image selection")
    frame = _pair_item_columns(model, items, part).with_columns(
        sim_pos=pl.Series(s[:, 0]),
        sim_neg=pl.Series(s[:, 1]),
        correct=pl.Series(image_selection_correct(s[:, 0], s[:, 1]), dtype=pl.Boolean),
    )
    return _conform(frame, IMAGE_SELECTION_PREDICTIONS_SCHEMA).sort("benchmark", "item_id")


def _checked_similarity(similarity: np.ndarray, shape: tuple[int, ...], what: str) -> np.ndarray:
    s = np.asarray(similarity, dtype=np.float64)
    if s.shape != shape:
        raise ValueError(f"similarity shape {s.shape} does not match {shape[0]} items")
    if not np.isfinite(s).all():
        raise ValueError(f"{what}: non-finite similarity")
    return s


def _pair_item_columns(model: str, items: pl.DataFrame, part: str | None) -> pl.DataFrame:
    """The identifying columns of image-pair predictions, one row per item."""
    return items.select(
        model=pl.lit(model),
        benchmark=pl.col("benchmark"),
        part=pl.lit(part, pl.String),
        item_id=pl.col("item_id"),
        family=negative_type(pl.col("family"), pl.col("target")).fill_null(UNLABELLED),
        split=pl.lit(ALL),
        image_0=pl.col("image_0"),
        image_1=pl.col("image_1"),
    )


def sugarcrepe_pp_triples(candidates: pl.DataFrame) -> pl.DataFrame:
    """One row per item and negative type from ``CANDIDATES_SCHEMA`` rows: benchmark,
    item_id, image, family (``family_target`` of the negative), p1, p2, n (texts).

    Every item needs exactly two positive rows (P1, P2 in row order) and, per negative type,
    exactly one negative; anything else raises ``ValueError`` naming the item."""
    needed = ("benchmark", "item_id", "image", "text", "is_positive", "family", "target")
    missing = [c for c in needed if c not in candidates.columns]
    if missing:
        raise ValueError(f"SugarCrepe++ candidates: missing column(s) {missing}")
    frame = candidates.with_columns(pl.col("item_id").cast(pl.String), _row=pl.int_range(pl.len()))
    images = frame.select("item_id", "image").unique()
    if images["item_id"].is_duplicated().any():
        bad = images.filter(pl.col("item_id").is_duplicated())["item_id"][0]
        raise ValueError(f"SugarCrepe++ candidates: item {bad!r} has more than one image")
    positives = (
        frame.filter(pl.col("is_positive"))
        .sort("_row")
        .group_by("item_id", maintain_order=True)
        .agg(pl.col("benchmark", "image").first(), texts=pl.col("text"))
    )
    wrong = positives.filter(pl.col("texts").list.len() != 2)
    if wrong.height:
        row = wrong.row(0, named=True)
        raise ValueError(
            f"SugarCrepe++ candidates: {wrong.height} item(s) without exactly two positives, "
            f"e.g. {row['item_id']!r} with {len(row['texts'])}"
        )
    negatives = frame.filter(~pl.col("is_positive")).with_columns(
        family=negative_type(pl.col("family"), pl.col("target")).fill_null(UNLABELLED)
    )
    counted = negatives.group_by("item_id", "family").agg(n=pl.col("text").sort_by("_row"))
    doubled = counted.filter(pl.col("n").list.len() != 1)
    if doubled.height:
        row = doubled.row(0, named=True)
        raise ValueError(
            f"SugarCrepe++ candidates: {doubled.height} (item, negative type) with more than "
            f"one negative, e.g. {row['item_id']!r} {row['family']!r}"
        )
    with_pos = set(positives["item_id"].to_list())
    with_neg = set(counted["item_id"].to_list())
    lonely = {
        "no positive": with_neg - with_pos,
        "no negative": with_pos - with_neg,
    }
    for what, items in lonely.items():
        if items:
            example = sorted(items)[0]
            raise ValueError(
                f"SugarCrepe++ candidates: {len(items)} item(s) with {what}, e.g. {example!r}"
            )
    return (
        counted.with_columns(pl.col("n").list.first())
        .join(positives, on="item_id", how="inner")
        .select(
            "benchmark",
            "item_id",
            "image",
            "family",
            p1=pl.col("texts").list.get(0),
            p2=pl.col("texts").list.get(1),
            n="n",
        )
        .sort("benchmark", "item_id", "family")
    )


def sugarcrepe_pp_predictions(
    model: str,
    triples: pl.DataFrame,
    image_sims: np.ndarray,
    text_sims: np.ndarray,
    part: str | None = None,
) -> pl.DataFrame:
    """``SUGARCREPE_PP_PREDICTIONS_SCHEMA`` rows from ``sugarcrepe_pp_triples`` rows,
    ``image_sims`` (triples, 3) = s(I, P1), s(I, P2), s(I, N) and ``text_sims`` (triples, 3)
    = cos(P1, P2), cos(P1, N), cos(P2, N)."""
    image_sims = np.asarray(image_sims, dtype=np.float64)
    text_sims = np.asarray(text_sims, dtype=np.float64)
    for name, sims in (("image", image_sims), ("text", text_sims)):
        if sims.shape != (triples.height, 3):
            raise ValueError(f"{name} similarities {sims.shape} do not match {triples.height}")
        if not np.isfinite(sims).all():
            raise ValueError(f"SugarCrepe++: non-finite {name} similarity")
    itt = itt_correct(image_sims[:, 0], image_sims[:, 1], image_sims[:, 2])
    tot = tot_correct(text_sims[:, 0], text_sims[:, 1], text_sims[:, 2])
    frame = triples.select(
        model=pl.lit(model),
        benchmark="benchmark",
        part=pl.lit(part, pl.String),
        item_id="item_id",
        image="image",
        family="family",
        split=pl.lit(ALL),
    ).with_columns(
        **{
            f"{column}_text_key": pl.Series([text_key(t) for t in triples[column]], dtype=pl.String)
            for column in ("p1", "p2", "n")
        },
        sim_i_p1=pl.Series(image_sims[:, 0]),
        sim_i_p2=pl.Series(image_sims[:, 1]),
        sim_i_n=pl.Series(image_sims[:, 2]),
        cos_p1_p2=pl.Series(text_sims[:, 0]),
        cos_p1_n=pl.Series(text_sims[:, 1]),
        cos_p2_n=pl.Series(text_sims[:, 2]),
        itt_correct=pl.Series(itt, dtype=pl.Boolean),
        tot_correct=pl.Series(tot, dtype=pl.Boolean),
    )
    return _conform(frame, SUGARCREPE_PP_PREDICTIONS_SCHEMA).sort("benchmark", "item_id", "family")


def _conform(frame: pl.DataFrame, schema: Mapping[str, pl.DataType]) -> pl.DataFrame:
    return frame.select([pl.col(c).cast(t) for c, t in schema.items()])


# --------------------------------------------------------------------------- scoring


def score_two_image(
    loaded: LoadedModel,
    items: pl.DataFrame,
    images: Mapping[str, str],
    batch_size: int = 256,
    image_cache: EmbeddingCache | None = None,
    text_cache: EmbeddingCache | None = None,
    progress: Progress = lambda label: None,
    log: Log | None = None,
) -> tuple[np.ndarray, dict[str, str]]:
    """The (items, 2, 2) similarity matrices s(c_i, I_j) of ``items`` and the image ids that
    failed to decode (image_id -> message; their items' rows are NaN). ``images``: image_id ->
    file for every image_0 / image_1 (leave out items the image index cannot serve first).
    The model's scores (``scoring.Scorer.score_selection``): cosine similarities of
    embeddings, or a pair scorer's scores of the four pairs."""
    selection = image_pair_selection(items, images, ["caption_0", "caption_1"])
    failed: dict[ImageRef, str] = {}
    similarity = scorer_of(loaded).score_selection(
        selection, batch_size, image_cache, text_cache, progress, log, failed
    )
    return similarity, selection.unreadable(failed)


def score_image_selection(
    loaded: LoadedModel,
    items: pl.DataFrame,
    images: Mapping[str, str],
    batch_size: int = 256,
    image_cache: EmbeddingCache | None = None,
    text_cache: EmbeddingCache | None = None,
    progress: Progress = lambda label: None,
    log: Log | None = None,
) -> tuple[np.ndarray, dict[str, str]]:
    """The (items, 2) similarities s(c, image_0), s(c, image_1) of image-selection ``items``
    and the image ids that failed to decode (as :func:`score_two_image`)."""
    selection = image_pair_selection(items, images, ["caption"])
    failed: dict[ImageRef, str] = {}
    similarity = scorer_of(loaded).score_selection(
        selection, batch_size, image_cache, text_cache, progress, log, failed
    )
    return similarity[:, 0, :], selection.unreadable(failed)


def score_sugarcrepe_pp(
    loaded: LoadedModel,
    triples: pl.DataFrame,
    images: Mapping[str, str],
    boxes: Mapping[str, Box | None] | None = None,
    batch_size: int = 256,
    image_cache: EmbeddingCache | None = None,
    text_cache: EmbeddingCache | None = None,
    progress: Progress = lambda label: None,
    log: Log | None = None,
) -> tuple[np.ndarray, np.ndarray, dict[str, str]]:
    """Image similarities (triples, 3) = s(I, P1), s(I, P2), s(I, N), text-only similarities
    (triples, 3) = cos(P1, P2), cos(P1, N), cos(P2, N), and the image ids that failed to
    decode (their rows are NaN). ``boxes``: item_id -> crop (``retrieval_sets.item_boxes``).
    The model's scores (``scoring.Scorer.score_selection``); the text-only similarities come
    from its text embeddings (a matching head's ITC), and a model without them (VQAScore)
    cannot be used."""
    scorer = scorer_of(loaded)
    if not scorer.has_text_similarity:
        raise ValueError(
            f"SugarCrepe++: {loaded.spec.key} ({scorer.score_name}) has no text "
            "embeddings, which the text-only accuracy (TOT) needs; evaluate it on the other "
            "benchmarks"
        )
    unknown = sorted(set(triples["image"].to_list()) - set(images))
    if unknown:
        raise ValueError(
            f"SugarCrepe++: {len(unknown)} image(s) without a file, e.g. {unknown[0]!r}"
        )
    selection = triple_selection(triples, images, dict(boxes or {}))
    failed: dict[ImageRef, str] = {}
    image_sims = scorer.score_selection(
        selection, batch_size, image_cache, text_cache, progress, log, failed
    )[:, :, 0]
    n = triples.height
    texts = [*triples["p1"].to_list(), *triples["p2"].to_list(), *triples["n"].to_list()]
    vectors, _ = scorer.text_vectors(texts, batch_size, text_cache, progress("texts"))
    p1, p2, negative = vectors[:n], vectors[n : 2 * n], vectors[2 * n :]
    text_sims = np.stack([row_dots(p1, p2), row_dots(p1, negative), row_dots(p2, negative)], axis=1)
    return image_sims, text_sims, selection.unreadable(failed)


# --------------------------------------------------------------------------- metrics


def score_metric_table(
    predictions: pl.DataFrame,
    metrics: Mapping[str, str],
    chance: Mapping[str, float],
    settings: EvalSettings,
) -> pl.DataFrame:
    """``METRIC_SCHEMA`` rows from per-item boolean columns: ``metrics`` maps a metric name
    to its column, ``chance`` gives each metric's chance value. Per model, benchmark, part and
    split ("all" plus any other split): each family under the metric's name, family "all" as
    ``<name>_micro`` and ``<name>_macro``; intervals as in ``metrics.metric_rows``."""
    names = list(metrics)
    chance_row = np.array([float(chance[name]) for name in names], dtype=np.float64)
    rows: list[tuple] = []
    groups = predictions.group_by(["model", "benchmark", "part"])
    for (model, benchmark, part), frame in sorted(
        groups, key=lambda g: (g[0][0], g[0][1], g[0][2] is not None, g[0][2] or "")
    ):
        frame = frame.sort("item_id", "family")
        values = np.column_stack(
            [frame[metrics[name]].cast(pl.Float64).to_numpy() for name in names]
        )
        chance_values = np.tile(chance_row, (frame.height, 1))
        split = frame["split"].to_numpy()
        family = frame["family"].to_numpy()
        for s in split_order(frame["split"].to_list()):
            cell = np.ones(frame.height, bool) if s == ALL else split == s
            if not cell.any():
                continue
            per_family = []
            for f in sorted(set(family[cell].tolist())):
                sel = cell & (family == f)
                per_family.append(sel)
                rows += metric_rows(model, benchmark, part, s, f, None, names, values,
                                    chance_values, [sel], settings)  # fmt: skip
            rows += metric_rows(model, benchmark, part, s, ALL, None, names, values,
                                chance_values, [cell], settings, "_micro")  # fmt: skip
            rows += metric_rows(model, benchmark, part, s, ALL, None, names, values,
                                chance_values, per_family, settings, "_macro")  # fmt: skip
    return metric_frame(rows)


def two_image_metric_table(predictions: pl.DataFrame, settings: EvalSettings) -> pl.DataFrame:
    """text_score, image_score, group_score (``TWO_IMAGE_PREDICTIONS_SCHEMA`` in)."""
    return score_metric_table(predictions, TWO_IMAGE_METRICS, WINOGROUND_CHANCE, settings)


def sugarcrepe_pp_metric_table(predictions: pl.DataFrame, settings: EvalSettings) -> pl.DataFrame:
    """itt_accuracy, tot_accuracy (``SUGARCREPE_PP_PREDICTIONS_SCHEMA`` in). The models'
    tot_accuracy rows have score kind cosine (of two text embeddings, whatever the model
    scores image-text pairs by); the itt_accuracy rows get the model's own
    (``metrics.with_score_kind``)."""
    table = score_metric_table(predictions, SUGARCREPE_PP_METRICS, SUGARCREPE_PP_CHANCE, settings)
    text_only = (pl.col("model") != CHANCE) & pl.col("metric").str.starts_with("tot_accuracy")
    return table.with_columns(
        pl.when(text_only).then(pl.lit(COSINE)).otherwise(pl.col(SCORE_KIND)).alias(SCORE_KIND)
    )


def image_selection_metric_table(predictions: pl.DataFrame, settings: EvalSettings) -> pl.DataFrame:
    """accuracy per negative type, micro and macro (``IMAGE_SELECTION_PREDICTIONS_SCHEMA``
    in), chance 0.5."""
    return score_metric_table(
        predictions, IMAGE_SELECTION_METRICS, IMAGE_SELECTION_CHANCE, settings
    )


def log_score_summary(metrics: pl.DataFrame, names: Sequence[str], log: Log) -> None:
    """One line per model, benchmark, part, split and metric: the micro average."""
    wanted = [f"{name}_micro" for name in names]
    headline = metrics.filter((pl.col("family") == ALL) & pl.col("metric").is_in(wanted))
    for row in headline.iter_rows(named=True):
        part = f" [{row['part']}]" if row["part"] is not None else ""
        low, high = row["ci_low"], row["ci_high"]
        ci = f" [{low:.3f}, {high:.3f}]" if low is not None and high is not None else ""
        log(
            f"{row['model']} {row['benchmark']}{part} {row['split']} {row['metric']}: "
            f"{row['value']:.3f}{ci} (n={row['n']})"
        )


@dataclass(frozen=True)
class PairShape:
    """How one shape of image-pair item is scored and summarised
    (``jobs.evaluate_two_image_job``)."""

    schema: Mapping[str, pl.DataType]
    score: Callable[..., tuple[np.ndarray, dict[str, str]]]
    predictions: Callable[[str, pl.DataFrame, np.ndarray], pl.DataFrame]
    metric_table: Callable[[pl.DataFrame, EvalSettings], pl.DataFrame]
    metrics: Mapping[str, str]
    chance: Mapping[str, float]


PAIR_SHAPES: dict[str, PairShape] = {
    "two_images": PairShape(
        TWO_IMAGE_SCHEMA, score_two_image, two_image_predictions, two_image_metric_table,
        TWO_IMAGE_METRICS, WINOGROUND_CHANCE,
    ),
    "image_selection": PairShape(
        IMAGE_SELECTION_SCHEMA, score_image_selection, image_selection_predictions,
        image_selection_metric_table, IMAGE_SELECTION_METRICS, IMAGE_SELECTION_CHANCE,
    ),
}  # fmt: skip
