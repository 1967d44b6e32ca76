"""Job-level entry points of the blind-attack stage: the certificate of a benchmark and the
debiased variant of a candidate table (for Snakemake rules)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from importlib.metadata import version
from pathlib import Path

import polars as pl

from vlcomp.blind import attacks
from vlcomp.blind import debias as debiasing
from vlcomp.blind.certify import CERTIFY, DEBIAS, SALT, CertifySettings, certification_predictions
from vlcomp.blind.families import DEFAULT_PANEL, Resources, TunedEncoder
from vlcomp.blind.figures import plot_attacks
from vlcomp.contracts import NOTE_KEY
from vlcomp.io import write_parquet
from vlcomp.vocabulary import AS_GENERATED, CERTIFICATE_MIN_PAIRS, DEBIASED

Log = Callable[[str], None]


@dataclass(frozen=True)
class AttackSettings:
    """Config ``attacks``: the debiasing panel's folds, the seed, the bootstrap resamples and
    the certification panel's settings (``certify``)."""

    folds: int = 5
    seed: int = 0
    bootstrap_resamples: int = 1000
    certify: CertifySettings = CertifySettings()

    def metadata(self, **extra: str) -> dict[str, str]:
        """What the debiasing panel ran with (the debiased variant's metadata)."""
        return {"tie_policy": attacks.TIE_POLICY, "folds": str(self.folds),
                "seed": str(self.seed), "bootstrap_resamples": str(self.bootstrap_resamples),
                **extra}  # fmt: skip

    def certificate_metadata(self, **extra: str) -> dict[str, str]:
        """``metadata`` and what the certification panel ran with (the certificate's)."""
        c = self.certify
        return self.metadata(
            certify_folds=str(c.folds),
            certify_families=",".join(DEFAULT_PANEL if c.families is None else c.families),
            certify_generator_pairs=str(c.generator_pairs if c.generator_attacks else 0),
            certify_generator_encoder=str(c.generator_encoder and c.generator_attacks).lower(),
            certify_max_pairs=str(c.max_pairs or "all"),
            certify_encoder_pairs=str(c.encoder_pairs or "all"),
            certify_lm_captions=str(c.lm_captions),
            certify_tuned=",".join(f"{k}={v}" for k, v in asdict(c.tuned).items()), **extra,
        )  # fmt: skip


ATTACK_CERTIFICATE_SCHEMA: dict[str, pl.DataType] = {
    "benchmark": pl.String,
    "panel": pl.String,  # debias or certify (blind.certify): only certify gives the verdict
    "part": pl.String,  # a corpus's CREPE set, or the benchmark
    "variant": pl.String,  # as_generated, or the importer's name (imported:<source>)
    **{c: t for c, t in attacks.RESULTS_SCHEMA.items() if c != "part"},
    "chance": pl.Float64,
}


def _variant(generators: pl.Series) -> str:
    imported = sorted({g for g in generators.drop_nulls().to_list() if g.startswith("imported")})
    return "+".join(imported) or AS_GENERATED


def _generator_pairs(negatives: str | Path, captions: Sequence[str | Path]) -> pl.DataFrame:
    """A corpus's generated training negatives with their captions (positive, negative,
    family, target): what a NegCLIP-style model trains on."""
    texts = pl.concat(
        [pl.read_parquet(p, columns=["caption_id", "text"]) for p in captions], how="vertical"
    )
    return (
        pl.read_parquet(negatives)
        .join(texts.rename({"text": "positive"}), on="caption_id", how="inner")
        .select("positive", "negative", "family", "target")
    )


def _captions(shards: Sequence[str | Path], limit: int, seed: int) -> list[str]:
    """At most ``limit`` captions of a corpus's shards, a sample by a salted hash of their
    text (all when there are fewer)."""
    texts = pl.concat([pl.read_parquet(p, columns=["text"]) for p in shards])["text"]
    texts = texts.drop_nulls()
    if texts.len() <= limit:
        return texts.to_list()
    order = [attacks.stable_int(SALT, "captions", seed, t) for t in texts]
    ranked = pl.DataFrame({"text": texts, "o": pl.Series(order, dtype=pl.UInt64)})
    return ranked.sort("o", "text").head(limit)["text"].to_list()


def _corpus_inputs(
    scores: Mapping[str, str | Path],
    generators: Mapping[str, tuple[str | Path, Sequence[str | Path]]],
    log: Log,
) -> tuple[dict[str, pl.DataFrame], dict[str, pl.DataFrame]]:
    """The corpus attacks' inputs read: corpus -> score table, corpus -> generated training
    pairs (``_generator_pairs``)."""
    scored = {corpus: pl.read_parquet(path) for corpus, path in scores.items()}
    training = {}
    for corpus, (negatives, captions) in generators.items():
        training[corpus] = _generator_pairs(negatives, captions)
        log(f"generator@{corpus}: {training[corpus].height} generated training pairs")
    return scored, training


def attacks_stage(
    parts: Mapping[str, str | Path],
    shape: str,
    *,
    debiased: Mapping[str, str | Path] | None = None,
    scores: Mapping[str, str | Path],
    generators: Mapping[str, tuple[str | Path, Sequence[str | Path]]],
    embeddings: Sequence[str | Path] = (),
    table_out: str | Path,
    predictions_out: str | Path,
    figure_png: str | Path,
    figure_pdf: str | Path,
    settings: AttackSettings = AttackSettings(),
    log: Log = print,
) -> None:
    """The blind-attack certificate of one benchmark (``ATTACK_CERTIFICATE_SCHEMA``), two
    panels on every part (``parts``: label -> candidates, or two-image sets for a ``shape``
    balanced by design; with several parts an item id is prefixed with its part):

    - ``debias``: every attack of ``blind.attacks``, cross-fitted over ``folds``, one
      ``score:<scorer>@<corpus>`` attack per scorer of each corpus's score table (``scores``)
      and one ``generator@<corpus>`` per corpus whose generated training negatives are given
      (``generators``: corpus -> (negatives, caption shards)): what the debiasing filters on;
    - ``certify``: the certification panel (``blind.certify``), refitted with its own grouped
      folds; its language models read the corpora's captions, its sentence encoder the
      MiniLM embeddings in ``embeddings`` (``embed_queries`` files; other texts are embedded
      here). Only this panel gives the verdict.

    Writes the per-pair decisions of both (``attacks.DECISIONS_SCHEMA``) and a figure.
    ``debiased`` (label -> debiased candidates) adds both panels on the debiased variant
    (``variant`` "debiased"), its decisions too."""
    from vlcomp.scorers.familiarity import MiniLMEncoder, load_minilm

    scored, training = _corpus_inputs(scores, generators, log)
    limit, seed = settings.certify.lm_captions, settings.seed
    resources = Resources(
        encode=MiniLMEncoder(embeddings),
        encoder_pairs=settings.certify.encoder_pairs,
        corpora={c: _captions(shards, limit, seed) for c, (_, shards) in generators.items()},
        load_encoder=load_minilm,
        tuning=settings.certify.tuned,
    )
    inputs = (shape, scored, training, resources, settings, log)
    first = settings
    if debiased and settings.certify.tuned.debiased_only:
        first = replace(settings, certify=settings.certify.without(TunedEncoder.name))
    certificate, predictions = _certificate(parts, shape, scored, training, resources, first, log)
    if debiased:
        variant, decisions = _certificate(debiased, *inputs, DEBIASED)
        certificate = pl.concat([certificate, variant])
        predictions = pl.concat([predictions, decisions])
    meta = settings.certificate_metadata(
        shape=shape,
        certify_minilm_sha256=resources.encode.model_sha256,
        scikit_learn=version("scikit-learn"),
        torch=version("torch"),
    )
    write_parquet(certificate, table_out, meta)
    write_parquet(predictions, predictions_out, meta)
    plot_attacks(certificate, figure_png, figure_pdf)


def _certificate(
    parts: Mapping[str, str | Path],
    shape: str,
    scores: Mapping[str, pl.DataFrame],
    training: Mapping[str, pl.DataFrame],
    resources: Resources,
    settings: AttackSettings,
    log: Log,
    variant: str | None = None,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    folds, seed, resamples = settings.folds, settings.seed, settings.bootstrap_resamples
    tables = []
    for label, path in parts.items():
        table = pl.read_parquet(path).with_columns(part=pl.lit(label, dtype=pl.String))
        if len(parts) > 1:  # the parts hold the same items (a CREPE set per corpus)
            table = table.with_columns(pl.format("{}/{}", "part", "item_id").alias("item_id"))
        tables.append(table)
    table = pl.concat(tables, how="diagonal_relaxed")
    if table.is_empty():
        raise ValueError(f"no items to attack in {[str(p) for p in parts.values()]}")
    benchmark = table["benchmark"][0]
    if variant is None:
        variant = _variant(table["generator"]) if "generator" in table.columns else AS_GENERATED
    base = list(attacks.TEXT_ATTACKS)
    if shape in attacks.BALANCED_BY_DESIGN:
        results = {DEBIAS: attacks.balanced_by_design(table, shape, base)}
        results[CERTIFY] = attacks.balanced_by_design(table, shape, ["certification panel"])
        predictions = pl.DataFrame(schema=attacks.DECISIONS_SCHEMA)
        log(f"{benchmark}: {attacks.BALANCED_BY_DESIGN[shape]}")
    else:
        pairs = attacks.attack_pairs(table, shape, folds, seed)
        debias = pl.concat(
            [
                attacks.predict_attacks(pairs, base, seed=seed),
                attacks.score_predictions(pairs, scores, seed),
                attacks.generator_predictions(pairs, training, seed),
            ]
        )
        certified_pairs, certify = certification_predictions(
            pairs, resources, training, settings.certify, seed, log
        )
        results = {
            DEBIAS: attacks.attack_accuracy(pairs, debias, resamples, seed),
            # the certificate's bootstrap draws are its own too
            CERTIFY: attacks.attack_accuracy(
                certified_pairs,
                certify,
                resamples,
                attacks.stable_int(SALT, seed) % 2**32,
                unit="group",
            ),
        }
        predictions = pl.concat(
            [
                attacks.pair_decisions(pairs, debias, variant, DEBIAS),
                attacks.pair_decisions(certified_pairs, certify, variant, CERTIFY),
            ]
        )
        log(f"{benchmark}: {pairs.height} pairs of {pairs['item_id'].n_unique()} items, "
            f"{debias['attack'].n_unique()} debiasing and {certify['attack'].n_unique()} "
            "certification attacks")  # fmt: skip
    certificate = pl.concat(
        [
            frame.with_columns(
                benchmark=pl.lit(benchmark, dtype=pl.String),
                panel=pl.lit(panel, dtype=pl.String),
                variant=pl.lit(variant, dtype=pl.String),
                chance=pl.lit(0.5),
            ).select(list(ATTACK_CERTIFICATE_SCHEMA))
            for panel, frame in results.items()
        ]
    )
    for row in best_attacks(certificate).iter_rows(named=True):
        log(f"  {variant} {row['panel']} {row['part']} {row['type']}: best {row['attack']} "
            f"{row['accuracy']:.3f} [{row['ci_low']:.3f}, {row['ci_high']:.3f}] "
            f"of {row['n']} pairs")  # fmt: skip
    return certificate, predictions


def best_attacks(certificate: pl.DataFrame) -> pl.DataFrame:
    """Per (benchmark, panel, part, variant, type), the attack with the highest accuracy (ties:
    the panel's order), with its margin over chance."""
    decided = certificate.filter(pl.col("accuracy").is_not_null())
    return (
        decided.with_row_index("_order")
        .sort("accuracy", "_order", descending=[True, False])
        .group_by("benchmark", "panel", "part", "variant", "type", maintain_order=True)
        .first()
        .with_columns(margin=pl.col("accuracy") - pl.col("chance"))
        .sort("_order")
        .drop("_order")
    )


def debias_stage(
    candidates: str | Path,
    *,
    scores: Mapping[str, str | Path] | None = None,
    generators: Mapping[str, tuple[str | Path, Sequence[str | Path]]] | None = None,
    part: str | None = None,
    candidates_out: str | Path,
    types_out: str | Path,
    dropped_out: str | Path,
    settings: AttackSettings = AttackSettings(),
    log: Log = print,
) -> None:
    """The debiased variant of one candidate table (``blind.debias``): the kept candidates
    (candidates contract), the items kept per type with the best attack before and after,
    and every dropped pair with the step and reason. Fails, saying why, when it keeps no
    pair; one that keeps fewer than a type needs to be certified says so in its metadata
    (``NOTE_KEY``) and the log. The panel is the certificate's: the text attacks, and with
    ``scores`` and ``generators`` (as ``attacks_stage`` takes them) the corpus attacks.
    ``part``: the table's label in a certificate of several parts (a CREPE set per corpus),
    whose item ids it reads as ``<part>/<item_id>``: the debiasing then draws the
    certificate's folds and intervals, and its verdict is the certificate's."""
    table = pl.read_parquet(candidates)
    if part is not None:
        table = table.with_columns(
            part=pl.lit(part, dtype=pl.String), item_id=pl.format("{}/{}", pl.lit(part), "item_id")
        )
    scored, training = _corpus_inputs(scores or {}, generators or {}, log)
    panel = debiasing.Panel(
        scores=scored, training=training, k=settings.folds, resamples=settings.bootstrap_resamples
    )
    result = debiasing.debias(table, settings.seed, panel)
    if part is not None:  # the table's own item ids again
        own = pl.col("item_id").str.strip_prefix(f"{part}/")
        table = table.drop("part").with_columns(item_id=own)
        result = debiasing.DebiasResult(
            result.candidates.drop("part").with_columns(item_id=own),
            result.types,
            result.dropped.with_columns(item_id=own),
            result.before,
            result.after,
        )
    for row in result.types.iter_rows(named=True):
        log(str(row))
    statuses = "; ".join(f"{r['type']}: {r['status']}" for r in result.types.iter_rows(named=True))
    kept_pairs = int((~result.candidates["is_positive"]).sum()) if result.candidates.height else 0
    if kept_pairs == 0:
        raise ValueError(f"{candidates}: debiasing kept no pair; per type: {statuses}")
    meta = settings.metadata()
    if kept_pairs < CERTIFICATE_MIN_PAIRS:  # a small benchmark stays, saying it is uncertified
        meta[NOTE_KEY] = (
            f"debiasing kept {kept_pairs} pair(s), fewer than {CERTIFICATE_MIN_PAIRS}: "
            f"not certified ({statuses})"
        )
        log(meta[NOTE_KEY])
    kept = result.candidates["item_id"].n_unique()
    total = table["item_id"].n_unique()
    log(f"kept {kept} of {total} items ({result.dropped.height} pairs dropped)")
    write_parquet(result.candidates, candidates_out, meta)
    write_parquet(result.types, types_out, meta)
    write_parquet(result.dropped, dropped_out, meta)
