"""CLIP_benchmark (1.6.2) on a SugarCrepe export, giving vlcomp's numbers.

Two commands::

    python -m vlcomp.export.clip_benchmark eval --dataset sugar_crepe/<type> \\
        --dataset_root <export folder> --model <open_clip architecture> \\
        --pretrained <checkpoint file or pretrained tag> --no_amp

registers the project's open_clip model configs (``vlcomp.models.loading`` registers
``models/model_configs``: the architectures the workflow trains) and then runs
CLIP_benchmark's own command line (``clip_benchmark.cli.main``) in the same process with the
arguments given; the stock ``clip_benchmark eval`` cannot build those architectures ("Model
config for ... not found"). Any other CLIP_benchmark argument passes through unchanged.

    python -m vlcomp.export.clip_benchmark ties <export folder> <predictions.parquet>

prints, per SugarCrepe type, vlcomp's accuracy (from a model's
``<metrics>/<model>/<benchmark>_predictions.parquet``), the ties it saw (items whose positive
and negative have the same similarity, e.g. captions that differ only after the text
encoder's context length) with their export keys, and the range of the accuracy
CLIP_benchmark reports.

Precision: ``--no_amp`` makes CLIP_benchmark compute in float32, as vlcomp does on a CPU
(and on a GPU with ``evaluate.precision: fp32``). Without it CLIP_benchmark autocasts: bf16
on a CPU, fp16 on CUDA, and rounding turns hundreds of close pairs into ties. The ``eval``
command also turns TF32 off on CUDA, as vlcomp's fp32 does.

Ties: vlcomp counts a tie as wrong (the positive must score strictly above the negative).
CLIP_benchmark's ``image_caption_selection`` takes ``argmax``, which resolves bit-equal scores
to the first caption, the positive, but it computes a record's two scores as one
``image @ texts.T`` product, whose two columns can round differently even when the two text
embeddings are bit-identical (a negative that differs from its positive only after the text
tower's context length): on models the workflow trained, from one in three to all such
records of a file came out bit-equal (right), the others one or two float32 ulps apart in
the negative's favour (wrong). So a record vlcomp finds tied (equal scores, or
``indistinguishable`` to the model's tokenizer where the predictions flag it) goes either
way in CLIP_benchmark; every other record scores the same in both. With ``--no_amp``
CLIP_benchmark's ``acc`` (= its ``text_acc``: a SugarCrepe record has one image) therefore
lies between ``decided / records`` and ``(decided + ties) / records``, ``decided`` being
vlcomp's correct records among the untied ones, and equals vlcomp's accuracy without ties.

The manifest's ``layout.clip_benchmark`` (``export.sugarcrepe.clip_benchmark_section``) gives
the ``eval`` command for an export's types and these notes.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

import polars as pl

from vlcomp.export.manifest import KEYS
from vlcomp.export.sugarcrepe import CLIP_BENCHMARK_VERSION as VERSION
from vlcomp.export.sugarcrepe import COMMAND
from vlcomp.importers.sugarcrepe import SUGARCREPE_TYPES

PACKAGE = "clip-benchmark"


def register_architectures() -> list[str]:
    """Register the project's open_clip model configs (as ``vlcomp.models.loading`` does for
    its own use) and return their names."""
    import open_clip

    from vlcomp.models.loading import MODEL_CONFIG_DIR  # importing it registers them

    names = sorted(path.stem for path in MODEL_CONFIG_DIR.glob("*.json"))
    missing = [name for name in names if name not in open_clip.list_models()]
    if missing:
        raise RuntimeError(f"open_clip did not register {missing} from {MODEL_CONFIG_DIR}")
    return names


def amp_warning(args: Sequence[str]) -> str | None:
    """The warning for CLIP_benchmark arguments without ``--no_amp``; None with it."""
    if "--no_amp" in args:
        return None
    return (
        "warning: without --no_amp CLIP_benchmark computes in bf16 on a CPU and fp16 on CUDA; "
        "its numbers then differ from vlcomp's fp32 ones beyond the ties."
    )


def run_eval(args: Sequence[str]) -> None:
    """Register our architectures, then run ``clip_benchmark eval <args>`` in this process."""
    try:
        from clip_benchmark import cli
    except ImportError as error:
        raise SystemExit(
            f"CLIP_benchmark is not installed ({error}); `make setup` installs "
            f"{PACKAGE}=={VERSION} with the project's test dependencies."
        ) from error
    import torch

    from vlcomp.models.towers import GRID_POOL_ARCHITECTURES

    register_architectures()
    grid = sorted(GRID_POOL_ARCHITECTURES.intersection(args))
    if grid:
        raise SystemExit(
            f"{', '.join(grid)}: its image pool is vlcomp's GridPool, which CLIP_benchmark's "
            "open_clip loader cannot build; evaluate it with vlcomp's own workflow instead."
        )
    warning = amp_warning(args)
    if warning:
        print(warning, file=sys.stderr)
    else:
        # vlcomp's fp32 on CUDA (evaluate.models.load_model): no TF32 anywhere.
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    saved = sys.argv
    sys.argv = ["clip_benchmark", "eval", *args]
    try:
        cli.main()
    finally:
        sys.argv = saved


# --------------------------------------------------------------------------- ties


def export_records(folder: str | Path) -> pl.DataFrame:
    """The records of a SugarCrepe export that CLIP_benchmark's loader reads (its seven
    types): type, key, item_id, from ``keys.csv``."""
    path = Path(folder) / KEYS
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no {KEYS}; is {folder} a vlcomp SugarCrepe export?")
    keys = pl.read_csv(path, infer_schema=False)
    missing = {"file", "key", "item_id"} - set(keys.columns)
    if missing:
        raise ValueError(f"{path}: missing column(s) {sorted(missing)}")
    return (
        keys.select(
            type=pl.col("file").str.strip_suffix(".json"), key=pl.col("key"), item_id="item_id"
        )
        .filter(pl.col("type").is_in(SUGARCREPE_TYPES))
        .with_row_index("row", offset=2)  # the CSV line, header = line 1
    )


TIE_COLUMNS = (
    "type",
    "records",
    "vlcomp_correct",
    "vlcomp_accuracy",
    "ties",
    "decided",
    "clip_benchmark_min",
    "clip_benchmark_max",
    "tie_keys",
    "tie_items",
)


def tie_table(export: str | Path, predictions: str | Path, part: str | None = None) -> pl.DataFrame:
    """Per SugarCrepe type of ``export``, from one model's predictions of the exported
    benchmark (``SET_PREDICTIONS_SCHEMA``, with ``PREDICTION_FLAGS_SCHEMA`` where present):
    records, vlcomp's correct records and accuracy, its ties (count, export keys and item
    ids; a tie: ``pos_score == neg_score`` or ``indistinguishable``), ``decided`` (vlcomp's
    correct records among the untied ones, which CLIP_benchmark scores alike) and the range of the
    accuracy CLIP_benchmark reports with ``--no_amp`` (``clip_benchmark_min`` /
    ``clip_benchmark_max``: every tie wrong / right). Every exported record needs its item's
    prediction of the same type, scored against exactly one negative (CLIP_benchmark scores
    each record alone, vlcomp an item's negatives together). ``part``: which part, for
    predictions of several."""
    records = export_records(export)
    table = pl.read_parquet(predictions)
    need = {"item_id", "family", "n_candidates", "correct", "pos_score", "neg_score"}
    missing = need - set(table.columns)
    if missing:
        raise ValueError(f"{predictions}: missing column(s) {sorted(missing)}")
    parts = table["part"].unique().to_list() if "part" in table.columns else [None]
    if part is not None:
        table = table.filter(pl.col("part") == part)
        if not table.height:
            raise ValueError(f"{predictions}: no rows of part {part!r} (parts: {parts})")
    elif len(parts) > 1:
        raise ValueError(f"{predictions}: rows of several parts {parts}; choose one (part=...)")
    tie = pl.col("pos_score") == pl.col("neg_score")
    if "indistinguishable" in table.columns:
        tie |= pl.col("indistinguishable").fill_null(False)
    table = table.select(
        "item_id", type=pl.col("family"), n_candidates="n_candidates", correct="correct", tie=tie
    ).unique(subset=["item_id", "type"], keep="first", maintain_order=True)
    joined = records.join(table, on=["item_id", "type"], how="left")
    lacking = joined.filter(pl.col("correct").is_null())
    if lacking.height:
        first = lacking.row(0, named=True)
        raise ValueError(
            f"{Path(export) / KEYS} line {first['row']}: item {first['item_id']!r} "
            f"({first['type']}) has no prediction in {predictions} ({lacking.height} record(s) "
            "lack one); are they the predictions of this export's benchmark?"
        )
    several = joined.filter(pl.col("n_candidates") != 2)
    if several.height:
        first = several.row(0, named=True)
        raise ValueError(
            f"{Path(export) / KEYS} line {first['row']}: item {first['item_id']!r} was scored "
            f"among {first['n_candidates']} candidates in {predictions}, not as a pair "
            f"({several.height} record(s)); CLIP_benchmark scores each (positive, negative) "
            "record alone, so vlcomp's numbers of such items are not comparable"
        )
    decided = (pl.col("correct") & ~pl.col("tie")).sum()
    return (
        joined.group_by("type")
        .agg(
            records=pl.len(),
            vlcomp_correct=pl.col("correct").sum(),
            ties=pl.col("tie").sum(),
            decided=decided,
            tie_keys=pl.col("key").filter(pl.col("tie")),
            tie_items=pl.col("item_id").filter(pl.col("tie")),
        )
        .with_columns(
            vlcomp_accuracy=pl.col("vlcomp_correct") / pl.col("records"),
            clip_benchmark_min=pl.col("decided") / pl.col("records"),
            clip_benchmark_max=(pl.col("decided") + pl.col("ties")) / pl.col("records"),
        )
        .sort("type")
        .select(*TIE_COLUMNS)
    )


def format_ties(table: pl.DataFrame, measured: Mapping[str, float] | None = None) -> str:
    """The tie table as text: one line per type (with CLIP_benchmark's measured ``acc`` where
    given), then the tied records' keys and item ids."""
    head = f"{'type':<12} {'records':>7} {'vlcomp':>7} {'ties':>5} {'CLIP_benchmark':>15}"
    if measured is not None:
        head += f" {'measured':>8}"
    lines = [head + "  (accuracy; a tie: wrong in vlcomp, either way in CLIP_benchmark)"]
    for row in table.iter_rows(named=True):
        low, high = row["clip_benchmark_min"], row["clip_benchmark_max"]
        expected = f"{low:.4f}" if low == high else f"{low:.4f}-{high:.4f}"
        line = (
            f"{row['type']:<12} {row['records']:>7} {row['vlcomp_accuracy']:>7.4f} "
            f"{row['ties']:>5} {expected:>15}"
        )
        if measured is not None and row["type"] in measured:
            line += f" {measured[row['type']]:>8.4f}"
        lines.append(line)
    for row in table.filter(pl.col("ties") > 0).iter_rows(named=True):
        pairs = zip(row["tie_keys"], row["tie_items"], strict=True)
        lines.append(f"ties in {row['type']}.json, key (item): " + ", ".join(
            f"{k} ({i})" for k, i in pairs))  # fmt: skip
    return "\n".join(lines)


USAGE = f"""usage:
  {COMMAND} eval <clip_benchmark eval arguments>
      registers vlcomp's open_clip architectures, then runs `clip_benchmark eval`; e.g.
      {COMMAND} eval --dataset sugar_crepe/<type> --dataset_root <export folder> \\
          --model <open_clip architecture> --pretrained <checkpoint file or tag> --no_amp
  {COMMAND} ties <export folder> <predictions.parquet> [part]
      vlcomp's accuracy, its ties and the range of CLIP_benchmark's accuracy per type"""


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["eval"]:
        run_eval(args[1:])
        return 0
    if args[:1] == ["ties"] and len(args) in (3, 4):
        try:
            table = tie_table(args[1], args[2], args[3] if len(args) == 4 else None)
        except (OSError, ValueError) as error:
            print(f"error: {error}", file=sys.stderr)
            return 1
        print(format_ties(table))
        return 0
    print(USAGE, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
