"""The image index decodes every file whole and caches the result per (path, size, mtime)
(vlcomp.splits.items.ImageChecks); real photographs, a truncated JPEG, a garbage file."""

from __future__ import annotations

import importlib.util
import io
import os
import shutil
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from PIL import Image, ImageFile

from vlcomp.io import read_parquet_metadata
from vlcomp.splits import items
from vlcomp.splits.items import ImageChecks, image_index_job


def photo(name: str) -> bytes:
    """The bytes of a photograph shipped with scikit-image (``skimage/data``) when it is
    installed, else a noisy picture of the same format written by PIL."""
    spec = importlib.util.find_spec("skimage")
    if spec is not None and spec.submodule_search_locations:
        path = Path(spec.submodule_search_locations[0], "data", name)
        if path.is_file():
            return path.read_bytes()
    rng = np.random.default_rng(len(name))
    smooth = Image.fromarray(rng.integers(0, 256, (6, 8, 3), dtype=np.uint8)).resize((320, 240))
    pixels = np.asarray(smooth, dtype=np.float32) + rng.normal(0, 8, (240, 320, 3))
    out = io.BytesIO()
    Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8)).save(
        out, "JPEG" if name.endswith(".jpg") else "PNG", quality=90
    )
    return out.getvalue()


@pytest.fixture
def photos(tmp_path: Path) -> tuple[Path, str]:
    """images/: two good photos, a JPEG cut in half, a PNG cut in half, a garbage file;
    and the references Parquet naming them."""
    images = tmp_path / "images"
    images.mkdir()
    rocket, chelsea = photo("rocket.jpg"), photo("chelsea.png")
    (images / "rocket.jpg").write_bytes(rocket)
    (images / "chelsea.png").write_bytes(chelsea)
    (images / "cut.jpg").write_bytes(rocket[: len(rocket) // 2])
    (images / "cut.png").write_bytes(chelsea[: len(chelsea) // 2])
    (images / "junk.jpg").write_bytes(b"GIF89a but not really " * 40)
    refs = tmp_path / "refs.parquet"
    ids = ["rocket", "chelsea", "cut", "cut.png", "junk", "gone"]
    pl.DataFrame({"image": ids}).write_parquet(refs)
    return images, str(refs)


def rows(path: Path) -> dict[str, dict]:
    return {r["image_id"]: r for r in pl.read_parquet(path).iter_rows(named=True)}


def test_truncated_and_undecodable_files_are_unreadable_with_the_error(photos, tmp_path):
    images, refs = photos
    cut = images / "cut.jpg"
    with Image.open(cut) as image:  # what the old header check saw: a valid JPEG
        image.verify()
    out = tmp_path / "index.parquet"
    summary = image_index_job("aro", {"images": str(images)}, [refs], str(out), lambda _: None)
    got = rows(out)
    assert summary == {"images": 6, "ok": 2, "missing": 1, "unreadable": 3}
    with Image.open(images / "rocket.jpg") as image:
        assert got["rocket"]["detail"] == f"{image.width}x{image.height}"
    assert got["rocket"]["status"] == got["chelsea"]["status"] == "ok"
    assert got["rocket"]["path"] == str(images / "rocket.jpg")
    for image_id in ("cut", "cut.png"):
        assert got[image_id]["status"] == "unreadable" and got[image_id]["path"] is None
        assert "OSError: image file is truncated" in got[image_id]["detail"]
    assert got["cut"]["detail"].startswith(f"{cut}: ")
    assert got["junk"]["status"] == "unreadable"
    assert "UnidentifiedImageError" in got["junk"]["detail"]
    assert got["gone"]["status"] == "missing"


def test_a_lenient_pil_setting_does_not_let_a_truncated_file_through(photos, tmp_path):
    images, refs = photos
    ImageFile.LOAD_TRUNCATED_IMAGES = True  # as some other library may have left it
    try:
        out = tmp_path / "index.parquet"
        image_index_job("aro", {"images": str(images)}, [refs], str(out), lambda _: None)
        assert ImageFile.LOAD_TRUNCATED_IMAGES is True  # restored after the index
    finally:
        ImageFile.LOAD_TRUNCATED_IMAGES = False
    assert rows(out)["cut"]["status"] == "unreadable"


def test_rerun_takes_unchanged_files_from_the_cache(photos, tmp_path, monkeypatch):
    images, refs = photos
    decoded: list[str] = []
    real = items.check_image

    def counting(path: Path) -> tuple[str, str]:
        decoded.append(path.name)
        return real(path)

    monkeypatch.setattr(items, "check_image", counting)
    source = {"images": str(images)}
    cache = tmp_path / "cache" / "checks.parquet"
    lines: list[str] = []
    cold, warm, plain = (tmp_path / f"{name}.parquet" for name in ("cold", "warm", "plain"))
    image_index_job("aro", source, [refs], str(cold), lines.append, cache=str(cache), threads=4)
    assert sorted(decoded) == ["chelsea.png", "cut.jpg", "cut.png", "junk.jpg", "rocket.jpg"]
    assert any("5 files decoded, 0 unchanged" in line for line in lines)

    decoded.clear()
    image_index_job("aro", source, [refs], str(warm), lines.append, cache=str(cache), threads=1)
    assert decoded == []
    assert any("0 files decoded, 5 unchanged" in line for line in lines)
    image_index_job("aro", source, [refs], str(plain), lambda _: None)
    assert cold.read_bytes() == warm.read_bytes() == plain.read_bytes()
    assert read_parquet_metadata(cache)["vlcomp.image_check"] == items.check_version()

    # Mending a file changes its size and mtime: decoded again, now ok.
    decoded.clear()
    shutil.copyfile(images / "rocket.jpg", images / "cut.jpg")
    image_index_job("aro", source, [refs], str(warm), lambda _: None, cache=str(cache))
    assert decoded == ["cut.jpg"]
    assert rows(warm)["cut"]["status"] == "ok"

    # Same size, new mtime: decoded again too.
    decoded.clear()
    stat = (images / "junk.jpg").stat()
    os.utime(images / "junk.jpg", ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    image_index_job("aro", source, [refs], str(warm), lambda _: None, cache=str(cache))
    assert decoded == ["junk.jpg"]


def test_a_cache_that_cannot_be_trusted_is_ignored_saying_why(photos, tmp_path, monkeypatch):
    images, refs = photos
    source, out = {"images": str(images)}, str(tmp_path / "index.parquet")
    cache = tmp_path / "checks.parquet"
    cache.write_bytes(b"not parquet")
    lines: list[str] = []
    image_index_job("aro", source, [refs], out, lines.append, cache=str(cache))
    assert any(f"cache {cache} unreadable" in line for line in lines)
    assert any("5 files decoded" in line for line in lines)

    monkeypatch.setattr(items, "IMAGE_CHECK_VERSION", "a later check")
    lines.clear()
    image_index_job("aro", source, [refs], out, lines.append, cache=str(cache))
    assert any("decoding every file again" in line for line in lines)
    assert any("5 files decoded" in line for line in lines)


def test_checks_without_a_cache_keep_nothing(tmp_path):
    path = tmp_path / "a.png"
    path.write_bytes(photo("chelsea.png"))
    checks = ImageChecks()
    assert checks(path)[0] == "ok" and checks(path)[0] == "ok"
    assert (checks.decoded, checks.hits) == (2, 0)
    checks.save()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.png"]
    gone = checks(tmp_path / "b.png")
    assert gone[0] == "unreadable" and "FileNotFoundError" in gone[1]


def test_benchmark_times_every_path_and_reports_them(photos, tmp_path):
    from vlcomp_dev.bench.report import image_index_section
    from vlcomp_dev.bench.splits import PATHS, run_benchmark

    made = run_benchmark(n_images=5, threads=2, repeats=1, log=lambda _: None)
    assert made["images"] == 5 and set(made["ms_per_image"]) == set(PATHS)
    assert made["unreadable"] == dict.fromkeys(PATHS, 0)
    # every path measured once per repeat: a count of measurements, not a time
    repeats_recorded = {path: len(runs) for path, runs in made["seconds_all_repeats"].items()}
    assert repeats_recorded == dict.fromkeys(PATHS, 1)
    section = "\n".join(image_index_section(made))
    assert section.startswith("## Image index")
    assert f"| {made['ms_per_image']['cold']:.3f} |" in section

    images, _ = photos  # the header check finds the garbage and the cut PNG, not the cut JPEG
    mine = run_benchmark(n_images=10, threads=1, repeats=1, folder=images, log=lambda _: None)
    assert mine["images"] == 5
    assert mine["unreadable"] == {
        "header_1_thread": 2, "header": 2, "cold_1_thread": 3, "cold": 3, "warm": 3
    }  # fmt: skip
