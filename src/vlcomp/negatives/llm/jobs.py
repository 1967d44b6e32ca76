"""Job functions of the LLM negatives (files in, files out; one per workflow rule).

Both jobs read the ``llm`` config mapping (``vlcomp.llm.LLMSettings``), call the endpoint
through one ``LLMClient`` whose persistent cache lives in ``cache_dir``, and write their
outputs atomically (``vlcomp.io``) only once everything is done:

- every planned stop raises a ``vlcomp.errors.JobStop`` (one line, a documented exit code)
  and writes NOTHING: an endpoint that refuses (``EndpointRefused``) or is unreachable
  (``EndpointUnreachable``), the spend ledger at a ``llm.budget`` limit
  (``BudgetExhausted``; every answer received so far is in the cache, so a rerun with a larger
  limit continues where it stopped and makes no call twice), ``llm.dry_run: true``
  (``DryRun``: the estimated calls, tokens and cost are logged, nothing is sent), and a yield
  (items kept / items attempted) below ``llm.min_yield`` (``LowYield``, with the rejection
  table in the log);
- ``max_items`` (pairs): a seeded sample of at most that many eval items is sent to the LLM;
- a rerun with the same inputs answers everything from the cache (zero calls) and writes
  byte-identical candidates, boxes / items and rejection tables. ``stats_out`` describes
  the run itself (calls made, cache hits, tokens, cost), so it differs between a first run
  and a rerun; it names the model and the prompt version, never the API key.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import polars as pl

from vlcomp.errors import DryRun, LowYield
from vlcomp.io import write_json, write_parquet
from vlcomp.llm import LLMClient, LLMSettings
from vlcomp.negatives.context import make_check
from vlcomp.negatives.productivity import ProductivitySettings, summarise
from vlcomp.splits.items import make_parser

from .productivity import MIN_COMPLEXITY, llm_productivity
from .prompts import load_productivity, load_sugarcrepe
from .sugarcrepe import FAMILY_TARGETS, first_requests, generator_name, llm_pairs
from .validate import GraphReader, PairValidator, ProductivityValidator

Log = Callable[[str], None]


def _stats(client: LLMClient, extra: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "model": client.settings.model,
        "prompt_version": client.prompt_version,
        "mode": client.settings.mode,
        **client.stats,
        "spend": client.ledger_summary(),
        **extra,
    }


def sample_items(items: pl.DataFrame, max_items: int | None, seed: int) -> pl.DataFrame:
    """At most ``max_items`` eval items, a seeded sample in item_id order (all when None)."""
    items = items.sort("item_id")
    if max_items is None or items.height <= max_items:
        return items
    rng = np.random.default_rng([seed, 20])
    keep = np.sort(rng.choice(items.height, size=max_items, replace=False))
    return items[keep.tolist()]


def check_yield(
    kept: int, attempted: int, min_yield: float, rejections: pl.DataFrame, what: str, log: Log
) -> float:
    """kept / attempted; raises LowYield (after logging the rejection table) when it is zero
    or below ``min_yield``."""
    share = kept / attempted if attempted else 0.0
    if kept > 0 and share >= min_yield:
        return share
    log(f"{what}: {kept} of {attempted} kept ({share:.1%}); rejections by reason:")
    top = rejections.group_by("reason").agg(pl.col("count").sum()).sort(["count", "reason"])
    for row in top.reverse().iter_rows(named=True):
        log(f"  {row['reason']}: {row['count']}")
    head = "; ".join(f"{r} {n}" for r, n in top.reverse().head(3).iter_rows())
    raise LowYield(
        f"{what}: {kept} of {attempted} kept ({share:.1%}), below llm.min_yield={min_yield:g}; "
        f"top rejections: {head or 'none'} (the whole table is in the log); nothing written"
    )


def _families(families: Any) -> tuple[tuple[str, str], ...]:
    if families is None:
        return FAMILY_TARGETS
    out = []
    for f in families:
        family, _, target = str(f).partition("_")
        out.append((family, target))
    return tuple(out)


def llm_pairs_job(
    eval_items: str,
    settings: Mapping[str, Any],
    seed: int,
    benchmark: str,
    cache_dir: str,
    candidates_out: str,
    boxes_out: str,
    rejections_out: str,
    stats_out: str,
    log: Log = print,
    parse_settings: Mapping[str, Any] | None = None,
    prompts_dir: str | None = None,
    families: list[str] | None = None,
    max_items: int | None = None,
    context_length: int | None = None,
) -> None:
    """SugarCrepe-style LLM negatives (``sugarcrepe.llm_pairs``) of an evaluation set's items.

    ``settings``: the ``llm`` config; ``parse_settings``: the ``parse`` config (our parser
    for validation, as for the eval set); ``families``: e.g. ["replace_att", "swap_obj"]
    (default all seven); ``prompts_dir``: default ``resources/prompts``; ``max_items``: a
    seeded sample of at most this many eval items (None: all); ``context_length``: the text
    encoders' context (``negatives.context``; None: no context check).
    """
    llm = LLMSettings.from_config(settings)
    prompts = load_sugarcrepe(prompts_dir)
    all_items = pl.read_parquet(eval_items)
    items = sample_items(all_items, max_items, seed)
    if items.height < all_items.height:
        log(f"max_items={max_items}: a seeded sample of {items.height} of {all_items.height} items")
    chosen = _families(families)
    with LLMClient(llm, cache_dir, prompts.version, log) as client:
        if llm.dry_run:
            estimate = client.dry_run(first_requests(items, prompts, client, seed, chosen))
            raise DryRun(
                f"llm.dry_run is true: {estimate}; first attempt only (retries not counted)"
            )
        reader = GraphReader(make_parser(parse_settings or {}))
        validator = PairValidator(reader, llm.max_chars)
        result = llm_pairs(
            items, client, prompts, validator, seed, benchmark, chosen, log,
            make_check(context_length),
        )  # fmt: skip
        attempted = result.items * len(chosen)
        share = check_yield(
            result.pairs, attempted, llm.min_yield, result.rejections, benchmark, log
        )
        stats = _stats(
            client,
            {
                "eval_items": result.items,
                "eval_items_available": all_items.height,
                "max_items": max_items,
                "attempted": attempted,
                "pairs": result.pairs,
                "yield": round(share, 6),
                "rejections": int(result.rejections["count"].sum()),
            },
        )
        log(client.spend_line())
    metadata = {
        "seed": str(seed),
        "benchmark": benchmark,
        "generator": generator_name(llm.model),
        "prompt_version": prompts.version,
    }
    write_parquet(result.candidates, candidates_out, metadata=metadata)
    write_parquet(result.boxes, boxes_out, metadata=metadata)
    write_parquet(result.rejections, rejections_out, metadata=metadata)
    write_json(stats, stats_out)
    log(f"{result.items} eval items -> {result.pairs} LLM pair items ({benchmark})")
    for row in result.rejections.iter_rows(named=True):
        log(f"  {row['reason']} [{row['family']}/{row['target']}]: {row['count']}")


def llm_productivity_job(
    vg_dir: str,
    productivity_settings: Mapping[str, Any],
    settings: Mapping[str, Any],
    seed: int,
    cache_dir: str,
    template_candidates: str,
    template_items: str,
    candidates_out: str,
    items_out: str,
    rejections_out: str,
    stats_out: str,
    log: Log = print,
    parse_settings: Mapping[str, Any] | None = None,
    prompts_dir: str | None = None,
    min_complexity: int = MIN_COMPLEXITY,
    template_summary: str | None = None,
    summary_out: str | None = None,
    context_length: int | None = None,
) -> None:
    """CREPE productivity with LLM captions for n >= ``min_complexity``
    (``productivity.llm_productivity``), from the template run's outputs and its inputs
    (``vg_dir``, ``productivity_settings`` and ``seed`` as given to ``productivity_job``).

    With ``template_summary`` and ``summary_out`` the CREPE Table-4 summary is recomputed
    for the kept items (the walks per complexity are the template's). ``context_length``:
    the text encoders' context (``negatives.context``; None: no context check).
    """
    llm = LLMSettings.from_config(settings)
    prompts = load_productivity(prompts_dir)
    s = ProductivitySettings.from_mapping(productivity_settings)
    candidates = pl.read_parquet(template_candidates)
    items = pl.read_parquet(template_items)
    with LLMClient(llm, cache_dir, prompts.version, log) as client:
        reader = GraphReader(make_parser(parse_settings or {}))
        validator = ProductivityValidator(reader, llm.max_chars)
        if llm.dry_run:
            from .productivity import ProductivityGenerator, recover_patterns

            rows, positives = recover_patterns(candidates, vg_dir, s, seed, min_complexity)
            units = list(positives.values()) + [r.unit for r in rows if r.unit.family != "positive"]
            generator = ProductivityGenerator(client, prompts, validator, seed, log)
            estimate = client.dry_run([generator.request(u) for u in units])
            raise DryRun(
                f"llm.dry_run is true: {estimate}; first attempt only (retries not counted)"
            )
        result = llm_productivity(
            candidates, items, vg_dir, s, seed, client, prompts, validator, min_complexity, log,
            make_check(context_length),
        )  # fmt: skip
        attempted = result.rewritten_items + result.dropped_items
        share = check_yield(
            result.rewritten_items,
            attempted,
            llm.min_yield,
            result.rejections,
            "productivity captions",
            log,
        )
        log(client.spend_line())
        stats = _stats(
            client,
            {
                "min_complexity": min_complexity,
                "attempted": attempted,
                "yield": round(share, 6),
                "rewritten_items": result.rewritten_items,
                "dropped_items": result.dropped_items,
                "unchecked_atoms": result.unchecked_atoms,
                "rejections": int(result.rejections["count"].sum()),
            },
        )
    metadata = {
        "seed": str(seed),
        "settings": s.as_json(),
        "generator": generator_name(llm.model),
        "prompt_version": prompts.version,
        "min_complexity": str(min_complexity),
    }
    write_parquet(result.candidates, candidates_out, metadata=metadata)
    write_parquet(result.items, items_out, metadata=metadata)
    write_parquet(result.rejections, rejections_out, metadata=metadata)
    if template_summary is not None and summary_out is not None:
        walks_table = pl.read_parquet(template_summary)
        walks = {
            int(n): int(w)
            for n, w in walks_table.group_by("complexity").agg(pl.col("walks").first()).iter_rows()
        }
        summary = summarise(result.candidates, walks, s.complexities, s.families)
        write_parquet(summary, summary_out, metadata=metadata)
    write_json(stats, stats_out)
    log(
        f"productivity: {result.rewritten_items} items rewritten by {llm.model} "
        f"(n >= {min_complexity}), {result.dropped_items} dropped, "
        f"{result.unchecked_atoms} atoms unchecked by the parser"
    )
    for row in result.rejections.iter_rows(named=True):
        log(
            f"  {row['reason']} [{row['family']}/{row['target']} n={row['complexity']}]: "
            f"{row['count']}"
        )
    log(json.dumps({k: stats[k] for k in ("calls", "cache_hits", "prompt_tokens")}))
