"""Throughput of the parser: captions per second on one core, measured in one run for

(a) raw ``nlp.pipe`` with exactly the spaCy components our parser runs (the ceiling),
(b) our parser (the same pipe plus graph extraction),
(c) ``sng_parser`` as shipped (its full pipeline, one caption at a time).

Each is timed ``repeats`` times on the same captions, interleaved, and the best time is
kept. Rates are per CPU-second of the process (what one core does, whatever else the
machine runs); the process scaling (``n_process`` > 1, the work in child processes) is a
ratio of wall times. Threads of the numerical libraries are whatever the environment sets
(set e.g. ``OMP_NUM_THREADS=1`` for per-core numbers).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from vlcomp.parse.backends import DEFAULT_SPACY_MODEL, SpacyBackend
from vlcomp.parse.parser import CaptionParser, make_options
from vlcomp.parse.quality import make_sng_parser, sng_graph


def _timed(run: Callable[[], Any], times: list[float], walls: list[float] | None = None) -> None:
    """Append the CPU seconds of this process (and, to ``walls``, the wall seconds)."""
    start, cpu = time.perf_counter(), time.process_time()
    run()
    times.append(time.process_time() - cpu)
    if walls is not None:
        walls.append(time.perf_counter() - start)


def throughput(
    texts: Sequence[str],
    *,
    model: str = DEFAULT_SPACY_MODEL,
    batch_size: int = 256,
    repeats: int = 2,
    sng_limit: int | None = None,
    with_sng: bool = True,
    processes: int = 1,
    scaling_captions: int = 20_000,
    echo: Callable[[str], None] | None = print,
) -> dict[str, Any]:
    """Captions per second of (a) raw pipe, (b) ours, (c) sng_parser; prints a summary.

    ``sng_limit`` caps the captions given to ``sng_parser`` (it is several times slower);
    its rate is still per caption. With ``processes`` > 1 ours is also timed, on the texts
    cycled to ``scaling_captions`` (the workers' start-up and model loading then weigh as
    in a shard job), with 1 and with that many spaCy worker processes (``n_process``, as a
    parse job with ``parse.n_process`` runs).
    Returns the rates, the ratios ours/raw, ours/sng and the process scaling, and the
    setting.
    """
    backend = SpacyBackend(model=model)
    parser = CaptionParser(backend, make_options())
    nlp = backend.nlp
    sng = make_sng_parser(model) if with_sng else None
    sng_texts = list(texts[:sng_limit] if sng_limit else texts)

    def raw() -> None:
        for _doc in nlp.pipe(texts, batch_size=batch_size):
            pass

    def ours() -> None:
        for _graph in parser.parse(texts, batch_size=batch_size):
            pass

    many = [texts[i % len(texts)] for i in range(max(scaling_captions, len(texts)))]

    def ours_many(n_process: int) -> Callable[[], None]:
        def run() -> None:
            for _graph in parser.parse(many, batch_size=batch_size, n_process=n_process):
                pass

        return run

    def sng_run() -> None:
        for t in sng_texts:
            sng_graph(sng, t)

    ours()  # warm-up: lemmatiser caches, first-batch allocations
    times: dict[str, list[float]] = {"raw": [], "ours": [], "sng": [], "parallel": []}
    walls: dict[str, list[float]] = {"one": [], "parallel": []}
    for _ in range(repeats):
        _timed(raw, times["raw"])
        _timed(ours, times["ours"])
        if sng is not None:
            _timed(sng_run, times["sng"])
    if processes > 1:
        _timed(ours_many(1), [], walls["one"])
        _timed(ours_many(processes), [], walls["parallel"])
    rates = {
        "raw_spacy": len(texts) / min(times["raw"]),
        "ours": len(texts) / min(times["ours"]),
    }
    if sng is not None:
        rates["sng_parser"] = len(sng_texts) / min(times["sng"])
    if processes > 1:  # wall time: the work is in the child processes
        rates[f"ours_{processes}_processes"] = len(many) / min(walls["parallel"])
    result: dict[str, Any] = {
        "captions": len(texts),
        "sng_captions": len(sng_texts) if sng is not None else 0,
        "batch_size": batch_size,
        "repeats": repeats,
        "components": list(nlp.pipe_names),
        "parser": parser.parser_name,
        "captions_per_s": rates,
        "ours_vs_raw": rates["ours"] / rates["raw_spacy"],
    }
    if sng is not None:
        result["ours_vs_sng"] = rates["ours"] / rates["sng_parser"]
    if processes > 1:
        result["processes"] = processes
        result["scaling_captions"] = len(many)
        result["ours_1_process_wall_captions_per_s"] = len(many) / min(walls["one"])
        result["process_scaling"] = min(walls["one"]) / min(walls["parallel"])
    if echo is not None:
        echo(
            f"throughput on {len(texts)} captions, 1 process, components {nlp.pipe_names}:\n"
            + "\n".join(f"  {k:12s} {v:8.0f} captions/s" for k, v in rates.items())
            + f"\n  ours / raw spaCy = {result['ours_vs_raw']:.3f}"
            + (f"\n  ours / sng_parser = {result['ours_vs_sng']:.2f}" if sng else "")
            + (
                f"\n  {processes} processes / 1 = {result['process_scaling']:.2f}"
                if processes > 1
                else ""
            )
        )
    return result
