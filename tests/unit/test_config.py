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
            "config key 'eval_sets.v.regions': unknown key(s) 'x' (allowed: clip_to_image,",
        ),
        (
            lambda c: c.update(eval_sets={"v": {"format": "visual_genome", "images": "i"}}),
            "config key 'eval_sets.v.dir': required for format visual_genome",
        ),
        (
            lambda c: c.update(
                eval_sets={
                    "v": {
                        "format": "visual_genome",
                        "images": "i",
                        "dir": "d",
                        "regions": {"dedupe": "all", "rules": {"english": "no"}},
                    }
                }
            ),
            "config key 'eval_sets.v.regions.dedupe': 'all' is not one of",
        ),
        (
            lambda c: c.update(
                eval_sets={
                    "s": {
                        "format": "aro",
                        "files": ["f"],
                        "images": "i",
                        "options": {"tasks": {"a.json": "vg_relations"}},
                    }
                }
            ),
            "config key 'eval_sets.s.options.tasks.a.json': 'vg_relations' is not one of",
        ),
        (
            lambda c: c.update(
                corpora={
                    "own": {"format": "text_lines", "inputs": ["x"], "options": {"header": "maybe"}}
                }
            ),
            "config key 'corpora.own.options.header': 'maybe' is not of type 'boolean'",
        ),
        (  # an option of another format: the format registry says so
            lambda c: c.update(
                corpora={
                    "own": {"format": "text_lines", "inputs": ["x"], "options": {"header": False}}
                }
            ),
            "config key 'corpora.own.options': text_lines: unknown option(s) ['header']",
        ),
        (
            lambda c: c.update(ingest={"rules": {"max_chars": 0}}),
            "config key 'ingest.rules.max_chars': 0 is less than the minimum of 1",
        ),
        (
            lambda c: c["scorers"].update(tiny_gpt2={"settings": {"n_layers": 2}}),
            "config key 'scorers.tiny_gpt2.settings': unknown key(s) 'n_layers'",
        ),
        (
            lambda c: c["negatives"].update(systematicity={"atom_negatives": 0}),
            "config key 'negatives.systematicity.atom_negatives': 0 is less than the minimum",
        ),
        (
            lambda c: c["negatives"].update(systematicity={"comp_negative": 3}),
            "config key 'negatives.systematicity': unknown key(s) 'comp_negative'",
        ),
        (
            lambda c: c["negatives"].update(productivity={"families": ["atom", "replace"]}),
            "config key 'negatives.productivity.families[1]': 'replace' is not one of",
        ),
        (  # a rule between two keys: the stage's own check
            lambda c: c["negatives"].update(productivity={"min_negatives": 6}),
            "config key 'negatives.productivity': productivity: min_negatives must lie in",
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
            "config key 'llm.min_yield': 2 is greater than the maximum of 1",
        ),
        (
            lambda c: c.update(llm={"model": "m", "budget": {"max_cost_usd": 5}}),
            "config key llm.budget.max_cost_usd needs a price for the model: add llm.prices.m",
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
    from vlcomp.config.docs import config_docs

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
    from vlcomp.config.docs import FORMATS_BEGIN, FORMATS_END
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

    from vlcomp.config.schema import load_schema
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
    from vlcomp.config.docs import SPLIT_LABELS, config_docs
    from vlcomp.evaluate.images import MISSING, UNREADABLE

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
    from vlcomp.config.schema import load_schema
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


def test_config_overrides_out_of_range_name_the_key_and_value(default_config):
    """A string override whose reading has the key's type but not its range is reported
    as that value (not as a string the key does not take)."""
    from snakemake.cli import parse_config
    from snakemake.utils import update_config

    overrides = parse_config(["negatives={systematicity: {atom_negatives: 3}}"])
    update_config(default_config, overrides)
    assert validate_config(default_config)["negatives"]["systematicity"]["atom_negatives"] == 3
    update_config(default_config, parse_config(["negatives={systematicity: {max_hops: 0}}"]))
    with pytest.raises(ConfigError, match=r"systematicity.max_hops': 0 is less than the minim"):
        validate_config(default_config)


@pytest.mark.parametrize(
    ("block", "expected"),
    [
        ({"max_concurrency": 0}, "'llm.max_concurrency': 0 is less than the minimum of 1"),
        ({"max_concurrency": True}, "'llm.max_concurrency': True is not of type 'integer'"),
        ({"mode": "stream"}, "'llm.mode': 'stream' is not one of ['sync', 'batch']"),
        ({"structured_output": "xml"}, "'llm.structured_output': 'xml' is not one of"),
        ({"temperatures": {"propose": 3}}, "'llm.temperatures.propose': 3 is greater than"),
        ({"temperatures": {"write": 1}}, "'llm.temperatures': unknown key(s) 'write'"),
        ({"budget": {"max_calls": -1}}, "'llm.budget.max_calls': -1 is less than the minimum"),
        ({"budget": {"max_dollars": 1}}, "'llm.budget': unknown key(s) 'max_dollars'"),
        ({"prices": {"m": {"input": 1}}}, "'llm.prices.m': 'output' is a required property"),
        ({"retries": 3}, "'llm': unknown key(s) 'retries' (allowed: api_key_env,"),
        ({"timeout_s": 0}, "'llm.timeout_s': 0 is less than or equal to the minimum of 0"),
        ({"timeout_s": "0"}, "'llm.timeout_s': 0 is less than or equal to the minimum of 0"),
        ({"min_yield": 1.5}, "'llm.min_yield': 1.5 is greater than the maximum of 1"),
        ({"breaker_failures": 0}, "'llm.breaker_failures': 0 is less than the minimum of 1"),
        ({"batch_backend": "x"}, "'llm.batch_backend': 'x' is not one of ['openai', 'vllm']"),
        ({"batch_outputs": [" "]}, "'llm.batch_outputs[0]': ' ' does not match"),
        ({"model": ""}, "'llm.model': '' does not match"),
        ({"dry_run": "maybe"}, "'llm.dry_run': 'maybe' is not of type 'boolean'"),
    ],
)
def test_the_schema_checks_the_llm_block(block, expected):
    from vlcomp.config import validate_section

    with pytest.raises(ConfigError) as error:
        validate_section("llm", block)
    assert f"config key {expected}" in str(error.value)


def test_the_llm_block_gets_the_settings_defaults(default_config):
    from vlcomp.config import validate_section
    from vlcomp.llm.settings import DEFAULTS, LLMSettings, Temperatures

    assert validate_section("llm", {}) == DEFAULTS
    block = validate_section("llm", {"model": "m", "temperatures": {"propose": 1}})
    assert block["temperatures"] == {**DEFAULTS["temperatures"], "propose": 1}
    assert LLMSettings.from_config(block) == LLMSettings(
        model="m", temperatures=Temperatures(propose=1.0)
    )
    # the block a job is handed holds every key (common.smk, LLM_KEYS)
    default_config["llm"] = {"base_url": "http://127.0.0.1:9/v1", "max_concurrency": "8"}
    config = validate_config(default_config)
    assert config["llm"] == {**DEFAULTS, "base_url": "http://127.0.0.1:9/v1", "max_concurrency": 8}
    # an empty block is no endpoint, as null
    default_config["llm"] = {}
    assert validate_config(default_config)["llm"] is None


def test_a_pasted_api_key_is_refused_without_being_echoed():
    import secrets

    from vlcomp.config import validate_section

    secret = "sk-" + secrets.token_hex(20)
    for block, key in (({"api_key": secret}, "llm.api_key"), ({"api_key_env": secret}, "")):
        with pytest.raises(ConfigError) as error:
            validate_section("llm", block)
        assert secret not in str(error.value)
        assert "NAME of an environment variable" in str(error.value)
        assert f"config key '{key or 'llm.api_key_env'}'" in str(error.value)


def test_typed_sections_name_what_their_stages_read():
    """The schema's keys of a section are the keys its stage knows (a key added to one
    fails here until it is added to the other)."""
    import dataclasses

    from vlcomp.config.schema import load_schema
    from vlcomp.importers.registry import FORMATS as IMPORTED
    from vlcomp.ingest import job, readers
    from vlcomp.ingest.rules import CaptionRules
    from vlcomp.ingest.vg import RegionFilters
    from vlcomp.llm.settings import DEFAULTS
    from vlcomp.negatives.productivity import ProductivitySettings
    from vlcomp.negatives.systematicity import DEFAULT_SETTINGS
    from vlcomp.train.settings import WORKFLOW_KEYS, TrainSettings
    from vlcomp.world.checks.probes import ProbeSettings

    schema = load_schema()
    top, defs = schema["properties"], schema["$defs"]

    def keys(node):
        return set(node["properties"])

    def fields(cls):
        return {f.name for f in dataclasses.fields(cls)}

    llm = top["llm"]["properties"]
    assert {k: v.get("default") for k, v in llm.items()} == {
        **DEFAULTS, "temperatures": {}, "budget": {}
    }  # fmt: skip
    assert {k: v["default"] for k, v in llm["temperatures"]["properties"].items()} == (
        DEFAULTS["temperatures"]
    )
    assert {k: v["default"] for k, v in llm["budget"]["properties"].items()} == DEFAULTS["budget"]
    assert keys(defs["caption_rules"]) == fields(CaptionRules)
    assert keys(defs["eval_set"]["properties"]["regions"]) == fields(RegionFilters)
    options = {k for fmt in IMPORTED.values() for k in fmt.options}
    assert keys(defs["eval_set"]["properties"]["options"]) == options
    corpus_options = {k for fmt in readers.FORMATS.values() for k in fmt.defaults}
    corpus = top["corpora"]["additionalProperties"]["properties"]["options"]
    assert keys(corpus) == corpus_options | set(job.COMMON_OPTIONS)
    negatives = top["negatives"]["properties"]
    assert keys(negatives["systematicity"]) == set(DEFAULT_SETTINGS)
    assert keys(negatives["productivity"]) == fields(ProductivitySettings)
    assert keys(defs["train"]) == fields(TrainSettings) | set(WORKFLOW_KEYS)
    probes = keys(top["world"]["properties"]["probes"])
    assert {"bootstrap_resamples", *fields(ProbeSettings)} - {"resamples", "level"} <= probes


def test_tiny_gpt2_settings_are_the_scorers():
    from vlcomp.config.schema import load_schema
    from vlcomp.scorers.tiny_gpt2 import DEFAULT_SETTINGS

    scorer = load_schema()["properties"]["scorers"]["properties"]["tiny_gpt2"]
    assert set(scorer["properties"]["settings"]["properties"]) == set(DEFAULT_SETTINGS)
