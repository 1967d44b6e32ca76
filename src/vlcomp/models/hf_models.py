"""Hugging Face transformers models next to open_clip ones (``models.<key>.transformers``):
the part that needs no torch (the config check and the workflow import it when they parse).

An entry names a model folder (a local directory, or a hub id at a pinned revision whose
snapshot is in the local Hugging Face cache; nothing is downloaded) and a ``kind``:

- ``dual_encoder`` (CLIPModel, SiglipModel, AltCLIPModel, ...: anything ``AutoModel`` loads
  that has ``get_image_features`` / ``get_text_features``) is loaded by
  ``models.load_dual_encoder`` and wrapped as ``models.DualEncoder``, a module with
  open_clip's ``encode_image`` / ``encode_text``, so that embedding, caches, rankers and
  metrics use it unchanged;
- ``matching_head`` (BLIP's ``BlipForImageTextRetrieval``) and ``vqascore`` (a
  vision-language generation model, e.g. ``LlavaForConditionalGeneration``) score an
  (image, text) pair jointly: ``models.joint`` loads them, ``evaluate.joint_scoring`` runs
  them. Their options (``KIND_OPTIONS``) sit in the same block; ``definition`` picks whose
  scoring they reproduce (``DEFINITIONS``, described in ``models.joint``).

``IMPLEMENTED_KINDS`` lists the kinds ``models.TRANSFORMERS_LOADERS`` loads.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DUAL_ENCODER = "dual_encoder"
MATCHING_HEAD = "matching_head"
VQASCORE = "vqascore"
IMPLEMENTED_KINDS = (DUAL_ENCODER, MATCHING_HEAD, VQASCORE)
JOINT_KINDS = (MATCHING_HEAD, VQASCORE)  # score (image, text) pairs rather than embed each

# The options of each kind (``models.<key>.transformers.<option>``) and their defaults; a
# ``definition`` picks whose scoring the kind reproduces (``models.joint`` says what each
# does), and some defaults follow it (``DEFINITION_DEFAULTS``): BLIP's own retrieval reranks
# k = 256 (salesforce/BLIP configs/retrieval_coco.yaml; retrieval_flickr.yaml has 128),
# the transformers variant 16; t2v_metrics' prompt has LLaVA's system message.
SALESFORCE, TRANSFORMERS_ITM = "salesforce", "transformers"
T2V_METRICS, LEGACY_SUM = "t2v_metrics", "legacy_sum"
DEFINITIONS: dict[str, tuple[str, ...]] = {
    MATCHING_HEAD: (SALESFORCE, TRANSFORMERS_ITM),
    VQASCORE: (T2V_METRICS, LEGACY_SUM),
}
DEFAULT_QUESTION = 'Does this figure show "{text}"? Please answer yes or no.'
LLAVA_SYSTEM_MESSAGE = (
    "A chat between a curious user and an artificial intelligence assistant. The assistant "
    "gives helpful, detailed, and polite answers to the user's questions."
)
LEGACY_PROMPT = "USER: {image}\n{question} ASSISTANT:"  # LLaVA-1.5's turn, no system message
T2V_METRICS_PROMPT = f"{LLAVA_SYSTEM_MESSAGE} {LEGACY_PROMPT}"  # t2v_metrics' format_question
KIND_OPTIONS: dict[str, dict[str, Any]] = {
    DUAL_ENCODER: {},
    MATCHING_HEAD: {"definition": SALESFORCE, "rerank_top_k": 256},
    VQASCORE: {
        "definition": T2V_METRICS, "question": DEFAULT_QUESTION, "prompt": T2V_METRICS_PROMPT,
        "answer": "Yes",
    },
}  # fmt: skip
DEFINITION_DEFAULTS: dict[tuple[str, str], dict[str, Any]] = {
    (MATCHING_HEAD, TRANSFORMERS_ITM): {"rerank_top_k": 16},
    (VQASCORE, LEGACY_SUM): {"prompt": LEGACY_PROMPT},
}
SOURCE_KEYS = ("id", "kind", "revision")
WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")
WEIGHT_INDEXES = ("model.safetensors.index.json", "pytorch_model.bin.index.json")


DEFAULT_CONTEXT_LENGTH = 77  # CLIP's


class TransformersModelError(RuntimeError):
    """A transformers model entry that cannot be loaded; models.py re-raises it as
    ``ModelUnavailableError``."""


def is_local_model_id(model_id: str) -> bool:
    """A folder path (absolute, ./, ../, ~, or an existing folder) rather than a hub id."""
    return model_id.startswith(("/", "./", "../", "~")) or Path(model_id).expanduser().is_dir()


def transformers_config_file(
    model_id: str, revision: str | None = None, cache_dir: str | None = None
) -> Path | None:
    """The model's config.json on this machine: in the folder, or in the local HF cache's
    snapshot of ``revision``; None when it is not here."""
    if is_local_model_id(model_id):
        path = Path(model_id).expanduser() / "config.json"
        return path if path.is_file() else None
    from huggingface_hub import try_to_load_from_cache

    found = try_to_load_from_cache(model_id, "config.json", cache_dir=cache_dir, revision=revision)
    return Path(found) if isinstance(found, str) else None


def transformers_context_length(
    model_id: str, revision: str | None = None, cache_dir: str | None = None
) -> int:
    """The text tower's context: ``text_config.max_position_embeddings`` of config.json
    (77, CLIP's, when the config is not here or gives none), or the tokenizer's shorter
    ``model_max_length`` beside it (XLM-R's 512 tokens of 514 positions: AltCLIP), the
    context ``models.load_dual_encoder`` pads to. No torch."""
    path = transformers_config_file(model_id, revision, cache_dir)
    config: dict[str, Any] = json.loads(path.read_text(encoding="utf-8")) if path else {}
    text = config.get("text_config") or {}
    context = int(text.get("max_position_embeddings", DEFAULT_CONTEXT_LENGTH))
    tokenizer_config = path.parent / "tokenizer_config.json" if path else None
    if tokenizer_config is not None and tokenizer_config.is_file():
        limit = json.loads(tokenizer_config.read_text(encoding="utf-8")).get("model_max_length")
        if isinstance(limit, int) and 0 < limit < context:
            context = limit
    return context


@dataclass(frozen=True)
class TransformersSource:
    """``models.<key>.transformers``: ``id`` a local folder or a hub id, ``revision`` the
    pinned hub revision (required for a hub id), ``cache_dir`` the HF cache to look in,
    ``options`` the kind's options as given (``option`` fills in the defaults)."""

    id: str
    kind: str
    revision: str | None = None
    cache_dir: str | None = None
    options: tuple[tuple[str, Any], ...] = ()

    @staticmethod
    def from_entry(
        entry: dict[str, Any], cache_dir: str | None = None, where: str = "transformers"
    ) -> TransformersSource:
        """From a ``models.<key>.transformers`` block (``cache_dir``: the model's; ``where``:
        the block's key): the keys that are no source key are the kind's options."""
        from vlcomp.settings import settings_from

        source = {
            "id": str(entry["id"]),
            "kind": str(entry["kind"]),
            "revision": entry.get("revision"),
            "cache_dir": cache_dir,
            "options": tuple(sorted((k, v) for k, v in entry.items() if k not in SOURCE_KEYS)),
        }
        return settings_from(TransformersSource, source, where)

    @property
    def local(self) -> bool:
        return is_local_model_id(self.id)

    @property
    def label(self) -> str:
        return self.id if self.local or not self.revision else f"{self.id}@{self.revision}"

    def option(self, name: str) -> Any:
        """The option's value, or its default for this kind and definition."""
        given = dict(self.options)
        if name in given:
            return given[name]
        if self.kind not in KIND_OPTIONS:
            raise TransformersModelError(f"transformers.kind: {kind_problem(self.kind)}")
        defaults = KIND_OPTIONS[self.kind]
        definition = given.get("definition", defaults.get("definition"))
        return DEFINITION_DEFAULTS.get((self.kind, definition), {}).get(name, defaults[name])

    def resolved_options(self) -> dict[str, Any]:
        """Every option of the kind, defaults filled in."""
        return {name: self.option(name) for name in KIND_OPTIONS.get(self.kind, {})}


def kind_problem(kind: str) -> str | None:
    """Why a ``transformers.kind`` cannot be used (None: it can)."""
    if kind in IMPLEMENTED_KINDS:
        return None
    return f"'{kind}' is not a known kind (known: {', '.join(IMPLEMENTED_KINDS)})"


def options_problem(where: str, source: TransformersSource) -> tuple[str, str] | None:
    """(config key, reason) of an option the kind does not have or a value it cannot use."""
    allowed = KIND_OPTIONS[source.kind]
    for name, value in source.options:
        if name not in allowed:
            owners = [k for k, names in KIND_OPTIONS.items() if name in names]
            known = ", ".join(allowed) or "none"
            why = f"an option of kind {', '.join(owners)}, not" if owners else "not an option of"
            return f"{where}.{name}", f"{why} kind {source.kind} (its options: {known})"
        default = allowed[name]
        if type(value) is not type(default):
            return f"{where}.{name}", f"must be a {type(default).__name__}, not {value!r}"
    definitions = DEFINITIONS.get(source.kind, ())
    if definitions and source.option("definition") not in definitions:
        return f"{where}.definition", (
            f"{source.option('definition')!r} is not a definition of kind {source.kind} "
            f"(known: {', '.join(definitions)})"
        )
    if source.kind == MATCHING_HEAD and source.option("rerank_top_k") < 1:
        return f"{where}.rerank_top_k", "must be 1 or more (candidates reranked per query)"
    if source.kind == VQASCORE:
        fields = {"question": ("{text}",), "prompt": ("{image}", "{question}")}
        for name, needed in fields.items():
            text = source.option(name)
            for field_name in needed:
                if text.count(field_name) != 1:
                    return f"{where}.{name}", f"must hold {field_name} exactly once: {text!r}"
        if not source.option("answer").strip():
            return f"{where}.answer", "must not be empty"
    return None


def source_problem(key: str, source: TransformersSource) -> tuple[str, str] | None:
    """(config key, reason) of a problem of the entry the config check sees: an unknown
    kind, an option the kind lacks or cannot use, a missing folder, an unpinned hub id.
    None: none."""
    where = f"models.{key}.transformers"
    problem = kind_problem(source.kind)
    if problem:
        return f"{where}.kind", problem
    problem_of_options = options_problem(where, source)
    if problem_of_options:
        return problem_of_options
    if source.local:
        if not Path(source.id).expanduser().is_dir():
            return f"{where}.id", f"folder not found: {source.id}"
    elif not source.revision:
        return (
            f"{where}.revision",
            f"a hub id ({source.id}) needs a pinned revision (a commit hash), so that a rerun "
            "evaluates the same weights",
        )
    return None


def model_directory(key: str, source: TransformersSource) -> Path:
    """The folder the model loads from: the local one, or the hub snapshot of the pinned
    revision in the local cache. ``TransformersModelError`` saying what to download when
    its config or weights are not on this machine."""
    problem = source_problem(key, source)
    if problem:
        raise TransformersModelError(f"{problem[0]}: {problem[1]}")
    config = transformers_config_file(source.id, source.revision, source.cache_dir)
    if config is None:
        if source.local:
            raise TransformersModelError(
                f"models.{key}.transformers.id: {source.id} has no config.json (save the "
                "model there with save_pretrained, or download it with its processor files)"
            )
        raise TransformersModelError(
            f"models.{key}: {source.id} at revision {source.revision} is not in the local "
            "Hugging Face cache (HF_HUB_OFFLINE=1, nothing is downloaded). On a machine with "
            f"internet run `huggingface-cli download {source.id} --revision {source.revision}` "
            "and copy the cache (~/.cache/huggingface/hub) here, or set "
            "models.<key>.transformers.id to a local folder."
        )
    directory = config.parent
    weight_files(key, directory)
    return directory


def weight_files(key: str, directory: Path) -> list[Path]:
    """The weight files of a model folder (one file, or the shards an index names)."""
    for name in WEIGHT_FILES:
        if (directory / name).is_file():
            return [directory / name]
    for name in WEIGHT_INDEXES:
        index = directory / name
        if index.is_file():
            shards = sorted(set(json.loads(index.read_text())["weight_map"].values()))
            missing = [s for s in shards if not (directory / s).is_file()]
            if missing:
                raise TransformersModelError(
                    f"models.{key}: {directory} lacks weight shard(s) {', '.join(missing)} "
                    f"named in {name}"
                )
            return [directory / s for s in shards]
    raise TransformersModelError(
        f"models.{key}: {directory} has no weights ({' or '.join(WEIGHT_FILES + WEIGHT_INDEXES)})"
    )


def weights_sha256(files: Sequence[Path], chunk: int = 1 << 20) -> str:
    """sha256 of the weights: of the one file, or of the shards' names and digests."""
    digests = []
    for path in files:
        digest = hashlib.sha256()
        with open(path, "rb") as handle:
            while block := handle.read(chunk):
                digest.update(block)
        digests.append(digest.hexdigest())
    if len(digests) == 1:
        return digests[0]
    combined = hashlib.sha256()
    for path, digest in zip(files, digests, strict=True):
        combined.update(f"{path.name}:{digest}\n".encode())
    return combined.hexdigest()


def missing_tokenizer_files(directory: Path) -> tuple[str, list[str]]:
    """(tokenizer class, the vocabulary files it reads that the folder lacks) of a folder
    without a ``tokenizer.json`` (a partial download of e.g. SigLIP's ``spiece.model``, which
    the tokenizer itself reports only as "Either model_file or model_proto must be
    specified"). ("", []) when there is nothing to name."""
    config = directory / "tokenizer_config.json"
    if (directory / "tokenizer.json").is_file() or not config.is_file():
        return "", []
    try:
        name = json.loads(config.read_text(encoding="utf-8")).get("tokenizer_class")
    except (OSError, ValueError, AttributeError):  # the load's own error says what is wrong
        return "", []
    if not isinstance(name, str):
        return "", []
    from transformers.models.auto.tokenization_auto import tokenizer_class_from_name

    files = getattr(tokenizer_class_from_name(name), "vocab_files_names", None) or {}
    missing = [
        f for k, f in files.items() if k != "tokenizer_file" and not (directory / f).is_file()
    ]
    return name, sorted(missing)
