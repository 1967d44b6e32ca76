"""Job-level functions: files in, files out. Each workflow rule calls exactly one of these.

They are plain functions so that every stage can also run without Snakemake.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import torch
from tqdm import tqdm

from vlcomp import __version__
from vlcomp.corpora import corpus_file, read_corpus
from vlcomp.evaluate.embed import EmbeddingCache, embed_images, embed_texts, text_key
from vlcomp.io import read_parquet_metadata, write_json, write_parquet, write_with
from vlcomp.evaluate.metrics import pair_accuracy_table, retrieval_table
from vlcomp.evaluate.models import LoadedModel, ModelSpec, file_sha256, library_versions, load_model
from vlcomp.evaluate.train import TrainSettings, save_checkpoint, train_clip

Log = Callable[[str], None]

HELD_IN = "held_in"
HELD_OUT = "held_out"


def provenance(**extra: str) -> dict[str, str]:
    """Key-value metadata written into every Parquet file a model stage produces."""
    return {"vlcomp": __version__, **library_versions(), **extra}


def train_world_model(
    model_entry: dict[str, Any],
    corpus_dir: str,
    corpus_format: str,
    checkpoint: str,
    history: str,
    info: str,
    log: Log = print,
) -> None:
    pairs = read_corpus(corpus_file(corpus_dir, corpus_format), corpus_format)
    settings = TrainSettings.from_config(model_entry["train"])
    log(f"training {model_entry['open_clip']} on {pairs.height} pairs from {corpus_dir}")
    state, losses = train_clip(model_entry["open_clip"], pairs, settings, log)
    save_checkpoint(state, checkpoint)
    write_parquet(losses, history, metadata=provenance(arch=model_entry["open_clip"]))
    write_json(
        {
            "arch": model_entry["open_clip"],
            "train": model_entry["train"],
            "n_pairs": pairs.height,
            "final_loss": losses["mean_loss"][-1],
            "checkpoint_sha256": file_sha256(checkpoint),
            "versions": provenance(),
        },
        info,
    )


def progress_bar(label: str) -> Callable[[int, int], None]:
    bar: dict[str, tqdm] = {}

    def update(done: int, total: int) -> None:
        if label not in bar:
            bar[label] = tqdm(total=total, desc=label, mininterval=2.0)
        bar[label].n = done
        bar[label].refresh()
        if done >= total:
            bar[label].close()

    return update


def open_model(
    model_key: str,
    model_entry: dict[str, Any],
    checkpoint: str | None,
    settings: dict[str, Any],
    cache_dir: str,
    log: Log,
) -> tuple[LoadedModel, EmbeddingCache, EmbeddingCache]:
    torch.set_num_threads(settings["threads"])
    spec = ModelSpec.from_config(model_key, model_entry, checkpoint=checkpoint)
    loaded = load_model(spec, device=settings["device"])
    log(f"loaded {spec.arch} from {spec.source} (fingerprint {loaded.fingerprint})")
    cache_root = Path(cache_dir) / loaded.fingerprint.replace("/", "_").replace(":", "_")
    return loaded, EmbeddingCache(cache_root, "image"), EmbeddingCache(cache_root, "text")


def model_metadata(model_key: str, loaded: LoadedModel) -> dict[str, str]:
    return provenance(model=model_key, fingerprint=loaded.fingerprint, source=loaded.spec.source)


def embed_eval_set(
    model_key: str,
    model_entry: dict[str, Any],
    checkpoint: str | None,
    settings: dict[str, Any],
    images_dir: str,
    truth: str,
    cache_dir: str,
    images_out: str,
    texts_out: str,
    log: Log = print,
) -> None:
    """Embed every evaluation image and caption; reuse cached embeddings by content hash."""
    loaded, image_cache, text_cache = open_model(
        model_key, model_entry, checkpoint, settings, cache_dir, log
    )
    captions = pl.read_parquet(truth, columns=["caption_id", "image_id", "text"]).sort("caption_id")
    image_ids = sorted(set(captions["image_id"].to_list()))
    paths = [str(Path(images_dir) / f"{image_id}.png") for image_id in image_ids]
    image_vectors, new_images = embed_images(
        loaded, paths, settings["batch_size"], image_cache, progress_bar("images")
    )
    text_vectors, new_texts = embed_texts(
        loaded,
        captions["text"].to_list(),
        settings["batch_size"],
        text_cache,
        progress_bar("texts"),
    )
    log(
        f"embedded {new_images}/{len(paths)} images and {new_texts}/{captions.height} texts "
        "(the rest came from the cache)"
    )
    meta = model_metadata(model_key, loaded)
    dim = image_vectors.shape[1]
    write_parquet(
        pl.DataFrame(
            {"image_id": image_ids, "embedding": image_vectors},
            schema={"image_id": pl.Int64, "embedding": pl.Array(pl.Float32, dim)},
        ),
        images_out,
        metadata=meta,
    )
    write_parquet(
        captions.with_columns(
            pl.Series("embedding", text_vectors, dtype=pl.Array(pl.Float32, dim))
        ).drop("text"),
        texts_out,
        metadata=meta,
    )


def holdout_split(
    holdout: str, images: str | None, corpus: str | None, image_ids: pl.Series | None = None
) -> dict[int, str]:
    """held_in / held_out per evaluation image for a model trained on ``corpus``.

    The images are those of the ``images`` embedding table, or ``image_ids``.
    """
    if corpus is None:
        return {}
    table = pl.read_parquet(holdout)
    if image_ids is None:
        image_ids = pl.read_parquet(images, columns=["image_id"])["image_id"]
    image_ids = image_ids.unique().sort().to_list()
    held_out = set(table.filter(pl.col("corpus") == corpus)["image_id"].to_list())
    return {int(i): HELD_OUT if i in held_out else HELD_IN for i in image_ids}


def world_retrieval(
    model_key: str,
    images: str,
    texts: str,
    holdout: str,
    training_corpus: str | None,
    ks: Sequence[int],
    metrics_out: str,
    ranks_out: str,
    log: Log = print,
) -> None:
    image_table = pl.read_parquet(images)
    text_table = pl.read_parquet(texts)
    split = holdout_split(holdout, images, training_corpus)
    table, ranks = retrieval_table(
        model=model_key,
        benchmark="world_eval_retrieval",
        image_ids=image_table["image_id"].to_numpy(),
        image_emb=image_table["embedding"].to_numpy().astype(np.float32),
        text_ids=text_table["caption_id"].to_numpy(),
        text_image_ids=text_table["image_id"].to_numpy(),
        text_emb=text_table["embedding"].to_numpy().astype(np.float32),
        image_split=split,
        ks=ks,
    )
    meta = read_parquet_metadata(images)
    write_parquet(table, metrics_out, metadata=meta)
    write_parquet(ranks, ranks_out, metadata=meta)
    for row in table.filter(pl.col("metric").str.ends_with("R@1")).iter_rows(named=True):
        name, value = f"{row['model']} {row['split']} {row['metric']}", row["value"]
        log(f"{name}: {value:.3f} (n={row['n']})")


def collect_metrics(tables: Sequence[str], parquet_out: str, csv_out: str) -> None:
    """Stack per-model metric tables; chance rows, identical across models, are kept once."""
    frame = pl.concat([pl.read_parquet(t) for t in tables]).unique(maintain_order=True)
    write_parquet(frame, parquet_out, metadata=provenance())
    write_with(csv_out, lambda tmp: frame.write_csv(tmp, float_precision=6))


def evaluate_pairs(
    model_key: str,
    model_entry: dict[str, Any],
    checkpoint: str | None,
    settings: dict[str, Any],
    candidates: str,
    images_dir: str,
    holdout: str,
    training_corpus: str | None,
    cache_dir: str,
    predictions_out: str,
    metrics_out: str,
    log: Log = print,
) -> None:
    """Image-conditioned choice between each item's positive and its negative(s)."""
    loaded, image_cache, text_cache = open_model(
        model_key, model_entry, checkpoint, settings, cache_dir, log
    )
    table = pl.read_parquet(candidates)
    image_names = sorted(set(table["image"].to_list()), key=lambda name: (len(name), name))
    image_vectors, new_images = embed_images(
        loaded,
        [str(Path(images_dir) / f"{name}.png") for name in image_names],
        settings["batch_size"],
        image_cache,
        progress_bar("images"),
    )
    text_vectors, new_texts = embed_texts(
        loaded, table["text"].to_list(), settings["batch_size"], text_cache, progress_bar("texts")
    )
    log(
        f"embedded {new_images}/{len(image_names)} images and {new_texts}/{table.height} texts "
        "(the rest came from the cache)"
    )
    image_row = {name: i for i, name in enumerate(image_names)}
    similarity = np.einsum(
        "ij,ij->i",
        text_vectors,
        image_vectors[[image_row[name] for name in table["image"].to_list()]],
    )
    scored = table.with_columns(
        similarity=pl.Series(similarity.astype(np.float64)),
        text_key=pl.Series([text_key(t) for t in table["text"].to_list()]),
    )
    split = holdout_split(holdout, None, training_corpus, image_ids=table["image"].cast(pl.Int64))
    predictions = item_predictions(model_key, scored, split)
    meta = model_metadata(model_key, loaded)
    write_parquet(predictions, predictions_out, metadata=meta)
    benchmark = table["benchmark"][0] if table.height else "empty"
    metrics = pair_accuracy_table(model_key, benchmark, predictions)
    write_parquet(metrics, metrics_out, metadata=meta)
    for row in metrics.filter(pl.col("model") == model_key).iter_rows(named=True):
        if row["split"] == "all":
            log(f"{row['family']} {row['metric']}: {row['value']:.3f} (n={row['n']})")


def item_predictions(model: str, scored: pl.DataFrame, split: dict[int, str]) -> pl.DataFrame:
    """One row per item: best negative vs positive similarity; a tie counts as wrong."""
    positives = scored.filter(pl.col("is_positive")).select(
        "benchmark", "item_id", "image", "family", "target",
        pos_score=pl.col("similarity"), pos_text_key=pl.col("text_key"),
    )  # fmt: skip
    negatives = (
        scored.filter(~pl.col("is_positive"))
        .sort("item_id", "similarity", "text_key", descending=[False, True, False])
        .group_by("item_id", maintain_order=True)
        .agg(
            neg_score=pl.col("similarity").first(),
            neg_text_key=pl.col("text_key").first(),
            n_negatives=pl.len(),
        )
    )
    return (
        positives.join(negatives, on="item_id", how="inner")
        .with_columns(
            model=pl.lit(model),
            family=pl.concat_str("family", "target", separator="_"),
            split=pl.col("image").map_elements(
                lambda name: split.get(int(name), "all"), return_dtype=pl.String
            ),
            correct=pl.col("pos_score") > pl.col("neg_score"),
        )
        .select(
            "model",
            "benchmark",
            "item_id",
            "image",
            "family",
            "split",
            "pos_score",
            "neg_score",
            "correct",
            "n_negatives",
            "pos_text_key",
            "neg_text_key",
        )  # fmt: skip
        .sort("item_id")
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


def world_productivity(
    world_cfg: dict[str, Any],
    vg_dir: str,
    settings: dict[str, Any],
    seed: int,
    candidates_out: str,
    items_out: str,
    failures_out: str,
    summary_out: str,
    log: Log = print,
) -> None:
    """CREPE productivity on the world: foils from the world's vocabulary, kinds kept apart."""
    from vlcomp.negatives.productivity import productivity_benchmark
    from vlcomp.negatives.productivity_negatives import world_attribute_kinds, world_foils

    summary = productivity_benchmark(
        Path(vg_dir),
        Path(candidates_out),
        Path(items_out),
        Path(failures_out),
        {"attribute_kinds": world_attribute_kinds(world_cfg), **settings},
        seed,
        world_foils(world_cfg),
        out_summary=Path(summary_out),
    )
    for row in summary.iter_rows(named=True):
        log(str(row))
