"""CLIP_benchmark 1.6.2 on vlcomp's SugarCrepe export of a small run: its own command line,
loader and evaluation, in float32, score every record as vlcomp does but the ties, which
vlcomp counts wrong and CLIP_benchmark either way (argmax of two float32 scores that its
product rounds alike or one ulp apart), and which ``vlcomp.export.clip_benchmark`` lists."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
import yaml
from clip_benchmark.datasets.builder import build_dataset, get_dataset_collate_fn
from clip_benchmark.metrics import image_caption_selection
from clip_benchmark.models import load_clip
from torch.utils.data import DataLoader, Subset

from tests.integration.test_workflow import SMALL_CONFIG
from vlcomp.export.clip_benchmark import format_ties, register_architectures, tie_table

pytestmark = pytest.mark.integration

MODEL = "world_cc12m"
BENCHMARK = "pairs"
EXPORT = f"results/export/sugarcrepe/{BENCHMARK}"
PREDICTIONS = f"results/metrics/{MODEL}/{BENCHMARK}_predictions.parquet"
METRICS = f"results/metrics/{MODEL}/{BENCHMARK}.parquet"
CHECKPOINT = f"results/models/{MODEL}/checkpoint.pt"


@pytest.fixture(scope="module")
def run(small_run):
    """The small run: its pair benchmark, SugarCrepe export and one model's scores."""
    for path in (EXPORT, METRICS, PREDICTIONS, CHECKPOINT):
        assert (small_run / path).exists(), path
    return small_run


@pytest.fixture(scope="module")
def arch():
    return yaml.safe_load(SMALL_CONFIG.read_text())["models"][MODEL]["open_clip"]


@pytest.fixture(scope="module")
def clip_benchmark_model(run, arch):
    """The run's model as CLIP_benchmark loads it (``clip_benchmark.models.load_clip``)."""
    register_architectures()
    model, transform, tokenizer = load_clip(
        model_type="open_clip",
        model_name=arch,
        pretrained=str(run / CHECKPOINT),
        cache_dir=None,
        device="cpu",
    )
    model.eval()
    return model, transform, tokenizer


def clip_benchmark_acc(loaded, export: Path, kind: str, records=None, amp: bool = False) -> float:
    """CLIP_benchmark's own ``sugar_crepe/<kind>`` loader and evaluation on ``export`` (only
    ``records``, 0-based record positions, where given), as its CLI runs them."""
    model, transform, tokenizer = loaded
    name = f"sugar_crepe/{kind}"
    # task: what the CLI passes for sugar_crepe (its "auto")
    dataset = build_dataset(
        name, root=str(export), transform=transform, split="test", task="image_caption_selection"
    )
    if records is not None:
        dataset = Subset(dataset, list(records))
    loader = DataLoader(
        dataset,
        batch_size=64,
        shuffle=False,
        num_workers=0,
        collate_fn=get_dataset_collate_fn(name),
    )
    return image_caption_selection.evaluate(model, loader, tokenizer, "cpu", amp=amp)["acc"]


def record_positions(export: Path, kind: str, keys) -> list[int]:
    """0-based positions of the records ``keys`` in ``<kind>.json`` (CLIP_benchmark's order)."""
    order = list(json.loads((export / f"{kind}.json").read_text()))
    return [order.index(k) for k in keys]


def clip_benchmark_right(table: pl.DataFrame, measured: dict[str, float]) -> dict[str, int]:
    """Per type, how many ties CLIP_benchmark counted right, after checking that its right
    records are vlcomp's correct untied ones plus some of the ties."""
    resolved = {}
    for row in table.iter_rows(named=True):
        right = measured[row["type"]] * row["records"]
        assert abs(right - round(right)) < 1e-3, row
        resolved[row["type"]] = round(right) - row["decided"]
        assert 0 <= resolved[row["type"]] <= row["ties"], (row, round(right))
    return resolved


def check_per_record(loaded, export: Path, table: pl.DataFrame) -> dict[str, float]:
    """CLIP_benchmark's acc per type on the whole file, after checking that on the records
    vlcomp finds untied it gets exactly vlcomp's correct ones."""
    measured = {}
    for row in table.iter_rows(named=True):
        kind = row["type"]
        measured[kind] = clip_benchmark_acc(loaded, export, kind)
        tied = set(record_positions(export, kind, row["tie_keys"]))
        untied = [i for i in range(row["records"]) if i not in tied]
        untied_acc = clip_benchmark_acc(loaded, export, kind, untied)
        assert round(untied_acc * len(untied)) == row["decided"], kind
    return measured


def test_manifest_command_gives_our_numbers(run, arch, tmp_path):
    """The command the export's manifest prints (our architectures registered, --no_amp),
    run as printed, reports vlcomp's accuracy per type, plus the ties."""
    export = run / EXPORT
    section = json.loads((export / "manifest.json").read_text())["layout"]["clip_benchmark"]
    command = (
        section["command"]
        .replace("<this_folder>", str(export))
        .replace("<architecture>", arch)
        .replace("<weights>", str(run / CHECKPOINT))
    )
    args = shlex.split(command)
    assert args[:3] == ["python", "-m", "vlcomp.export.clip_benchmark"] and "--no_amp" in args
    args += ["--num_workers", "0", "--output", str(tmp_path / "{dataset}.json")]
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    result = subprocess.run(
        [sys.executable, *args[1:]], capture_output=True, text=True, env=env, cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr[-4000:]
    table = tie_table(export, run / PREDICTIONS)
    assert sorted(section["datasets"]) == [f"sugar_crepe/{t}" for t in table["type"]]
    measured = {
        kind: json.loads((tmp_path / f"sugar_crepe_{kind}.json").read_text())["metrics"]["acc"]
        for kind in table["type"]
    }
    print(f"\n{MODEL} on the small run's {BENCHMARK} export:\n{format_ties(table, measured)}")
    clip_benchmark_right(table, measured)
    # vlcomp's side is the metric table the workflow wrote
    ours = pl.read_parquet(run / METRICS).filter(
        (pl.col("model") == MODEL)
        & (pl.col("split") == "all")
        & (pl.col("metric") == "accuracy")
        & pl.col("complexity").is_null()
        & pl.col("family").is_in(table["type"].to_list())
    )
    assert dict(ours.select("family", "value").iter_rows()) == pytest.approx(
        dict(table.select("type", "vlcomp_accuracy").iter_rows()), abs=1e-12
    )


def test_own_loader_and_evaluation(run, clip_benchmark_model):
    """CLIP_benchmark's loader and evaluation in process, amp off: vlcomp's correct records
    among the untied ones, record set by record set; with its default amp (bf16 on a CPU)
    the numbers move (printed, not asserted)."""
    export = run / EXPORT
    table = tie_table(export, run / PREDICTIONS)
    measured = check_per_record(clip_benchmark_model, export, table)
    with_amp = {
        kind: clip_benchmark_acc(clip_benchmark_model, export, kind, amp=True)
        for kind in table["type"]
    }
    print(f"\n{format_ties(table, measured)}")
    print("CLIP_benchmark with its default amp (bf16 on a CPU): " + ", ".join(
        f"{k} {v:.4f}" for k, v in with_amp.items()))  # fmt: skip
    clip_benchmark_right(table, measured)


def test_ties_are_listed_and_explain_the_difference(
    run, clip_benchmark_model, tmp_path, monkeypatch
):
    """Items whose negative differs from the positive only after the text tower's context
    length are ties: vlcomp scores them wrong, CLIP_benchmark either way, and ``tie_table``
    lists exactly them; every other record scores alike. The run's items are exported and
    scored again with them, by the library's export and evaluation jobs, in the run's
    folder (the image index holds paths relative to it)."""
    from vlcomp.evaluate.jobs import evaluate_benchmark_job
    from vlcomp.export import export_benchmark_job

    _, _, tokenizer = clip_benchmark_model
    candidates = pl.read_parquet(run / "results/negatives" / BENCHMARK / "candidates.parquet")
    boxes = pl.read_parquet(run / "results/negatives" / BENCHMARK / "boxes.parquet")
    long_rows, long_boxes, tied_ids = [], [], set()
    for kind in ("replace_att", "swap_att"):
        family, target = kind.split("_")
        of_kind = candidates.filter((pl.col("family") == family) & (pl.col("target") == target))
        for item_id in of_kind["item_id"].unique(maintain_order=True).head(3):
            rows = of_kind.filter(pl.col("item_id") == item_id)
            positive = rows.filter(pl.col("is_positive"))["text"][0]
            negative = rows.filter(~pl.col("is_positive"))["text"][0]
            lead = " ".join([positive] * 3)
            texts = {True: f"{lead} {positive}", False: f"{lead} {negative}"}
            tokens = tokenizer([texts[True], texts[False]])
            assert (tokens[0] == tokens[1]).all(), "not a tie within the context length"
            new_id = f"{item_id}/long"
            tied_ids.add(new_id)
            long_rows.append(
                rows.with_columns(
                    item_id=pl.lit(new_id),
                    text=pl.when(pl.col("is_positive"))
                    .then(pl.lit(texts[True]))
                    .otherwise(pl.lit(texts[False])),
                )
            )
            long_boxes.append(
                boxes.filter(pl.col("item_id") == item_id).with_columns(item_id=pl.lit(new_id))
            )
    paths = {name: tmp_path / f"{name}.parquet" for name in ("candidates", "boxes")}
    pl.concat([candidates, *long_rows]).write_parquet(paths["candidates"])
    pl.concat([boxes, *long_boxes]).write_parquet(paths["boxes"])

    monkeypatch.chdir(run)
    index = run / "results/eval_sets/world_coco/images.parquet"
    export = tmp_path / "export"
    export_benchmark_job("sugarcrepe", "tied", str(paths["candidates"]), str(paths["boxes"]),
                         str(index), {}, str(export), log=lambda _: None)  # fmt: skip
    config = yaml.safe_load(SMALL_CONFIG.read_text())
    predictions = tmp_path / "predictions.parquet"
    evaluate_benchmark_job(
        MODEL, config["models"][MODEL], str(run / CHECKPOINT),
        {"device": "cpu", "threads": 1, "batch_size": 64, "precision": "fp32", "workers": 0,
         "bootstrap_resamples": 0},
        [{"candidates": str(paths["candidates"]), "boxes": str(paths["boxes"]), "label": None}],
        str(index), str(tmp_path / "cache"), str(predictions),
        str(tmp_path / "metrics.parquet"), str(tmp_path / "excluded.parquet"),
        log=lambda _: None,
    )  # fmt: skip

    table = tie_table(export, predictions)
    assert {i for items in table["tie_items"] for i in items} == tied_ids
    assert table["vlcomp_correct"].to_list() == table["decided"].to_list()  # ties are wrong
    measured = check_per_record(clip_benchmark_model, export, table)
    resolved = clip_benchmark_right(table, measured)
    print(f"\nwith {len(tied_ids)} tied items added:\n{format_ties(table, measured)}")
    print(f"ties CLIP_benchmark counted right: {resolved}")
    assert table.filter(pl.col("ties") > 0)["type"].to_list() == ["replace_att", "swap_att"]
