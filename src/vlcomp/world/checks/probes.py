"""Linear probes on a trained world model's frozen features: where relations and bindings live.

The world knows every scene, so it can ask a model's *frozen* features what they carry:

- **relation** of a named pair (which of left of / right of / above / below object A is to
  object B, both named by colour and shape, unique in their scene);
- **binding** ("is the <colour> object the <shape>?", the wrong shape always being another
  object's of the same scene, so the words present never decide it; chance 0.5).

A probe is a multinomial logistic regression on ``feature ⊗ query``: for every query (the
named objects) it is a linear readout of the image feature, with weights shared across
queries (the form of CLIP's own image-text score, a bilinear product). It is trained on one
set of scenes and tested on disjoint ones; accuracy comes with a percentile bootstrap
interval over test scenes and with two controls: the query alone (what names and position
priors give without the image) and the image features with shuffled training labels.

Features are read at the pooled embedding (what CLIP scores with) and before pooling (the
last feature map of a ResNet tower or the patch tokens of a ViT), so that a loss of
information in the pooling shows as a gap between the two.

A **text probe** asks the same of the text tower: trained on frozen text features of
captions and their one-change negatives to name the word that the change replaced (the
relation word, or the first swapped colour), it is scored on held-out pairs by whether it
assigns the two words the right way round (chance 0.5); the cosine between a caption and
its negative comes beside it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from vlcomp.evaluate.metrics import cell_rng
from vlcomp.io import atomic_path, write_parquet
from vlcomp.resampling import ratio_of_sums
from vlcomp.settings import settings_from
from vlcomp.world.scenes import SceneObject, relation_between

Log = Callable[[str], None]

RELATIONS = ("left of", "right of", "above", "below")

PROBE_SCHEMA: dict[str, pl.DataType] = {
    "model": pl.String,
    "probe": pl.String,  # relation | binding | text_replace_rel | text_swap_att
    "features": pl.String,  # pooled | map | query_only | pooled_shuffled | text | ...
    "metric": pl.String,  # accuracy | cosine
    "value": pl.Float64,
    "ci_low": pl.Float64,
    "ci_high": pl.Float64,
    "chance": pl.Float64,  # null for cosine
    "n_train": pl.Int64,
    "n_test": pl.Int64,
}

_WORD = re.compile(r"[a-z]+")


@dataclass(frozen=True)
class ProbeSettings:
    max_train_scenes: int = 3000
    pca_dims: int = 64
    c: float = 1.0  # inverse L2 strength of the logistic regression
    resamples: int = 1000
    seed: int = 0
    level: float = 0.95

    @staticmethod
    def from_config(entry: Mapping[str, Any]) -> ProbeSettings:
        """The keys of ``world.probes`` the probes read (checked by the config schema)."""
        keys = {"resamples": "bootstrap_resamples", "level": "ci_level"}
        return settings_from(ProbeSettings, entry, "world.probes", keys=keys)


# --------------------------------------------------------------------------- items


def _scene_objects(scenes: pl.DataFrame, where: str) -> dict[int, list[SceneObject]]:
    required = ["image_id", "object_idx", "shape", "colour", "size", "x", "y", "w"]
    missing = [c for c in required if c not in scenes.columns]
    if missing:
        raise ValueError(f"{where}: not a world scenes table, missing column(s) {missing}")
    by_image: dict[int, list[SceneObject]] = {}
    for row in scenes.sort("image_id", "object_idx").iter_rows(named=True):
        if row["w"] is None or row["w"] <= 0:
            raise ValueError(
                f"{where}: image {row['image_id']}, object {row['object_idx']}: "
                f"box width {row['w']} is not positive"
            )
        by_image.setdefault(int(row["image_id"]), []).append(
            SceneObject(row["shape"], row["colour"], row["size"], row["x"], row["y"], row["w"])
        )
    return by_image


def relation_items(scenes: pl.DataFrame, where: str = "scenes") -> pl.DataFrame:
    """One row per ordered pair of objects whose (colour, shape) is unique in its scene:
    image_id, subject and object colour and shape, and the relation (``relation_between``)."""
    rows: dict[str, list[Any]] = {
        k: [] for k in ("image_id", "s_colour", "s_shape", "o_colour", "o_shape", "label")
    }
    for image_id, objects in _scene_objects(scenes, where).items():
        names = [(o.colour, o.shape) for o in objects]
        unique = [i for i, name in enumerate(names) if names.count(name) == 1]
        for i in unique:
            for j in unique:
                if i == j:
                    continue
                rows["image_id"].append(image_id)
                rows["s_colour"].append(objects[i].colour)
                rows["s_shape"].append(objects[i].shape)
                rows["o_colour"].append(objects[j].colour)
                rows["o_shape"].append(objects[j].shape)
                rows["label"].append(relation_between(objects[i], objects[j]))
    return pl.DataFrame(
        rows,
        schema={
            "image_id": pl.Int64,
            **{k: pl.String for k in ("s_colour", "s_shape", "o_colour", "o_shape", "label")},
        },
    )


def binding_items(scenes: pl.DataFrame, where: str = "scenes") -> pl.DataFrame:
    """The question "is the <colour> object the <shape>?" for every object whose colour is
    unique in its scene and that has a neighbour of another shape: once with its own shape
    (label "yes") and once with the first other shape of the scene (label "no")."""
    rows: dict[str, list[Any]] = {"image_id": [], "colour": [], "shape": [], "label": []}
    for image_id, objects in _scene_objects(scenes, where).items():
        colours = [o.colour for o in objects]
        for obj in objects:
            if colours.count(obj.colour) != 1:
                continue
            others = [o.shape for o in objects if o.shape != obj.shape]
            if not others:
                continue
            for shape, label in ((obj.shape, "yes"), (others[0], "no")):
                rows["image_id"].append(image_id)
                rows["colour"].append(obj.colour)
                rows["shape"].append(shape)
                rows["label"].append(label)
    return pl.DataFrame(
        rows,
        schema={"image_id": pl.Int64, "colour": pl.String, "shape": pl.String, "label": pl.String},
    )


def one_hot(values: Sequence[str], vocabulary: Sequence[str], where: str) -> np.ndarray:
    index = {v: k for k, v in enumerate(vocabulary)}
    out = np.zeros((len(values), len(vocabulary)), dtype=np.float64)
    for row, value in enumerate(values):
        if value not in index:
            raise ValueError(f"{where}: row {row}: {value!r} is not in the vocabulary")
        out[row, index[value]] = 1.0
    return out


def relation_queries(items: pl.DataFrame, colours: Sequence[str], shapes: Sequence[str]):
    return np.hstack(
        [
            one_hot(items["s_colour"].to_list(), colours, "subject colour"),
            one_hot(items["s_shape"].to_list(), shapes, "subject shape"),
            one_hot(items["o_colour"].to_list(), colours, "object colour"),
            one_hot(items["o_shape"].to_list(), shapes, "object shape"),
        ]
    )


def binding_queries(items: pl.DataFrame, colours: Sequence[str], shapes: Sequence[str]):
    """One-hot of the (colour, shape) conjunction: a query made of a colour part plus a shape
    part could not answer, since "is the red one the star?" and "is the red one the circle?"
    would then differ by the same amount in every scene."""
    pairs = [f"{c} {s}" for c in colours for s in shapes]
    named = [f"{c} {s}" for c, s in zip(items["colour"], items["shape"], strict=True)]
    return one_hot(named, pairs, "colour shape")


# --------------------------------------------------------------------------- probes


@dataclass(frozen=True)
class ProbeResult:
    accuracy: float
    ci_low: float
    ci_high: float
    chance: float
    n_train: int
    n_test: int


def scene_interval(
    correct: np.ndarray,
    groups: np.ndarray,
    resamples: int,
    level: float,
    rng: np.random.Generator,
) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean of ``correct``, resampling whole groups
    (scenes: the items of one scene are not independent)."""
    if resamples == 0 or len(correct) == 0:
        return float("nan"), float("nan")
    _, inverse = np.unique(groups, return_inverse=True)
    hits = np.bincount(inverse, weights=correct.astype(np.float64))
    counts = np.bincount(inverse).astype(np.float64)
    means = ratio_of_sums(hits, counts, resamples, rng)
    tail = (1.0 - level) / 2.0
    low, high = np.quantile(means, [tail, 1.0 - tail])
    return float(low), float(high)


def _design(features: np.ndarray | None, queries: np.ndarray) -> np.ndarray:
    """[query, feature ⊗ query] (the query alone when there is no feature)."""
    if features is None:
        return queries
    outer = (features[:, :, None] * queries[:, None, :]).reshape(len(features), -1)
    return np.hstack([queries, outer])


class _Reducer:
    """Standardise, then project on the top principal components of the training features."""

    def __init__(self, train: np.ndarray, dims: int, seed: int = 0) -> None:
        from sklearn.utils.extmath import randomized_svd

        self.mean = train.mean(axis=0)
        self.scale = train.std(axis=0) + 1e-8
        z = (train - self.mean) / self.scale
        dims = min(dims, z.shape[0], z.shape[1])
        # randomized: a full SVD of a ViT's 8,320-wide token map takes minutes, this seconds
        _, _, vt = randomized_svd(z, dims, random_state=seed)
        self.basis = vt.T
        # unit variance per component, so that one C suits every feature source
        self.norm = (z @ self.basis).std(axis=0) + 1e-8

    def __call__(self, x: np.ndarray) -> np.ndarray:
        return ((x - self.mean) / self.scale) @ self.basis / self.norm


def fit_probe(
    train_x: np.ndarray | None,
    train_q: np.ndarray,
    train_y: Sequence[str],
    test_x: np.ndarray | None,
    test_q: np.ndarray,
    test_y: Sequence[str],
    test_groups: np.ndarray,
    settings: ProbeSettings,
    key: tuple[str, ...],
    shuffle: bool = False,
) -> ProbeResult:
    """Train a logistic regression on ``[q, x ⊗ q]`` (``x`` None: on ``q`` alone) and test it.

    Chance is the share of the test set's most frequent label. ``shuffle`` permutes the
    training labels (a control that must land at chance)."""
    from sklearn.linear_model import LogisticRegression

    train_y = np.asarray(train_y)
    test_y = np.asarray(test_y)
    if len(train_y) == 0 or len(test_y) == 0:
        raise ValueError(f"{'/'.join(key)}: no training or no test items")
    if len(set(train_y.tolist())) < 2:
        raise ValueError(f"{'/'.join(key)}: the training items have a single label")
    rng = cell_rng(settings.seed, *key)
    if shuffle:
        train_y = train_y[rng.permutation(len(train_y))]
    if train_x is not None:
        assert test_x is not None
        reduce = _Reducer(train_x, settings.pca_dims, settings.seed)
        train_x, test_x = reduce(train_x), reduce(test_x)
    model = LogisticRegression(C=settings.c, max_iter=2000)
    model.fit(_design(train_x, train_q), train_y)
    predicted = model.predict(_design(test_x, test_q))
    correct = predicted == test_y
    _, counts = np.unique(test_y, return_counts=True)
    low, high = scene_interval(correct, test_groups, settings.resamples, settings.level, rng)
    return ProbeResult(
        accuracy=float(correct.mean()),
        ci_low=low,
        ci_high=high,
        chance=float(counts.max() / counts.sum()),
        n_train=len(train_y),
        n_test=len(test_y),
    )


def pairwise_text_probe(
    train_features: np.ndarray,
    train_labels: Sequence[str],
    test_pos: np.ndarray,
    test_neg: np.ndarray,
    test_pos_labels: Sequence[str],
    test_neg_labels: Sequence[str],
    test_groups: np.ndarray,
    settings: ProbeSettings,
    key: tuple[str, ...],
) -> ProbeResult:
    """A logistic regression names the changed word from one text's features; a test pair
    counts as separated when the probe's likelihood of (pos word, neg word) exceeds that of
    the two words swapped (ties wrong; chance 0.5)."""
    from sklearn.linear_model import LogisticRegression

    rng = cell_rng(settings.seed, *key)
    if len(set(train_labels)) < 2:
        raise ValueError(f"{'/'.join(key)}: the training texts have a single label")
    model = LogisticRegression(C=settings.c, max_iter=2000)
    model.fit(train_features, np.asarray(train_labels))
    column = {label: k for k, label in enumerate(model.classes_)}
    lp_pos, lp_neg = model.predict_log_proba(test_pos), model.predict_log_proba(test_neg)
    correct = np.zeros(len(test_pos), dtype=bool)
    for row, (a, b) in enumerate(zip(test_pos_labels, test_neg_labels, strict=True)):
        if a not in column or b not in column:
            continue  # a word never seen in training: the probe cannot name it (wrong)
        right = lp_pos[row, column[a]] + lp_neg[row, column[b]]
        swapped = lp_pos[row, column[b]] + lp_neg[row, column[a]]
        correct[row] = right > swapped
    low, high = scene_interval(correct, test_groups, settings.resamples, settings.level, rng)
    return ProbeResult(float(correct.mean()), low, high, 0.5, len(train_labels), len(test_pos))


def changed_words(positive: str, negative: str) -> tuple[str, str] | None:
    """The first word where two texts differ (None when they have the same words in order)."""
    a, b = _WORD.findall(positive.lower()), _WORD.findall(negative.lower())
    for x, y in zip(a, b, strict=False):
        if x != y:
            return x, y
    return None


# --------------------------------------------------------------------------- model


def _load(arch: str, checkpoint: str):
    import open_clip
    import torch

    from vlcomp.models import loading as _models

    _models.check_architecture(arch)
    model, preprocess = _models.create_open_clip(arch)
    try:
        model.load_state_dict(torch.load(checkpoint, map_location="cpu", weights_only=True))
    except (RuntimeError, OSError, EOFError) as error:
        raise ValueError(f"{checkpoint}: not a checkpoint of {arch}: {error}") from error
    model.eval()
    return model, preprocess, open_clip.get_tokenizer(arch)


def _pre_pool_module(visual: Any) -> Any:
    """The module whose output is the image tower's last map before pooling."""
    if hasattr(visual, "layer4"):  # open_clip ModifiedResNet: attention pool follows
        return visual.layer4
    if hasattr(visual, "transformer"):  # VisionTransformer: tokens before ln_post / pool
        return visual.transformer
    if hasattr(visual, "trunk"):  # timm towers
        return visual.trunk
    raise ValueError(f"no pre-pool feature map known for {type(visual).__name__}")


def image_features(
    model: Any, preprocess: Any, paths: Sequence[str], batch: int = 256
) -> dict[str, np.ndarray]:
    """``pooled`` (the normalised image embedding) and ``map`` (the flattened pre-pool map)."""
    import torch
    from PIL import Image

    captured: list[torch.Tensor] = []
    hook = _pre_pool_module(model.visual).register_forward_hook(
        lambda _m, _i, out: captured.append(out[0] if isinstance(out, tuple) else out)
    )
    pooled, maps = [], []
    try:
        with torch.no_grad():
            for start in range(0, len(paths), batch):
                pixels = []
                for path in paths[start : start + batch]:
                    try:
                        with Image.open(path) as image:
                            pixels.append(preprocess(image.convert("RGB")))
                    except OSError as error:
                        raise ValueError(f"{path}: cannot read image: {error}") from error
                captured.clear()
                pooled.append(model.encode_image(torch.stack(pixels), normalize=True).numpy())
                maps.append(captured[-1].reshape(len(pixels), -1).float().numpy())
    finally:
        hook.remove()
    return {"pooled": np.concatenate(pooled), "map": np.concatenate(maps)}


def text_features(model: Any, tokenizer: Any, texts: Sequence[str], batch: int = 512):
    import torch

    out = []
    with torch.no_grad():
        for start in range(0, len(texts), batch):
            tokens = tokenizer(list(texts[start : start + batch]))
            out.append(model.encode_text(tokens, normalize=True).numpy())
    return np.concatenate(out) if out else np.zeros((0, 0))


# --------------------------------------------------------------------------- job


def _image_paths(images: str, image_ids: Sequence[int], where: str) -> list[str]:
    paths = []
    for image_id in image_ids:
        path = Path(images) / f"{image_id}.png"
        if not path.is_file():
            raise ValueError(f"{where}: image {image_id}: {path} does not exist")
        paths.append(str(path))
    return paths


def _pair_texts(candidates: pl.DataFrame, family: str, target: str, where: str):
    """(image, positive, negative, pos word, neg word) of one negative type's pairs."""
    part = candidates.filter((pl.col("family") == family) & (pl.col("target") == target))
    rows = []
    for (item_id,), group in part.group_by("item_id", maintain_order=True):
        pos = group.filter(pl.col("is_positive"))["text"].to_list()
        neg = group.filter(~pl.col("is_positive"))["text"].to_list()
        if len(pos) != 1 or not neg:
            raise ValueError(
                f"{where}: item {item_id}: {len(pos)} positives, {len(neg)} "
                "negatives (a pair has one of each)"
            )
        words = changed_words(pos[0], neg[0])
        if words is not None:
            rows.append((str(group["image"][0]), pos[0], neg[0], *words))
    return rows


def _split_scenes(ids: Sequence[Any], seed: int, key: str) -> np.ndarray:
    """True for the training half of the distinct ids (seeded, stable)."""
    distinct = sorted(set(ids))
    order = cell_rng(seed, "text-split", key).permutation(len(distinct))
    train = {distinct[k] for k in order[: len(distinct) // 2]}
    return np.array([i in train for i in ids])


def probe_model(
    model_key: str,
    arch: str,
    checkpoint: str,
    train_scenes: pl.DataFrame,
    train_images: str,
    test_scenes: pl.DataFrame,
    test_images: str,
    candidates: pl.DataFrame,
    vocab: Mapping[str, Sequence[str]],
    settings: ProbeSettings,
    log: Log = print,
) -> pl.DataFrame:
    """Every probe of one model (rows of ``PROBE_SCHEMA``)."""
    model, preprocess, tokenizer = _load(arch, checkpoint)
    colours, shapes = list(vocab["colours"]), list(vocab["shapes"])
    overlap = set(train_scenes["image_id"].to_list()) & set(test_scenes["image_id"].to_list())
    if train_images == test_images and overlap:
        raise ValueError(f"probe train and test scenes share {len(overlap)} images")
    keep = sorted(set(train_scenes["image_id"].to_list()))[: settings.max_train_scenes]
    train_scenes = train_scenes.filter(pl.col("image_id").is_in(keep))
    feats = {}
    for name, scenes, images in (
        ("train", train_scenes, train_images),
        ("test", test_scenes, test_images),
    ):
        ids = sorted(set(scenes["image_id"].to_list()))
        f = image_features(model, preprocess, _image_paths(images, ids, f"{name} scenes"))
        feats[name] = {"ids": {i: k for k, i in enumerate(ids)}, **f}
        log(
            f"{model_key}: {name} features of {len(ids)} scenes: pooled "
            f"{f['pooled'].shape[1]}, map {f['map'].shape[1]} dims"
        )
    rows = []
    tasks = (
        ("relation", relation_items, relation_queries),
        ("binding", binding_items, binding_queries),
    )
    for probe, make_items, make_queries in tasks:
        train = make_items(train_scenes, "probe train scenes")
        test = make_items(test_scenes, "probe test scenes")
        rows_of = {
            n: [feats[n]["ids"][i] for i in t["image_id"].to_list()]
            for n, t in (("train", train), ("test", test))
        }
        tq, sq = make_queries(train, colours, shapes), make_queries(test, colours, shapes)
        groups = test["image_id"].to_numpy()
        y_train, y_test = train["label"].to_list(), test["label"].to_list()
        variants: list[tuple[str, str | None, bool]] = [
            ("query_only", None, False),
            ("pooled", "pooled", False),
            ("map", "map", False),
            ("pooled_shuffled", "pooled", True),
            ("map_shuffled", "map", True),
        ]
        for features, source, shuffle in variants:
            tx = None if source is None else feats["train"][source][rows_of["train"]]
            sx = None if source is None else feats["test"][source][rows_of["test"]]
            result = fit_probe(
                tx,
                tq,
                y_train,
                sx,
                sq,
                y_test,
                groups,
                settings,
                (model_key, probe, features),
                shuffle=shuffle,
            )
            log(
                f"{model_key}: {probe} probe on {features}: {result.accuracy:.3f} "
                f"[{result.ci_low:.3f}, {result.ci_high:.3f}], chance {result.chance:.3f}"
            )
            rows.append(_row(model_key, probe, features, "accuracy", result))
    for family, target in (("replace", "rel"), ("swap", "att")):
        probe = f"text_{family}_{target}"
        pairs = _pair_texts(candidates, family, target, "candidates")
        if len(pairs) < 20:
            log(f"{model_key}: {probe}: only {len(pairs)} pairs, skipped")
            continue
        images, pos, neg, pos_w, neg_w = (list(c) for c in zip(*pairs, strict=True))
        fp, fn = text_features(model, tokenizer, pos), text_features(model, tokenizer, neg)
        cos = (fp * fn).sum(axis=1)
        groups = np.array(images)
        rng = cell_rng(settings.seed, model_key, probe, "cosine")
        low, high = scene_interval(cos, groups, settings.resamples, settings.level, rng)
        rows.append(
            _row(
                model_key,
                probe,
                "text",
                "cosine",
                ProbeResult(float(cos.mean()), low, high, float("nan"), 0, len(cos)),
            )
        )
        is_train = _split_scenes(images, settings.seed, probe)
        tr, te = np.flatnonzero(is_train), np.flatnonzero(~is_train)
        result = pairwise_text_probe(
            np.vstack([fp[tr], fn[tr]]),
            [pos_w[k] for k in tr] + [neg_w[k] for k in tr],
            fp[te],
            fn[te],
            [pos_w[k] for k in te],
            [neg_w[k] for k in te],
            groups[te],
            settings,
            (model_key, probe),
        )
        log(
            f"{model_key}: {probe}: cosine {cos.mean():.4f}; pairwise probe "
            f"{result.accuracy:.3f} [{result.ci_low:.3f}, {result.ci_high:.3f}]"
        )
        rows.append(_row(model_key, probe, "text", "accuracy", result))
    return pl.DataFrame(rows, schema=PROBE_SCHEMA)


def _row(model: str, probe: str, features: str, metric: str, r: ProbeResult) -> dict[str, Any]:
    nan = r.chance != r.chance
    return {
        "model": model,
        "probe": probe,
        "features": features,
        "metric": metric,
        "value": r.accuracy,
        "ci_low": r.ci_low,
        "ci_high": r.ci_high,
        "chance": None if nan else r.chance,
        "n_train": r.n_train,
        "n_test": r.n_test,
    }


def probes_markdown(table: pl.DataFrame) -> str:
    lines = [
        "# Linear probes on frozen features",
        "",
        "| model | probe | features | metric | value | 95% CI | chance | n test |",
        "|---|---|---|---|---:|---|---:|---:|",
    ]
    for r in table.iter_rows(named=True):
        chance = "" if r["chance"] is None else f"{r['chance']:.3f}"
        lines.append(
            f"| {r['model']} | {r['probe']} | {r['features']} | {r['metric']} | "
            f"{r['value']:.3f} | [{r['ci_low']:.3f}, {r['ci_high']:.3f}] | {chance} | "
            f"{r['n_test']} |"
        )
    return "\n".join(lines) + "\n"


def probes_job(
    models: Mapping[str, Mapping[str, Any]],
    checkpoints: Mapping[str, str],
    train_scenes: str,
    train_images: str,
    test_scenes: str,
    test_images: str,
    candidates: str,
    manifest: str,
    settings: Mapping[str, Any],
    out: str,
    report: str,
    log: Log = print,
) -> None:
    """Probe every model in ``checkpoints`` (key -> checkpoint; ``models`` its config
    entries); write the table (``PROBE_SCHEMA``) and a Markdown report."""
    import json

    probe_settings = ProbeSettings.from_config(settings)
    vocab = json.loads(Path(manifest).read_text())["vocab"]
    tables = []
    for key, checkpoint in checkpoints.items():
        tables.append(
            probe_model(
                key,
                models[key]["open_clip"],
                checkpoint,
                pl.read_parquet(train_scenes),
                train_images,
                pl.read_parquet(test_scenes),
                test_images,
                pl.read_parquet(candidates),
                vocab,
                probe_settings,
                log,
            )
        )
    table = pl.concat(tables)
    if table.height == 0:
        raise ValueError("no probe results")
    write_parquet(table, out)
    with atomic_path(report) as tmp:
        tmp.write_text(probes_markdown(table))
