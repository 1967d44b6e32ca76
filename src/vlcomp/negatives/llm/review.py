"""SugarCrepe stage 2: human validation of generated negatives.

``review_sheet_job`` writes ONE static HTML page (no server, no network: images are small
JPEG data URIs, the script is inline) with, per item, the image (the item's box drawn as an
outline, plus the crop), the positive and the negative(s) with the changed words marked,
family/target, keep/drop/undecided radio buttons (undecided by default) and a note. The
decisions live in the browser's ``localStorage`` (close and reopen the page at will) and a
button downloads them as ``decisions.csv`` (item_id, decision, note; one row per item).
Keys: ``k`` keep, ``d`` drop, ``u`` undecided, ``j``/Down next, Up previous.

``apply_review_job`` reads such a CSV back: every row is checked (known item id, no
duplicate, decision in keep/drop/undecided; a blank decision is undecided), dropped items
lose all their candidate rows, undecided and unreviewed items are kept, and a summary JSON
counts each (overall and per family/target).

Same inputs, same bytes: items keep the candidates' order, images are encoded the same way
and nothing in the page depends on the time or the machine.
"""

from __future__ import annotations

import base64
import csv
import difflib
import hashlib
import html
import io
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from vlcomp.io import atomic_path, read_parquet_metadata, write_json, write_parquet

Log = Callable[[str], None]
Box = tuple[int, int, int, int]  # x, y, width, height in pixels of the original image

DECISIONS: tuple[str, ...] = ("keep", "drop", "undecided")
DECISION_COLUMNS: tuple[str, ...] = ("item_id", "decision", "note")
THUMB_PX = 256  # longest side of an embedded image or crop
JPEG_QUALITY = 80
SHOW_PROBLEMS = 10  # problems listed in one error message
CANDIDATE_COLUMNS = ("item_id", "image", "text", "is_positive", "family", "target")


# --------------------------------------------------------------------------- items


@dataclass(frozen=True)
class ReviewItem:
    item_id: str
    image: str | None
    positives: tuple[str, ...]
    negatives: tuple[tuple[str, str], ...]  # (text, "family/target")
    kind: str  # the item's family/target ("+"-joined when its negatives differ)
    generator: str


def _kind(family: str | None, target: str | None) -> str:
    return f"{family or '-'}/{target or '-'}"


def review_items(candidates: pl.DataFrame) -> list[ReviewItem]:
    """One ``ReviewItem`` per item_id, in the candidates' order."""
    missing = [c for c in CANDIDATE_COLUMNS if c not in candidates.columns]
    if missing:
        raise ValueError(f"candidates: missing column(s) {missing}")
    rows: dict[str, list[dict[str, Any]]] = {}
    for row in candidates.iter_rows(named=True):
        rows.setdefault(str(row["item_id"]), []).append(row)
    items = []
    for item_id, group in rows.items():
        positives = tuple(str(r["text"]) for r in group if r["is_positive"])
        negatives = tuple(
            (str(r["text"]), _kind(r["family"], r["target"])) for r in group if not r["is_positive"]
        )
        kinds = sorted({k for _, k in negatives}) or sorted(
            {_kind(r["family"], r["target"]) for r in group}
        )
        images = [r["image"] for r in group if r["image"] is not None]
        generators = sorted({str(r.get("generator")) for r in group if r.get("generator")})
        items.append(
            ReviewItem(
                item_id=item_id,
                image=str(images[0]) if images else None,
                positives=positives,
                negatives=negatives,
                kind="+".join(kinds),
                generator=", ".join(generators),
            )
        )
    return items


def read_boxes(boxes: pl.DataFrame | None) -> dict[str, Box | None]:
    """item_id -> box (x, y, width, height) from a boxes table; a null box: whole image."""
    if boxes is None:
        return {}
    missing = [c for c in ("item_id", "x", "y", "width", "height") if c not in boxes.columns]
    if missing:
        raise ValueError(f"boxes: missing column(s) {missing}")
    out: dict[str, Box | None] = {}
    for item_id, x, y, w, h in boxes.select("item_id", "x", "y", "width", "height").iter_rows():
        values = (x, y, w, h)
        if str(item_id) in out:
            raise ValueError(f"boxes: duplicate item_id {item_id!r}")
        if all(v is None for v in values):
            out[str(item_id)] = None
        elif any(v is None for v in values):
            raise ValueError(f"boxes: item {item_id!r} has a partial box {values}")
        else:
            out[str(item_id)] = (int(x), int(y), int(w), int(h))
    return out


# --------------------------------------------------------------------------- images


def _jpeg_data_uri(image: Any) -> tuple[str, tuple[int, int]]:
    """A JPEG data URI of ``image`` shrunk to at most ``THUMB_PX`` a side, and its size."""
    from PIL import Image

    image = image.copy()
    image.thumbnail((THUMB_PX, THUMB_PX), Image.Resampling.LANCZOS)
    buffer = io.BytesIO()
    image.save(buffer, format="JPEG", quality=JPEG_QUALITY)
    uri = "data:image/jpeg;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")
    return uri, image.size


@dataclass(frozen=True)
class Thumb:
    css_class: str
    width: int  # of the displayed thumbnail
    height: int
    source_size: tuple[int, int]  # of the original image


class ImageStore:
    """Each image's thumbnail is made once and becomes one CSS class shared by its items;
    the last decoded image is kept for the crops of the items that follow it."""

    def __init__(self, index: pl.DataFrame) -> None:
        missing = [c for c in ("image_id", "path", "status") if c not in index.columns]
        if missing:
            raise ValueError(f"image index: missing column(s) {missing}")
        detail = index["detail"] if "detail" in index.columns else [None] * index.height
        self.index = {
            str(i): (p, s, d)
            for i, p, s, d in zip(
                index["image_id"], index["path"], index["status"], detail, strict=True
            )
        }
        self.thumbs: dict[str, Thumb | tuple[str, str]] = {}
        self.styles: list[str] = []
        self.originals: dict[str, Any] = {}

    def problem(self, image_id: str | None) -> tuple[str, str] | None:
        """(label, detail) when the image cannot be shown; None when it can."""
        if image_id is None:
            return "image missing", "the item has no image"
        entry = self.index.get(image_id)
        if entry is None:
            return "image missing", f"{image_id}: not in the image index"
        path, status, detail = entry
        if status != "ok" or path is None:
            label = "image unreadable" if status == "unreadable" else "image missing"
            return label, f"{image_id}: {status}: {detail or ''}".rstrip(": ")
        return None

    def thumb(self, image_id: str) -> Thumb | tuple[str, str]:
        """The shared thumbnail, or (label, detail) when the file cannot be decoded."""
        if image_id not in self.thumbs:
            from PIL import Image

            path = self.index[image_id][0]
            try:
                with Image.open(path) as opened:
                    image = opened.convert("RGB")
            except (OSError, SyntaxError, ValueError, Image.DecompressionBombError) as error:
                self.thumbs[image_id] = (
                    "image unreadable",
                    f"{image_id}: {type(error).__name__}: {error}",
                )
            else:
                css_class = f"i{len(self.styles)}"
                uri, (width, height) = _jpeg_data_uri(image)
                self.styles.append(f".{css_class}{{background-image:url({uri})}}")
                self.thumbs[image_id] = Thumb(css_class, width, height, image.size)
                self.originals = {image_id: image}  # only the last one: crops come in runs
        return self.thumbs[image_id]

    def crop_uri(self, image_id: str, box: Box) -> str | None:
        from PIL import Image

        image = self.originals.get(image_id)
        if image is None:
            with Image.open(self.index[image_id][0]) as opened:
                image = opened.convert("RGB")
            self.originals = {image_id: image}
        clipped = clip_box(box, image.size)
        if clipped is None:
            return None
        x0, y0, x1, y1 = clipped
        return _jpeg_data_uri(image.crop((x0, y0, x1, y1)))[0]


def clip_box(box: Box, size: tuple[int, int]) -> tuple[int, int, int, int] | None:
    """(left, top, right, bottom) of ``box`` inside an image of ``size``; None when empty."""
    x, y, width, height = box
    left, top = max(0, x), max(0, y)
    right, bottom = min(size[0], x + width), min(size[1], y + height)
    if width <= 0 or height <= 0 or right <= left or bottom <= top:
        return None
    return left, top, right, bottom


# --------------------------------------------------------------------------- html

_TOKENS = re.compile(r"\s+|\w+|[^\w\s]")


def marked_negative(positive: str, negative: str) -> str:
    """``negative`` escaped, each run of words it does not share with ``positive`` in one
    <mark> (the whitespace around a run stays outside)."""
    a, b = _TOKENS.findall(positive), _TOKENS.findall(negative)
    matcher = difflib.SequenceMatcher(None, [t.lower() for t in a], [t.lower() for t in b], False)
    parts = []
    for op, _, _, j0, j1 in matcher.get_opcodes():
        run = "".join(b[j0:j1])
        core = run.strip()
        if op == "equal" or not core:
            parts.append(html.escape(run))
        else:
            lead, trail = run[: len(run) - len(run.lstrip())], run[len(run.rstrip()) :]
            parts.append(f"{html.escape(lead)}<mark>{html.escape(core)}</mark>{html.escape(trail)}")
    return "".join(parts)


def _pct(value: float) -> str:
    return f"{100.0 * value:.3f}%"


def _media(item: ReviewItem, box: Box | None, images: ImageStore) -> str:
    def problem_html(label: str, detail: str) -> str:
        return (
            f'<div class="missing" title="{html.escape(detail)}">{html.escape(label)}'
            f"<small>{html.escape(detail)}</small></div>"
        )

    problem = images.problem(item.image)
    if problem is not None:
        return problem_html(*problem)
    assert item.image is not None
    thumb = images.thumb(item.image)
    if not isinstance(thumb, Thumb):
        return problem_html(*thumb)
    outline, crop, note = "", "", ""
    if box is not None:
        clipped = clip_box(box, thumb.source_size)
        if clipped is None:
            note = (
                f'<small class="warn">box {html.escape(str(box))} lies outside the '
                f"{thumb.source_size[0]}x{thumb.source_size[1]} image</small>"
            )
        else:
            (w, h), (x0, y0, x1, y1) = thumb.source_size, clipped
            outline = (
                f'<div class="box" style="left:{_pct(x0 / w)};top:{_pct(y0 / h)};'
                f'width:{_pct((x1 - x0) / w)};height:{_pct((y1 - y0) / h)}"></div>'
            )
            uri = images.crop_uri(item.image, box)
            if uri is not None:
                crop = f'<img class="crop" alt="crop of the box" src="{uri}">'
    title = html.escape(item.image)
    return (
        f'<div class="thumb {thumb.css_class}" title="{title}" '
        f'style="width:{thumb.width}px;height:{thumb.height}px">{outline}</div>{crop}{note}'
    )


def _item_html(number: int, item: ReviewItem, box: Box | None, images: ImageStore) -> str:
    esc = html.escape
    positive = item.positives[0] if item.positives else ""
    texts = [
        f'<p class="pos"><span class="tag">positive</span> {esc(text)}</p>'
        for text in item.positives
    ]
    texts += [
        f'<p class="neg"><span class="tag">negative</span> <span class="kind">{esc(kind)}</span>'
        f" {marked_negative(positive, text)}</p>"
        for text, kind in item.negatives
    ]
    radios = "".join(
        f'<label class="r-{d}"><input type="radio" name="d{number}" value="{d}"'
        f'{" checked" if d == "undecided" else ""} autocomplete="off"> {d}'
        f"{' (' + d[0] + ')' if d != 'undecided' else ' (u)'}</label>"
        for d in DECISIONS
    )
    meta = [f"#{number + 1}", f"<code>{esc(item.item_id)}</code>", f"<b>{esc(item.kind)}</b>"]
    if item.generator:
        meta.append(esc(item.generator))
    return (
        f'<section class="item undecided" id="item-{number}" data-id="{esc(item.item_id)}">'
        f'<div class="media">{_media(item, box, images)}</div>'
        f'<div class="texts"><div class="meta">{" · ".join(meta)}</div>{"".join(texts)}'
        f'<div class="controls">{radios}<input class="note" type="text" '
        f'placeholder="note (optional)" autocomplete="off"></div></div></section>'
    )


CSS = """
*{box-sizing:border-box}
body{font:15px/1.4 system-ui,sans-serif;margin:0;background:#f4f4f4;color:#111}
header{position:sticky;top:0;z-index:2;background:#222;color:#eee;padding:8px 16px;
 display:flex;flex-wrap:wrap;gap:8px 20px;align-items:center}
header h1{font-size:17px;margin:0}
header button{font:inherit;padding:4px 10px;cursor:pointer}
header .keys{font-size:12px;color:#bbb}
#progress{font-weight:bold}
main{padding:8px 16px}
.item{display:flex;gap:16px;background:#fff;border:1px solid #ccc;border-left:8px solid #bbb;
 margin:10px 0;padding:10px;scroll-margin-top:70px}
.item.keep{border-left-color:#2a8a2a}
.item.drop{border-left-color:#c0392b;background:#fdf1f0}
.item.current{outline:3px solid #3b7dd8}
body.only-undecided .item.keep,body.only-undecided .item.drop{display:none}
.media{flex:0 0 auto;display:flex;gap:8px;align-items:flex-start}
.thumb{position:relative;background-size:100% 100%;background-repeat:no-repeat;
 border:1px solid #999}
.box{position:absolute;min-width:3px;min-height:3px;outline:2px solid #ff0;
 border:2px solid #e00;box-shadow:0 0 0 1px #000}
.crop{max-width:256px;max-height:256px;border:2px solid #e00}
.missing{width:256px;height:120px;display:flex;flex-direction:column;justify-content:center;
 align-items:center;background:#eee;border:2px dashed #999;color:#555;font-weight:bold;
 text-align:center;padding:6px}
.missing small,.warn{font-weight:normal;font-size:11px;word-break:break-all}
.warn{display:block;color:#a00;max-width:256px}
.texts{flex:1 1 auto;min-width:0}
.meta{font-size:12px;color:#555;margin-bottom:4px}
.texts p{margin:4px 0;padding:4px 8px;border-radius:4px}
.pos{background:#e6f4e6}
.neg{background:#fbe7e5}
.tag{display:inline-block;min-width:70px;font-size:11px;font-weight:bold;text-transform:uppercase;
 color:#fff;padding:1px 6px;border-radius:3px;text-align:center}
.pos .tag{background:#2a8a2a}
.neg .tag{background:#c0392b}
.kind{font-size:11px;color:#555;border:1px solid #c99;border-radius:3px;padding:0 4px}
mark{background:#ffd54f;padding:0 1px}
.controls{margin-top:6px;display:flex;flex-wrap:wrap;gap:4px 14px;align-items:center}
.controls label{cursor:pointer}
.r-keep{color:#1d6b1d}.r-drop{color:#a52a1f}.r-undecided{color:#555}
.note{flex:1 1 200px;font:inherit;padding:2px 6px}
"""

SCRIPT = r"""
(function () {
  "use strict";
  var KEY = document.body.getAttribute("data-key");
  var DECISIONS = ["keep", "drop", "undecided"];
  var items = Array.prototype.slice.call(document.querySelectorAll("section.item"));
  var state = {};
  try {
    state = JSON.parse(window.localStorage.getItem(KEY) || "{}") || {};
  } catch (e) { state = {}; }
  var current = 0;

  function entry(id) {
    var e = state[id];
    if (!e || DECISIONS.indexOf(e.d) < 0) { return {d: "undecided", n: (e && e.n) || ""}; }
    return {d: e.d, n: e.n || ""};
  }
  function save() {
    try { window.localStorage.setItem(KEY, JSON.stringify(state)); } catch (e) { /* none */ }
  }
  function store(id, e) {
    if (e.d === "undecided" && !e.n) { delete state[id]; } else { state[id] = e; }
    save();
  }
  function render(i) {
    var el = items[i], e = entry(el.getAttribute("data-id"));
    el.querySelector('input[value="' + e.d + '"]').checked = true;
    var note = el.querySelector(".note");
    if (note.value !== e.n) { note.value = e.n; }
    el.className = "item " + e.d + (i === current ? " current" : "");
  }
  function progress() {
    var keep = 0, drop = 0;
    items.forEach(function (el) {
      var d = entry(el.getAttribute("data-id")).d;
      if (d === "keep") { keep++; } else if (d === "drop") { drop++; }
    });
    document.getElementById("progress").textContent = (keep + drop) + " / " + items.length;
    document.getElementById("counts").textContent = "keep " + keep + " · drop " + drop;
  }
  function decide(i, d) {
    var id = items[i].getAttribute("data-id"), e = entry(id);
    store(id, {d: d, n: e.n});
    render(i);
    progress();
  }
  function visible(i) { return items[i].offsetParent !== null; }
  function go(i, step, scroll) {
    var j = i;
    while (j >= 0 && j < items.length && !visible(j)) { j += step; }
    if (j < 0 || j >= items.length) { return; }
    var previous = current;
    current = j;
    render(previous);
    render(current);
    if (scroll !== false) { items[current].scrollIntoView({block: "center"}); }
  }
  function quote(s) {
    s = String(s);
    return /[",\r\n]|^\s|\s$/.test(s) ? '"' + s.replace(/"/g, '""') + '"' : s;
  }
  function csvText() {
    var lines = ["item_id,decision,note"];
    items.forEach(function (el) {
      var id = el.getAttribute("data-id"), e = entry(id);
      lines.push([quote(id), e.d, quote(e.n)].join(","));
    });
    return lines.join("\n") + "\n";
  }
  function download() {
    var blob = new Blob([csvText()], {type: "text/csv;charset=utf-8"});
    var url = URL.createObjectURL(blob);
    var a = document.createElement("a");
    a.href = url;
    a.download = "decisions.csv";
    document.body.appendChild(a);
    a.click();
    document.body.removeChild(a);
    setTimeout(function () { URL.revokeObjectURL(url); }, 1000);
  }

  items.forEach(function (el, i) {
    el.addEventListener("change", function (event) {
      if (event.target.type === "radio") { decide(i, event.target.value); }
    });
    el.querySelector(".note").addEventListener("input", function (event) {
      var id = el.getAttribute("data-id"), e = entry(id);
      store(id, {d: e.d, n: event.target.value});
    });
    el.addEventListener("click", function () { if (current !== i) { go(i, 1, false); } });
  });
  document.addEventListener("keydown", function (event) {
    var t = event.target;
    if (t && (t.tagName === "TEXTAREA" || (t.tagName === "INPUT" && t.type === "text"))) {
      if (event.key === "Escape") { t.blur(); }
      return;
    }
    if (event.ctrlKey || event.metaKey || event.altKey || !items.length) { return; }
    var key = event.key;
    if (key === "k") { decide(current, "keep"); go(current + 1, 1); }
    else if (key === "d") { decide(current, "drop"); go(current + 1, 1); }
    else if (key === "u") { decide(current, "undecided"); }
    else if (key === "j" || key === "ArrowDown") { event.preventDefault(); go(current + 1, 1); }
    else if (key === "ArrowUp") { event.preventDefault(); go(current - 1, -1); }
  });
  document.getElementById("download").addEventListener("click", download);
  document.getElementById("only-undecided").addEventListener("change", function (event) {
    document.body.classList.toggle("only-undecided", event.target.checked);
    if (items.length && !visible(current)) { go(current, 1); }
  });
  items.forEach(function (el, i) { render(i); });
  progress();
  window.vlcompReview = {csv: csvText, decide: decide, go: go};
})();
"""


def sheet_html(
    items: Sequence[ReviewItem],
    boxes: Mapping[str, Box | None],
    images: ImageStore,
    benchmark: str,
) -> str:
    """The whole review page."""
    sections = [
        _item_html(n, item, boxes.get(item.item_id), images) for n, item in enumerate(items)
    ]
    digest = hashlib.sha256("\n".join(i.item_id for i in items).encode()).hexdigest()[:16]
    key = f"vlcomp-review/{benchmark}/{digest}"
    title = html.escape(f"Review: {benchmark}")
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width,initial-scale=1">'
        f"<title>{title}</title>\n<style>{CSS}{chr(10).join(images.styles)}\n</style></head>\n"
        f'<body data-key="{html.escape(key)}">\n<header><h1>{title}</h1>'
        '<span>decided <span id="progress">0 / 0</span></span><span id="counts"></span>'
        '<button id="download" type="button">Download decisions.csv</button>'
        '<label><input id="only-undecided" type="checkbox" autocomplete="off"> '
        "only undecided</label>"
        '<span class="keys">keys: k keep · d drop · u undecided · j/&darr; next · &uarr; previous'
        " · decisions stay in this browser until downloaded</span></header>\n<main>\n"
        + "\n".join(sections)
        + f"\n</main>\n<script>{SCRIPT}</script>\n</body></html>\n"
    )


def review_sheet_job(
    candidates: str,
    boxes: str | None,
    image_index: str,
    out_html: str,
    benchmark: str,
    log: Log = print,
) -> None:
    """Write the static HTML review sheet of a benchmark's candidates (see the module doc)."""
    items = review_items(pl.read_parquet(candidates))
    box_of = read_boxes(pl.read_parquet(boxes)) if boxes else {}
    images = ImageStore(pl.read_parquet(image_index))
    page = sheet_html(items, box_of, images, benchmark)
    with atomic_path(out_html) as tmp:
        tmp.write_bytes(page.encode("utf-8"))
    shown = Counter((images.problem(i.image) or ("image shown", ""))[0] for i in items)
    log(
        f"review sheet of {benchmark}: {len(items)} items, {len(images.styles)} distinct images "
        f"embedded, {len(page.encode()) / 1e3:.0f} kB -> {out_html}"
    )
    for label, count in sorted(shown.items()):
        log(f"  {label}: {count} items")


# --------------------------------------------------------------------------- decisions


class ReviewError(ValueError):
    """A decisions file that cannot be applied; the message names the file and the rows."""


def read_decisions(path: str | Path, known: Sequence[str]) -> dict[str, tuple[str, str]]:
    """item_id -> (decision, note) from a decisions CSV; every problem is reported at once
    with the file, the row (1 = first data row) and the line."""
    known_ids = set(known)
    problems: list[str] = []
    out: dict[str, tuple[str, str]] = {}
    first_row: dict[str, int] = {}
    with open(path, encoding="utf-8-sig", newline="") as handle:
        reader = csv.DictReader(handle)
        header = reader.fieldnames
        if header is None:
            raise ReviewError(
                f"{path}: empty file; expected the header {','.join(DECISION_COLUMNS)}"
            )
        missing = [c for c in ("item_id", "decision") if c not in header]
        if missing:
            raise ReviewError(f"{path}: missing column(s) {missing} (header: {header})")
        for number, row in enumerate(reader, start=1):
            where = f"{path}: row {number} (line {reader.line_num})"
            item_id, raw = row.get("item_id"), row.get("decision")
            if item_id is None or raw is None:
                problems.append(f"{where}: too few fields")
                continue
            decision = raw.strip().lower() or "undecided"
            note = (row.get("note") or "").strip()
            if decision not in DECISIONS:
                problems.append(
                    f"{where}: decision {raw!r} of item {item_id!r} is not one of {list(DECISIONS)}"
                )
            elif item_id not in known_ids:
                problems.append(f"{where}: unknown item_id {item_id!r} (not in the candidates)")
            elif item_id in out:
                problems.append(
                    f"{where}: duplicate item_id {item_id!r} (first in row {first_row[item_id]})"
                )
            else:
                out[item_id] = (decision, note)
                first_row[item_id] = number
    if problems:
        shown = "\n  ".join(problems[:SHOW_PROBLEMS])
        extra = len(problems) - SHOW_PROBLEMS
        more = f"\n  ... and {extra} more" if extra > 0 else ""
        raise ReviewError(f"{len(problems)} problem(s) in the decisions file:\n  {shown}{more}")
    return out


def _counts(decisions: Sequence[str]) -> dict[str, int]:
    counted = Counter(decisions)
    return {
        "n_items": len(decisions),
        "kept": counted["keep"],
        "dropped": counted["drop"],
        "undecided": counted["undecided"],
        "not_reviewed": counted["not_reviewed"],
        "n_items_out": len(decisions) - counted["drop"],
    }


def review_summary(
    items: Sequence[ReviewItem], decisions: Mapping[str, tuple[str, str]]
) -> dict[str, Any]:
    """Counts of explicit keep, drop, undecided and not reviewed (the last two are kept);
    overall and per family/target (an item's negatives' family/target)."""
    decided = [decisions.get(i.item_id, ("not_reviewed", ""))[0] for i in items]
    by_kind: dict[str, list[str]] = {}
    for item, decision in zip(items, decided, strict=True):
        by_kind.setdefault(item.kind, []).append(decision)
    return {
        **_counts(decided),
        "by_family_target": {kind: _counts(d) for kind, d in sorted(by_kind.items())},
        "notes": sum(1 for _, note in decisions.values() if note),
        "dropped_items": [
            {"item_id": i.item_id, "kind": i.kind, "note": decisions[i.item_id][1]}
            for i, d in zip(items, decided, strict=True)
            if d == "drop"
        ],
    }


def apply_review_job(
    candidates: str,
    decisions_csv: str | None,
    candidates_out: str,
    summary_out: str,
    log: Log = print,
) -> None:
    """Filter ``candidates`` by a decisions CSV (dropped items lose all their rows; undecided
    and unreviewed items are kept) and write a summary JSON of the counts. Without a
    decisions file every item is kept, and the summary says nothing was reviewed."""
    frame = pl.read_parquet(candidates)
    items = review_items(frame)
    if decisions_csv is None:
        summary = {**review_summary(items, {}), "decisions_file": None, "n_rows_in": frame.height}
        write_parquet(frame, candidates_out, metadata=read_parquet_metadata(candidates))
        write_json({**summary, "n_rows_out": frame.height}, summary_out)
        log(f"no review decisions: all {summary['n_items']} items kept (not reviewed)")
        return
    decisions = read_decisions(decisions_csv, [i.item_id for i in items])
    dropped = [item_id for item_id, (d, _) in decisions.items() if d == "drop"]
    kept = frame.filter(~pl.col("item_id").cast(pl.String).is_in(dropped))
    digest = hashlib.sha256(Path(decisions_csv).read_bytes()).hexdigest()
    summary = {
        **review_summary(items, decisions),
        "decisions_file": str(decisions_csv),
        "decisions_sha256": digest,
        "n_rows_in": frame.height,
        "n_rows_out": kept.height,
    }
    metadata = {
        **read_parquet_metadata(candidates),
        "review_decisions_sha256": digest,
        "review_dropped_items": str(len(dropped)),
    }
    write_parquet(kept, candidates_out, metadata=metadata)
    write_json(summary, summary_out)
    log(
        f"review {decisions_csv}: {summary['n_items']} items: kept {summary['kept']}, dropped "
        f"{summary['dropped']}, undecided {summary['undecided']}, not reviewed "
        f"{summary['not_reviewed']} -> {kept.height} of {frame.height} rows"
    )
    for kind, counts in summary["by_family_target"].items():
        log(f"  {kind}: {counts}")
