"""``snakemake --config`` overrides: every key of the config schema is typed, and every leaf
can be set from the command line as the string Snakemake hands over, read as the schema's
type (or refused naming the key and the value), with the settings objects of the stages
built from the result. One real dry run takes a nested override."""

from __future__ import annotations

import copy
import os
import shutil
import subprocess
import sys
from dataclasses import fields
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from snakemake.cli import parse_config
from snakemake.utils import update_config

from tests.conftest import REPO
from vlcomp.config import ConfigError, validate_config
from vlcomp.config.overrides import expand_dotted_keys
from vlcomp.config.schema import load_schema

SCHEMA = load_schema()
SCALAR_TYPES = {"integer", "number", "string", "boolean", "null"}

# Mappings whose keys the user names (a corpus, a model, a file, a kind): any key is taken,
# its value typed by the map's schema. Any other mapping must list its keys, so that a
# misspelt key is an error rather than a setting silently ignored.
NAMED_MAPS = {
    "world.corpora": "world corpora by name",
    "models": "models by name",
    "eval_sets": "eval sets by name",
    "eval_sets.<name>.options.tasks": "aro: a file name -> its task",
    "eval_sets.<name>.options.image_folders": "valse: a record's dataset -> its image folder",
    "corpora": "corpora by name",
    "benchmarks": "benchmarks by name",
    "llm.prices": "an LLM's name -> its price",
    "negatives.productivity.attribute_kinds": "an attribute kind -> its values",
}


def _resolve(node: dict[str, Any]) -> dict[str, Any]:
    if "$ref" in node:
        target = SCHEMA["$defs"][node["$ref"].rsplit("/", 1)[1]]
        return {**target, **{k: v for k, v in node.items() if k != "$ref"}}
    return node


def _types(node: dict[str, Any]) -> list[str]:
    kind = node.get("type", [])
    return [kind] if isinstance(kind, str) else list(kind)


def _is_section(node: dict[str, Any]) -> bool:
    return "properties" in node or "object" in _types(node)


def _walk(node: dict[str, Any], path: str):
    """(path, schema) of every node: mappings' keys as ``.key``, a named map's entries as
    ``.<name>``, list items as ``[]``."""
    node = _resolve(node)
    yield path, node
    for key, sub in node.get("properties", {}).items():
        yield from _walk(sub, f"{path}.{key}".lstrip("."))
    if isinstance(node.get("additionalProperties"), dict):
        yield from _walk(node["additionalProperties"], f"{path}.<name>")
    if isinstance(node.get("items"), dict):
        yield from _walk(node["items"], f"{path}[]")
    if not _is_section(node):  # a value's alternatives (a model's oneOf says which keys)
        for branch in node.get("anyOf", []) + node.get("oneOf", []):
            yield from _walk(branch, f"{path}|")


def _untyped(node: dict[str, Any]) -> str | None:
    """Why a value node is not typed (None: it is)."""
    if "const" in node or "enum" in node:
        return None
    types = _types(node)
    if not types:
        return "no type, enum or const"
    if not set(types) <= SCALAR_TYPES | {"array", "object"}:
        return f"unknown type(s) {types}"
    if "array" in types and not isinstance(node.get("items"), dict):
        return "a list without typed items"
    return None


def test_every_key_of_the_schema_is_typed_and_every_mapping_closed():
    problems, named = [], set()
    for path, node in _walk(SCHEMA, ""):
        if path.endswith("|"):  # an anyOf branch: typed as any value node
            problem = _untyped(node)
        elif _is_section(node):
            extra = node.get("additionalProperties")
            if isinstance(extra, dict):
                named.add(path)
                problem = None if path in NAMED_MAPS else "takes any key (not a named map)"
            else:
                problem = None if extra is False else "does not refuse unknown keys"
        else:
            problem = _untyped(node)
        if problem:
            problems.append(f"{path or '<top>'}: {problem}")
    assert problems == []
    assert named == set(NAMED_MAPS)  # no stale entry


def test_the_walk_finds_what_it_must_refuse():
    """The check above fails on an untyped leaf, an open mapping and an untyped list."""
    broken = {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "a": {"description": "no type"},
            "b": {"type": "object", "properties": {"c": {"type": "integer"}}},
            "d": {"type": "array"},
            "e": {"type": "object", "additionalProperties": {"type": "string"}},
        },
    }
    found = {
        path: _untyped(node) if not _is_section(node) else node.get("additionalProperties")
        for path, node in _walk(broken, "")
    }
    assert found["a"] == "no type, enum or const"
    assert found["b"] is None  # open: neither False nor a schema
    assert found["d"] == "a list without typed items"
    assert isinstance(found["e"], dict) and "e" not in NAMED_MAPS


# --------------------------------------------------------------------- every leaf
# The entry of each named map a leaf under it is set on ("{tmp}": a folder holding
# captions.txt, file.json, review.csv and a folder dir/).
ENTRIES = {
    "world.corpora": "cc12m",
    "models": "world_cc12m",  # a trained model; other sources: models.extra, models.hf
    "eval_sets": "extra",
    "eval_sets.extra.options.tasks": "swap_att",
    "eval_sets.extra.options.image_folders": "coco",
    "corpora": "extra",
    "benchmarks": "pairs",
    "llm.prices": "gpt-4o-mini",
    "negatives.productivity.attribute_kinds": "colour",
}
OPEN_CLIP_MODEL = "models={extra: {open_clip: ViT-B-32, pretrained: openai}}"
VG_SET = "eval_sets={extra: {format: visual_genome, dir: {tmp}/dir, images: {tmp}/dir}}"
# Overrides that make the entry a leaf is set on exist, by the leaf's path.
CONTEXT = {
    "eval_sets.extra.": [
        "eval_sets={extra: {format: sugarcrepe, files: [{tmp}/file.json], images: {tmp}/dir}}"
    ],
    "eval_sets.extra.regions.": [VG_SET],
    "corpora.extra.": ["corpora={extra: {format: text_lines, inputs: [{tmp}/captions.txt]}}"],
    "llm.prices.gpt-4o-mini.": ["llm={prices: {gpt-4o-mini: {input: 1, output: 2}}}"],
    "models.hf.": ["models={hf: {transformers: {id: {tmp}/dir, kind: dual_encoder}}}"],
}
LLM_PAIRS = ["llm={model: m}", "benchmarks={pairs: {negatives: llm}}"]
YFCC = "corpora={extra: {format: yfcc_tsv}}"
VQA = "models={hf: {transformers: {kind: vqascore}}}"
MATCHING = "models={hf: {transformers: {kind: matching_head}}}"
# Leaves whose value must fit the rest of the config: (the leaf's text, the value it must
# become, overrides around it). The text is what a user types after the key.
CASES: dict[str, tuple[str, Any, list[str]]] = {
    "world.objects_per_scene": ("[1, 3]", [1, 3], []),
    # the world draws these: its own lists, in another order
    "world.shapes": (
        "[square, circle, triangle, star, cross, diamond, heart, hexagon]",
        ["square", "circle", "triangle", "star", "cross", "diamond", "heart", "hexagon"],
        [],
    ),
    "world.colours": (
        "[green, red, blue, yellow, purple, orange, pink, brown]",
        ["green", "red", "blue", "yellow", "purple", "orange", "pink", "brown"],
        [],
    ),
    "world.sizes": ("[large, small]", ["large", "small"], []),
    "world.relations": (
        "[left of, right of, above, below]",
        ["left of", "right of", "above", "below"],
        [],
    ),
    "world.probes.models": ("[world_cc12m]", ["world_cc12m"], []),
    "world.probes.corpus": ("laion", "laion", []),
    "world.corpora.cc12m.format": ("cc12m_tsv", "cc12m_tsv", []),
    "world.corpora.cc12m.holdout.bindings": ("[[red, star]]", [["red", "star"]], []),
    "world.corpora.cc12m.holdout.triples": (
        "[[star, above, cross]]",
        [["star", "above", "cross"]],
        [],
    ),
    "world.corpora.cc12m.holdout.atoms": ("[heart]", ["heart"], []),
    "models.extra.open_clip": ("ViT-B-16", "ViT-B-16", [OPEN_CLIP_MODEL]),
    "models.extra.pretrained": ("laion2b_s34b_b79k", "laion2b_s34b_b79k", [OPEN_CLIP_MODEL]),
    "models.extra.cache_dir": ("{tmp}/dir", "{tmp}/dir", [OPEN_CLIP_MODEL]),
    "models.extra.training_corpora": ("[cc12m, laion]", ["cc12m", "laion"], [OPEN_CLIP_MODEL]),
    "models.extra.checkpoint": (
        "{tmp}/review.csv",
        "{tmp}/review.csv",
        ["models={extra: {open_clip: ViT-B-32}}"],
    ),
    "models.hf.transformers.id": ("{tmp}/dir", "{tmp}/dir", []),
    "models.hf.transformers.kind": ("matching_head", "matching_head", []),
    "models.hf.transformers.revision": ("0123abc", "0123abc", []),
    "models.hf.transformers.rerank_top_k": ("8", 8, [MATCHING]),
    "models.hf.transformers.definition": ("transformers", "transformers", [MATCHING]),
    "models.hf.transformers.question": ('"Is it {text}?"', "Is it {text}?", [VQA]),
    "models.hf.transformers.prompt": (
        '"USER: {image} {question} ASSISTANT:"',
        "USER: {image} {question} ASSISTANT:",
        [VQA],
    ),
    "models.hf.transformers.answer": ("Yes", "Yes", [VQA]),
    "models.world_cc12m.train.corpus": ("cc12m", "cc12m", []),
    "models.world_cc12m.train.start_from": ("world_laion", "world_laion", []),
    "models.world_cc12m.train.negatives_per_pair": (
        "2",
        2,
        ["models={world_cc12m: {train: {hard_negatives: template}}}"],
    ),
    "eval_sets.extra.format": ("aro", "aro", []),
    "eval_sets.extra.dir": ("{tmp}/dir", "{tmp}/dir", []),
    "eval_sets.extra.captions": ("{tmp}/file.json", "{tmp}/file.json", []),
    "eval_sets.extra.files": ("[{tmp}/file.json]", ["{tmp}/file.json"], []),
    "eval_sets.extra.images": ("{tmp}/dir", "{tmp}/dir", []),
    "eval_sets.extra.ground_truth": ("{tmp}/file.json", "{tmp}/file.json", []),
    "eval_sets.extra.regions.max_aspect": ("3", 3, []),
    "eval_sets.extra.options.symmetric_relations": ("[near, next to]", ["near", "next to"], []),
    "corpora.extra.format": ("text_jsonl", "text_jsonl", []),
    "corpora.extra.inputs": ("[{tmp}/captions.txt]", ["{tmp}/captions.txt"], []),
    "corpora.extra.images": ("{tmp}/dir", "{tmp}/dir", []),
    # an option of another format is refused: each is tried with a format that takes it
    "corpora.extra.options.glob": ('"*.txt"', "*.txt", []),
    "corpora.extra.options.header": ("true", True, [YFCC]),
    "corpora.extra.options.id_column": ("3", 3, [YFCC]),  # a column index, not the name "3"
    "corpora.extra.options.title_column": ("2", 2, [YFCC]),
    "corpora.extra.options.description_column": ("title", "title", [YFCC]),
    "corpora.extra.options.text": ("title", "title", [YFCC]),
    "corpora.extra.options.strip_html": ("false", False, [YFCC]),
    "corpora.extra.options.strip_urls": ("false", False, [YFCC]),
    "corpora.extra.options.subset_ids": ("{tmp}/captions.txt", "{tmp}/captions.txt", [YFCC]),
    "corpora.extra.options.subset_column": ("1", 1, [YFCC]),
    "corpora.extra.options.text_column": (
        "caption",
        "caption",
        ["corpora={extra: {format: text_csv}}"],
    ),
    "corpora.extra.options.url_column": (
        "url",
        "url",
        ["corpora={extra: {format: laion_parquet}}"],
    ),
    "corpora.extra.options.read_batch_rows": (
        "100",
        100,
        ["corpora={extra: {format: laion_parquet}}"],
    ),
    "corpora.extra.options.image_column": (
        "image",
        "image",
        ["corpora={extra: {format: text_csv}}"],
    ),
    "corpora.extra.options.text_field": (
        "caption",
        "caption",
        ["corpora={extra: {format: text_jsonl}}"],
    ),
    "corpora.extra.options.id_field": ("id", "id", ["corpora={extra: {format: text_jsonl}}"]),
    "corpora.extra.options.image_field": ("url", "url", ["corpora={extra: {format: text_jsonl}}"]),
    "benchmarks.pairs.kind": ("retrieval", "retrieval", []),
    "benchmarks.pairs.eval_set": ("world_coco", "world_coco", []),
    "benchmarks.pairs.corpora": ("[laion]", ["laion"], []),
    "benchmarks.pairs.negatives": ("llm", "llm", ["llm={model: m}"]),
    "benchmarks.pairs.families": ("[swap_att, add_obj]", ["swap_att", "add_obj"], LLM_PAIRS),
    "benchmarks.pairs.captions": ("template", "template", []),
    "benchmarks.pairs.review": ("{tmp}/review.csv", "{tmp}/review.csv", LLM_PAIRS),
    "benchmarks.pairs.max_items": ("50", 50, LLM_PAIRS),
    "llm.api_key_env": ("MY_KEY", "MY_KEY", []),
    "llm.batch_outputs": ("[{tmp}/file.json]", ["{tmp}/file.json"], []),
    "llm.budget.max_cost_usd": ("2.5", 2.5, []),
    "parse.predicate_map": ("generic", "generic", []),
    "priors.lm_scorer": ("minilm", "minilm", []),
    "scorers.use": ("[ngram, minilm, tiny_gpt2]", ["ngram", "minilm", "tiny_gpt2"], []),
    "negatives.productivity.complexities": ("[4, 6]", [4, 6], []),
    "negatives.productivity.min_negatives": ("2", 2, []),
    "negatives.productivity.min_aspect": ("0.25", 0.25, []),
    "negatives.productivity.max_aspect": ("3", 3, []),
    "evaluate.models": ("[world_laion]", ["world_laion"], []),
    "evaluate.device": ("cpu", "cpu", []),
    "evaluate.precision": ("fp32", "fp32", []),
}


def _leaves() -> list[tuple[str, dict[str, Any]]]:
    """(path with the entries' names, schema) of every value the user sets: keys that are no
    section, and the entries of named maps whose values are no section."""
    out = []
    for path, node in _walk(SCHEMA, ""):
        if path.endswith("|") or "[]" in path or _is_section(node):
            continue
        out.append((path, node))
    return [(_named(path, node), node) for path, node in out]


def _named(path: str, node: dict[str, Any]) -> str:
    """``path`` with each ``<name>`` replaced by the entry the leaf is set on."""
    parts = path.split(".")
    for index, part in enumerate(parts):
        if part == "<name>":
            parent = ".".join(parts[:index])
            name = ENTRIES[parent]
            leaf = ".".join([parent, name, *parts[index + 1 :]])
            if path.startswith("models.<name>.transformers"):
                name = "hf"
            elif parent == "models" and leaf.replace(".world_cc12m.", ".extra.", 1) in CASES:
                name = "extra"
            parts[index] = name
    return ".".join(parts)


def _context(path: str) -> list[str]:
    """The overrides that make the entry of ``path`` exist (corpora.extra, ...)."""
    return [e for prefix, entries in CONTEXT.items() if path.startswith(prefix) for e in entries]


def _sample(node: dict[str, Any]) -> tuple[str, Any]:
    """(text a user types, the value it stands for) for a leaf schema without a case."""
    if "anyOf" in node:
        branch = next(b for b in node["anyOf"] if "integer" in _types(b))
        return _sample(branch)
    if "const" in node:
        return str(node["const"]), node["const"]
    if "enum" in node:
        return str(node["enum"][-1]), node["enum"][-1]
    types = _types(node)
    if "array" in types:
        items = _resolve(node["items"])
        count = max(1, node.get("minItems", 1))
        values = _distinct(items, count)
        return "[" + ", ".join(text for text, _ in values) + "]", [v for _, v in values]
    if "boolean" in types:
        value = not node["default"] if isinstance(node.get("default"), bool) else True
        return str(value).lower(), value
    if "integer" in types:
        low = node.get("minimum", node.get("exclusiveMinimum", -1) + 1)
        value = low + node.get("multipleOf", 1)
        value = value if value <= node.get("maximum", value) else low
        return str(value), value
    if "number" in types:
        low = node.get("minimum", node.get("exclusiveMinimum", 0))
        value = (low + node["maximum"]) / 2 if "maximum" in node else low + 0.5
        return repr(float(value)), float(value)
    if "string" in types:
        return "007", "007"  # a string that reads as a number stays a string
    raise AssertionError(f"no sample for {node}")


def _distinct(items: dict[str, Any], count: int) -> list[tuple[str, Any]]:
    if "enum" in items:
        return [(str(v), v) for v in items["enum"][:count]]
    if "integer" in _types(items):
        low = items.get("minimum", 0)
        return [(str(low + i + 1), low + i + 1) for i in range(count)]
    return [(f"w{i}", f"w{i}") for i in range(count)]


def _nested(path: str, text: str) -> str:
    """The ``--config`` entry setting ``path`` to ``text``: section={a: {b: text}}."""
    section, *keys = path.split(".")
    value = text
    for key in reversed(keys):
        value = f"{{{key}: {value}}}"
    return f"{section}={value}"


@pytest.fixture(scope="module")
def default_config():
    return yaml.safe_load((REPO / "config" / "config.yaml").read_text())


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("overrides")
    (tmp / "captions.txt").write_text("a red circle\n")
    (tmp / "file.json").write_text("[]")
    (tmp / "review.csv").write_text("item_id,decision,note\n")
    (tmp / "dir").mkdir()
    return tmp


def _applied(default: dict[str, Any], entries: list[str]) -> dict[str, Any]:
    """The validated config after ``snakemake --config ENTRY...``: Snakemake's own parser,
    its merge into the config file's values, then the workflow's validation."""
    config = copy.deepcopy(default)
    update_config(config, parse_config(entries))
    return validate_config(config)


def _at(config: dict[str, Any], path: str) -> Any:
    for key in path.split("."):
        config = config[key]
    return config


def _built_settings(config: dict[str, Any]) -> list[Any]:
    """Every settings object the stages build from a validated config, built by the
    stages' own constructors (they refuse a value of the wrong type, naming its key)."""
    from vlcomp.blind.jobs import AttackSettings
    from vlcomp.evaluate.metrics import EvalSettings
    from vlcomp.ingest.job import IngestOptions
    from vlcomp.ingest.rules import CaptionRules
    from vlcomp.ingest.vg import RegionFilters
    from vlcomp.llm.settings import LLMSettings
    from vlcomp.models.catalogue import ModelSpec
    from vlcomp.negatives.productivity import ProductivitySettings
    from vlcomp.negatives.systematicity import resolve_settings
    from vlcomp.settings import settings_from
    from vlcomp.train.settings import TrainSettings
    from vlcomp.world.checks.grammar import WorldVocab
    from vlcomp.world.checks.probes import ProbeSettings

    built = [
        EvalSettings.from_config(config["evaluate"]),
        EvalSettings.from_config(config["evaluate"], ks_key="recall_at"),
        settings_from(AttackSettings, config["attacks"], "attacks"),
        CaptionRules.from_options(config["ingest"]["rules"]),
        resolve_settings(config["negatives"]["systematicity"]),
        ProductivitySettings.from_mapping(config["negatives"]["productivity"]),
    ]
    if config["llm"]:
        built.append(LLMSettings.from_config(config["llm"]))
    if config.get("world"):
        probe_keys = {f.name for f in fields(ProbeSettings)} - {"resamples", "level"}
        probes = config["world"]["probes"]
        built.append(WorldVocab.from_config(config["world"]))
        built.append(
            ProbeSettings.from_config(
                {k: v for k, v in probes.items() if k in probe_keys | {"bootstrap_resamples"}}
            )
        )
    for key, entry in config["models"].items():
        built.append(ModelSpec.from_config(key, entry, "x.pt" if "train" in entry else None))
        if "train" in entry:
            built.append(TrainSettings.from_config(entry["train"], f"models.{key}.train"))
    for entry in config["corpora"].values():
        options = {"rules": config["ingest"]["rules"], **entry["options"]}
        built.append(IngestOptions.parse(entry["format"], options))
    for entry in config["eval_sets"].values():
        if entry["format"] == "visual_genome":
            built.append(RegionFilters.from_options(entry["regions"]))
    return built


def _fits(value: Any, node: dict[str, Any]) -> bool:
    """``value`` is valid under the leaf's schema, and of its exact type: no string where
    the schema takes another type, no float where it wants an integer."""
    if not jsonschema.Draft202012Validator({**node, "$defs": SCHEMA["$defs"]}).is_valid(value):
        return False
    if isinstance(value, list):
        items = _resolve(node.get("items", {}))
        return all(_fits(v, items) for v in value) if items else True
    if isinstance(value, float):
        return "number" in _types(node) or any("number" in _types(b) for b in node.get("anyOf", []))
    if isinstance(value, str):
        return (
            "string" in _types(node)
            or "enum" in node
            or "const" in node
            or any("const" in b or "enum" in b for b in node.get("anyOf", []))
        )
    return True


LEAVES = _leaves()


def test_every_case_is_a_leaf():
    assert set(CASES) <= {path for path, _ in LEAVES}
    assert len(LEAVES) > 200


@pytest.mark.parametrize(("path", "node"), LEAVES, ids=[p for p, _ in LEAVES])
def test_every_leaf_takes_the_string_snakemake_hands_over(path, node, default_config, files):
    def fill(value):
        if isinstance(value, list):
            return [fill(v) for v in value]
        return value.replace("{tmp}", str(files)) if isinstance(value, str) else value

    text, expected, around = CASES.get(path) or (*_sample(node), [])
    entries = [fill(e) for e in [*_context(path), *around]]
    text, expected = fill(text), fill(expected)
    given = parse_config([_nested(path, text)])
    config = _applied(default_config, [*entries, _nested(path, text)])

    value = _at(config, path)
    assert value == expected and type(value) is type(expected), (given, value)
    assert _fits(value, node), value
    _built_settings(config)

    if "null" in _types(node):
        assert _at(_applied(default_config, [*entries, _nested(path, "null")]), path) is None

    bad = "not-a-value"
    if not jsonschema.Draft202012Validator({**node, "$defs": SCHEMA["$defs"]}).is_valid(bad):
        with pytest.raises(ConfigError) as error:
            _applied(default_config, [*entries, _nested(path, bad)])
        assert f"config key '{path}" in str(error.value)
        assert bad in str(error.value) or "x-message" in node  # a message that hides it


# ------------------------------------------------------------ readings and messages
@pytest.mark.parametrize(
    ("entry", "path", "expected"),
    [
        ("llm={base_url: null}", "llm.base_url", None),  # null, not the string "null"
        ("llm={base_url: ~}", "llm.base_url", None),
        ("parse={model: '12'}", "parse.model", "12"),  # a string key keeps its text
        ("scorers={tiny_gpt2: {settings: {epochs: 1e1}}}", "scorers.tiny_gpt2.settings.epochs", 10),
        ("scorers={tiny_gpt2: {settings: {lr: 1e-3}}}", "scorers.tiny_gpt2.settings.lr", 0.001),
        (
            "negatives={systematicity: {atom_negatives: 3}}",
            "negatives.systematicity.atom_negatives",
            3,
        ),
        ("refine={grid: auto}", "refine.grid", "auto"),
        ("evaluate={recall_at: [1, 10]}", "evaluate.recall_at", [1, 10]),
        ("parse={numerals: yes}", "parse.numerals", True),  # YAML's reading, as in a file
    ],
)
def test_strings_are_read_as_the_schema_types(entry, path, expected, default_config):
    value = _at(_applied(default_config, [entry]), path)
    assert value == expected and type(value) is type(expected)


def test_an_integral_float_from_a_config_file_is_an_integer(default_config):
    config = copy.deepcopy(default_config)
    config["scorers"]["tiny_gpt2"] = {"settings": {"epochs": 2.0}}
    epochs = validate_config(config)["scorers"]["tiny_gpt2"]["settings"]["epochs"]
    assert epochs == 2 and isinstance(epochs, int)


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ("refine={grid: 7}", "'refine.grid': 7 is not 'auto' or an integer >= 2, a multiple of 2"),
        ("refine={grid: lots}", "'refine.grid': 'lots' is not 'auto' or an integer >= 2"),
        ("priors={bins: 1}", "'priors.bins': 1 is not 'auto' or an integer >= 2"),
        (
            "negatives={systematicity: {senses: some}}",
            "'negatives.systematicity.senses': 'some' is not one of 'all', 'coherent' or an "
            "integer >= 1",
        ),
        ("evaluate={batch_size: lots}", "'evaluate.batch_size': 'lots' is not of type 'integer'"),
        (
            "evaluate={recall_at: 5}",
            "'evaluate.recall_at': '5' is not of type 'array' (a list: [5])",
        ),
        ("evaluate={batch_size: 0}", "'evaluate.batch_size': 0 is less than the minimum of 1"),
        ("parse={numerals: maybe}", "'parse.numerals': 'maybe' is not of type 'boolean'"),
        (
            "refine={gird: 20}",
            "'refine': unknown key(s) 'gird' (allowed: grid, normalisation, seed)",
        ),
        (
            "benchmarks={pair: {corpora: [cc12m]}}",
            "'benchmarks.pair': 'kind' is a required property (a new entry: is 'pair' a "
            "misspelling of 'pairs'?)",
        ),
        (
            "models={world_cc21m: {train: {epochs: 2}}}",
            "(a new entry: is 'world_cc21m' a misspelling of 'world_cc12m'?)",
        ),
    ],
)
def test_a_value_that_cannot_be_read_names_the_key_and_the_value(entry, message, default_config):
    with pytest.raises(ConfigError) as error:
        _applied(default_config, [entry])
    assert f"config key {message}" in str(error.value) or message in str(error.value)
    assert str(error.value).count("a new entry") <= 1


# -------------------------------------------------------------------- dotted keys
def test_a_dotted_key_sets_one_key_of_its_section(default_config):
    config = {**copy.deepcopy(default_config), "refine.grid": "20", "ingest.rules.english": "false"}
    config["refine"] = {"seed": 3}
    before = copy.deepcopy(config)
    validated = validate_config(config)
    assert validated["refine"]["grid"] == 20 and validated["refine"]["seed"] == 3
    assert validated["ingest"]["rules"] == {"english": False}
    assert "refine.grid" not in validated and config == before  # the input is not changed
    # the dotted key wins over the same key written nested
    assert expand_dotted_keys({"refine": {"grid": 4}, "refine.grid": 8}) == {"refine": {"grid": 8}}
    assert expand_dotted_keys({"llm": None, "llm.model": "m"}) == {"llm": {"model": "m"}}


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"refine": {"grid": 4}, "refine.grid.x": 1}, "'refine.grid.x': 'refine.grid' is 4, not a"),
        ({"refine..grid": 1}, "config key 'refine..grid': an empty name"),
        ({"refin.grid": 1}, "unknown key(s) 'refin'"),
    ],
)
def test_a_dotted_key_that_names_no_key_says_so(config, message):
    with pytest.raises(ConfigError) as error:
        validate_config({"benchmarks": {}, "evaluate": {"models": []}, **config})
    assert message in str(error.value)


# ------------------------------------------------------------------ the real thing
def _dry_run(workdir: Path, *config: str) -> subprocess.CompletedProcess:
    """``snakemake -n --config ...`` on the default config, in a copy of the workflow (its
    src/ linked, so that the workflow imports this checkout)."""
    for name in ("Snakefile", "config", "workflow"):
        source = REPO / name
        target = workdir / name
        if not target.exists():
            (shutil.copytree if source.is_dir() else shutil.copy)(source, target)
    if not (workdir / "src").exists():
        (workdir / "src").symlink_to(REPO / "src")
    command = [str(Path(sys.executable).parent / "snakemake"), "-n", "--cores", "1"]
    command += ["--quiet", "rules", "--config", *config]
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    return subprocess.run(command, cwd=workdir, capture_output=True, text=True, env=env)


def _jobs(stdout: str, rule: str) -> int:
    counts = dict(line.split() for line in stdout.splitlines() if len(line.split()) == 2)
    return int(counts.get(rule, 0))


@pytest.mark.integration
def test_snakemake_dry_run_takes_nested_overrides_and_names_a_bad_one(tmp_path):
    nested = _dry_run(tmp_path, "ingest={n_shards: 3}", "refine={grid: 20}")
    assert nested.returncode == 0, (nested.stdout + nested.stderr)[-3000:]
    assert _jobs(nested.stdout, "parse_shard") == 6  # two world corpora, 3 shards each

    bad = _dry_run(tmp_path, "refine={grid: 7}")
    said = bad.stdout + bad.stderr
    assert bad.returncode != 0
    assert "config key 'refine.grid': 7 is not 'auto' or an integer >= 2" in said
    assert "Traceback" not in said

    # Snakemake 8.17+ refuses a dotted name in its own parser, before the workflow is read
    # (snakemake/snakemake#3907): the README shows the nested form. Where a Snakemake lets
    # it through, the workflow expands it into its section.
    dotted = _dry_run(tmp_path, "ingest.n_shards=3")
    if dotted.returncode != 0:
        assert "Config entry must start with a valid identifier" in dotted.stdout + dotted.stderr
    else:
        assert _jobs(dotted.stdout, "parse_shard") == 6
