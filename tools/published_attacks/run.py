"""Both blind-attack panels on published benchmarks' released annotation files
(../shared/data): SugarCrepe refined and unrefined, SugarCrepe++, VALSE; the two-image sets
(BiVLC, COLA) are balanced by design (every text is the positive of one image).

- debiasing panel: the text attacks of ``vlcomp.blind.attacks`` (no corpus here for the
  text scorers or the generator's context model);
- certification panel (``vlcomp.blind.certify``): whole-text n-grams, frozen MiniLM (on at
  most ``--encoder-pairs`` pairs a type), surface statistics and their rules; no corpus
  language model (no training captions at hand). For SugarCrepe refined, the
  generator-trained attacks are fitted on the unrefined candidates that the refinement
  dropped (the same LLM's negatives, none of them a refined pair), as BiVLC's detector was.

Usage: python tools/published_attacks/run.py [--out OUT.parquet] [--encoder-pairs N]
prints one table per panel (best attack per release and type) and writes OUT when given.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import polars as pl

from vlcomp.blind import attacks
from vlcomp.blind.certify import SALT, CertifySettings, certification_predictions
from vlcomp.blind.families import Resources
from vlcomp.certificate import familywise
from vlcomp.importers.registry import FORMATS
from vlcomp.scorers.familiarity import MiniLMEncoder

DATA = Path(__file__).resolve().parents[3] / "shared" / "data"
TEXT_ATTACKS = [a for a in attacks.ATTACKS if a != attacks.GENERATOR]
SETS = {  # a set a generator-trained attack reads (TRAINED_ON) comes before its benchmark
    "sugarcrepe/unrefined": ("sugarcrepe", DATA / "sugarcrepe" / "unrefined", {}),
    "sugarcrepe/refined": ("sugarcrepe", DATA / "sugarcrepe" / "refined", {}),
    "sugarcrepe_pp": ("sugarcrepe_pp", DATA / "releases" / "Sri-Harsha+scpp" / "data", {}),
    "valse": ("valse", DATA / "releases" / "Heidelberg-NLP+VALSE" / "data", {}),
}
TRAINED_ON = {"sugarcrepe/refined": "sugarcrepe/unrefined"}  # generator-trained attacks


def read(fmt: str, folder: Path, options: dict) -> pl.DataFrame:
    reader = FORMATS[fmt].reader
    tables = []
    for path in sorted(folder.glob("*.json")):
        imported = reader(path, on_error="reject", **options)
        tables.append(imported.candidates.with_columns(part=pl.lit(path.stem)))
    return pl.concat(tables, how="diagonal_relaxed")


def _generated(pairs: pl.DataFrame, benchmark: pl.DataFrame) -> pl.DataFrame:
    """``pairs`` (the unrefined candidates) without any pair of ``benchmark``."""
    held = benchmark.select("positive", "negative")
    return pairs.join(held, on=["positive", "negative"], how="anti").select(
        "positive", "negative", "type"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path)
    parser.add_argument("--encoder-pairs", type=int, default=1000)
    args = parser.parse_args()
    encoder = MiniLMEncoder()
    settings = CertifySettings(encoder_pairs=args.encoder_pairs, generator_encoder=True)
    resources = Resources(encode=encoder, encoder_pairs=args.encoder_pairs)
    rows, read_pairs = [], {}
    for name, (fmt, folder, options) in SETS.items():
        if not folder.exists():
            print(f"{name}: shared data missing ({folder})")
            continue
        started = time.perf_counter()
        table = read(fmt, folder, options)
        shape = FORMATS[fmt].shape
        debias, _ = attacks.attack_panel(table, shape, TEXT_ATTACKS, resamples=1000)
        pairs = attacks.attack_pairs(table, shape)
        read_pairs[name] = pairs
        source = TRAINED_ON.get(name)
        training = (
            {source.split("/")[-1]: _generated(read_pairs[source], pairs)}
            if source in read_pairs
            else None
        )
        certified, predictions = certification_predictions(
            pairs, resources, training, settings, 0, log=print
        )
        certify = attacks.attack_accuracy(
            certified, predictions, 1000, attacks.stable_int(SALT, 0) % 2**32, unit="group"
        )
        rows += [
            debias.with_columns(panel=pl.lit("debias"), benchmark=pl.lit(name)),
            certify.with_columns(panel=pl.lit("certify"), benchmark=pl.lit(name)),
        ]
        print(f"{name}: {table['item_id'].n_unique()} items, {time.perf_counter() - started:.0f} s")
    table = pl.concat(rows, how="diagonal_relaxed").with_columns(chance=pl.lit(0.5))
    if args.out:
        table.write_parquet(args.out)
    for panel in ("debias", "certify"):
        of_panel = table.filter((pl.col("panel") == panel) & (pl.col("type") != "all"))
        best = []
        for _, cell in of_panel.group_by("benchmark", "part", maintain_order=True):
            decided = cell.filter(pl.col("accuracy").is_not_null())
            if decided.is_empty():
                continue
            top = decided.sort("accuracy", descending=True).head(1)
            # the best attack's lower bound taken with the panel's others (the verdict's)
            low = familywise(decided).sort("accuracy", descending=True)["ci_low"][0]
            best.append(top.with_columns(familywise_low=pl.lit(low), n=cell["n"].max()))
        best = pl.concat(best).select(
            "benchmark", "part", "type", "attack", "accuracy", "ci_low", "ci_high",
            "familywise_low", "n", "items",
        ).sort("benchmark", "part")  # fmt: skip
        with pl.Config(tbl_rows=200, tbl_width_chars=200, fmt_str_lengths=40):
            print(f"\n{panel} panel: best attack per release and type")
            print(best.with_columns(pl.selectors.float().round(3)))


if __name__ == "__main__":
    main()
