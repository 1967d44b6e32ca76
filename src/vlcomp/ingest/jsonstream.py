"""Streaming reader for large JSON documents (Visual Genome, COCO captions).

``iter_json_array`` yields the elements of a top-level array, or of the array under one
top-level key, one at a time: memory holds one element (plus a read chunk), never the whole
document. The stdlib decoder parses each element; the reader only walks the brackets and
commas between them. A document that is not valid JSON (truncated, a broken element,
invalid UTF-8, trailing garbage) raises ``CorruptInputError`` naming the file and the byte
offset where parsing failed (in the decompressed stream for .gz, .bz2 and .xz files).
"""

from __future__ import annotations

import bz2
import codecs
import gzip
import json
import lzma
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any, BinaryIO

CHUNK_BYTES = 1 << 20
COMPRESSED = (".gz", ".bz2", ".xz")
_WS = re.compile(r"[ \t\n\r]*")
# A decoder error this close to the end of the buffer may only mean "read more".
_END_SLACK = 8


class CorruptInputError(ValueError):
    """An input file that cannot be read as its format says; names the file and offset."""

    def __init__(self, path: str | Path, where: str, message: str) -> None:
        super().__init__(f"{path}: {where}: {message}")
        self.path = str(path)
        self.where = where


def open_binary(path: Path) -> IO[bytes]:
    """``path`` for reading bytes, decompressed on the fly when it ends in .gz, .bz2 or .xz."""
    openers: dict[str, Callable[..., Any]] = {".gz": gzip.open, ".bz2": bz2.open, ".xz": lzma.open}
    return openers.get(path.suffix, open)(path, "rb")


class _Buffer:
    """Decoded text of a file read in chunks, with byte offsets of positions in it."""

    def __init__(self, handle: BinaryIO, path: Path, chunk: int) -> None:
        self.handle, self.path, self.chunk = handle, path, chunk
        self.utf8 = codecs.getincrementaldecoder("utf-8")("strict")
        self.json = json.JSONDecoder()
        self.text = ""
        self.pos = 0
        self.eof = False
        self.bytes_read = 0
        # Byte offset of text[mark], advanced incrementally (offsets are asked in order).
        self.mark = 0
        self.mark_bytes = 0

    def offset(self, pos: int) -> int:
        if pos < self.mark:  # only for error reports behind the mark
            return self.mark_bytes - len(self.text[pos : self.mark].encode("utf-8"))
        self.mark_bytes += len(self.text[self.mark : pos].encode("utf-8"))
        self.mark = pos
        return self.mark_bytes

    def corrupt(self, pos: int, message: str) -> CorruptInputError:
        return CorruptInputError(self.path, f"byte {self.offset(pos)}", message)

    def fill(self) -> bool:
        """Read more (at least as much as is buffered); False at end of file."""
        if self.eof:
            return False
        self.offset(self.pos)
        self.text = self.text[self.pos :]
        self.pos = self.mark = 0
        try:
            data = self.handle.read(max(self.chunk, len(self.text)))
        except (OSError, EOFError, lzma.LZMAError) as err:
            where = f"byte {self.bytes_read}"
            raise CorruptInputError(self.path, where, f"unreadable: {err}") from None
        try:
            self.text += self.utf8.decode(data, final=not data)
        except UnicodeDecodeError as err:
            where = f"byte {self.bytes_read + err.start}"
            raise CorruptInputError(self.path, where, "invalid UTF-8") from None
        self.bytes_read += len(data)
        self.eof = not data
        return True

    def peek(self) -> str:
        """The next non-whitespace character ('' at end of file)."""
        while True:
            self.pos = _WS.match(self.text, self.pos).end()  # type: ignore[union-attr]
            if self.pos < len(self.text):
                return self.text[self.pos]
            if not self.fill():
                return ""

    def expect(self, chars: str, what: str) -> str:
        ch = self.peek()
        if not ch or ch not in chars:
            found = repr(ch) if ch else "end of file"
            raise self.corrupt(self.pos, f"expected {what}, found {found}")
        self.pos += 1
        return ch

    def value(self) -> tuple[Any, int]:
        """The next JSON value and the byte offset where it starts."""
        self.peek()
        while True:
            try:
                value, end = self.json.raw_decode(self.text, self.pos)
            except json.JSONDecodeError as err:
                maybe_cut = err.msg.startswith("Unterminated string") or (
                    err.pos >= len(self.text) - _END_SLACK
                )
                if maybe_cut and self.fill():
                    continue
                if maybe_cut:
                    raise self.corrupt(err.pos, f"unexpected end of file ({err.msg})") from None
                raise self.corrupt(err.pos, f"invalid JSON ({err.msg})") from None
            # A number or literal that ends the buffer may continue in the next chunk.
            if end >= len(self.text) and self.fill():
                continue
            start = self.offset(self.pos)
            self.pos = end
            return value, start


def _elements(buf: _Buffer) -> Iterator[tuple[int, int, Any]]:
    buf.expect("[", "'['")
    if buf.peek() == "]":
        buf.pos += 1
        return
    index = 0
    while True:
        value, start = buf.value()
        yield index, start, value
        index += 1
        if buf.expect(",]", "',' or ']'") == "]":
            return


def iter_json_array(
    path: str | Path, key: str | None = None, chunk: int = CHUNK_BYTES
) -> Iterator[tuple[int, int, Any]]:
    """(index, byte offset, element) for each element of the document's array.

    With ``key`` the document must be an object and the array is its value under ``key``
    (other values are parsed and skipped); a missing key raises ``CorruptInputError``.
    """
    path = Path(path)
    with open_binary(path) as handle:
        buf = _Buffer(handle, path, chunk)  # type: ignore[arg-type]
        if key is None:
            yield from _elements(buf)
        else:
            found = False
            buf.expect("{", "a JSON object")
            if buf.peek() == "}":
                buf.pos += 1
            else:
                while True:
                    at = buf.pos
                    name, _ = buf.value()
                    if not isinstance(name, str):
                        raise buf.corrupt(at, "expected a string key")
                    buf.expect(":", "':'")
                    if name == key:
                        if buf.peek() != "[":
                            raise buf.corrupt(buf.pos, f"key {key!r} does not hold an array")
                        yield from _elements(buf)
                        found = True
                    else:
                        buf.value()
                    if buf.expect(",}", "',' or '}'") == "}":
                        break
            if not found:
                raise CorruptInputError(path, f"byte {buf.offset(buf.pos)}", f"no key {key!r}")
        if buf.peek():
            raise buf.corrupt(buf.pos, "unexpected data after the JSON document")
