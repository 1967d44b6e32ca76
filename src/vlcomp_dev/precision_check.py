"""Do GPU and reduced-precision embeddings change what an evaluation decides?

One set of benchmark items (``bench.make_bench_data``: JPEG crops, one positive and
``negatives`` one-word-away negatives each) is scored by one model (random weights unless
a checkpoint is given) in several *runs*, ``device:precision[:workers]`` (e.g. ``cpu:fp32``,
``cuda:fp16``), through the workflow's own path (``scoring.score_candidates``).
Each run is compared with the reference run (the first):

* ``max_abs_diff`` / ``mean_abs_diff`` of the cosine similarities;
* pair decisions: for every (positive, negative) pair of an item, is the positive scored
  above the negative (SugarCrepe's, and a CREPE pair's, decision); how many flip;
* set decisions: the argmax over an item's candidate set (CREPE's Recall@1 decision); how
  many items change their argmax, and how many change from right to wrong or back.

fp32 against fp32 (CPU against GPU) must agree within ``FP32_TOLERANCE`` = 1e-4 in cosine:
float32 summation-order differences through a ViT-B-32 (24 blocks, reductions of 768 to
3072 terms) stay around 1e-6 to 1e-5, while TF32 leaking into a convolution or matmul (10-bit
mantissa) gives ~1e-3 and a preprocessing difference more than 1e-2, so 1e-4 separates the
harmless from the wrong with a margin either way. bf16 / fp16 runs are not held to it:
their decision changes are what the report is for. With random weights similarities of
different captions are close together, so decisions flip more easily than with a trained
model: read the counts as an upper bound.

    python -m vlcomp_dev.precision_check --model ViT-B-32 \\
        --runs cpu:fp32,cuda:fp32,cuda:fp16,cuda:bf16 --out results/gpu_check/precision.json
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import torch

FP32_TOLERANCE = 1e-4


@dataclass(frozen=True)
class Run:
    device: str
    precision: str
    workers: int = 2

    @staticmethod
    def parse(text: str) -> Run:
        parts = text.split(":")
        if parts[0] == "cuda" and len(parts) > 1 and parts[1].isdigit():
            parts = [f"cuda:{parts[1]}", *parts[2:]]
        if len(parts) not in (2, 3):
            raise ValueError(f"run {text!r}: expected device:precision[:workers]")
        return Run(parts[0], parts[1], int(parts[2]) if len(parts) == 3 else 2)

    @property
    def label(self) -> str:
        return f"{self.device}:{self.precision}:{self.workers}"


def decisions(candidates: pl.DataFrame, similarity: np.ndarray) -> dict[str, np.ndarray]:
    """Per (positive, negative) pair: positive above negative; per item: the argmax row
    within the item and whether it is a positive. Rows in ``candidates`` order."""
    frame = candidates.select("item_id", "is_positive").with_columns(
        similarity=pl.Series(similarity, dtype=pl.Float64), row=pl.int_range(pl.len())
    )
    positives = frame.filter(pl.col("is_positive"))
    negatives = frame.filter(~pl.col("is_positive"))
    pairs = positives.join(negatives, on="item_id", suffix="_neg").sort("row", "row_neg")
    per_item = (
        frame.sort("row")
        .group_by("item_id", maintain_order=True)
        .agg(
            argmax=pl.col("row").get(pl.col("similarity").arg_max()),
            correct=pl.col("is_positive").get(pl.col("similarity").arg_max()),
        )
        .sort("item_id")
    )
    return {
        "pair_correct": (pairs["similarity"] > pairs["similarity_neg"]).to_numpy(),
        "set_argmax": per_item["argmax"].to_numpy(),
        "set_correct": per_item["correct"].to_numpy(),
    }


def compare(
    candidates: pl.DataFrame,
    reference: np.ndarray,
    other: np.ndarray,
    tolerance: float | None = None,
) -> dict[str, Any]:
    """How ``other`` similarities differ from ``reference`` ones, and which decisions flip.
    With ``tolerance``: ``within_tolerance`` says whether max |diff| <= tolerance."""
    if reference.shape != other.shape:
        raise ValueError(f"{reference.shape} similarities against {other.shape}")
    diff = np.abs(np.asarray(other, np.float64) - np.asarray(reference, np.float64))
    ref, oth = decisions(candidates, reference), decisions(candidates, other)
    out: dict[str, Any] = {
        "similarities": int(diff.size),
        "max_abs_diff": float(diff.max()) if diff.size else 0.0,
        "mean_abs_diff": float(diff.mean()) if diff.size else 0.0,
        "pair_decisions": int(ref["pair_correct"].size),
        "pair_decisions_changed": int((ref["pair_correct"] != oth["pair_correct"]).sum()),
        "pair_accuracy_reference": float(ref["pair_correct"].mean()),
        "pair_accuracy": float(oth["pair_correct"].mean()),
        "set_decisions": int(ref["set_argmax"].size),
        "set_argmax_changed": int((ref["set_argmax"] != oth["set_argmax"]).sum()),
        "set_correct_changed": int((ref["set_correct"] != oth["set_correct"]).sum()),
        "set_accuracy_reference": float(ref["set_correct"].mean()),
        "set_accuracy": float(oth["set_correct"].mean()),
    }
    if tolerance is not None:
        out["tolerance"] = tolerance
        out["within_tolerance"] = bool(out["max_abs_diff"] <= tolerance)
    return out


def score_runs(
    runs: Sequence[Run],
    model: str = "ViT-B-32",
    n_items: int = 200,
    negatives: int = 4,
    batch_size: int = 256,
    threads: int = 2,
    seed: int = 0,
    checkpoint: str | None = None,
    data_dir: str | Path | None = None,
    log: Any = print,
) -> tuple[pl.DataFrame, dict[str, np.ndarray], dict[str, dict[str, Any]]]:
    """The benchmark items, each run's similarities (``candidates`` order), and per run the
    precision actually used and the seconds it took. ``data_dir``: as in
    ``bench.run_benchmark`` (the same items and random weights as the benchmark's)."""
    from vlcomp.evaluate.scoring import score_candidates
    from vlcomp_dev.bench.evaluate import bench_data, bench_model

    torch.set_num_threads(threads)
    sims: dict[str, np.ndarray] = {}
    info: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="vlcomp-precision-") as tmp:
        root = Path(data_dir) if data_dir else Path(tmp)
        root.mkdir(parents=True, exist_ok=True)
        candidates, boxes, images = bench_data(root, n_items, negatives, 3, seed)
        for run in runs:
            loaded = bench_model(model, root, run.device, run.precision, seed, checkpoint)
            loaded.workers = run.workers
            start = time.perf_counter()
            scored = score_candidates(
                "check", loaded, candidates, images, boxes=boxes, batch_size=batch_size
            )
            seconds = time.perf_counter() - start
            sims[run.label] = scored["similarity"].to_numpy()
            info[run.label] = {
                "device": str(loaded.device),
                "device_name": torch.cuda.get_device_name(loaded.device)
                if loaded.device.type == "cuda"
                else "cpu",
                "precision": loaded.precision,
                "workers": run.workers,
                "seconds": seconds,
            }
            log(f"{run.label}: {candidates.height} similarities in {seconds:.1f} s")
            del loaded
    return candidates, sims, info


def check(
    runs: Sequence[Run],
    model: str = "ViT-B-32",
    n_items: int = 200,
    tolerance: float = FP32_TOLERANCE,
    log: Any = print,
    **kwargs: Any,
) -> dict[str, Any]:
    """Score every run and compare each with the first; fp32 runs against an fp32 reference
    are held to ``tolerance``. ``passed``: all such comparisons within it."""
    candidates, sims, info = score_runs(runs, model, n_items, log=log, **kwargs)
    reference = runs[0].label
    comparisons = {}
    for run in runs[1:]:
        both_fp32 = info[run.label]["precision"] == info[reference]["precision"] == "fp32"
        comparisons[run.label] = {
            **info[run.label],
            **compare(
                candidates, sims[reference], sims[run.label], tolerance if both_fp32 else None
            ),
        }
    held = [c["within_tolerance"] for c in comparisons.values() if "within_tolerance" in c]
    return {
        "model": model if kwargs.get("checkpoint") is None else f"{model} ({kwargs['checkpoint']})",
        "random_init": kwargs.get("checkpoint") is None,
        "items": n_items,
        "candidates": candidates.height,
        "reference": {"run": reference, **info[reference]},
        "fp32_tolerance": tolerance,
        "comparisons": comparisons,
        "passed": all(held),
    }


def metric_differences(reference_dir: str | Path, other_dir: str | Path) -> dict[str, Any]:
    """Compare the workflow's metric tables (``results/metrics/<model>/<table>.parquet``,
    column ``value``) of two runs: per table, rows compared, the largest |value difference|
    and the rows that differ by more than 1e-9."""
    reference_dir, other_dir = Path(reference_dir), Path(other_dir)
    tables = {}
    for path in sorted(reference_dir.glob("*/*.parquet")):
        name = str(path.relative_to(reference_dir))
        if name.endswith(("_predictions.parquet", "_excluded.parquet", "_ranks.parquet")):
            continue
        twin = other_dir / name
        if not twin.exists():
            tables[name] = {"missing_in_other": True}
            continue
        ref, oth = pl.read_parquet(path), pl.read_parquet(twin)
        if "value" not in ref.columns:
            continue
        keys = [c for c in ref.columns if ref[c].dtype in (pl.String, pl.Int64, pl.Boolean)]
        keys = [c for c in keys if c in oth.columns and c not in ("value",)]
        joined = ref.join(oth, on=keys, how="full", suffix="_other", nulls_equal=True)
        delta = (pl.col("value") - pl.col("value_other")).abs()
        joined = joined.with_columns(delta=delta)
        differ = joined.filter((pl.col("delta") > 1e-9) | pl.col("delta").is_null())
        tables[name] = {
            "rows": ref.height,
            "max_abs_value_diff": float(joined["delta"].max() or 0.0),
            "rows_differing": differ.height,
            "examples": differ.head(5).select(*keys, "value", "value_other").to_dicts(),
        }
    return {
        "reference": str(reference_dir),
        "other": str(other_dir),
        "tables": tables,
        "identical": all(t.get("rows_differing", 1) == 0 for t in tables.values()),
    }


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    sub = parser.add_subparsers(dest="command")
    runs = sub.add_parser("runs", help="score the same items in several runs and compare")
    runs.add_argument("--runs", default="cpu:fp32,cuda:fp32,cuda:fp16,cuda:bf16",
                      help="device:precision[:workers], comma-separated; the first is the "
                      "reference")  # fmt: skip
    runs.add_argument("--model", default="ViT-B-32")
    runs.add_argument("--checkpoint")
    runs.add_argument("--items", type=int, default=200)
    runs.add_argument("--batch-size", type=int, default=256)
    runs.add_argument("--threads", type=int, default=2)
    runs.add_argument("--tolerance", type=float, default=FP32_TOLERANCE)
    runs.add_argument("--data", help="keep the generated JPEGs and weights here, for reuse")
    runs.add_argument("--out")
    metrics = sub.add_parser("metrics", help="compare two runs' results/metrics folders")
    metrics.add_argument("reference")
    metrics.add_argument("other")
    metrics.add_argument("--out")
    report = sub.add_parser("report", help="report.md / report.json of a gpu_check folder")
    report.add_argument("folder")
    args = parser.parse_args(argv)
    if args.command == "report":
        print(write_report(args.folder))
        return
    if args.command == "metrics":
        result = metric_differences(args.reference, args.other)
    elif args.command == "runs":
        result = check(
            [Run.parse(r) for r in args.runs.split(",")],
            args.model,
            args.items,
            args.tolerance,
            log=lambda line: print(line, file=sys.stderr),
            batch_size=args.batch_size,
            threads=args.threads,
            checkpoint=args.checkpoint,
            data_dir=args.data,
        )
    else:
        parser.error("give a command: runs or metrics")
    text = json.dumps(result, indent=2, default=str)
    print(text)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(text + "\n")


def summarise(result: Mapping[str, Any]) -> str:
    """A few lines of ``check``'s result (for the gpu_check report)."""
    lines = [f"reference {result['reference']['run']} ({result['reference']['precision']})"]
    for label, c in result["comparisons"].items():
        tol = (
            f", {'within' if c['within_tolerance'] else 'OUTSIDE'} {c['tolerance']:.0e}"
            if "tolerance" in c
            else ""
        )
        lines.append(
            f"  {label} ({c['precision']}): max |diff| {c['max_abs_diff']:.2e}{tol}; "
            f"pair decisions changed {c['pair_decisions_changed']}/{c['pair_decisions']}, "
            f"set argmax changed {c['set_argmax_changed']}/{c['set_decisions']} "
            f"(right/wrong flips {c['set_correct_changed']})"
        )
    return "\n".join(lines)


def write_report(folder: str | Path) -> str:
    """``report.md`` and ``report.json`` in ``folder`` from what ``tools/gpu_check.sh`` left
    there: ``bench_*.json`` (``bench.run_benchmark``), ``precision.json`` (``check``),
    ``workflow_metrics.json`` (``metric_differences``), ``workflow.json`` (how the workflow
    step went) and ``plan.txt`` (what a dry run did not run). Returns the Markdown."""
    from vlcomp_dev.bench.evaluate import summary

    folder = Path(folder)

    def load(path: Path) -> Any:
        return json.loads(path.read_text()) if path.exists() else None

    bench = {p.stem: load(p) for p in sorted(folder.glob("bench_*.json"))}
    precision, metrics = load(folder / "precision.json"), load(folder / "metrics_compare.json")
    workflow = load(folder / "workflow.json")
    plan = (folder / "plan.txt").read_text() if (folder / "plan.txt").exists() else ""
    lines = ["# GPU check", ""]
    lines += ["## Embedding throughput", ""]
    for name, result in bench.items():
        lines += [f"### {name}", "", "```", summary(result), "```", ""]
    if not bench:
        lines += ["(no benchmark ran)", ""]
    lines += ["## Agreement and decision changes", ""]
    if precision:
        passed = "PASSED" if precision["passed"] else "FAILED"
        lines += [
            f"{precision['model']}, {precision['items']} items, {precision['candidates']} "
            f"similarities; fp32 against fp32 within {precision['fp32_tolerance']:.0e}: "
            f"{passed}",
            "",
            "```",
            summarise(precision),
            "```",
            "",
        ]
    else:
        lines += ["(not run)", ""]
    lines += ["## Workflow evaluation on the GPU", ""]
    if workflow:
        lines += [f"- {k}: {v}" for k, v in workflow.items()] + [""]
    if metrics:
        verdict = "identical" if metrics["identical"] else "DIFFERENT"
        lines += [f"Metrics against {metrics['reference']}: {verdict}", ""]
        for table, diff in metrics["tables"].items():
            lines.append(
                f"- {table}: {diff.get('rows_differing', 'missing')} of {diff.get('rows', '?')} "
                f"rows differ, max |diff| {diff.get('max_abs_value_diff', float('nan')):.3g}"
            )
        lines.append("")
    elif not workflow:
        lines += ["(not run)", ""]
    if plan:
        lines += ["## Not run here (dry run / no GPU)", "", "```", plan.rstrip(), "```", ""]
    text = "\n".join(lines)
    (folder / "report.md").write_text(text)
    (folder / "report.json").write_text(
        json.dumps(
            {"bench": bench, "precision": precision, "workflow": workflow, "metrics": metrics,
             "plan": plan.splitlines()},
            indent=2,
            default=str,
        )
        + "\n"
    )  # fmt: skip
    return text


if __name__ == "__main__":
    main()
