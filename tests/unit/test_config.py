import copy
import importlib

import pytest
import yaml

from tests.conftest import REPO, SHARED
from vlcomp.config import ConfigError, training_corpora, validate_config


@pytest.fixture
def default_config():
    return yaml.safe_load((REPO / "config" / "config.yaml").read_text())


def test_default_config_is_valid_and_gets_defaults(default_config):
    config = validate_config(default_config)
    assert config["evaluate"]["device"] == "auto"
    assert training_corpora(config, "world_cc12m") == ["cc12m"]
    # The world registers its files under ordinary names.
    assert config["eval_sets"]["world_vg"]["format"] == "visual_genome"
    assert config["eval_sets"]["world_coco"]["format"] == "coco_captions"
    assert config["corpora"]["laion"]["format"] == "laion_parquet"
    assert config["corpora"]["cc12m"]["images"] == "results/world/corpora/cc12m"


def test_validation_does_not_modify_its_input(default_config):
    before = copy.deepcopy(default_config)
    validate_config(default_config)
    assert default_config == before


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (lambda c: c["world"]["eval"].update(n_images="many"), "world.eval.n_images"),
        (lambda c: c["world"].update(colour_count=3), "unknown key(s) 'colour_count'"),
        (lambda c: c["world"]["corpora"]["cc12m"].update(format="csv"), "corpora.cc12m.format"),
        (lambda c: c["models"]["world_cc12m"].update(pretrained="openai"), "exactly one of"),
        (lambda c: c["evaluate"].update(models=["nope"]), "evaluate.models[0]': no model named"),
        (
            lambda c: c["models"]["world_cc12m"]["train"].update(corpus="yfcc"),
            "models.world_cc12m.train.corpus': no corpus named 'yfcc'",
        ),
        (
            lambda c: c["models"]["world_cc12m_negclip"]["train"].update(start_from="vit_b32"),
            "train.start_from': 'vit_b32' is not a model this workflow trains",
        ),
        (
            lambda c: c["models"]["world_cc12m_negclip"].update(open_clip="vlcomp-world-vit"),
            "train.start_from': 'world_cc12m' is a vlcomp-world-rn, not a vlcomp-world-vit",
        ),
        (
            lambda c: c["models"]["world_cc12m"]["train"].update(negatives_per_pair=0),
            "world_cc12m.train.negatives_per_pair': set, but train.hard_negatives is none",
        ),
        (
            lambda c: c["world"].update(probes={"models": ["world_cc12m", "vit"]}),
            "world.probes.models[1]': 'vit' is not a model this workflow trains",
        ),
        (
            lambda c: c["world"].update(probes={"models": ["world_cc12m"], "corpus": "coco"}),
            "world.probes.corpus': no world corpus named 'coco'",
        ),
        (
            lambda c: c["models"].update(m={"open_clip": "RN50", "checkpoint": "/no/such.pt"}),
            "models.m.checkpoint': file not found: /no/such.pt",
        ),
        (lambda c: c.pop("evaluate"), "'evaluate' is a required property"),
        (
            lambda c: c["benchmarks"]["pairs"].update(eval_set="coco"),
            "benchmarks.pairs.eval_set': no eval set named 'coco'",
        ),
        (
            lambda c: c["benchmarks"]["retrieval"].update(eval_set="world_vg"),
            "a retrieval benchmark needs a coco_captions eval set; 'world_vg' is visual_genome",
        ),
        (
            lambda c: c["benchmarks"]["crepe_systematicity"].update(corpora=["cc3m"]),
            "benchmarks.crepe_systematicity.corpora[0]': no corpus named 'cc3m'",
        ),
        (
            lambda c: c["models"]["world_cc12m"].update(training_corpora=["wit"]),
            "models.world_cc12m.training_corpora[0]': no corpus named 'wit'",
        ),
        (
            lambda c: c.update(
                corpora={"own": {"format": "coco_json", "inputs": ["x"], "files_per_job": 1}}
            ),
            "config key 'corpora.own.files_per_job': files_per_job: coco_json captions with "
            "the dataset's own ids",
        ),
        (
            lambda c: c.update(corpora={"cc12m": {"format": "cc12m_tsv", "inputs": ["x"]}}),
            "config key 'corpora': names also registered by the world: ['cc12m']",
        ),
        (
            lambda c: c.update(
                eval_sets={"v": {"format": "visual_genome", "images": "i", "regions": {"x": 1}}}
            ),
            "config key 'eval_sets.v.dir': required for format visual_genome",
        ),
        (
            lambda c: c["benchmarks"]["crepe_systematicity"].update(families=["swap_att"]),
            "config key 'benchmarks.crepe_systematicity.families': only a pairs benchmark "
            "with negatives llm chooses families; 'crepe_systematicity' is a "
            "crepe_systematicity benchmark",
        ),
        (
            lambda c: c["benchmarks"]["pairs"].update(families=["replace_obj"]),
            "config key 'benchmarks.pairs.families': only negatives llm chooses families; "
            "'pairs' has negatives template",
        ),
        (
            lambda c: c["benchmarks"]["pairs"].update(max_items=5),
            "config key 'benchmarks.pairs.max_items': only a pairs benchmark with negatives llm",
        ),
        (
            lambda c: c["benchmarks"]["pairs"].update(max_items=0),
            "benchmarks.pairs.max_items",
        ),
        (
            lambda c: c.update(llm={"model": "m", "min_yield": 2}),
            "llm.min_yield",
        ),
        (
            lambda c: c["negatives"].update(systematicity={"senses": "first"}),
            "config key 'negatives.systematicity.senses'",
        ),
        (
            lambda c: c["negatives"].update(systematicity={"senses": 0}),
            "config key 'negatives.systematicity.senses'",
        ),
    ],
)
def test_bad_config_names_the_key(default_config, mutate, expected):
    mutate(default_config)
    with pytest.raises(ConfigError) as error:
        validate_config(default_config)
    assert expected in str(error.value)


def test_families_are_accepted_where_they_apply(default_config):
    default_config["benchmarks"]["pairs"].update(
        negatives="llm", families=["swap_att"], max_items=3
    )
    default_config["llm"] = {"model": "m", "base_url": "http://127.0.0.1:9/v1"}
    config = validate_config(default_config)
    assert config["benchmarks"]["pairs"]["families"] == ["swap_att"]
    assert config["benchmarks"]["pairs"]["max_items"] == 3


def test_senses_default_is_the_generators_and_fits_real_corpora(default_config):
    from vlcomp.negatives.systematicity import DEFAULT_SETTINGS

    del default_config["negatives"]["systematicity"]  # the world's file sets "all"
    config = validate_config(default_config)
    assert config["negatives"]["systematicity"] == {"senses": "coherent"}
    assert DEFAULT_SETTINGS["senses"] == "coherent"
    default_config["negatives"]["systematicity"] = {"senses": 2, "max_foils": 5}
    assert validate_config(default_config)["negatives"]["systematicity"]["senses"] == 2


def test_config_readme_documents_every_key():
    from vlcomp.config import config_docs

    assert (REPO / "config" / "README.md").read_text() == config_docs(), (
        "config/README.md is stale: run `python -m vlcomp.config > config/README.md`"
    )


def test_world_semantics_are_checked_with_the_key(default_config):
    default_config["world"]["corpora"]["cc12m"]["holdout"]["bindings"].append(["teal", "circle"])
    with pytest.raises(
        ConfigError, match=r"config key 'world.corpora.cc12m.holdout.bindings\[4\]'"
    ):
        validate_config(default_config)


def test_a_config_without_the_world_needs_no_world(tmp_path):
    (tmp_path / "vg").mkdir()
    (tmp_path / "images").mkdir()
    (tmp_path / "captions.tsv").write_text("a.jpg\ta red car\n")
    config = validate_config(
        {
            "eval_sets": {
                "vg": {
                    "format": "visual_genome",
                    "dir": str(tmp_path / "vg"),
                    "images": str(tmp_path / "images"),
                }
            },
            "corpora": {
                "mine": {"format": "cc12m_tsv", "inputs": [str(tmp_path / "captions.tsv")]}
            },
            "models": {"m": {"open_clip": "ViT-B-32-quickgelu", "pretrained": "openai"}},
            "benchmarks": {
                "b": {"kind": "crepe_systematicity", "eval_set": "vg", "corpora": ["mine"]}
            },
            "evaluate": {"models": ["m"]},
        }
    )
    assert config["world"] is None
    assert set(config["eval_sets"]) == {"vg"}
    assert set(config["corpora"]) == {"mine"}


def test_presets_are_valid_once_their_files_exist(tmp_path):
    """Every preset passes validation when its /data paths point at files that exist."""

    def relocate(value):
        if isinstance(value, dict):
            return {k: relocate(v) for k, v in value.items()}
        if isinstance(value, list):
            return [relocate(v) for v in value]
        if isinstance(value, str) and value.startswith("/data/"):
            path = tmp_path / value.removeprefix("/data/")
            if path.suffix:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.touch()
            else:
                path.mkdir(parents=True, exist_ok=True)
            return str(path)
        return value

    presets = sorted((REPO / "config" / "presets").glob("*.yaml"))
    assert len(presets) >= 3
    for preset in presets:
        raw = yaml.safe_load(preset.read_text())
        if relocate(raw) != raw:  # it names files under /data
            with pytest.raises(ConfigError, match="not found: /data/"):
                validate_config(raw)
        elif not SHARED.exists():
            continue  # the shared-data preset needs ../shared (said by -rs where it matters)
        config = validate_config(relocate(raw))
        # world_* presets extend the embedded world; every other preset replaces it
        assert (config["world"] is None) != preset.stem.startswith("world_"), preset
        assert config["benchmarks"], preset


def test_readme_corpus_formats_are_what_the_format_registry_renders():
    from vlcomp.config import FORMATS_BEGIN, FORMATS_END
    from vlcomp.ingest.job import format_docs

    readme = (REPO / "config" / "README.md").read_text()
    assert readme.count(FORMATS_BEGIN) == 1 and readme.count(FORMATS_END) == 1
    section = readme.split(FORMATS_BEGIN)[1].split(FORMATS_END)[0]
    assert section.strip("\n") == format_docs().strip("\n"), (
        "config/README.md's corpus formats differ from vlcomp.ingest.readers.FORMATS: "
        "run `python -m vlcomp.config > config/README.md`"
    )
    assert "src/vlcomp" not in readme.split("| `corpora` |")[1].split("\n")[0]


def test_every_format_and_option_is_documented(monkeypatch):
    import dataclasses

    from vlcomp.config import load_schema
    from vlcomp.ingest import job, readers

    enum = load_schema()["properties"]["corpora"]["additionalProperties"]["properties"]
    assert sorted(enum["format"]["enum"]) == sorted(readers.FORMATS)
    for name, spec in readers.FORMATS.items():
        assert set(spec.option_docs) == set(spec.defaults), name
        assert f"| `{name}` |" in job.format_docs()
    # The options every format takes are the ones the loader accepts.
    assert set(job.COMMON_OPTIONS) == {"glob", "buffer_rows", "rules"}
    job.IngestOptions.parse("text_lines", {"glob": "*.txt", "buffer_rows": 10, "rules": {}})
    with pytest.raises(readers.IngestOptionsError, match="unknown option"):
        job.IngestOptions.parse("text_lines", {"globs": "*.txt"})
    # A new option without a description fails the docs, naming it.
    lines = readers.FORMATS["text_lines"]
    new = dataclasses.replace(lines, defaults={**lines.defaults, "strip": True})
    monkeypatch.setitem(readers.FORMATS, "text_lines", new)
    with pytest.raises(
        ValueError, match=r"FORMATS\['text_lines'\]: options without a description \['strip'\]"
    ):
        job.format_docs()


def test_split_legend_names_every_label():
    from vlcomp.config import SPLIT_LABELS, config_docs
    from vlcomp.evaluate.embed import MISSING, UNREADABLE

    assign = importlib.import_module("vlcomp.splits.assign")  # the package exports a function

    legend = " ".join(label for label, _, _ in SPLIT_LABELS)
    labels = [
        *assign.CREPE_SPLITS, *assign.LABELS, *assign.BUCKETS, *assign.BINDSPLIT_SPLITS,
        *assign.RULES, assign.NO_COMPOUND, assign.NO_BINDING, MISSING, UNREADABLE, "excluded",
    ]  # fmt: skip
    assert [label for label in labels if f"`{label}`" not in legend] == []
    assert "## Split labels" in config_docs()
    readme = (REPO / "README.md").read_text()
    assert "config/README.md#split-labels" in readme


def test_clip_to_image_is_documented_with_its_default():
    from vlcomp.config import load_schema
    from vlcomp.ingest.vg import RegionFilters

    eval_set = load_schema()["$defs"]["eval_set"]["properties"]
    doc = " ".join(eval_set["regions"]["properties"]["clip_to_image"]["description"].split())
    default = "true" if RegionFilters().clip_to_image else "false"
    assert f"{default} (the default)" in doc
    assert "invalid_box" in doc and "clipped_boxes" in doc


def test_config_overrides_are_read_as_the_schema_types(default_config):
    """``snakemake --config`` reads nested values as strings (YAML's BaseLoader): they are
    coerced to the schema's types before validation, through Snakemake's own parser."""
    from snakemake.cli import parse_config
    from snakemake.utils import update_config

    overrides = parse_config(
        [
            "throughput={scale_captions: 400000}",
            "evaluate={bootstrap_resamples: 50}",
            "parse={numerals: true}",
            "priors={bins: 4}",
        ]
    )
    assert overrides["throughput"] == {"scale_captions": "400000"}  # what Snakemake gives
    update_config(default_config, overrides)
    config = validate_config(default_config)
    assert config["throughput"]["scale_captions"] == 400000
    assert config["evaluate"]["bootstrap_resamples"] == 50
    assert config["parse"]["numerals"] is True
    assert config["priors"]["bins"] == 4
    default_config["priors"]["bins"] = "auto"
    assert validate_config(default_config)["priors"]["bins"] == "auto"  # a string it accepts
    default_config["throughput"]["scale_captions"] = "many"
    with pytest.raises(ConfigError, match="throughput.scale_captions"):
        validate_config(default_config)
