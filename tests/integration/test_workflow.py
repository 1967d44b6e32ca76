"""The real workflow, run by Snakemake on a small config in a temporary working directory."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from html import unescape
from pathlib import Path

import polars as pl
import pytest
import yaml

from tests.conftest import REPO

SNAKEMAKE = str(Path(sys.executable).parent / "snakemake")
SMALL_CONFIG = REPO / "tests" / "config" / "small.yaml"
FACTUAL_DEV = REPO.parent / "shared" / "data" / "factual_sg" / "dev.csv"

pytestmark = pytest.mark.integration


def snakemake(workdir: Path, *args: str, config: Path = SMALL_CONFIG, timeout: int = 900):
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    command = [
        SNAKEMAKE, "-s", str(REPO / "Snakefile"), "-d", str(workdir),
        "--configfile", str(config), "--cores", "2", *args,
    ]  # fmt: skip
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=timeout)


def parquet_hashes(root: Path) -> dict[str, str]:
    return {
        str(path.relative_to(root)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted((root / "results").rglob("*.parquet"))
        if "cache" not in path.parts
    }


@pytest.fixture(scope="module")
def run_dir(small_run):
    return small_run


def test_outputs_exist(run_dir):
    results = run_dir / "results"
    for path in [
        "world/manifest.json",
        "world/eval/vg/scene_graphs.json",
        "world/eval/vg/region_descriptions.json",
        "world/eval/coco_captions.json",
        "world/corpora/cc12m/captions.tsv",
        "world/corpora/laion/part-00000.parquet",
        "eval_sets/world_vg/items.parquet",
        "eval_sets/world_coco/images.parquet",
        "models/world_cc12m/checkpoint.pt",
        "metrics/retrieval.csv",
        "figures/retrieval.png",
        "figures/retrieval.pdf",
        "world/heldout/retrieval.parquet",
        "figures/retrieval_heldout.png",
        "figures/pairs_heldout.png",
        "export/sugarcrepe/pairs/manifest.json",
    ]:
        assert (results / path).stat().st_size > 0, path
    assert (results / "figures/retrieval.png").read_bytes()[:4] == b"\x89PNG"
    assert (results / "figures/retrieval.pdf").read_bytes()[:4] == b"%PDF"
    for log in ["world/eval.log", "train/world_cc12m.log", "metrics/world_cc12m_retrieval.log"]:
        assert (run_dir / "logs" / log).exists(), log


def test_metrics_table(run_dir):
    table = pl.read_parquet(run_dir / "results/metrics/retrieval.parquet")
    assert table.columns[:10] == [
        "model", "benchmark", "kind", "variant", "part", "split", "family", "metric", "value",
        "n",
    ]  # fmt: skip
    assert set(table["variant"]) == {"as_generated"}  # retrieval has no debiased variant
    assert set(table["kind"]) == {"retrieval"}
    assert set(table["model"]) == {"world_cc12m", "world_laion", "world_cc12m_negclip", "chance"}
    assert {"i2t_R@1", "t2i_R@1", "i2t_R@5", "t2i_R@5"} <= set(table["metric"])
    assert table["value"].is_between(0, 1).all()
    n_all = table.filter((pl.col("split") == "all") & (pl.col("metric") == "t2i_R@1"))["n"]
    assert set(n_all.to_list()) == {60 * 3}

    def value(model: str, metric: str) -> float:
        row = table.filter(
            (pl.col("model") == model) & (pl.col("split") == "all") & (pl.col("metric") == metric)
        )
        return row["value"][0]

    # Even four short epochs on 640 pairs must beat random retrieval clearly.
    assert value("world_cc12m", "t2i_R@5") > 3 * value("chance", "t2i_R@5")
    heldout = pl.read_parquet(run_dir / "results/world/heldout/retrieval.parquet")
    assert {"held_in", "held_out"} <= set(heldout["split"])


def test_versions_are_recorded(run_dir):
    import pyarrow.parquet as pq

    meta = pq.read_metadata(run_dir / "results/metrics/world_cc12m/pairs_predictions.parquet")
    keys = {k.decode() for k in meta.metadata}
    assert {"torch", "open_clip", "torchvision", "vlcomp", "fingerprint"} <= keys
    info = json.loads((run_dir / "results/models/world_cc12m/info.json").read_text())
    assert info["versions"]["open_clip"]


def test_nothing_to_do_on_rerun(run_dir):
    result = snakemake(run_dir, "-n", config=run_dir / "config.yaml")
    assert result.returncode == 0
    assert "Nothing to be done" in result.stdout + result.stderr


def test_one_figure_rebuilds_alone(run_dir):
    figure = run_dir / "results/figures/retrieval.png"
    figure.unlink()
    result = snakemake(run_dir, "results/figures/retrieval.png", config=run_dir / "config.yaml")
    assert result.returncode == 0, result.stderr[-3000:]
    assert figure.exists()
    jobs = [line for line in result.stdout.splitlines() + result.stderr.splitlines()]
    assert any("figure_benchmark" in line for line in jobs)
    assert not any("train_model" in line for line in jobs)


def pending_outputs(workdir: Path, config: Path) -> list[tuple[str, str]]:
    """(rule, output) of every output a run with ``config`` would rewrite."""
    result = snakemake(workdir, "--detailed-summary", config=config)
    assert result.returncode == 0, result.stderr[-3000:]
    rows = [line.split("\t") for line in result.stdout.splitlines()]
    header = rows[0]
    assert header[:3] == ["output_file", "date", "rule"] and header[-1] == "plan", header
    return [
        (row[2], row[0]) for row in rows[1:] if len(row) == len(header) and row[-1] != "no update"
    ]


def test_changing_one_corpus_reruns_only_its_chain(run_dir, tmp_path):
    config = yaml.safe_load((run_dir / "config.yaml").read_text())
    config["world"]["corpora"]["laion"]["n_images"] += 10
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    pending = pending_outputs(run_dir, path)
    assert ("world_corpus", "results/world/corpora/laion") in pending
    assert ("train_scorer", "results/scorers/laion/ngram.parquet") in pending
    assert ("train_model", "results/models/world_laion/checkpoint.pt") in pending
    # Nothing of cc12m's chain reruns. (Every model is scored on laion's splits too, and
    # tables over all models are collected again.)
    chain = {"world_corpus", "ingest_cc12m", "parse_shard", "count_shard", "merge_counts",
             "train_scorer", "train_model", "training_negatives", "assign_splits"}  # fmt: skip
    others = [(r, o) for r, o in pending if "cc12m" in o and r in chain]
    assert not others, others
    print(f"{len({r for r, _ in pending})} rules, {len(pending)} outputs rerun: {sorted(pending)}")


def test_report(run_dir):
    result = snakemake(run_dir, "--report", "report.html", config=run_dir / "config.yaml")
    assert result.returncode == 0, result.stderr[-3000:]
    assert (run_dir / "report.html").stat().st_size > 10_000


def report_data(html: str, name: str):
    """An object the HTML report's app reads, embedded as ``var <name> = {...};``."""
    found = re.search(rf'<script id="{name}">\s*var {name} = (.*?);\s*</script>', html, re.S)
    assert found, f"no {name} in the report"
    return json.loads(found[1])


def test_report_explains_every_result(run_dir, tmp_path):
    """Every result of the report has a caption rendered for its own job (its wildcards and
    the models in the text, no RST error message) and sits under its benchmark."""
    report = tmp_path / "report.html"
    result = snakemake(run_dir, "--report", str(report), config=run_dir / "config.yaml")
    assert result.returncode == 0, result.stderr[-3000:]
    html = report.read_text()
    results = report_data(html, "results")
    rules = {entry["job_properties"]["rule"] for entry in results.values()}
    assert {"figure_benchmark", "collect_metrics", "significance", "audit_benchmark",
            "check_world_splits", "figure_world_heldout", "parser_quality"} <= rules  # fmt: skip
    models = yaml.safe_load((run_dir / "config.yaml").read_text())["evaluate"]["models"]
    captions = {path: unescape(entry["caption"]) for path, entry in results.items()}
    for path, entry in results.items():
        caption = captions[path]
        assert "<p>" in caption and "system-message" not in caption, (path, caption)
        wildcards = entry["job_properties"]["wildcards"]
        for value in [w.split("=", 1)[1] for w in wildcards.split(", ") if w]:
            assert f">{value}" in caption, (path, value, caption)
        if entry["job_properties"]["rule"] == "figure_benchmark":
            assert all(f">{model}<" in caption for model in models), (path, caption)
    # each kind of figure is read its own way
    assert "Recall@K" in captions["results/figures/retrieval.png"]
    assert ">UC<" in captions["results/figures/crepe_systematicity.png"]
    assert "complexity n" in captions["results/figures/crepe_productivity.png"]
    categories = report_data(html, "categories")
    figures = categories["Figures"]
    assert {"pairs", "retrieval", "crepe_systematicity", "across benchmarks"} <= set(figures)
    assert "results/figures/crepe_systematicity_bindsplit.png" in figures["crepe_systematicity"]
    for name, subcategories in categories.items():
        assert len(subcategories) == 1 or "Other" not in subcategories, (name, subcategories)


# One model's chain, from the world's files through training, negatives and bootstrap
# intervals: everything random that the small run does, at half its cost.
DETERMINISM_TARGETS = ("results/metrics/world_cc12m/pairs.parquet",)


def test_same_config_gives_byte_identical_parquet(run_dir, tmp_path):
    result = snakemake(tmp_path, *DETERMINISM_TARGETS, config=run_dir / "config.yaml")
    assert result.returncode == 0, result.stderr[-4000:]
    first, second = parquet_hashes(run_dir), parquet_hashes(tmp_path)
    assert len(second) >= 10
    assert {path: first.get(path) for path in second} == second


def write_config(tmp_path: Path, edit) -> Path:
    config = yaml.safe_load(SMALL_CONFIG.read_text())
    edit(config)
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda c: c["world"]["eval"].update(n_images="many"), "world.eval.n_images"),
        (lambda c: c["evaluate"].update(typo=1), "unknown key(s) 'typo'"),
        (
            lambda c: c["models"].update(m={"open_clip": "RN50", "checkpoint": "missing.pt"}),
            "models.m.checkpoint': file not found: missing.pt",
        ),
    ],
)
def test_bad_config_fails_before_any_job(tmp_path, edit, message):
    workdir = tmp_path / "work"
    workdir.mkdir()
    result = snakemake(workdir, config=write_config(tmp_path, edit))
    assert result.returncode != 0
    assert message in result.stderr + result.stdout
    assert not (workdir / "results").exists()


def test_unavailable_pretrained_model_fails_fast(tmp_path):
    def add_model(config):
        config["models"]["vitb32"] = {"open_clip": "ViT-B-32-quickgelu", "pretrained": "openai"}
        config["evaluate"]["models"] = ["vitb32"]

    workdir = tmp_path / "work"
    workdir.mkdir()
    result = snakemake(workdir, config=write_config(tmp_path, add_model))
    assert result.returncode != 0
    log = (workdir / "logs/models/vitb32_available.log").read_text()
    assert "not in the local Hugging Face cache" in log
    # The check is the first job of the model's chain: nothing was scored with it.
    assert not list((workdir / "results").glob("metrics/vitb32/*"))


def test_missing_user_file_fails_before_any_job(tmp_path):
    def add_eval_set(config):
        config["eval_sets"] = {
            "mine": {"format": "coco_captions", "captions": "nope.json", "images": "imgs"}
        }

    workdir = tmp_path / "work"
    workdir.mkdir()
    result = snakemake(workdir, config=write_config(tmp_path, add_eval_set))
    assert result.returncode != 0
    out = result.stderr + result.stdout
    assert "config key 'eval_sets.mine.captions': not found: nope.json" in out
    assert "config key 'eval_sets.mine.images': not found: imgs" in out
    assert not (workdir / "results").exists()


def test_systematicity_chain(run_dir):
    results = run_dir / "results"
    for corpus in ("cc12m", "laion"):
        shards = sorted((results / "captions" / corpus).glob("captions-*-of-2.parquet"))
        assert len(shards) == 2
        graphs = pl.concat(
            pl.read_parquet(p) for p in (results / "graphs" / corpus).glob("*.parquet")
        )
        assert graphs["ok"].mean() > 0.95
        assert "spacy" in graphs["parser"][0]
        atoms = pl.read_parquet(results / "counts" / corpus / "atoms.parquet")
        assert set(atoms["kind"]) >= {"object", "attribute"}
        splits = pl.read_parquet(results / "splits" / "world_vg" / f"{corpus}.parquet")
        assert splits.height > 0
    # Held-out atoms never reach the parsed training counts.
    cc12m_atoms = pl.read_parquet(results / "counts" / "cc12m" / "atoms.parquet")
    assert "hexagon" not in cc12m_atoms["value"].to_list()
    agreement = json.loads((results / "splits/world_vg/cc12m_agreement.json").read_text())
    assert agreement["crepe"]["rate"] > 0.9, agreement


def test_text_only_chain(run_dir):
    results = run_dir / "results"
    blind = pl.read_parquet(results / "blind/pairs/cc12m.parquet")
    assert set(blind["scorer"]) == {"ngram", "minilm"}
    assert blind["accuracy"].is_between(0, 1).all()
    refined = pl.read_parquet(results / "refine/pairs/cc12m/refined_candidates.parquet")
    original = pl.read_parquet(results / "negatives/pairs/candidates.parquet")
    assert 0 < refined.height < original.height
    assert (results / "figures/refine_pairs_cc12m.png").stat().st_size > 0
    priors = pl.read_parquet(results / "priors/world_cc12m/pairs.parquet")
    assert priors.height > 0
    if FACTUAL_DEV.exists():
        quality = (results / "parser/quality.md").read_text()
        assert "factual" in quality.lower() and "sng" in quality.lower()


def test_productivity_and_statistics(run_dir):
    results = run_dir / "results"
    candidates = pl.read_parquet(results / "negatives/crepe_productivity/candidates.parquet")
    assert set(candidates["family"]) == {"atom", "swap", "neg"}
    metrics = pl.read_parquet(results / "metrics/crepe_productivity.parquet")
    assert {"R@1", "ci_low", "ci_high", "complexity"} <= set(metrics.columns) | set(
        metrics["metric"]
    )
    assert set(metrics["complexity"].drop_nulls()) == {4, 5}
    tests = pl.read_parquet(results / "stats/pairs_mcnemar.parquet")
    assert tests.height > 0
    assert (results / "figures/crepe_productivity.png").stat().st_size > 0
    assert (results / "figures/crepe_systematicity_bindsplit.png").stat().st_size > 0
    export = results / "export/crepe/crepe_productivity"
    exported = json.loads((export / "files.json").read_text())
    assert exported and all((export / f).exists() for f in exported.values())
    summary = (results / "metrics/summary.md").read_text()
    assert "crepe_systematicity" in summary and "crepe_productivity" in summary
    systematicity = pl.read_parquet(results / "metrics/crepe_systematicity.parquet")
    assert {"SC", "UC", "UA"} & set(systematicity["split"])


def test_crossover_negclip_and_composition(run_dir):
    results = run_dir / "results"
    crossover = pl.read_parquet(results / "stats/crossover.parquet")
    assert {
        "crepe_systematicity",
        "crepe_systematicity_bindsplit",
        "pairs",
        "pairs_heldout",
    } <= set(crossover["table"])
    own = crossover.filter((pl.col("corpus") == "cc12m") & (pl.col("model_own") == "world_cc12m"))
    assert set(own["model_other"]) == {"world_laion"}  # the NegCLIP model shares cc12m
    heldout = own.filter((pl.col("table") == "pairs_heldout") & (pl.col("family") == "all"))
    assert {"held_in", "held_out"} <= set(heldout["split"])
    assert crossover["p_value"].is_between(0, 1).all()
    assert (results / "figures/crossover.png").read_bytes()[:4] == b"\x89PNG"
    assert "## crossover" in (results / "metrics/summary.md").read_text()
    negatives = pl.read_parquet(results / "negatives/training/cc12m.parquet")
    assert negatives.height > 0 and set(negatives["family"]) <= {"replace", "swap"}
    log = (run_dir / "logs/train/world_cc12m_negclip.log").read_text()
    assert "NegCLIP-style training" in log
    report = (results / "stats/crepe_systematicity_composition.md").read_text()
    assert "## world_cc12m on the splits of cc12m" in report and "matched on" in report


def test_world_oracles(run_dir):
    """Every world benchmark is scored by the ground-truth oracles (the job fails when the
    truth oracle rejects a positive), with false-negative rates in the summary."""
    results = run_dir / "results/world/oracles"
    for benchmark in ("pairs", "crepe_systematicity", "crepe_productivity"):
        metrics = pl.read_parquet(results / f"{benchmark}.parquet")
        assert {"oracle:truth", "oracle:bag_of_words", "oracle:objects_only", "chance"} == set(
            metrics["model"]
        )
        micro = metrics.filter(pl.col("family") == "all", pl.col("split") == "all")
        micro = micro.filter(pl.col("metric").is_in(["accuracy_micro", "R@1_micro"]))
        value = dict(micro.group_by("model").agg(pl.col("value").min()).iter_rows())
        fn = pl.read_parquet(results / f"{benchmark}_false_negatives.parquet")
        assert fn.height and (fn["n_negatives"] > 0).all()
        assert (fn["n_true"] <= fn["n_negatives"]).all()
        # a set is lost to the truth oracle only by a negative true of its image
        pooled = fn.filter(pl.col("family") == "all")
        assert value["oracle:truth"] >= 1 - (pooled["n_true"] / pooled["n_sets"]).max()
        assert value["oracle:bag_of_words"] < value["oracle:truth"]
        assert fn["bag_of_words_accuracy"].is_between(0, 1).all()
        assert fn["word_prior_accuracy"].is_between(0, 1).all()
    summary = (run_dir / "results/metrics/summary.md").read_text()
    assert "oracle:bag_of_words" in summary and "False negatives" in summary
