"""SugarCrepe stage-2 review: the static HTML sheet and the import of its decisions CSV."""

from __future__ import annotations

import base64
import csv
import html
import io
import json
import re
import shutil
import subprocess
from pathlib import Path

import polars as pl
import pytest
from PIL import Image, ImageDraw

from vlcomp.contracts import CANDIDATES_SCHEMA
from vlcomp.negatives.llm.review import (
    THUMB_PX,
    ReviewError,
    apply_review_job,
    marked_negative,
    review_sheet_job,
)

NASTY = '<b>&"</b>'
INDEX_SCHEMA = {"image_id": pl.String, "path": pl.String, "status": pl.String, "detail": pl.String}
BOXES_SCHEMA = {
    "item_id": pl.String,
    "x": pl.Int64,
    "y": pl.Int64,
    "width": pl.Int64,
    "height": pl.Int64,
}


def candidate_rows() -> list[dict]:
    def row(item, image, text, positive, family, target):
        return {
            "benchmark": "coco_llm",
            "item_id": item,
            "image": image,
            "text": text,
            "is_positive": positive,
            "family": family,
            "target": target,
            "generator": "llm:gpt-4o-mini",
            "provenance": "prompt v1",
        }

    return [
        row("i1", "a.png", "a red cup on a table", True, "replace", "att"),
        row("i1", "a.png", "a blue cup on a table", False, "replace", "att"),
        row("i2", "b.jpg", "a dog chasing a cat", True, "swap", "obj"),
        row("i2", "b.jpg", "a cat chasing a dog", False, "swap", "obj"),
        row("i3", "gone.jpg", "a man riding a horse", True, "replace", "rel"),
        row("i3", "gone.jpg", "a man feeding a horse", False, "replace", "rel"),
        row("i4", "a.png", f"a sign reading {NASTY}", True, "add", "obj"),
        row("i4", "a.png", f"a sign reading {NASTY} and a hat", False, "add", "obj"),
        row("i4", "a.png", "a sign and a hat", False, "replace", "obj"),
        row("i5", "bad.png", "two birds on a wire", True, "replace", "obj"),
        row("i5", "bad.png", "two planes on a wire", False, "replace", "obj"),
        row("i6", "nowhere.png", "a bowl of soup", True, "add", "att"),
        row("i6", "nowhere.png", "a hot bowl of soup", False, "add", "att"),
    ]


@pytest.fixture
def inputs(tmp_path: Path) -> dict[str, str]:
    images = tmp_path / "images"
    images.mkdir()
    a = Image.new("RGB", (640, 480), (230, 230, 230))
    draw = ImageDraw.Draw(a)
    draw.rectangle((100, 100, 300, 260), fill=(200, 30, 30))
    draw.ellipse((380, 200, 560, 420), fill=(30, 60, 200))
    a.save(images / "a.png")
    b = Image.new("RGB", (300, 500), (40, 140, 60))
    ImageDraw.Draw(b).polygon([(150, 40), (280, 460), (20, 460)], fill=(250, 220, 40))
    b.save(images / "b.jpg", quality=90)
    (images / "bad.png").write_bytes(b"not an image at all")
    index = pl.DataFrame(
        [
            ("a.png", str(images / "a.png"), "ok", "640x480"),
            ("b.jpg", str(images / "b.jpg"), "ok", "300x500"),
            ("gone.jpg", None, "missing", f"tried {images / 'gone.jpg'}"),
            ("bad.png", str(images / "bad.png"), "ok", "1x1"),  # broken after indexing
        ],
        schema=INDEX_SCHEMA,
        orient="row",
    )
    boxes = pl.DataFrame(
        [
            ("i1", 100, 100, 200, 160),
            ("i2", None, None, None, None),
            ("i3", None, None, None, None),
            ("i4", 600, 400, 100, 100),  # partly outside: clipped
            ("i5", None, None, None, None),
            ("i6", None, None, None, None),
        ],
        schema=BOXES_SCHEMA,
        orient="row",
    )
    paths = {
        "candidates": str(tmp_path / "candidates.parquet"),
        "boxes": str(tmp_path / "boxes.parquet"),
        "index": str(tmp_path / "images.parquet"),
        "html": str(tmp_path / "review" / "sheet.html"),
    }
    pl.DataFrame(candidate_rows(), schema=CANDIDATES_SCHEMA).write_parquet(paths["candidates"])
    boxes.write_parquet(paths["boxes"])
    index.write_parquet(paths["index"])
    return paths


def make_sheet(inputs: dict[str, str], out: str | None = None) -> str:
    out = out or inputs["html"]
    review_sheet_job(
        inputs["candidates"], inputs["boxes"], inputs["index"], out, "coco_llm", log=lambda _: None
    )
    return Path(out).read_text(encoding="utf-8")


def sections(page: str) -> dict[str, str]:
    found = re.findall(
        r'<section class="item[^"]*" id="item-\d+" data-id="([^"]*)">(.*?)</section>', page, re.S
    )
    return {html.unescape(item_id): body for item_id, body in found}


# --------------------------------------------------------------------------- sheet


def test_sheet_has_every_item_with_roles_kinds_and_controls(inputs) -> None:
    page = make_sheet(inputs)
    items = sections(page)
    assert list(items) == ["i1", "i2", "i3", "i4", "i5", "i6"]  # the candidates' order
    for body in items.values():
        assert body.count('class="pos"') == 1
        assert 'value="keep"' in body and 'value="drop"' in body
        assert re.search(r'value="undecided" checked', body)  # undecided by default
        assert not re.search(r'value="(keep|drop)" checked', body)
        assert 'class="note"' in body
    assert items["i4"].count('class="neg"') == 2  # both negatives of a multi-negative item
    assert "add/obj+replace/obj" in items["i4"]
    assert ">replace/att<" in items["i1"] and ">swap/obj<" in items["i2"]
    assert "<mark>blue</mark>" in items["i1"]  # the changed word is marked
    assert "Download decisions.csv" in page and "localStorage" in page
    assert 'id="progress"' in page
    assert "llm:gpt-4o-mini" in page


def test_sheet_escapes_captions(inputs) -> None:
    page = make_sheet(inputs)
    assert NASTY not in page
    assert "&lt;b&gt;&amp;&quot;&lt;/b&gt;" in sections(page)["i4"]
    assert marked_negative("a c", f"a {NASTY}") == "a <mark>&lt;b&gt;&amp;&quot;&lt;/b&gt;</mark>"
    # one mark per changed run; punctuation and spaces around it stay unmarked
    assert marked_negative("a cup.", "a cup and a hat.") == "a cup <mark>and a hat</mark>."


def test_sheet_marks_missing_and_unreadable_images(inputs) -> None:
    items = sections(make_sheet(inputs))
    assert "image missing" in items["i3"]  # status missing in the index
    assert "image missing" in items["i6"]  # not in the index at all
    assert "not in the image index" in items["i6"]
    assert "image unreadable" in items["i5"]  # indexed, but the file does not decode
    for item_id in ("i1", "i2", "i4"):
        assert "image missing" not in items[item_id] and 'class="thumb' in items[item_id]


def test_sheet_embeds_small_images_boxes_and_no_network(inputs) -> None:
    page = make_sheet(inputs)
    assert "http://" not in page and "https://" not in page and "//cdn" not in page
    assert "<link" not in page and 'src="http' not in page
    uris = re.findall(r"data:image/jpeg;base64,([A-Za-z0-9+/=]+)", page)
    styles = re.findall(r"\.i\d+\{background-image", page)
    assert len(styles) == 2  # a.png shared by i1 and i4, b.jpg: each image embedded once
    assert len(uris) == 2 + 2  # plus the crops of i1 and i4
    for uri in uris:
        image = Image.open(io.BytesIO(base64.b64decode(uri)))
        assert image.format == "JPEG" and max(image.size) <= THUMB_PX
    i1 = sections(page)["i1"]
    # box (100, 100, 200, 160) of a 640x480 image, as percentages; the thumbnail is 256x192
    assert 'style="left:15.625%;top:20.833%;width:31.250%;height:33.333%"' in i1
    assert "width:256px;height:192px" in i1
    assert 'class="crop"' in i1 and 'class="crop"' not in sections(page)["i2"]
    # i4's box (600, 400, 100, 100) is clipped to the image: (600, 400)-(640, 480)
    assert "left:93.750%;top:83.333%;width:6.250%;height:16.667%" in sections(page)["i4"]


def test_sheet_is_byte_identical_on_rerun(inputs, tmp_path) -> None:
    first = make_sheet(inputs)
    second = make_sheet(inputs, str(tmp_path / "again.html"))
    assert Path(inputs["html"]).read_bytes() == (tmp_path / "again.html").read_bytes()
    assert first == second


def test_sheet_without_boxes(inputs, tmp_path) -> None:
    out = tmp_path / "nobox.html"
    review_sheet_job(inputs["candidates"], None, inputs["index"], str(out), "b", log=print)
    page = out.read_text()
    assert len(sections(page)) == 6 and 'class="box"' not in page and 'class="crop"' not in page


# --------------------------------------------------------------------------- decisions


def write_csv(path: Path, rows: list[list[str]], header=("item_id", "decision", "note")) -> str:
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)
    return str(path)


def apply(inputs, decisions: str, tmp_path: Path) -> tuple[pl.DataFrame, dict]:
    out, summary = tmp_path / "kept.parquet", tmp_path / "summary.json"
    apply_review_job(inputs["candidates"], decisions, str(out), str(summary), log=print)
    return pl.read_parquet(out), json.loads(summary.read_text())


def test_apply_review_filters_dropped_and_keeps_the_rest(inputs, tmp_path) -> None:
    decisions = write_csv(
        tmp_path / "decisions.csv",
        [
            ["i1", "keep", ""],
            ["i2", "drop", 'not a valid swap, says "cat", too'],
            ["i3", "undecided", ""],
            ["i4", "DROP ", "two changes"],  # case and spaces are forgiven
            ["i5", "", "blank = undecided"],
        ],
    )  # i6 is not in the file: not reviewed
    kept, summary = apply(inputs, decisions, tmp_path)
    assert kept["item_id"].unique(maintain_order=True).to_list() == ["i1", "i3", "i5", "i6"]
    assert kept.height == 13 - 2 - 3
    original = pl.read_parquet(inputs["candidates"])
    assert kept.equals(original.filter(~pl.col("item_id").is_in(["i2", "i4"])))
    assert {k: summary[k] for k in ("n_items", "kept", "dropped", "undecided", "not_reviewed")} == {
        "n_items": 6,
        "kept": 1,
        "dropped": 2,
        "undecided": 2,
        "not_reviewed": 1,
    }
    assert summary["n_items_out"] == 4 and summary["n_rows_out"] == kept.height
    assert summary["by_family_target"]["swap/obj"] == {
        "n_items": 1,
        "kept": 0,
        "dropped": 1,
        "undecided": 0,
        "not_reviewed": 0,
        "n_items_out": 0,
    }
    assert summary["by_family_target"]["add/att"]["not_reviewed"] == 1
    assert summary["by_family_target"]["replace/obj"]["undecided"] == 1
    assert [d["item_id"] for d in summary["dropped_items"]] == ["i2", "i4"]
    assert summary["dropped_items"][0]["note"] == 'not a valid swap, says "cat", too'
    assert summary["notes"] == 3


def test_apply_review_empty_decisions_keeps_everything(inputs, tmp_path) -> None:
    kept, summary = apply(inputs, write_csv(tmp_path / "d.csv", []), tmp_path)
    assert kept.height == 13 and summary["not_reviewed"] == 6 and summary["dropped"] == 0


def test_apply_review_accepts_a_spreadsheet_bom(inputs, tmp_path) -> None:
    path = tmp_path / "excel.csv"
    path.write_bytes("\ufeffitem_id,decision,note\r\ni1,drop,x\r\n".encode())
    kept, summary = apply(inputs, str(path), tmp_path)
    assert summary["dropped"] == 1 and "i1" not in kept["item_id"].to_list()


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        ([["i1", "keep", ""], ["i2", "maybe", ""]], r"row 2 \(line 3\): decision 'maybe'"),
        ([["i1", "keep", ""], ["zz9", "drop", ""]], r"row 2 \(line 3\): unknown item_id 'zz9'"),
        (
            [["i1", "keep", ""], ["i1", "drop", ""]],
            r"row 2 \(line 3\): duplicate item_id 'i1'.*row 1",
        ),
    ],
)
def test_apply_review_errors_name_file_row_and_reason(inputs, tmp_path, rows, message) -> None:
    decisions = write_csv(tmp_path / "bad decisions.csv", rows)
    out = tmp_path / "kept.parquet"
    with pytest.raises(ReviewError, match=r"bad decisions\.csv: " + message):
        apply_review_job(inputs["candidates"], decisions, str(out), str(tmp_path / "s.json"))
    assert not out.exists()  # nothing written on error


def test_apply_review_reports_every_problem_and_bad_headers(inputs, tmp_path) -> None:
    rows = [["x1", "keep", ""], ["i1", "nope", ""], ["i2", "keep", ""], ["i2", "keep", ""]]
    with pytest.raises(ReviewError, match="3 problem") as error:
        apply(inputs, write_csv(tmp_path / "d.csv", rows), tmp_path)
    assert (
        "row 1" in str(error.value) and "row 2" in str(error.value) and "row 4" in str(error.value)
    )
    headless = write_csv(tmp_path / "h.csv", [["i1", "keep"]], header=("id", "verdict"))
    with pytest.raises(ReviewError, match=r"h\.csv: missing column\(s\) \['item_id', 'decision'\]"):
        apply(inputs, headless, tmp_path)
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    with pytest.raises(ReviewError, match=r"empty\.csv: empty file"):
        apply(inputs, str(empty), tmp_path)


# --------------------------------------------------------------------------- real browser

CHROMIUM = next(
    (p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None
)
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None,
    reason="chromium not installed (Debian: apt-get install chromium); the review sheet's "
    "real-browser check is skipped",
)

# Appended to a copy of the sheet: drives it with key presses and a typed note, then puts
# the CSV the download button would save into the page for --dump-dom to show.
DRIVER = """<script>
(function () {
  function press(key) { document.dispatchEvent(new KeyboardEvent("keydown", {key: key})); }
  press("k");                       // i1 keep, moves to i2
  press("d");                       // i2 drop, moves to i3
  press("j"); press("ArrowDown");   // skip i3 and i4
  press("d");                       // i5 drop
  var note = document.querySelectorAll(".note")[1];
  note.value = 'swap, "wrong"';
  note.dispatchEvent(new Event("input", {bubbles: true}));
  var out = document.createElement("pre");
  out.id = "driver-out";
  out.textContent = window.vlcompReview.csv();
  document.body.appendChild(out);
  var p = document.createElement("p");
  p.id = "driver-progress";
  p.textContent = document.getElementById("progress").textContent;
  document.body.appendChild(p);
})();
</script>
"""


# Shows the CSV of what the page restored from localStorage, pressing nothing.
DUMPER = """<script>
(function () {
  var out = document.createElement("pre");
  out.id = "driver-out";
  out.textContent = window.vlcompReview.csv();
  document.body.appendChild(out);
})();
</script>
"""


def dumped_csv(dom: str) -> str:
    """The CSV text a driver script put into the page."""
    found = re.search(r'<pre id="driver-out">(.*?)</pre>', dom, re.S)
    assert found, dom[-2000:]
    return html.unescape(found.group(1))


def chromium(*args: str, profile: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--disable-gpu",
            "--no-sandbox",
            "--no-first-run",
            f"--user-data-dir={profile}",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )


@needs_chromium
def test_sheet_in_a_real_headless_browser(inputs, tmp_path) -> None:
    page = make_sheet(inputs)
    driven = tmp_path / "review" / "driven.html"
    driven.write_text(page.replace("</body>", DRIVER + "</body>"), encoding="utf-8")
    result = chromium("--dump-dom", driven.as_uri(), profile=tmp_path / "profile")
    assert result.returncode == 0, result.stderr[-2000:]
    dom = result.stdout
    assert re.search(r'<p id="driver-progress">3 / 6</p>', dom), dom[-2000:]
    text = dumped_csv(dom)
    rows = list(csv.reader(io.StringIO(text)))
    assert rows[0] == ["item_id", "decision", "note"]
    assert rows[1:] == [
        ["i1", "keep", ""],
        ["i2", "drop", 'swap, "wrong"'],
        ["i3", "undecided", ""],
        ["i4", "undecided", ""],
        ["i5", "drop", ""],
        ["i6", "undecided", ""],
    ]
    # Closed and reopened (a new browser process on the same profile), the page restores
    # the decisions from localStorage.
    reopened = tmp_path / "review" / "reopened.html"
    reopened.write_text(page.replace("</body>", DUMPER + "</body>"), encoding="utf-8")
    again = chromium("--dump-dom", reopened.as_uri(), profile=tmp_path / "profile")
    assert again.returncode == 0, again.stderr[-2000:]
    assert dumped_csv(again.stdout) == text
    # The browser's CSV is what apply_review reads.
    decisions = tmp_path / "decisions.csv"
    decisions.write_bytes(text.encode("utf-8"))  # as the Blob download writes it
    kept, summary = apply(inputs, str(decisions), tmp_path)
    assert summary["dropped"] == 2 and summary["kept"] == 1 and summary["undecided"] == 3
    assert kept["item_id"].unique(maintain_order=True).to_list() == ["i1", "i3", "i4", "i6"]
    # It renders: a screenshot of the undriven sheet is a real PNG of the window's size.
    shot = tmp_path / "sheet.png"
    result = chromium(
        f"--screenshot={shot}",
        "--window-size=1200,1600",
        Path(inputs["html"]).as_uri(),
        profile=tmp_path / "profile2",
    )
    assert result.returncode == 0 and shot.exists(), result.stderr[-2000:]
    assert Image.open(shot).size == (1200, 1600)


def test_without_decisions_everything_is_kept_and_said(tmp_path):
    from vlcomp.contracts import CANDIDATES_SCHEMA

    rows = [
        ("b", "i1", "1", "a red car", True, "replace", "att", "llm:m", ""),
        ("b", "i1", "1", "a blue car", False, "replace", "att", "llm:m", ""),
    ]
    frame = pl.DataFrame(rows, schema=CANDIDATES_SCHEMA, orient="row")
    frame.write_parquet(tmp_path / "c.parquet")
    apply_review_job(
        str(tmp_path / "c.parquet"), None, str(tmp_path / "out.parquet"), str(tmp_path / "s.json")
    )
    assert pl.read_parquet(tmp_path / "out.parquet").equals(frame)
    summary = json.loads((tmp_path / "s.json").read_text())
    assert summary["decisions_file"] is None
    assert summary["not_reviewed"] == 1 and summary["dropped"] == 0
