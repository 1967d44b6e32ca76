"""The ingest job: read a corpus, screen its captions, write sharded ``captions`` tables.

Output under ``out_dir``:

- ``captions-<i>-of-<n>.parquet`` (i from 0): the ``CAPTIONS_SCHEMA`` contract. A caption
  goes to shard ``blake2b-64(caption_id) mod n``, so its shard depends on its id alone
  (not on file order or on which other files are ingested); within a shard rows keep
  input order (files in the order given, a directory's files sorted by name).
- ``rejected.parquet``: the ``REJECTED_SCHEMA`` contract, one row per rejected row with
  its reason (see ``rules`` and ``readers``).

All files are written to temporary siblings and moved into place only when the whole job
succeeded; a corrupt input raises ``CorruptInputError`` and leaves no output. Memory is
bounded by ``buffer_rows`` buffered rows (each shard's buffer becomes one Parquet row group
when the buffers together reach it) plus one read batch.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from vlcomp.contracts import CAPTIONS_SCHEMA, REJECTED_SCHEMA

from .reader_types import FILTERED, Candidate, IngestOptionsError, Item, Rejected, Shared
from .readers import FORMATS, expand_inputs, file_key, format_options
from .rules import CaptionRules, screen, truncate
from .tables import open_tables
from .yfcc import load_subset_ids

log = logging.getLogger(__name__)

BUFFER_ROWS = 100_000
PROGRESS_EVERY = 1_000_000
SHARDING = "blake2b-64(caption_id) mod n"
_SHARD_NAME = re.compile(r"captions-(\d+)-of-(\d+)\.parquet")


class CaptionRow(NamedTuple):
    """An accepted caption: one row of the ``captions`` contract."""

    caption_id: str
    corpus: str
    image_id: str | None
    text: str


def screen_items(
    items: Iterable[Item], corpus: str, rules: CaptionRules
) -> Iterator[CaptionRow | Rejected]:
    """Screen a reader's candidates: accepted captions, and rejected rows with their reason
    and the raw text truncated to ``rules.raw_chars`` (filtered rows pass through)."""
    limit = rules.raw_chars
    for item in items:
        if type(item) is Candidate:
            text, reason = screen(item.text, rules)
            if reason is None:
                yield CaptionRow(item.caption_id, corpus, item.image_id, text)  # type: ignore[arg-type]
            else:
                yield Rejected(item.location, reason, truncate(item.text, limit))
        elif item.reason in FILTERED:
            yield item
        else:
            yield Rejected(item.location, item.reason, truncate(item.raw, limit))


def _shared(format_opts: Mapping[str, Any]) -> Shared:
    shared = Shared()
    if format_opts.get("subset_ids"):
        subset = Path(format_opts["subset_ids"])
        shared.subset = load_subset_ids(subset, format_opts["subset_column"])
    return shared


def iter_captions(
    fmt: str, path: Path, corpus: str, options: Mapping[str, Any] | None = None
) -> Iterator[CaptionRow | Rejected]:
    """Generator-style loader of one file: accepted captions and rejected rows, in file
    order (options as for ``ingest``; ``buffer_rows`` is ignored)."""
    opts = IngestOptions.parse(fmt, options)
    shared = _shared(opts.format)
    items = FORMATS[fmt].reader(Path(path), corpus, file_key(Path(path)), opts.format, shared)
    yield from screen_items(items, corpus, opts.rules)


def shard_of(caption_id: str, n_shards: int) -> int:
    """The shard of a caption: a stable 64-bit BLAKE2b hash of its id, modulo ``n_shards``."""
    digest = hashlib.blake2b(caption_id.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "little") % n_shards


def shard_name(i: int, n_shards: int) -> str:
    return f"captions-{i}-of-{n_shards}.parquet"


@dataclass
class IngestSummary:
    """What a job read, kept, rejected (by reason) and filtered out."""

    format: str
    corpus: str
    n_shards: int
    files: int = 0
    accepted: int = 0
    rejected: Counter[str] = field(default_factory=Counter)
    filtered: Counter[str] = field(default_factory=Counter)
    per_shard: list[int] = field(default_factory=list)

    @property
    def total(self) -> int:
        return self.accepted + sum(self.rejected.values()) + sum(self.filtered.values())

    @property
    def warnings(self) -> list[str]:
        """What a user should look at before trusting anything built on this corpus."""
        out = []
        if self.accepted == 0:
            out.append(
                f"corpus {self.corpus!r} has no accepted caption ({self.total} rows read from "
                f"{self.files} file(s)): its counts are all zero, so every evaluation item "
                "counts as unseen; check its inputs, format and caption rules"
            )
        elif 0 in self.per_shard:
            empty = self.per_shard.count(0)
            out.append(
                f"corpus {self.corpus!r}: {empty} of {self.n_shards} shards are empty "
                f"({self.accepted} captions); fewer shards would do"
            )
        return out

    def as_dict(self) -> dict[str, Any]:
        return {
            "format": self.format,
            "corpus": self.corpus,
            "n_shards": self.n_shards,
            "files": self.files,
            "rows": self.total,
            "accepted": self.accepted,
            "rejected": dict(sorted(self.rejected.items())),
            "filtered": dict(sorted(self.filtered.items())),
            "per_shard": list(self.per_shard),
            "warnings": self.warnings,
        }

    def describe(self) -> str:
        rejected = ", ".join(f"{k} {v}" for k, v in sorted(self.rejected.items())) or "none"
        text = (
            f"{self.corpus} ({self.format}): {self.files} file(s), {self.total} rows, "
            f"{self.accepted} accepted into {self.n_shards} shard(s) {self.per_shard}; "
            f"rejected {sum(self.rejected.values())} ({rejected})"
        )
        if self.filtered:
            text += "; filtered " + ", ".join(f"{k} {v}" for k, v in sorted(self.filtered.items()))
        return text


@dataclass(frozen=True)
class IngestOptions:
    rules: CaptionRules
    buffer_rows: int
    glob: str | None
    format: dict[str, Any]

    @classmethod
    def parse(cls, fmt: str, options: Mapping[str, Any] | None) -> IngestOptions:
        """``options``: ``rules`` (see ``CaptionRules``), ``buffer_rows``, ``glob`` (which
        files of a directory input to read) and the format's own keys
        (``readers.FORMATS[fmt].defaults``)."""
        rest = dict(options or {})
        rules = CaptionRules.from_options(rest.pop("rules", None))
        buffer_rows = rest.pop("buffer_rows", BUFFER_ROWS)
        if not isinstance(buffer_rows, int) or buffer_rows < 1:
            raise IngestOptionsError("buffer_rows: must be a positive integer")
        glob = rest.pop("glob", None)
        if glob is not None and (not isinstance(glob, str) or not glob):
            raise IngestOptionsError("glob: must be a non-empty pattern or null")
        return cls(rules, buffer_rows, glob, format_options(fmt, rest))

    def fingerprint(self) -> str:
        doc = {"rules": asdict(self.rules), "buffer_rows": self.buffer_rows, "glob": self.glob}
        doc.update(self.format)
        return json.dumps(doc, sort_keys=True, default=str)


# Options every format takes (``IngestOptions.parse``): name -> (default as shown, meaning).
COMMON_OPTIONS: dict[str, tuple[str, str]] = {
    "glob": (
        "null",
        "Which files of a folder input to read, e.g. `part-*.parquet` (null: the files "
        "ending in one of the format's suffixes).",
    ),
    "buffer_rows": (
        f"{BUFFER_ROWS}",
        "Captions buffered before they are written as Parquet row groups (bounds memory).",
    ),
    "rules": (
        "`ingest.rules`",
        "Caption screening for this corpus alone (max_chars, max_tokens, english, ...); "
        "replaces `ingest.rules` as a whole.",
    ),
}
_IDS = {"line": "line number", "row": "row number"}


def format_docs() -> str:
    """Markdown tables of the corpus formats and their options, rendered from the format
    registry (``readers.FORMATS``) and ``COMMON_OPTIONS`` (config/README.md shows them).
    Raises ValueError naming a format option without a description."""
    lines = [
        "Every format takes these options:",
        "",
        "| option | default | meaning |",
        "|---|---|---|",
        *(f"| `{k}` | {default} | {text} |" for k, (default, text) in COMMON_OPTIONS.items()),
        "",
        "| format | what it reads | caption id | a folder input reads |",
        "|---|---|---|---|",
    ]
    options = ["| format | option | default | meaning |", "|---|---|---|---|"]
    for name, spec in FORMATS.items():
        undocumented = sorted(set(spec.defaults) - set(spec.option_docs))
        extra = sorted(set(spec.option_docs) - set(spec.defaults))
        if undocumented or extra or not spec.doc:
            raise ValueError(
                f"readers.FORMATS[{name!r}]: options without a description {undocumented}, "
                f"descriptions of no option {extra}{'' if spec.doc else ', no doc'}"
            )
        ids = "`<corpus>/<own id>`"
        if spec.ids != "own":
            ids = f"`<corpus>/<file key>/<{_IDS[spec.ids]}>`"
            if spec.id_option is not None:
                ids += f", or `<corpus>/<own id>` with `{spec.id_option}`"
        suffixes = ", ".join(f"`*{suffix}`" for suffix in spec.suffixes)
        lines.append(f"| `{name}` | {spec.doc} | {ids} | {suffixes} |")
        for key, default in spec.defaults.items():
            shown = json.dumps(default)
            options.append(f"| `{name}` | `{key}` | `{shown}` | {spec.option_docs[key]} |")
    return "\n".join([*lines, "", *options]) + "\n"


def _remove_stale_shards(out_dir: Path, n_shards: int) -> None:
    for path in out_dir.glob("captions-*-of-*.parquet"):
        m = _SHARD_NAME.fullmatch(path.name)
        if m and int(m.group(2)) != n_shards:
            path.unlink()


def ingest(
    fmt: str,
    inputs: list[Path],
    corpus: str,
    out_dir: Path,
    n_shards: int,
    options: Mapping[str, Any] | None = None,
    *,
    progress: Callable[[str], None] | None = None,
    part: str | None = None,
) -> IngestSummary:
    """Read ``inputs`` (files or directories) of format ``fmt`` and write the sharded
    captions and the rejected rows of ``corpus`` under ``out_dir`` (see module docstring).
    ``part`` names a part of the corpus's files (``vlcomp.ingest.parts``): its summary
    says so, and the corpus's warnings wait for the merged summary.

    Returns the summary (also logged, and passed to ``progress`` when given); raises
    ``CorruptInputError`` for an unreadable input and ``IngestOptionsError`` /
    ``RulesError`` for bad options, before anything is written.
    """

    def say(message: str) -> None:
        log.info(message)
        if progress is not None:
            progress(message)

    if not isinstance(n_shards, int) or n_shards < 1:
        raise IngestOptionsError(f"n_shards: must be a positive integer, got {n_shards!r}")
    if not corpus or "/" in corpus:
        raise IngestOptionsError(f"corpus: {corpus!r} must be a non-empty name without '/'")
    opts = IngestOptions.parse(fmt, options)
    files = expand_inputs(fmt, list(inputs), opts.glob)
    shared = _shared(opts.format)
    if shared.subset is not None:
        say(f"subset: {len(shared.subset)} photo ids from {opts.format['subset_ids']}")

    out_dir = Path(out_dir)
    meta = {
        "vlcomp.stage": "ingest",
        "vlcomp.format": fmt,
        "vlcomp.corpus": corpus,
        "vlcomp.sharding": SHARDING,
        "vlcomp.options": opts.fingerprint(),
    }
    summary = IngestSummary(fmt, corpus, n_shards, files=len(files))
    reader = FORMATS[fmt].reader
    paths = [out_dir / shard_name(i, n_shards) for i in range(n_shards)]
    paths.append(out_dir / "rejected.parquet")
    schemas = [CAPTIONS_SCHEMA] * n_shards + [REJECTED_SCHEMA]
    metadata = [{**meta, "vlcomp.shard": str(i)} for i in range(n_shards)] + [meta]
    with open_tables(paths, schemas, metadata) as writers:
        shards, rejected = writers[:-1], writers[-1]
        buffered, next_report = 0, PROGRESS_EVERY
        for path, key in files:
            source = str(path)
            before = summary.total
            items = reader(path, corpus, key, opts.format, shared)
            for row in screen_items(items, corpus, opts.rules):
                if type(row) is CaptionRow:
                    shards[shard_of(row.caption_id, n_shards)].add(row)
                    summary.accepted += 1
                elif row.reason in FILTERED:
                    summary.filtered[row.reason] += 1
                else:
                    rejected.add((source, *row))
                    summary.rejected[row.reason] += 1
                buffered += 1
                if buffered >= opts.buffer_rows:
                    for w in writers:
                        w.flush()
                    buffered = 0
                    if summary.total >= next_report:
                        say(f"{source}: {summary.total - before} rows read")
                        next_report = summary.total + PROGRESS_EVERY
            say(f"{source}: {summary.total - before} rows read")
    summary.per_shard = [w.rows for w in shards]
    _remove_stale_shards(out_dir, n_shards)
    say(summary.describe() + (f" (part {part})" if part else ""))
    for warning in [] if part else summary.warnings:
        log.warning(warning)
        if progress is not None:
            progress(f"WARNING: {warning}")
    return summary
