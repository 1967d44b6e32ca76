"""Every configuration the docs show works as shown: each fenced ```yaml block of the README
files (README.md, everything under config/ and docs/) and every preset in config/presets/
is validated and dry-run (``snakemake -n``) as the ``--configfile`` it would be.

A ``--configfile`` replaces the embedded default rather than merging into it (Snakefile), so a
block is validated alone, by the code path the workflow uses (``vlcomp.config.validate_config``,
defaults filled from the schema), and must stand alone. Paths it names are moved under a
temporary folder (absolute ones under ``<tmp>/root``, relative ones beside the working
directory, as Snakemake resolves them) and placeholders of the right kind are created there:
a name without a suffix is a folder, except a corpus input, which is a folder only when its
corpus expands folders (``options.glob`` or ``files_per_job``) and then holds one file the
ingest would read. A dry run reads no data, so empty placeholders are enough.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import REPO
from tests.integration.test_workflow import snakemake
from vlcomp.config import validate_config
from vlcomp.ingest.readers import FORMATS
from vlcomp.llm import LLMSettings

pytestmark = pytest.mark.integration

DOC_PAGES = [
    REPO / "README.md",
    *sorted((REPO / "config").rglob("*.md")),
    *sorted((REPO / "docs").rglob("*.md")),
]
PRESETS = sorted((REPO / "config" / "presets").glob("*.yaml"))
FENCE = re.compile(r"^(?P<indent>[ \t]*)```(?P<lang>[^\s`]*)[^\n`]*$")


def yaml_blocks(page: Path) -> list[tuple[int, str]]:
    """(line of the opening fence, text) of every ```yaml / ```yml block of a Markdown page."""
    blocks, lines = [], page.read_text().splitlines()
    index = 0
    while index < len(lines):
        opening = FENCE.match(lines[index])
        if not opening:
            index += 1
            continue
        indent, body, end = opening["indent"], [], index + 1
        while end < len(lines) and lines[end].strip() != "```":
            body.append(lines[end].removeprefix(indent))
            end += 1
        if end == len(lines):
            raise AssertionError(f"{page.relative_to(REPO)}:{index + 1}: unclosed code fence")
        if opening["lang"].lower() in ("yaml", "yml"):
            blocks.append((index + 1, "\n".join(body) + "\n"))
        index = end + 1
    return blocks


DOC_BLOCKS = [
    pytest.param(page, line, text, id=f"{page.relative_to(REPO)}:{line}")
    for page in DOC_PAGES
    for line, text in yaml_blocks(page)
]


def is_path(value: Any) -> bool:
    return isinstance(value, str) and value.startswith(("/", "./", "../"))


def placeholder_name(fmt: str, glob: str | None) -> str:
    """A file name the ingest finds in a folder input of this format."""
    if glob:
        return re.sub(r"[*?]", "0", glob)
    return "placeholder" + FORMATS[fmt].suffixes[0]


def make_placeholders(config: dict[str, Any], root: Path, workdir: Path) -> dict[str, Any]:
    """The config with its absolute paths moved under ``root`` and every path it names
    created as an empty file or folder (relative ones against ``workdir``)."""
    folder_inputs: dict[str, str] = {}  # corpus input -> file a folder of it must hold
    for entry in (config.get("corpora") or {}).values():
        options = entry.get("options") or {}
        if options.get("glob") or entry.get("files_per_job"):
            for path in entry.get("inputs", []):
                if is_path(path) and not Path(path).suffix:
                    folder_inputs[path] = placeholder_name(entry["format"], options.get("glob"))
    corpus_inputs = {
        path for entry in (config.get("corpora") or {}).values() for path in entry.get("inputs", [])
    }

    def relocate(value: Any, folder: bool = False) -> Any:
        if isinstance(value, dict):
            # a transformers model's id is a folder, whatever dots its name holds
            return {key: relocate(item, key == "id") for key, item in value.items()}
        if isinstance(value, list):
            return [relocate(item) for item in value]
        if not is_path(value):  # names and produced paths (results/...) stay
            return value
        moved = str(root / value.lstrip("/")) if value.startswith("/") else value
        target = (workdir / moved).resolve()
        if value in folder_inputs:
            target.mkdir(parents=True, exist_ok=True)
            (target / folder_inputs[value]).touch()
        elif not folder and (Path(value).suffix or value in corpus_inputs):
            target.parent.mkdir(parents=True, exist_ok=True)
            target.touch()
        else:
            target.mkdir(parents=True, exist_ok=True)
        return moved

    return relocate(config)


def failure_of(function, argument, context: str) -> Any:
    """function(argument), or the test fails with ``context`` and the error's message."""
    try:
        return function(argument)
    except (ValueError, yaml.YAMLError) as error:
        message = f"{context}:\n{error}"
    pytest.fail(message)


def check_config(source: str, text: str, tmp_path: Path, monkeypatch) -> None:
    """Validate a config as the workflow does, then dry-run the workflow with it; a failure
    names ``source`` (file:line)."""
    raw = failure_of(yaml.safe_load, text, f"{source}: not valid YAML")
    assert isinstance(raw, dict), f"{source}: a config is a mapping, got {type(raw).__name__}"
    workdir = tmp_path / "work"
    workdir.mkdir()
    config = make_placeholders(raw, tmp_path / "root", workdir)
    monkeypatch.chdir(workdir)  # relative paths resolve against the working directory
    failure_of(validate_config, config, f"{source}: the config does not validate")
    if "llm" in raw:
        failure_of(LLMSettings.from_config, config["llm"], f"{source}: the llm block")
    configfile = tmp_path / "config.yaml"
    configfile.write_text(yaml.safe_dump(config, sort_keys=False))
    result = snakemake(workdir, "-n", config=configfile)
    assert result.returncode == 0, (
        f"{source}: the dry run fails (snakemake -n --configfile <this block>):\n"
        + (result.stdout + result.stderr)[-3000:]
    )
    assert "Job stats:" in result.stdout, f"{source}: the dry run plans no job:\n{result.stdout}"


@pytest.mark.parametrize(("page", "line", "text"), DOC_BLOCKS)
def test_docs_yaml_block_is_a_working_config(page, line, text, tmp_path, monkeypatch):
    check_config(f"{page.relative_to(REPO)}:{line}", text, tmp_path, monkeypatch)


@pytest.mark.parametrize("preset", PRESETS, ids=[p.name for p in PRESETS])
def test_preset_dry_runs(preset, tmp_path, monkeypatch):
    """Validation of the presets alone is tests/unit/test_config.py's; this adds the DAG."""
    check_config(str(preset.relative_to(REPO)), preset.read_text(), tmp_path, monkeypatch)


def test_the_docs_show_configs():
    """The blocks above exist: the README's data and LLM examples among them."""
    texts = [param.values[2] for param in DOC_BLOCKS]
    assert any("eval_sets:" in text for text in texts), [p.id for p in DOC_BLOCKS]
    assert any(re.search(r"^llm:", text, re.M) for text in texts), [p.id for p in DOC_BLOCKS]
    assert len(PRESETS) >= 3


def test_nested_config_overrides_work(tmp_path):
    """Users tweak the default with ``--config`` (``--configfile`` replaces it): nested values
    arrive as strings and are read as the schema's types."""
    result = snakemake(
        tmp_path,
        "-n",
        "--config",
        "throughput={scale_captions: 400000}",
        "evaluate={bootstrap_resamples: 50}",
        config=REPO / "config" / "config.yaml",
    )
    assert result.returncode == 0, (result.stdout + result.stderr)[-3000:]
    assert "Job stats:" in result.stdout
