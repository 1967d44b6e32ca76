"""Opening a model for evaluation; batched image and text embedding through the content-hash
cache (``images.EmbeddingCache``). This module imports torch (and, through
``models.loading``, open_clip): jobs that only read tables import ``images`` instead.

Speed: images are opened, cropped and preprocessed in ``torch.utils.data.DataLoader``
worker processes (``evaluate.workers``; 0 = in this process), started with the "fork"
context so that they also work inside Snakemake ``script:`` jobs (where ``__main__`` is
Snakemake's script and "spawn" cannot re-import it); batches keep their order and their
composition, so vectors do not depend on the number of workers, and every forward pass
runs on a multiple of ``ROW_MULTIPLE`` rows, so on the CPU a vector does not depend on the
other items of its batch either (nor on what a shared cache already held). On CUDA, batches are
pinned and copied with ``non_blocking=True``, and forward passes run under autocast in
``evaluate.precision`` (bf16 or fp16; see ``models.resolve_precision``). Vectors are always
normalised and returned as float32. The cache folder is per (model fingerprint, device type,
precision): fp16 and fp32 embeddings, or GPU and CPU ones, never mix.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from PIL import Image

from vlcomp.contracts import text_key
from vlcomp.evaluate.images import (
    EmbeddingCache,
    ImageRef,
    UnreadableImageError,
    crop,
    crop_key,
    image_key,
    open_rgb,
)
from vlcomp.models.catalogue import ModelSpec
from vlcomp.models.loading import load_model
from vlcomp.models.parts import LoadedModel
from vlcomp.models.versions import provenance

Log = Callable[[str], None]


# --------------------------------------------------------------------------- opening a model


def open_model(
    model_key: str,
    model_entry: dict[str, Any],
    checkpoint: str | None,
    settings: Mapping[str, Any],
    cache_dir: str | Path,
    log: Log,
) -> tuple[LoadedModel, EmbeddingCache, EmbeddingCache]:
    """Load a ``models.<key>`` entry (``checkpoint`` overrides its own) on
    ``settings["device"]`` with ``settings["threads"]`` torch threads, embedding in
    ``settings["precision"]`` (default auto) with ``settings["workers"]`` image-decoding
    processes (default 0); return it with its image and text embedding caches under
    ``cache_dir/<fingerprint>/<device type>-<precision>``."""
    torch.set_num_threads(int(settings["threads"]))
    spec = ModelSpec.from_config(model_key, model_entry, checkpoint=checkpoint)
    loaded = load_model(
        spec, device=settings["device"], precision=str(settings.get("precision", "auto"))
    )
    loaded.workers = int(settings.get("workers", 0))
    if loaded.workers < 0:
        raise ValueError(f"evaluate.workers must be 0 or more, not {loaded.workers}")
    log(
        f"loaded {spec.arch} from {spec.source} (fingerprint {loaded.fingerprint}) on "
        f"{loaded.device}, {loaded.precision}, {loaded.workers} image workers"
    )
    cache_root = Path(cache_dir) / cache_folder(loaded)
    return loaded, EmbeddingCache(cache_root, "image"), EmbeddingCache(cache_root, "text")


def cache_folder(loaded: LoadedModel) -> str:
    """``<fingerprint>/<device type>-<precision>``, e.g. ``ViT-B-32@openai/cuda-fp16``: the
    cache keeps apart what would not be byte-identical."""
    name = loaded.fingerprint.replace("/", "_").replace(":", "_")
    return f"{name}/{loaded.device.type}-{loaded.precision}"


def model_metadata(model_key: str, loaded: LoadedModel) -> dict[str, str]:
    return provenance(
        model=model_key,
        fingerprint=loaded.fingerprint,
        source=loaded.spec.source,
        device=loaded.device.type,
        precision=loaded.precision,
        **loaded.details,
    )


# --------------------------------------------------------------------------- embedding


class _Prepared(torch.utils.data.Dataset):
    """``prepare(items[i])`` as (i, tensor, None), or (i, None, message) when the item is
    unreadable: a worker never dies on a bad file."""

    def __init__(self, items: Sequence[object], prepare: Callable[[object], torch.Tensor]):
        self.items, self.prepare = items, prepare

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, i: int) -> tuple[int, torch.Tensor | None, str | None]:
        try:
            return i, self.prepare(self.items[i]), None
        except UnreadableImageError as error:
            return i, None, str(error)


def _collate(
    samples: list[tuple[int, torch.Tensor | None, str | None]],
) -> tuple[list[int], torch.Tensor | None, dict[int, str]]:
    """One batch (in a worker): the positions prepared, their stacked tensors, the failures."""
    kept = [i for i, tensor, _ in samples if tensor is not None]
    tensors = [tensor for _, tensor, _ in samples if tensor is not None]
    failures = {i: message for i, _, message in samples if message is not None}
    return kept, (torch.stack(tensors) if tensors else None), failures


def worker_context() -> multiprocessing.context.BaseContext:
    """The start method of image workers: "fork" where there is one (Linux, macOS).

    Forked workers inherit the model's preprocessing and need not re-import ``__main__``,
    which inside a Snakemake ``script:`` job is Snakemake's own script file: "spawn" and
    "forkserver" re-import it and fail there (BrokenProcessPool). Elsewhere (Windows)
    "spawn", with everything it pickles (``PrepareImage``, ``_Prepared``, ``_collate``)
    defined in this module."""
    method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
    return multiprocessing.get_context(method)


def _batches(
    items: Sequence[object],
    batch_size: int,
    prepare: Callable[[object], object] | None,
    workers: int,
    pin: bool,
) -> Iterable[tuple[list[int], Any, dict[int, str]]]:
    """(positions, batch, failures) in order: batch ``k`` holds items ``k * batch_size`` up
    to ``(k + 1) * batch_size``, less those whose preparation failed."""
    if prepare is None:
        for start in range(0, len(items), batch_size):
            positions = list(range(start, min(start + batch_size, len(items))))
            yield positions, [items[i] for i in positions], {}
        return
    workers = min(workers, -(-len(items) // batch_size))  # no idle worker processes
    loader = torch.utils.data.DataLoader(
        _Prepared(items, prepare),
        batch_size=batch_size,
        shuffle=False,
        num_workers=workers,
        collate_fn=_collate,
        pin_memory=pin,
        multiprocessing_context=worker_context() if workers else None,
    )
    yield from loader


# A forward pass runs on a multiple of this many rows (the last item repeated). CPU kernels
# round a row by the batch's row count, so without it a vector would depend on the other
# items of its batch, and through a shared cache on which jobs ran first; at a multiple of 8
# (measured: open_clip ViT, ResNet and text towers, 1 to 16 threads) it does not.
ROW_MULTIPLE = 8


def pad_rows(batch: Any) -> Any:
    """``batch`` (a list or a tensor of rows) with its last row repeated up to a multiple of
    ``ROW_MULTIPLE`` rows."""
    missing = -len(batch) % ROW_MULTIPLE
    if not missing:
        return batch
    if isinstance(batch, torch.Tensor):
        return torch.cat([batch, batch[-1:].expand(missing, *batch.shape[1:])])
    return [*batch, *[batch[-1]] * missing]


@torch.inference_mode()
def _encode_batches(
    items: Sequence[object],
    encode: Callable[[Any], torch.Tensor],
    batch_size: int,
    progress: Callable[[int, int], None] | None,
    prepare: Callable[[object], object] | None = None,
    failed: dict[int, str] | None = None,
    workers: int = 0,
    pin: bool = False,
) -> np.ndarray:
    """Normalised float32 vectors of ``items`` (rows in order). Without ``prepare``,
    ``encode`` gets lists of items; with it, each item is first prepared alone (by
    ``workers`` DataLoader processes; 0 = here, ``pin``: into pinned memory) and ``encode``
    gets the stacked tensors. When ``failed`` is given, an item whose preparation raises
    ``UnreadableImageError`` is recorded there (position -> message) and gets a NaN row."""
    chunks: list[tuple[list[int], np.ndarray]] = []
    done = 0
    for positions, batch, failures in _batches(items, batch_size, prepare, workers, pin):
        done += len(positions) + len(failures)
        if failures:
            if failed is None:
                raise UnreadableImageError(failures[min(failures)])
            failed.update(failures)
        if positions:
            features = encode(pad_rows(batch)).float()[: len(positions)]
            features = features / features.norm(dim=-1, keepdim=True)
            chunks.append((positions, features.cpu().numpy()))
        if progress:
            progress(done, len(items))
    if not chunks:
        return np.zeros((len(items), 0), dtype=np.float32)
    out = np.full((len(items), chunks[0][1].shape[1]), np.nan, dtype=np.float32)
    for positions, vectors in chunks:
        out[positions] = vectors
    return out


def cached_embed(
    keys: list[str],
    items: Sequence[object],
    encode: Callable[[Sequence[object]], torch.Tensor],
    cache: EmbeddingCache | None,
    batch_size: int,
    progress: Callable[[int, int], None] | None,
    prepare: Callable[[object], object] | None = None,
    failed: dict[str, str] | None = None,
    workers: int = 0,
    pin: bool = False,
) -> tuple[np.ndarray, int]:
    """Embed the items whose keys the cache lacks, each distinct key once; return all vectors
    and the count computed.

    ``prepare`` / ``failed`` / ``workers`` / ``pin``: see ``_encode_batches``; a failed key
    is recorded in ``failed`` (key -> message), gets a NaN row and is not cached."""
    unique: dict[str, object] = {}
    for key, item in zip(keys, items, strict=True):
        if (cache is None or key not in cache) and key not in unique:
            unique[key] = item
    new_keys = sorted(unique)
    failed_at: dict[int, str] = {}
    vectors = _encode_batches(
        [unique[k] for k in new_keys],
        encode,
        batch_size,
        progress,
        prepare,
        failed_at if failed is not None else None,
        workers,
        pin,
    )
    if failed is not None:
        failed.update({new_keys[i]: message for i, message in failed_at.items()})
    good = [i for i in range(len(new_keys)) if i not in failed_at]
    if cache is not None and good:
        cache.add([new_keys[i] for i in good], vectors[good])
    fresh = dict(zip(new_keys, vectors, strict=True))
    if not keys:
        return vectors.astype(np.float32), 0
    dim = vectors.shape[1] if good else 0  # every new item failed: take it from the cache
    if not good and cache is not None:
        dim = next((cache.get(k).shape[0] for k in keys if k not in fresh), 0)
    out = np.stack(
        [
            (fresh[k] if fresh[k].shape[0] == dim else np.full(dim, np.nan, np.float32))
            if k in fresh
            else cache.get(k)
            for k in keys
        ]
    )
    return out.astype(np.float32), len(good)


def _to_device(tensor: torch.Tensor, device: torch.device) -> torch.Tensor:
    """``tensor`` on ``device``; to a GPU from pinned memory, without blocking."""
    if device.type != "cuda":
        return tensor.to(device)
    if not tensor.is_pinned():
        tensor = tensor.pin_memory()
    return tensor.to(device, non_blocking=True)


# Context lengths a text is run at when it fits (its own length decides: never its batch).
TEXT_CONTEXTS: tuple[int, ...] = (8, 16, 32, 48, 64)


def short_context_encoder(model: torch.nn.Module) -> Callable[[torch.Tensor], torch.Tensor] | None:
    """``encode_text`` that runs each text at the shortest of ``TEXT_CONTEXTS`` holding it,
    for open_clip CLIP text towers where that is the same computation: a causal mask (no
    position sees a later one) and pooling at the end token. ``None`` for other models.

    The padding after a caption's end token cannot change what the end token sees, so
    cutting it changes only float rounding (about 1e-7); the work falls with the length
    (captions have ~10 tokens, the context 77)."""
    import open_clip
    from open_clip.transformer import text_global_pool

    mask = getattr(model, "attn_mask", None)
    pool = getattr(model, "text_pool_type", None)
    if not isinstance(model, open_clip.CLIP) or mask is None or pool not in ("argmax", "eos"):
        return None
    eos = getattr(model, "text_eos_id", None)

    def at_length(tokens: torch.Tensor, length: int) -> torch.Tensor:
        tokens = tokens[:, :length]
        cast = model.transformer.get_cast_dtype()
        x = model.token_embedding(tokens).to(cast) + model.positional_embedding[:length].to(cast)
        x = model.ln_final(model.transformer(x, attn_mask=mask[:length, :length]))
        x = text_global_pool(x, tokens, pool, eos_token_id=eos)
        if model.text_projection is None:
            return x
        if isinstance(model.text_projection, torch.nn.Linear):
            return model.text_projection(x)
        return x @ model.text_projection

    def encode(tokens: torch.Tensor) -> torch.Tensor:
        ends = tokens.argmax(dim=-1) if pool == "argmax" else (tokens == eos).int().argmax(dim=-1)
        needed = (ends + 1).tolist()
        contexts = [next((c for c in TEXT_CONTEXTS if c >= n), tokens.shape[1]) for n in needed]
        out: torch.Tensor | None = None
        for context in sorted(set(contexts)):
            rows = [i for i, c in enumerate(contexts) if c == context]
            index = torch.tensor(rows, device=tokens.device)
            group = pad_rows(tokens[index])
            whole = context >= tokens.shape[1]
            part = (model.encode_text(group) if whole else at_length(group, context))[: len(rows)]
            if out is None:
                out = part.new_empty((tokens.shape[0], part.shape[1]))
            out[index] = part
        assert out is not None
        return out

    return encode


def embed_texts(
    loaded: LoadedModel,
    texts: Sequence[str],
    batch_size: int = 256,
    cache: EmbeddingCache | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[np.ndarray, int]:
    """Embed texts, batched, each distinct text once, through the content-hash cache;
    return vectors (float32, in the order of ``texts``) and the number computed. CLIP text
    towers run each text at a context that fits it (``short_context_encoder``)."""
    device = loaded.device
    encode_tokens = short_context_encoder(loaded.model) or loaded.model.encode_text

    def encode(batch: Sequence[object]) -> torch.Tensor:
        tokens = _to_device(loaded.tokenizer(list(batch)), device)
        with loaded.autocast():
            return encode_tokens(tokens)

    return cached_embed([text_key(t) for t in texts], texts, encode, cache, batch_size, progress)


class PrepareImage:
    """Open, crop and preprocess an ``ImageRef`` (picklable, for DataLoader workers).

    The last decoded file is kept: crops of one image have adjacent cache keys (its sha256
    and the box), so they are mostly prepared one after the other by the same worker, and
    the image is decoded once for all of them."""

    def __init__(self, preprocess: Callable[[Image.Image], torch.Tensor]) -> None:
        self.preprocess = preprocess
        self._last: tuple[str, Image.Image] | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {"preprocess": self.preprocess, "_last": None}

    def __call__(self, ref: object) -> torch.Tensor:
        assert isinstance(ref, ImageRef)
        if self._last is not None and self._last[0] == ref.path:
            image = self._last[1]
        else:
            self._last = None
            image = open_rgb(ref.path)
            self._last = (ref.path, image)
        return self.preprocess(crop(image, ref.box))


def decode_batches(
    loaded: LoadedModel, refs: Sequence[ImageRef], batch_size: int, workers: int
) -> Iterable[tuple[list[int], torch.Tensor | None, dict[int, str]]]:
    """The image pipeline of ``embed_image_refs`` without the model: (positions, pixels,
    failures) per batch of ``refs`` in order, pinned on CUDA (for the decode ceiling)."""
    prepare = PrepareImage(loaded.preprocess)
    yield from _batches(refs, batch_size, prepare, workers, loaded.device.type == "cuda")


def embed_image_refs(
    loaded: LoadedModel,
    refs: Sequence[ImageRef],
    batch_size: int = 256,
    cache: EmbeddingCache | None = None,
    progress: Callable[[int, int], None] | None = None,
    failed: dict[ImageRef, str] | None = None,
    workers: int | None = None,
) -> tuple[np.ndarray, int]:
    """Embed images or crops, batched, through the content-hash cache; return vectors and the
    number computed (the rest came from the cache or from duplicates). Images are decoded by
    ``workers`` DataLoader processes (default ``loaded.workers``; 0 = in this process).

    Without ``failed`` an unreadable file raises ``UnreadableImageError``; with it, each
    unreadable ref is recorded there (ref -> message) and gets a NaN row."""
    device = loaded.device
    shas: dict[str, str | None] = {}
    unreadable_files: dict[str, str] = {}
    for ref in refs:
        if ref.path in shas:
            continue
        try:
            shas[ref.path] = image_key(ref.path)
        except OSError as error:
            if failed is None:
                raise UnreadableImageError(f"{ref.path}: {error}") from error
            shas[ref.path] = None
            unreadable_files[ref.path] = f"{type(error).__name__}: {error}"

    def encode(batch: torch.Tensor) -> torch.Tensor:
        pixels = _to_device(batch, device)
        with loaded.autocast():
            return loaded.model.encode_image(pixels)

    readable = [ref for ref in refs if shas[ref.path] is not None]
    keys = [crop_key(shas[ref.path], ref.box) for ref in readable]
    failed_keys: dict[str, str] = {}
    vectors, computed = cached_embed(
        keys,
        readable,
        encode,
        cache,
        batch_size,
        progress,
        PrepareImage(loaded.preprocess),
        failed_keys if failed is not None else None,
        loaded.workers if workers is None else workers,
        device.type == "cuda",
    )
    if failed is None:
        return vectors, computed
    key_of = dict(zip(readable, keys, strict=True))
    dim = vectors.shape[1] if vectors.ndim == 2 else 0
    out = np.full((len(refs), dim), np.nan, dtype=np.float32)
    row = 0
    for i, ref in enumerate(refs):
        if shas[ref.path] is None:
            failed[ref] = unreadable_files[ref.path]
            continue
        out[i] = vectors[row]
        row += 1
        if key_of[ref] in failed_keys:
            failed[ref] = failed_keys[key_of[ref]]
    return out, computed


def embed_images(
    loaded: LoadedModel,
    paths: Sequence[str],
    batch_size: int = 256,
    cache: EmbeddingCache | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[np.ndarray, int]:
    """Whole images (same cache keys as ``embed_image_refs`` without a box)."""
    return embed_image_refs(loaded, [ImageRef(str(p)) for p in paths], batch_size, cache, progress)
