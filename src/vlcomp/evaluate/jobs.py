"""Job-level functions: files in, files out. Each workflow rule calls exactly one of these.

They are plain functions so that every stage can also run without Snakemake.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from vlcomp.contracts import ITEMS_KEY, PREDICTION_FLAGS_SCHEMA, conform, text_key
from vlcomp.evaluate.images import (
    UNREADABLE,
    excluded_frame,
    log_excluded,
    lookup_images,
    progress_bar,
    read_image_index,
)
from vlcomp.evaluate.metrics import (
    METRIC_SCHEMA,
    EvalSettings,
    add_flag_counts,
    recall_table,
    set_flags,
    with_score_kind,
)
from vlcomp.evaluate.retrieval_sets import (
    SET_PREDICTIONS_SCHEMA,
    attach_splits,
    item_boxes,
    log_summary,
    rank_sets,
    set_metric_table,
    split_keys,
)
from vlcomp.importers.aro import GENERATOR as ARO_GENERATOR
from vlcomp.importers.aro import aro_macro_accuracy
from vlcomp.io import read_parquet_metadata, write_parquet, write_with
from vlcomp.models.versions import provenance
from vlcomp.negatives.context import (
    sets_decided_by_text,
    sets_keyed_by_merges,
    text_decides,
    tokenizer_merges,
)
from vlcomp.vocabulary import ALL, AS_GENERATED, TIE_POLICY

# Jobs that open a model import embed, scoring, two_image and models.loading inside the
# function: those load torch and open_clip (seconds), which the jobs that only read tables
# (collect_metrics, score_benchmark) must not pay for when they import this module.

Log = Callable[[str], None]


def collect_metrics(
    tables: Sequence[str], parquet_out: str, csv_out: str, kind: str | None = None
) -> None:
    """Stack per-model metric tables; chance rows, identical across models, are kept once.
    ``kind``: the benchmark's kind (crepe_systematicity, pairs, ...), written in a ``kind``
    column after ``benchmark`` (which holds the benchmark's name), followed by ``variant``:
    the benchmark's variant the models were scored on (``as_generated`` or ``debiased``, from
    each table's metadata)."""
    # diagonal: a model's table written before a column was added still stacks (null there)
    frame = pl.concat(
        [
            pl.read_parquet(t).with_columns(variant=pl.lit(evaluated_variant(t), pl.String))
            for t in tables
        ],
        how="diagonal_relaxed",
    ).unique(maintain_order=True)
    labels = ["variant"] if kind is None else ["kind", "variant"]
    if kind is not None:
        frame = frame.with_columns(kind=pl.lit(kind, pl.String))
    at = frame.columns.index("benchmark") + 1
    rest = [c for c in frame.columns if c not in labels]
    frame = frame.select(*rest[:at], *labels, *rest[at:])
    write_parquet(frame, parquet_out, metadata=provenance())
    write_with(csv_out, lambda tmp: frame.write_csv(tmp, float_precision=6))


def published_macro_rows(
    predictions: pl.DataFrame, parts: Sequence[tuple[str | None, pl.DataFrame]]
) -> pl.DataFrame:
    """``METRIC_SCHEMA`` rows of the macro averages a benchmark's authors report, for the
    parts (label, candidates) imported from such a release: ARO's per relation
    (VG-Relation) and per attribute pair (VG-Attribution), metric ``accuracy_aro_macro``
    (``importers.aro.aro_macro_accuracy``; no interval)."""
    rows = [pl.DataFrame(schema=METRIC_SCHEMA)]
    for label, candidates in parts:
        if not candidates.height or not (candidates["generator"] == ARO_GENERATOR).any():
            continue
        scored = predictions.filter(pl.col("part").eq_missing(label))
        _, macro = aro_macro_accuracy(scored, candidates)
        rows.append(
            macro.filter(pl.col("value").is_not_null()).select(
                "model", "benchmark", "part", split=pl.lit(ALL), family="family",
                metric="metric", value="value", n="n", tie_policy=pl.lit(TIE_POLICY),
                complexity=pl.lit(None, pl.Int64), ci_low=pl.lit(None, pl.Float64),
                ci_high=pl.lit(None, pl.Float64), n_indistinguishable=pl.lit(None, pl.Int64),
                n_tied=pl.lit(None, pl.Int64), score_kind=pl.lit(None, pl.String),
            ).cast(METRIC_SCHEMA)
        )  # fmt: skip
    return pl.concat(rows)


def evaluated_variant(metric_table: str | Path) -> str:
    """The benchmark variant a model's metric table was scored on (its metadata's
    ``variants``; tables of benchmarks without variants: as generated or imported)."""
    variants = set(read_parquet_metadata(metric_table).get("variants", AS_GENERATED).split(","))
    if len(variants) != 1:
        raise ValueError(f"{metric_table}: parts scored on different variants: {variants}")
    return variants.pop()


def evaluate_benchmark_job(
    model_key: str,
    model_entry: dict[str, Any],
    checkpoint: str | None,
    settings: dict[str, Any],
    parts: Sequence[Mapping[str, Any]],
    image_index: str,
    cache_dir: str,
    predictions_out: str,
    metrics_out: str,
    excluded_out: str,
    log: Log = print,
) -> None:
    """Job: score one model on one benchmark of retrieval sets (a pair is a set of two) and
    write per-set predictions (``SET_PREDICTIONS_SCHEMA`` with ``PREDICTION_FLAGS_SCHEMA``),
    the metric table (``METRIC_SCHEMA``, flags counted per cell) and the items left out.

    ``parts``: the benchmark's candidate sets, each {"candidates": path, "boxes": path or
    None, "splits": path or None, "split_column": str, "label": str or None, "variant": the
    benchmark's variant the table holds (as_generated or debiased), recorded in the
    metadata}, e.g. one part per training corpus of a systematicity benchmark (label: the
    corpus; splits: that corpus's table). Predictions and metrics of all parts are stacked,
    with ``part`` = label. Each candidate's ``image`` is looked up in ``image_index``; items
    whose image is not usable (or fails to decode) are excluded and logged. ``settings``:
    device, threads, batch_size, precision, workers (see ``embed.open_model``) and the
    ``EvalSettings.from_config`` keys (set_recall_at or recall_at, bootstrap_resamples,
    bootstrap_seed). The outputs' metadata name the device type and precision used."""
    from vlcomp.evaluate.embed import model_metadata, open_model
    from vlcomp.evaluate.scoring import score_candidates, scorer_of

    eval_settings = EvalSettings.from_config(settings)
    excluded: list[tuple[Any, ...]] = []
    usable_parts, total = _usable_parts(parts, read_image_index(image_index), excluded)
    _stop_if_nothing_left(excluded, total, image_index, log)
    loaded, image_cache, text_cache = open_model(
        model_key, model_entry, checkpoint, settings, cache_dir, log
    )
    predictions = []
    for part, label, candidates, usable in usable_parts:
        if not candidates.height:
            continue
        boxes = pl.read_parquet(part["boxes"]) if part.get("boxes") else None
        unreadable: dict[str, str] = {}
        scored = score_candidates(
            model_key, loaded, candidates, usable, boxes=boxes,
            batch_size=int(settings["batch_size"]), image_cache=image_cache,
            text_cache=text_cache, progress=progress_bar, log=log, unreadable=unreadable,
        )  # fmt: skip
        bad = candidates.filter(pl.col("image").is_in(sorted(unreadable)))
        excluded += [
            (label, item_id, image, UNREADABLE, unreadable[image])
            for item_id, image in bad.select("item_id", "image").unique().iter_rows()
        ]
        if scored.height:
            ranked = _ranked_sets(loaded.tokenizer, scored, candidates, label, log)
            splits = pl.read_parquet(part["splits"]) if part.get("splits") else None
            ranked = attach_splits(
                ranked, splits, part.get("split_column", "split"), split_keys(boxes)
            )
            predictions.append(ranked.with_columns(part=pl.lit(label, pl.String)))
    _stop_if_nothing_left(excluded, total, image_index, log)
    schema = {**SET_PREDICTIONS_SCHEMA, **PREDICTION_FLAGS_SCHEMA}
    stacked = (pl.concat(predictions) if predictions else pl.DataFrame(schema=schema)).select(
        list(schema)
    )
    score_kind = scorer_of(loaded).score_kind
    metrics = _set_metrics(stacked, usable_parts, eval_settings, model_key, score_kind)
    meta = {**model_metadata(model_key, loaded), "score_kind": score_kind,
            **eval_settings.metadata(), **_parts_metadata(parts)}  # fmt: skip
    context = getattr(loaded.tokenizer, "context_length", None)
    if context is not None:
        meta["tokenizer_context_length"] = str(context)
    _log_flags(stacked, context, log)
    write_evaluation(
        stacked, metrics, excluded, meta, predictions_out, metrics_out, excluded_out, total, log
    )
    log_summary(metrics, log)


def _set_metrics(
    stacked: pl.DataFrame,
    usable_parts: Sequence[tuple[Any, Any, pl.DataFrame, Any]],
    settings: EvalSettings,
    model_key: str,
    score_kind: str,
) -> pl.DataFrame:
    """The metric table of a benchmark's ranked sets, with the flags counted per cell, the
    published macro rows (ARO) and the model's score kind."""
    metrics = add_flag_counts(set_metric_table(stacked, settings), stacked)
    published = published_macro_rows(stacked, [(p[1], p[2]) for p in usable_parts])
    return with_score_kind(pl.concat([metrics, published]), model_key, score_kind)


def _parts_metadata(parts: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """The parts' labels, split columns and variants, comma-separated, in order."""
    return {
        "parts": ",".join(str(p.get("label")) for p in parts),
        "split_columns": ",".join(str(p.get("split_column", "split")) for p in parts),
        "variants": ",".join(str(p.get("variant", AS_GENERATED)) for p in parts),
    }


def _usable_parts(
    parts: Sequence[Mapping[str, Any]], index: Mapping[str, Any], excluded: list[tuple[Any, ...]]
) -> tuple[list[tuple[Mapping[str, Any], Any, pl.DataFrame, dict[str, str]]], int]:
    """Per part: (part, label, its candidates whose image the index serves, image_id ->
    file), and the number of items in all parts; the items left out go to ``excluded``."""
    usable_parts = []
    total = 0
    for part in parts:
        label = part.get("label")
        candidates = pl.read_parquet(part["candidates"])
        items = candidates.select("item_id", "image").unique(maintain_order=True)
        total += items.height
        usable, problems = lookup_images(items["image"].to_list(), index)
        has_file = pl.col("image").is_in(sorted(usable)).fill_null(False)
        for item_id, image in items.filter(~has_file).iter_rows():
            excluded.append((label, item_id, image, *problems[image]))
        usable_parts.append((part, label, candidates.filter(has_file), usable))
    return usable_parts, total


def _ranked_sets(
    tokenizer: Any, scored: pl.DataFrame, candidates: pl.DataFrame, label: Any, log: Log
) -> pl.DataFrame:
    """``rank_sets`` of a part's scores with the tokenizer's flags; a set the tokenizer
    cannot tell apart is wrong however its floats round."""
    flags = set_flags(*flag_tokens(tokenizer, scored, candidates, label, log))
    return (
        rank_sets(scored)
        .join(
            flags, on=["model", "benchmark", "item_id", "family"], how="left",
            maintain_order="left",
        )
        .with_columns(correct=pl.col("correct") & ~pl.col("indistinguishable").fill_null(False))
    )  # fmt: skip


def token_ids(
    tokenizer: Callable[[list[str]], Any], texts: Sequence[str], batch: int = 1024
) -> dict[str, bytes]:
    """text_key -> the text's token ids (bytes) under ``tokenizer`` (texts -> (texts,
    context) ids, e.g. a loaded model's), for ``metrics.set_flags``."""
    unique = list(dict.fromkeys(texts))
    out: dict[str, bytes] = {}
    for start in range(0, len(unique), batch):
        chunk = unique[start : start + batch]
        ids = np.asarray(tokenizer(chunk), dtype=np.int64)
        out.update((text_key(t), row.tobytes()) for t, row in zip(chunk, ids, strict=True))
    return out


def flag_tokens(
    tokenizer: Callable[[list[str]], Any],
    scored: pl.DataFrame,
    candidates: pl.DataFrame,
    label: str | None = None,
    log: Log | None = None,
) -> tuple[pl.DataFrame, dict[str, Hashable]]:
    """The inputs of ``metrics.set_flags``: ``scored`` and text_key -> token ids
    (``token_ids``), with no ids where the flags need none under open_clip's
    SimpleTokenizer (``context.text_decides``): in a set that the text decides
    (``context.sets_decided_by_text``) or whose texts the tokenizer's merges read without
    its cleaning (``context.sets_keyed_by_merges``), a row's text_key becomes a key of its
    text that stands for its ids within the set, so the flags are those the ids give."""
    context = text_decides(tokenizer)
    keys: dict[str, dict[str, str]] = {}
    if context is not None:
        rows = candidates.select("item_id", "text", "is_positive").rows()
        by_text = sets_decided_by_text(rows, context)
        rest = [row for row in rows if row[0] not in by_text]
        by_merges = sets_keyed_by_merges(rest, context, tokenizer_merges(tokenizer))
        # a piece or a token has no space; the prefixes keep the two kinds apart
        for prefix, sets in (("text:", by_text), ("tokens:", by_merges)):
            for item_id, texts in sets.items():
                keys[item_id] = {text: prefix + " ".join(key) for text, key in texts.items()}
        if log is not None:
            n_sets = candidates["item_id"].n_unique()
            part = f" [{label}]" if label is not None else ""
            log(
                f"{n_sets} sets{part}: flags of {len(by_text)} decided by their text, "
                f"{len(by_merges)} by the tokenizer's merges, {n_sets - len(keys)} by its ids"
            )
    rest_texts = candidates.filter(~pl.col("item_id").is_in(list(keys)))["text"].to_list()
    tokens: dict[str, Hashable] = dict(token_ids(tokenizer, rest_texts))
    if not keys:
        return scored, tokens
    keyed = pl.DataFrame(
        [
            (item_id, text_key(text), key)
            for item_id, texts in keys.items()
            for text, key in texts.items()
        ],
        schema={"item_id": pl.String, "text_key": pl.String, "flag_key": pl.String},
        orient="row",
    )
    tokens.update((key, key) for key in keyed["flag_key"].unique().to_list())
    scored = (
        scored.join(keyed, on=["item_id", "text_key"], how="left", maintain_order="left")
        .with_columns(text_key=pl.coalesce("flag_key", "text_key"))
        .drop("flag_key")
    )
    return scored, tokens


def _log_flags(predictions: pl.DataFrame, context: int | None, log: Log) -> None:
    """Per part: sets the tokenizer cannot tell apart, and ties."""
    within = f" within its {context} tokens" if context is not None else ""
    for (part,), frame in sorted(
        predictions.group_by(["part"]), key=lambda g: (g[0][0] is not None, g[0][0] or "")
    ):
        label = f" [{part}]" if part is not None else ""
        n_same, n_tied = int(frame["indistinguishable"].sum()), int(frame["tied"].sum())
        log(
            f"{frame.height} sets{label}: {n_same} indistinguishable to the tokenizer{within} "
            f"(a negative reads as a positive), {n_tied} tied (other input, equal similarity)"
        )


def retrieval_job(
    model_key: str,
    model_entry: dict[str, Any],
    checkpoint: str | None,
    settings: dict[str, Any],
    eval_items: str,
    image_index: str,
    cache_dir: str,
    ranks_out: str,
    metrics_out: str,
    excluded_out: str,
    log: Log = print,
    benchmark: str | None = None,
) -> None:
    """Job: image<->text retrieval over an eval set whose items are captions of whole images
    (item_id, image_id, text; e.g. COCO captions): every image ranks every caption and every
    caption every image (``scoring.Scorer.retrieval_ranks``: by cosine similarity, or a pair
    scorer's shortlist and rerank); Recall@K (``settings["recall_at"]``) both directions with
    bootstrap intervals, split "all" (``metrics.recall_table``), and the per-query ranks
    (``RANKS_SCHEMA``). Images are looked up in ``image_index``; captions of images that are
    not usable (or fail to decode) are excluded and logged, and those images leave the
    gallery. ``benchmark`` defaults to the eval set folder's name + "_retrieval"."""
    from vlcomp.evaluate.embed import model_metadata, open_model
    from vlcomp.evaluate.scoring import scorer_of

    eval_settings = EvalSettings.from_config(settings, ks_key="recall_at")
    benchmark = benchmark or f"{Path(eval_items).parent.name}_retrieval"
    items = pl.read_parquet(eval_items)
    missing = [c for c in ("item_id", "image_id", "text") if c not in items.columns]
    if missing:
        raise ValueError(f"{eval_items}: missing column(s) {missing}")
    items = items.with_columns(pl.col("item_id", "image_id").cast(pl.String)).sort("item_id")
    total = items.height
    if "x" in items.columns and items["x"].null_count() < items.height:
        log(f"{items['x'].is_not_null().sum()} items have a region box; whole images are used")
    usable, problems = lookup_images(items["image_id"].to_list(), read_image_index(image_index))
    has_file = pl.col("image_id").is_in(sorted(usable)).fill_null(False)
    excluded: list[tuple[Any, ...]] = [
        (None, item_id, image, *problems[image])
        for item_id, image in items.filter(~has_file).select("item_id", "image_id").iter_rows()
    ]
    _stop_if_nothing_left(excluded, total, image_index, log)
    items = items.filter(has_file)
    loaded, image_cache, text_cache = open_model(
        model_key, model_entry, checkpoint, settings, cache_dir, log
    )
    scorer = scorer_of(loaded)
    ranks, unreadable = scorer.retrieval_ranks(
        model_key, benchmark, items, usable, int(settings["batch_size"]), image_cache,
        text_cache, progress_bar, log,
    )  # fmt: skip
    bad = items.filter(pl.col("image_id").is_in(sorted(unreadable)))
    for item_id, image in bad.select("item_id", "image_id").iter_rows():
        excluded.append((None, item_id, image, UNREADABLE, unreadable[image]))
    _stop_if_nothing_left(excluded, total, image_index, log)
    table = with_score_kind(
        recall_table(ranks, eval_settings), model_key, scorer.retrieval_score_kind
    )
    meta = {
        **model_metadata(model_key, loaded),
        "score_kind": scorer.retrieval_score_kind,
        **eval_settings.metadata(),
    }
    write_evaluation(ranks, table, excluded, meta, ranks_out, metrics_out, excluded_out, total, log)
    log_summary(table, log)


def _stop_if_nothing_left(
    excluded: Sequence[tuple[Any, ...]], total: int, image_index: str, log: Log
) -> None:
    """Raise (before or after embedding, never within a batch) when every item is excluded."""
    if total and len(excluded) >= total:
        table = excluded_frame(excluded)
        log_excluded(table, total, log)
        raise ValueError(
            f"none of the {total} items has a usable image in {image_index} "
            f"(statuses: {dict(table['status'].value_counts().iter_rows())})"
        )


def score_benchmark(
    candidates: str, specs: dict[str, dict], scores_out: str, cache: str, log: Log = print
) -> None:
    """Every candidate text scored by every scorer; ``scorer`` holds the short name (the
    full name, which identifies the training data, is in the file's metadata)."""
    from vlcomp.refine.scores import resolve_scorer, score_candidates

    scorers = {short: resolve_scorer(spec) for short, spec in specs.items()}
    scores = score_candidates(pl.read_parquet(candidates), list(scorers.values()), cache)
    full_to_short = {scorer.name: short for short, scorer in scorers.items()}
    scores = scores.with_columns(pl.col("scorer").replace_strict(full_to_short))
    meta = {f"scorer.{short}": scorer.name for short, scorer in scorers.items()}
    write_parquet(scores, scores_out, metadata=meta)
    log(f"scored {scores.height} (scorer, text) pairs with {', '.join(scorers)}")


def evaluate_two_image_job(
    model_key: str,
    model_entry: dict[str, Any],
    checkpoint: str | None,
    settings: dict[str, Any],
    items: str,
    image_index: str,
    cache_dir: str,
    predictions_out: str,
    metrics_out: str,
    excluded_out: str,
    log: Log = print,
    shape: str = "two_images",
) -> None:
    """Job: score one model on a benchmark of image pairs and write per-item predictions,
    the metric table (``METRIC_SCHEMA``) and the items left out (``EXCLUDED_SCHEMA``, one row
    per item: its first unusable image). ``shape``:

    - ``two_images`` (``contracts.TWO_IMAGE_SCHEMA``: Winoground, BiVLC, VisMin, ...): the 2x2
      similarities and text / image / group correctness
      (``two_image.TWO_IMAGE_PREDICTIONS_SCHEMA``), text_score, image_score, group_score per
      family, micro and macro, chance 1/4, 1/4, 1/6;
    - ``image_selection`` (``contracts.IMAGE_SELECTION_SCHEMA``: SVO-Probes): one caption,
      s(c, image_0), s(c, image_1) and whether the positive image_0 wins
      (``two_image.IMAGE_SELECTION_PREDICTIONS_SCHEMA``), accuracy per negative type, micro
      and macro, chance 0.5, a tie wrong.

    Both image ids are looked up in ``image_index``; an item with either image missing or
    undecodable is excluded and logged. ``settings``: device, threads, batch_size, precision,
    workers, bootstrap_resamples, bootstrap_seed, ci_level."""
    from vlcomp.evaluate.embed import model_metadata, open_model
    from vlcomp.evaluate.scoring import scorer_of
    from vlcomp.evaluate.two_image import PAIR_SHAPES, log_score_summary

    if shape not in PAIR_SHAPES:
        raise ValueError(f"shape must be one of {sorted(PAIR_SHAPES)}, got {shape!r}")
    kind = PAIR_SHAPES[shape]
    eval_settings = EvalSettings.from_config(settings)
    table = conform(pl.read_parquet(items), kind.schema, items).sort("benchmark", "item_id")
    duplicated = table.filter(pl.struct("benchmark", "item_id").is_duplicated())
    if duplicated.height:
        raise ValueError(f"{items}: duplicate item_id {duplicated['item_id'][0]!r}")
    total = table.height
    pairs = table.select("item_id", "image_0", "image_1").rows()
    usable, problems = lookup_images([i for _, *ids in pairs for i in ids],
                                     read_image_index(image_index))  # fmt: skip
    excluded = _two_image_excluded(pairs, problems)
    _stop_if_nothing_left(excluded, total, image_index, log)
    table = table.filter(_usable_pairs(pairs, problems))
    loaded, image_cache, text_cache = open_model(
        model_key, model_entry, checkpoint, settings, cache_dir, log
    )
    similarity, unreadable = kind.score(
        loaded, table, usable, int(settings["batch_size"]), image_cache, text_cache,
        progress_bar, log,
    )  # fmt: skip
    if unreadable:
        pairs = table.select("item_id", "image_0", "image_1").rows()
        failures = {image: (UNREADABLE, message) for image, message in unreadable.items()}
        excluded += _two_image_excluded(pairs, failures)
        _stop_if_nothing_left(excluded, total, image_index, log)
        keep = _usable_pairs(pairs, failures)
        table, similarity = table.filter(keep), similarity[keep.to_numpy()]
    predictions = kind.predictions(model_key, table, similarity)
    score_kind = scorer_of(loaded).score_kind
    metrics = with_score_kind(kind.metric_table(predictions, eval_settings), model_key, score_kind)
    meta = {
        **model_metadata(model_key, loaded),
        "score_kind": score_kind,
        **eval_settings.metadata(),
        "chance": ", ".join(f"{k} {v:.6f}" for k, v in kind.chance.items()),
    }
    write_evaluation(
        predictions, metrics, excluded, meta, predictions_out, metrics_out, excluded_out, total, log
    )
    log_score_summary(metrics, list(kind.metrics), log)


def _usable_pairs(
    pairs: Sequence[tuple[Any, ...]], failures: Mapping[str | None, tuple[str, str]]
) -> pl.Series:
    """Boolean mask: (item_id, image_0, image_1) rows with neither image in ``failures``."""
    return pl.Series([all(i not in failures for i in ids) for _, *ids in pairs], dtype=pl.Boolean)


def _two_image_excluded(
    pairs: Sequence[tuple[Any, ...]], failures: Mapping[str | None, tuple[str, str]]
) -> list[tuple[Any, ...]]:
    """``EXCLUDED_SCHEMA`` tuples, one per (item_id, image_0, image_1) with a failed image:
    the first failed image, the other one named in the detail when it failed too."""
    rows = []
    for item_id, *images in pairs:
        bad = [(k, image) for k, image in enumerate(images) if image in failures]
        if not bad:
            continue
        (k, image), *others = bad
        status, detail = failures[image]
        detail = f"image_{k}: {detail}" if detail else f"image_{k}"
        for j, other in others:
            detail += f"; image_{j} {other!r} is {failures[other][0]} too"
        rows.append((None, item_id, image, status, detail))
    return rows


def evaluate_sugarcrepe_pp_job(
    model_key: str,
    model_entry: dict[str, Any],
    checkpoint: str | None,
    settings: dict[str, Any],
    candidates: str,
    boxes: str | None,
    image_index: str,
    cache_dir: str,
    predictions_out: str,
    metrics_out: str,
    excluded_out: str,
    log: Log = print,
) -> None:
    """Job: score one model on a SugarCrepe++-style benchmark (``CANDIDATES_SCHEMA`` rows
    with two positives and one negative per item and negative type) and write per-item
    predictions (``two_image.SUGARCREPE_PP_PREDICTIONS_SCHEMA``), the metric table
    (``METRIC_SCHEMA``: itt_accuracy and tot_accuracy per negative type, micro and macro,
    chance 1/3 each) and the items left out (``EXCLUDED_SCHEMA``). ``boxes``: an optional
    table item_id, x, y, width, height cropping each item's image. An item whose image is
    missing or undecodable is excluded from both metrics (TOT too, so that ITT and TOT count
    the same items). ``settings``: as ``evaluate_two_image_job``."""
    from vlcomp.evaluate.embed import model_metadata, open_model
    from vlcomp.evaluate.scoring import scorer_of
    from vlcomp.evaluate.two_image import (
        SUGARCREPE_PP_CHANCE,
        SUGARCREPE_PP_METRICS,
        log_score_summary,
        score_sugarcrepe_pp,
        sugarcrepe_pp_metric_table,
        sugarcrepe_pp_predictions,
        sugarcrepe_pp_triples,
    )

    eval_settings = EvalSettings.from_config(settings)
    triples = sugarcrepe_pp_triples(pl.read_parquet(candidates))
    item_images = triples.select("item_id", "image").unique().sort("item_id")
    total = item_images.height
    usable, problems = lookup_images(item_images["image"].to_list(), read_image_index(image_index))
    excluded: list[tuple[Any, ...]] = [
        (None, item_id, image, *problems[image])
        for item_id, image in item_images.iter_rows()
        if image not in usable
    ]
    _stop_if_nothing_left(excluded, total, image_index, log)
    triples = triples.filter(pl.col("image").is_in(sorted(usable)).fill_null(False))
    loaded, image_cache, text_cache = open_model(
        model_key, model_entry, checkpoint, settings, cache_dir, log
    )
    box_of = item_boxes(pl.read_parquet(boxes)) if boxes else None
    image_sims, text_sims, unreadable = score_sugarcrepe_pp(
        loaded, triples, usable, box_of, int(settings["batch_size"]), image_cache, text_cache,
        progress_bar, log,
    )  # fmt: skip
    if unreadable:
        failed = pl.col("image").is_in(sorted(unreadable))
        bad = triples.filter(failed).select("item_id", "image").unique().sort("item_id")
        excluded += [
            (None, item_id, image, UNREADABLE, unreadable[image])
            for item_id, image in bad.iter_rows()
        ]
        _stop_if_nothing_left(excluded, total, image_index, log)
        keep = triples.select(~failed).to_series().to_numpy()
        triples = triples.filter(~failed)
        image_sims, text_sims = image_sims[keep], text_sims[keep]
    predictions = sugarcrepe_pp_predictions(model_key, triples, image_sims, text_sims)
    score_kind = scorer_of(loaded).score_kind
    metrics = with_score_kind(
        sugarcrepe_pp_metric_table(predictions, eval_settings), model_key, score_kind
    )
    meta = {
        **model_metadata(model_key, loaded),
        "score_kind": score_kind,
        **eval_settings.metadata(),
        "chance": ", ".join(f"{k} {v:.6f}" for k, v in SUGARCREPE_PP_CHANCE.items()),
    }
    write_evaluation(
        predictions, metrics, excluded, meta, predictions_out, metrics_out, excluded_out, total, log
    )
    log_score_summary(metrics, list(SUGARCREPE_PP_METRICS), log)


def write_evaluation(
    per_item: pl.DataFrame,
    metrics: pl.DataFrame,
    excluded: Sequence[tuple[Any, ...]],
    meta: Mapping[str, str],
    per_item_out: str,
    metrics_out: str,
    excluded_out: str,
    total: int,
    log: Log,
) -> None:
    """Every evaluation job's three outputs (per-item predictions or ranks, the metric table,
    the items left out for their image) with the same metadata, and the exclusions logged;
    the excluded table's metadata also holds ``total``, the items the job was given
    (``contracts.ITEMS_KEY``)."""
    excluded_table = excluded_frame(excluded)
    write_parquet(per_item, per_item_out, metadata=meta)
    write_parquet(metrics, metrics_out, metadata=meta)
    write_parquet(excluded_table, excluded_out, metadata={**meta, ITEMS_KEY: str(total)})
    log_excluded(excluded_table, total, log)
