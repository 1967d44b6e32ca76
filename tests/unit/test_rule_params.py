"""No rule hands its job a whole config section as a param: Snakemake reruns a job whose
params changed, so a section handed whole reruns the job for any key of it, keys it never
reads (and keys added later) included. Rules take single keys (config["a"]["b"],
lookup("a/b", within=config)) or what a named function picks (common.smk, "settings per
rule"). One entry of a keyed mapping (config["models"][wc.model]) is an item, not a
section, and is not checked here."""

import ast
import dataclasses
import re

import pytest
import yaml

from tests.conftest import REPO
from vlcomp.config import validate_config
from vlcomp.config.schema import load_schema

RULES = REPO / "workflow" / "rules"
DYNAMIC = object()  # a subscript that is not a constant string: an item, not a section


@pytest.fixture(scope="module")
def sections():
    """Whether a config path (a tuple of keys) is a section: a mapping in the validated
    default config, or an object (possibly null, as `llm`) in the schema."""
    config = validate_config(yaml.safe_load((REPO / "config" / "config.yaml").read_text()))
    schema = load_schema()
    return lambda path: is_mapping(config, path) or schema_object(schema, path)


def is_mapping(config, path):
    node = config
    for key in path:
        if not isinstance(node, dict) or key not in node:
            return False
        node = node[key]
    return isinstance(node, dict)


def schema_object(schema, path):
    def resolve(node):
        while "$ref" in node:
            node = schema["$defs"][node["$ref"].rsplit("/", 1)[1]]
        return node

    node = resolve(schema)
    for key in path:
        if key in node.get("properties", {}):
            node = resolve(node["properties"][key])
        elif isinstance(node.get("additionalProperties"), dict):
            node = resolve(node["additionalProperties"])
        else:
            return False
    types = node.get("type", [])
    return "object" in ([types] if isinstance(types, str) else types) or "properties" in node


# ------------------------------------------------------------------ reading rule files


def params_blocks(text):
    """(line of the block, its arguments as an ast.Call) of every ``params:`` block."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        match = re.match(r"( *)params:\s*(#.*)?$", line)
        if not match:
            continue
        indent, body = len(match[1]), []
        for following in lines[i + 1 :]:
            if following.strip() and len(following) - len(following.lstrip()) <= indent:
                break
            body.append(following)
        call = ast.parse("f(\n" + "\n".join(body) + "\n)", mode="eval").body
        yield i + 1, call


def aliases_in(text, known=None):
    """Top-level names bound to a config path (WORLD = config["world"]; also the first
    branch of a conditional, PROBES = WORLD["probes"] if WORLD else {}), with ``known``."""
    aliases = dict(known or {})
    for name, value in re.findall(r"^([A-Z][A-Z0-9_]*) = (.+)$", text, re.MULTILINE):
        try:
            node = ast.parse(value, mode="eval").body
        except SyntaxError:
            continue
        if isinstance(node, ast.IfExp):
            node = node.body
        path = config_path(node, aliases)
        if path is not None and DYNAMIC not in path:
            aliases[name] = path
    return aliases


def config_path(node, aliases):
    """The config path a chain of subscripts (or .get calls) reaches, or None."""
    keys = []
    while True:
        if isinstance(node, ast.Subscript):
            key = node.slice
            node = node.value
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "get"
            and node.args
        ):
            key = node.args[0]
            node = node.func.value
        else:
            break
        constant = isinstance(key, ast.Constant) and isinstance(key.value, str)
        keys.append(key.value if constant else DYNAMIC)
    if not isinstance(node, ast.Name):
        return None
    if node.id == "config":
        return tuple(reversed(keys))
    if node.id in aliases:
        return aliases[node.id] + tuple(reversed(keys))
    return None


def handed_paths(expression, aliases):
    """Every config path an expression reaches with constant keys only."""
    parents = {
        child: parent for parent in ast.walk(expression) for child in ast.iter_child_nodes(parent)
    }
    skip = set()
    paths = []
    for node in ast.walk(expression):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "lookup":
            within = [k.value for k in node.keywords if k.arg == "within"]
            dpath = [k.value for k in node.keywords if k.arg == "dpath"] + node.args[:1]
            skip.update(within)
            if dpath and isinstance(dpath[0], ast.Constant) and "{" not in dpath[0].value:
                paths.append(tuple(dpath[0].value.split("/")))
    for node in ast.walk(expression):
        parent = parents.get(node)
        inner = (isinstance(parent, ast.Subscript) and parent.value is node) or (
            isinstance(parent, ast.Attribute)
            and parent.attr == "get"
            and isinstance(parents.get(parent), ast.Call)
        )
        if node in skip or inner:
            continue
        path = config_path(node, aliases)
        if path is not None and DYNAMIC not in path:  # else an item of a keyed mapping
            paths.append(path)
    return paths


def offences(text, is_section, aliases=None):
    """(line, param, config path) of each param that hands over a whole section."""
    aliases = aliases_in(text, aliases)
    found = []
    for line, call in params_blocks(text):
        named = [(k.arg, k.value) for k in call.keywords] + [(None, a) for a in call.args]
        for name, value in named:
            for path in handed_paths(value, aliases):
                if is_section(path):
                    found.append((line + value.lineno - 1, name, ".".join(path) or "config"))
    return found


# ------------------------------------------------------------------ tests


def test_no_rule_hands_a_whole_config_section(sections):
    files = sorted(RULES.glob("*.smk")) + [REPO / "Snakefile"]
    aliases = {}
    for path in [*files, *files]:  # twice: an alias of an alias in an earlier file
        aliases = aliases_in(path.read_text(), aliases)
    problems = [
        f"{path.relative_to(REPO)}:{line}: params {name} hands over config section {section}"
        for path in files
        for line, name, section in offences(path.read_text(), sections, aliases)
    ]
    assert not problems, "\n".join(problems)


SYNTHETIC = """
WHOLE = config["negatives"]


rule bad:
    output:
        "x",
    params:
        parse=config["parse"],
        model=config["parse"]["model"],
        productivity=lambda wc: config["negatives"]["productivity"],
        refine=lookup(dpath="refine", within=config),
        seed=lookup("refine/seed", within=config),
        entry=lambda wc: config["models"][wc.model],
        scorers=config["scorers"]["use"][:2],
        alias=WHOLE,
        llm=config.get("llm"),
        specs=scorer_specs("d", config["scorers"]["use"], config["scorers"]),
        picked={k: config["evaluate"][k] for k in ("alpha",)},
    script:
        "x.py"
"""


def test_the_check_catches_whole_sections(sections):
    found = offences(SYNTHETIC, sections)
    assert [(name, section) for _, name, section in found] == [
        ("parse", "parse"),
        ("productivity", "negatives.productivity"),
        ("refine", "refine"),
        ("alias", "negatives"),
        ("llm", "llm"),
        ("specs", "scorers"),
    ]
    lines = SYNTHETIC.splitlines()
    for line, name, _ in found:
        assert lines[line - 1].strip().startswith(f"{name}=")


def common_constants():
    """The key lists (NAME_KEYS = ...) of common.smk and world_preset.smk, by name."""
    constants = {}
    for name in ("common", "world_preset"):
        lines = (RULES / f"{name}.smk").read_text().splitlines()
        for i, line in enumerate(lines):
            match = re.match(r"([A-Z][A-Z0-9_]*_KEYS) = ", line)
            for end in range(i + 1, len(lines) + 1) if match else ():
                try:
                    tree = ast.parse("\n".join(lines[i:end]), mode="exec")
                except SyntaxError:
                    continue
                code = compile(tree, name, "exec")
                exec(code, {"__builtins__": {"tuple": tuple}}, constants)
                break
    return constants


def test_key_lists_name_what_the_jobs_read():
    """A key added to a section (or a job) is put in a list on purpose, or it fails here."""
    keys = common_constants()
    config = validate_config(yaml.safe_load((REPO / "config" / "config.yaml").read_text()))
    assert {*keys["PARSER_KEYS"], *keys["PARSE_RUN_KEYS"]} == set(config["parse"])
    for scorer, used in keys["SCORER_TRAINING_KEYS"].items():
        assert set(used) <= set(config["scorers"][scorer])
    assert set(keys["PROBE_KEYS"]) <= set(config["world"]["probes"])
    from vlcomp.negatives.productivity import ProductivitySettings
    from vlcomp.negatives.systematicity import DEFAULT_SETTINGS
    from vlcomp.world.vocab import DEFAULT_WORLD_CONFIG

    assert set(keys["WORLD_SCENE_KEYS"]) == set(DEFAULT_WORLD_CONFIG)
    assert set(keys["SYSTEMATICITY_KEYS"]) == set(DEFAULT_SETTINGS)
    fields = {f.name for f in dataclasses.fields(ProductivitySettings)}
    assert set(keys["PRODUCTIVITY_KEYS"]) == fields
    from vlcomp.llm.settings import DEFAULTS

    assert set(keys["LLM_KEYS"]) == set(DEFAULTS)


def test_the_rules_files_parse():
    """Every params block is read (a block the reader could not parse fails here)."""
    blocks = [b for path in RULES.glob("*.smk") for b in params_blocks(path.read_text())]
    assert len(blocks) > 50
    assert all(isinstance(call, ast.Call) for _, call in blocks)


def test_paths_are_found_in_lambdas_and_calls():
    expression = ast.parse('f(lambda wc: g(config["a"]["b"], x=config["c"][wc.d]))').body[0]
    assert handed_paths(expression.value, {}) == [("a", "b")]
