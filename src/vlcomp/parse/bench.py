"""Throughput of the parser: captions per second on one core, measured in one run for

(a) raw ``nlp.pipe`` with exactly the spaCy components our parser runs (the ceiling),
(b) our parser (the same pipe plus graph extraction),
(c) ``sng_parser`` as shipped (its full pipeline, one caption at a time).

Each is timed ``repeats`` times on the same captions, interleaved, and the best time is
kept, which damps the noise of a shared machine. Single process; threads of the
numerical libraries are whatever the environment sets (set e.g. ``OMP_NUM_THREADS=1``
for per-core numbers).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from .backends import DEFAULT_SPACY_MODEL, SpacyBackend
from .parser import CaptionParser, make_options
from .quality import make_sng_parser, sng_graph


def _timed(run: Callable[[], Any], times: list[float]) -> None:
    start = time.perf_counter()
    run()
    times.append(time.perf_counter() - start)


def throughput(
    texts: Sequence[str],
    *,
    model: str = DEFAULT_SPACY_MODEL,
    batch_size: int = 256,
    repeats: int = 2,
    sng_limit: int | None = None,
    with_sng: bool = True,
    processes: int = 1,
    echo: Callable[[str], None] | None = print,
) -> dict[str, Any]:
    """Captions per second of (a) raw pipe, (b) ours, (c) sng_parser; prints a summary.

    ``sng_limit`` caps the captions given to ``sng_parser`` (it is several times slower);
    its rate is still per caption. With ``processes`` > 1 ours is also timed with that many
    spaCy worker processes (``n_process``, as a parse job with ``parse.n_process`` runs).
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

    def ours_parallel() -> None:
        for _graph in parser.parse(texts, batch_size=batch_size, n_process=processes):
            pass

    def sng_run() -> None:
        for t in sng_texts:
            sng_graph(sng, t)

    ours()  # warm-up: lemmatiser caches, first-batch allocations
    times: dict[str, list[float]] = {"raw": [], "ours": [], "sng": [], "parallel": []}
    for _ in range(repeats):
        _timed(raw, times["raw"])
        _timed(ours, times["ours"])
        if sng is not None:
            _timed(sng_run, times["sng"])
        if processes > 1:
            _timed(ours_parallel, times["parallel"])
    rates = {
        "raw_spacy": len(texts) / min(times["raw"]),
        "ours": len(texts) / min(times["ours"]),
    }
    if sng is not None:
        rates["sng_parser"] = len(sng_texts) / min(times["sng"])
    if processes > 1:
        rates[f"ours_{processes}_processes"] = len(texts) / min(times["parallel"])
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
        result["process_scaling"] = rates[f"ours_{processes}_processes"] / rates["ours"]
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
