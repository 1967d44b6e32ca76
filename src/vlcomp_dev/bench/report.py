"""One Markdown report of the throughput benchmarks (``snakemake benchmarks``).

Every number stands next to its baseline, measured in the same run on the same machine:
raw spaCy ``nlp.pipe`` and SceneGraphParser for the parser, a Python loop over rows for the
counting, the n-gram LM for the text scorers, the batch-size-1 loop and the image-decode
ceiling for the embedding, the header-only check for the image index, the ``length`` attack
alone for the blind-attack panel. The scale run gives per-stage throughput, peak memory per
job and extrapolated wall times. The machine, thread settings and library versions head it.
"""

from __future__ import annotations

import json
import os
import platform
from collections.abc import Mapping
from importlib import metadata
from pathlib import Path
from typing import Any

from vlcomp.io import atomic_path
from vlcomp.machine import cpu_name

VERSIONED = ("spacy", "polars", "pyarrow", "numpy", "torch", "open_clip_torch", "snakemake")


def machine() -> dict[str, Any]:
    """CPU model, cores, memory, thread settings and library versions."""
    memory = None
    try:
        pages, size = os.sysconf("SC_PHYS_PAGES"), os.sysconf("SC_PAGE_SIZE")
        memory = round(pages * size / 2**30, 1)
    except (ValueError, OSError):
        pass
    versions = {}
    for name in VERSIONED:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return {
        "cpu": cpu_name(),
        "cores": os.cpu_count(),
        "memory_gib": memory,
        "python": platform.python_version(),
        "threads": {
            k: os.environ.get(k, "unset") for k in ("OMP_NUM_THREADS", "POLARS_MAX_THREADS")
        },
        "versions": versions,
    }


def _rate(value: float) -> str:
    return f"{value:,.0f}"


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines + [""]


def parser_section(result: Mapping[str, Any]) -> list[str]:
    rates = result["captions_per_s"]
    raw = rates["raw_spacy"]
    names = {
        "raw_spacy": "raw spaCy `nlp.pipe`, same components (baseline)",
        "ours": "ours: the same pipe + graph extraction",
        "sng_parser": "SceneGraphParser (its own pipeline)",
    }
    rows = [[names[k], _rate(r), f"{r / raw:.2f}"] for k, r in rates.items() if k in names]
    lines = [
        "## Parsing",
        "",
        f"{result['captions']} captions ({result['sng_captions']} for SceneGraphParser), one "
        f"process unless stated, batch size {result['batch_size']}, best of "
        f"{result['repeats']}; components {', '.join(result['components'])}; parser "
        f"`{result['parser']}`.",
        "",
        *_table(["parser", "captions/s", "vs raw spaCy"], rows),
    ]
    if "process_scaling" in result:
        parallel = rates[f"ours_{result['processes']}_processes"]
        lines += [
            f"Rates above are per CPU-second of one process. Process scaling, wall clock on "
            f"{result['scaling_captions']:,} captions: 1 process "
            f"{_rate(result['ours_1_process_wall_captions_per_s'])} captions/s, "
            f"{result['processes']} processes "
            f"{_rate(parallel)} "
            f"captions/s: **{result['process_scaling']:.2f}×** (ideal: the number of "
            "processes, on as many idle cores).",
            "",
        ]
    return lines


def counting_section(result: Mapping[str, Any]) -> list[str]:
    loop = result["python_loop_captions_per_s"]
    growth = result["peak_rss_mib"] / result["quarter_peak_rss_mib"]
    return [
        "## Counting (atoms, compounds, bindings)",
        "",
        f"{result['rows']:,} parsed captions in {result['shards']} shards, counted and merged "
        f"in one process on {result['threads']} thread; the Python loop on "
        f"{result['python_loop_rows']:,} of them (same tables: "
        f"{result['same_tables_as_python_loop']}).",
        "",
        *_table(
            ["counter", "captions/s", "vs Python loop", "peak RSS (MiB)"],
            [
                [
                    "Python loop over rows (baseline)",
                    _rate(result["python_loop_captions_per_s"]),
                    "1.00",
                    "-",
                ],
                [
                    f"columnar, {result['quarter_rows']:,} captions",
                    _rate(result["quarter_captions_per_s"]),
                    f"{result['quarter_captions_per_s'] / loop:.1f}",
                    f"{result['quarter_peak_rss_mib']:,.0f}",
                ],
                [
                    f"columnar, {result['rows']:,} captions",
                    _rate(result["captions_per_s"]),
                    f"{result['ours_vs_python_loop']:.1f}",
                    f"{result['peak_rss_mib']:,.0f}",
                ],
            ],
        ),  # fmt: skip
        f"Per CPU-second (what one core does, whatever else runs on the machine): columnar "
        f"{_rate(result['captions_per_cpu_s'])} captions, Python loop "
        f"{_rate(result['python_loop_captions_per_cpu_s'])}.",
        "",
        f"Peak memory at 4× the captions: {growth:.2f}× "
        "(flat: shards are read in batches and only the sums are kept).",
        "",
    ]


def scorers_section(result: Mapping[str, Any]) -> list[str]:
    ngram = next((v for k, v in result.items() if k.startswith("ngram")), None)
    rows = []
    for name, numbers in sorted(result.items(), key=lambda kv: -kv[1]["captions_per_s"]):
        ratio = f"{numbers['captions_per_s'] / ngram['captions_per_s']:.3f}" if ngram else "-"
        rows.append([f"`{name}`", _rate(numbers["captions_per_s"]), ratio,
                     f"{numbers['train_s']:.1f}"])  # fmt: skip
    return [
        "## Text-only scorers",
        "",
        "SugarCrepe texts scored per second on one thread; the n-gram LM is the baseline.",
        "",
        *_table(["scorer", "captions/s", "vs n-gram", "training (s)"], rows),
    ]


def evaluation_section(result: Mapping[str, Any]) -> list[str]:
    rate = result["items_per_s"]
    loop = rate["loop"]
    names = {
        "loop": "SugarCrepe-style loop: one image, then each text, batch size 1 (baseline)",
        "cold": "ours, empty cache: DataLoader workers, batches, texts deduplicated",
        "warm": "ours, filled cache (a rerun, or another benchmark sharing the texts)",
        "decode": "decode ceiling: JPEG decode + crop + preprocess alone, same workers",
        "encode": "image-encode ceiling: every crop encoded in batches, nothing else",
    }
    rows = [[names[k], f"{rate[k]:,.1f}", f"{rate[k] / loop:.2f}"] for k in names if k in rate]
    machine = result.get("machine", {})
    return [
        "## Embedding and evaluation",
        "",
        f"`{result['model']}` on {result['device']} at {result['precision']}, "
        f"{result['items']} items ({result['images']} {result['image_size']} images, "
        f"{result['texts']} texts of which {result['unique_texts']} distinct), batch size "
        f"{result['batch_size']}, {result['threads']} torch thread(s), {result['workers']} "
        f"decode worker(s); median of {result['repeats']}; load average "
        f"{machine.get('load_average_1min', float('nan')):.1f}. All paths agree to "
        f"{result['max_abs_similarity_diff']:.1e} in cosine similarity.",
        "",
        *_table(["path", "items/s", "vs loop"], rows),
        f"Ours cold / decode ceiling (time): {result['cold_over_decode_ceiling']:.2f}; goal "
        f"`{result['goal']}`: {'met' if result['goal_met'] else 'not met'}."
        + (
            f" No path that encodes every crop once at this precision can beat the loop by "
            f"more than the image-encode ceiling's {result['encode_ceiling_over_loop']:.1f}x."
            if "encode_ceiling_over_loop" in result
            else ""
        ),
        "",
    ]


def model_families_section(result: Mapping[str, Any]) -> list[str]:
    rows = []
    for family, numbers in result["families"].items():
        passes = ", ".join(
            f"{value:g} {kind}" for kind, value in numbers["forward_passes_per_item"].items()
        )
        rows.append([family, f"{numbers['items_per_s']:,.1f}", f"{numbers['pairs_per_s']:,.1f}",
                     passes or "-", numbers["cost_model"]])  # fmt: skip
    return [
        "## Model families",
        "",
        f"A tiny random model of each family on {result['device']}, {result['items']} items "
        f"(crops of {result['image_size']} images) of {result['candidates_per_item']} "
        f"candidates, batch size {result['batch_size']}, {result['threads']} torch thread(s), "
        f"no cache, images decoded in the job's process; median of {result['repeats']}. The "
        "models differ in size (the open_clip one is a 64 px ViT, the transformers ones are "
        "width 32, 2 layers): the cost model, not the rate, is what carries to real models.",
        "",
        *_table(
            ["family", "items/s", "pairs/s", "forward passes per item (measured)", "cost model"],
            rows,
        ),  # fmt: skip
    ]


def image_index_section(result: Mapping[str, Any]) -> list[str]:
    ms = result["ms_per_image"]
    threads = result["threads"]
    names = {
        "header_1_thread": "header check (`open` + `verify`), 1 thread: the old index (baseline)",
        "cold_1_thread": "full decode, 1 thread",
        "header": f"header check, {threads} threads",
        "cold": f"full decode, empty cache, {threads} threads (first run)",
        "warm": f"full decode, filled cache, {threads} threads (rerun, unchanged files)",
    }
    base = {"header_1_thread": "header_1_thread", "cold_1_thread": "header_1_thread"}
    rows = [
        [name, f"{ms[k]:.3f}", f"{ms[k] / ms[base.get(k, 'header')]:.2f}"]
        for k, name in names.items()
    ]
    return [
        "## Image index",
        "",
        f"{result['images']:,} {result['described']} (mean {result['mean_file_kib']:.0f} "
        f"KiB, in the page cache), every file checked through the index; median of "
        f"{result['repeats']}. The header check passes a truncated JPEG; the full decode is "
        "what decides `ok` now.",
        "",
        *_table(["check", "ms per image (= s per 1,000)", "vs header check"], rows),
        f"Full decode / header check: {result['cold_over_header_1_thread']:.1f}x on one "
        f"thread, {result['cold_over_header']:.1f}x on {threads}.",
        "",
    ]


def attacks_section(result: Mapping[str, Any]) -> list[str]:
    panel, baseline = result["panel"], result["baseline"]
    names = {panel: "debiasing panel: every text attack, as the certificate runs them"}
    names[baseline] = f"`{baseline}` alone (baseline)"
    runs = [panel, *result["attacks"]]
    if "certify_panel" in result:
        names[result["certify_panel"]] = (
            "certification panel: every family and its generator-trained twin (MiniLM's "
            f"off, as by default; MiniLM on {result['encoder_pairs']} pairs a type)"
        )
        runs += [result["certify_panel"], *result["certify_families"]]
    sizes = [result["by_size"][str(n)] for n in result["sizes"]]
    rows = [
        [names.get(run, f"`{run}` alone"),
         *(f"{_rate(s['pairs_per_s'][run])} ({s['vs_length'][run]:.1f}x)" for s in sizes)]
        for run in runs
    ]  # fmt: skip
    growth = ", ".join(
        f"{s['pairs']:,} pairs {s['panel_us_per_pair']:,.0f} us "
        f"({s['panel_per_pair_vs_smallest']:.2f}x)"
        for s in sizes
    )
    load = result.get("machine", {}).get("load_average_1min")
    return [
        "## Blind-attack panel",
        "",
        f"`blind.attacks.attack_panel` (debiasing panel) and `blind.certify."
        f"certification_predictions` (certification panel) on a seeded synthetic 1+1 table "
        f"({', '.join(result['families'])}), {result['folds']} folds, "
        f"{result['bootstrap_resamples']} bootstrap resamples, seed {result['seed']}; each "
        f"run from empty text caches, median of {result['repeats']}"
        + (f"; load average {load:.1f}" if load is not None else "")
        + ". Pairs per second, and in brackets seconds over those of "
        f"`{baseline}` alone on the same pairs.",
        "",
        *_table(["run", *(f"{s['pairs']:,} pairs" for s in sizes)], rows),
        f"Debiasing panel, time per pair (vs {sizes[0]['pairs']:,} pairs): {growth}.",
        "",
    ]


def scale_section(result: Mapping[str, Any]) -> list[str]:
    stages = dict(result["stages"])  # the gather stage only where a corpus came in parts
    rows = [
        [stage, f"{n['jobs']:.0f}", _rate(n["captions_per_job_second"]),
         _rate(n.get("captions_per_cpu_second", float("nan"))),
         f"{n['max_job_seconds']:.1f}", f"{n['peak_rss_mib']:,.0f}"]
        for stage, n in stages.items()
    ]  # fmt: skip
    extrapolated = [
        [
            name,
            f"{n.get('files', 1):,}",
            f"{n['shards']:,}",
            *(f"{n.get(s, 0.0) / 3600:.2f}" for s in [*stages, "total"]),
        ]
        for name, n in result["extrapolations"].items()
    ]
    corpora = ", ".join(
        f"{name} ({c['format']}, {c['captions']:,})" for name, c in result["corpora"].items()
    )
    return [
        "## Scale run: ingest -> parse -> count through the workflow's rules",
        "",
        f"{result['captions']:,} captions ({corpora}) on {result['cores']} cores, shards of "
        f"{result['captions_per_shard']:,} captions; wall {result['wall_s']:,.0f} s "
        f"({_rate(result['captions_per_s_end_to_end'])} captions/s end to end; load average "
        f"{result.get('load_average_after', float('nan')):.1f} at the end). Parse settings: "
        f"{json.dumps(result['parse_settings'])}.",
        "",
        *_table(
            [
                "stage",
                "jobs",
                "captions/s per job (wall)",
                "captions per CPU-second",
                "longest job (s)",
                "peak RSS per job (MiB)",
            ],
            rows,
        ),  # fmt: skip
        "Extrapolated wall time (hours): one ingest job per file of the corpus as it ships "
        "(one for a single file; with several, a gather job per shard), then one parse and "
        "one count job per shard on every core (the measured CPU time of a job), then the "
        "merge; no queueing modelled.",
        "",
        *_table(["corpus", "files", "shards", *stages, "total"], extrapolated),
    ]


SECTIONS = {
    "parser": parser_section,
    "counting": counting_section,
    "scorers": scorers_section,
    "evaluation": evaluation_section,
    "model_families": model_families_section,
    "image_index": image_index_section,
    "attacks": attacks_section,
    "scale": scale_section,
}


def write_report(results: Mapping[str, Path], out: Path) -> None:
    """Write the Markdown report of the benchmark JSONs (name -> file) to ``out``."""
    info = machine()
    lines = [
        "# vlcomp throughput benchmarks",
        "",
        f"Machine: {info['cpu']}, {info['cores']} cores, {info['memory_gib']} GiB; Python "
        f"{info['python']}; threads {json.dumps(info['threads'])}.",
        "",
        "Versions: " + ", ".join(f"{k} {v}" for k, v in info["versions"].items()) + ".",
        "",
        "Every ratio compares two numbers measured in the same run.",
        "",
    ]
    for name, path in results.items():
        lines += SECTIONS[name](json.loads(Path(path).read_text()))
    with atomic_path(out) as tmp:
        tmp.write_text("\n".join(lines))
