"""The library's layers (README, "Architecture"): which package may import which.

Reads every module of ``src/vlcomp`` with ``ast`` (nothing is imported) and fails on an import
of a package from a higher layer, on an import circle between modules, and on a module that
imports ``vlcomp_dev`` (development tools stand outside the runtime package). The world is a
source of files and its checks: it may import anything, and nothing but the settings layer
may import it.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"
ROOT = "vlcomp"

# Bottom to top; a package may import its own layer and the ones below.
LAYERS: tuple[tuple[str, ...], ...] = (
    # 1 ground: text, files, contracts, the tables' vocabulary and typed settings
    ("text", "io", "contracts", "vocabulary", "certificate", "errors", "redact", "machine",
     "joblog", "figure_files", "wordnet_setup", "schemas", "settings", "resampling"),
    # 2 data
    ("ingest", "parse", "counts", "importers", "scorers", "llm"),
    # 3 benchmark building
    ("splits", "negatives", "refine", "blind"),
    # 4 models
    ("models", "train"),
    # 5 evaluation
    ("evaluate", "audit", "export"),
    # 6 presentation
    ("report",),
    # 7 settings: validates the whole config and registers presets (the world's among them)
    ("config",),
)  # fmt: skip
UNLAYERED = ("world",)  # imports anything; only the settings layer names it
# ... except its generator (every module but its ground-truth checks): a source of files.
WORLD_CHECKS = "vlcomp.world.checks"
# Presentation reads tables: it takes their vocabulary from the ground, not another stage's code.
GROUND_ONLY = ("report",)
LAYER_OF = {package: n for n, packages in enumerate(LAYERS) for package in packages}


def modules(src: Path = SRC) -> dict[str, Path]:
    out = {}
    for path in sorted((src / ROOT).rglob("*.py")):
        parts = list(path.relative_to(src).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def imports(name: str, path: Path, known: set[str]) -> Iterator[tuple[str, bool]]:
    """(imported module, at module level?) for every vlcomp import of a module."""
    tree = ast.parse(path.read_text())
    top = {id(node) for node in tree.body}
    # `if TYPE_CHECKING:` blocks at module level import nothing at run time
    typing_only = {
        id(inner)
        for node in tree.body
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
        for inner in ast.walk(node)
    }
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                stem = ".".join(base + ([node.module] if node.module else []))
            else:
                stem = node.module or ""
            targets = [
                f"{stem}.{a.name}" if f"{stem}.{a.name}" in known else stem for a in node.names
            ]
        else:
            continue
        for target in targets:
            if target.split(".")[0] not in (ROOT, "vlcomp_dev"):
                continue
            while target not in known and "." in target:
                target = target.rsplit(".", 1)[0]
            if target != name:
                yield target, id(node) in top


def package_of(module: str) -> str:
    """``vlcomp.<package>...`` -> package; the package's own ``__init__`` is ground."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "io"


def graph(src: Path = SRC) -> dict[str, dict[str, bool]]:
    """module -> {imported module: imported at module level?}"""
    mods = modules(src)
    known = set(mods)
    out: dict[str, dict[str, bool]] = defaultdict(dict)
    for name, path in mods.items():
        out[name]  # noqa: B018 - every module is a node
        for target, at_top in imports(name, path, known):
            out[name][target] = out[name].get(target, False) or at_top
    return out


def against_layers(edges: dict[str, dict[str, bool]]) -> list[str]:
    problems = []
    for module, targets in sorted(edges.items()):
        source = package_of(module)
        for target in sorted(targets):
            if target.split(".")[0] == "vlcomp_dev":
                problems.append(f"{module} imports the development package ({target})")
                continue
            dest = package_of(target)
            if source == "world" and not module.startswith(WORLD_CHECKS):
                if target.startswith(WORLD_CHECKS) or LAYER_OF.get(dest, 0) > 1:
                    problems.append(f"{module}: the world's generator imports {target}")
                continue
            if source == dest or source in UNLAYERED:
                continue
            if dest in UNLAYERED:
                if source != "config":
                    problems.append(f"{module} names the world ({target})")
                continue
            if source not in LAYER_OF or dest not in LAYER_OF:
                problems.append(f"{module} -> {target}: a package without a layer")
            elif source in GROUND_ONLY and LAYER_OF[dest] > 0:
                problems.append(f"{module} imports {target}: {source} imports only the ground")
            elif LAYER_OF[dest] > LAYER_OF[source]:
                problems.append(
                    f"{module} (layer {LAYER_OF[source] + 1}) imports {target} "
                    f"(layer {LAYER_OF[dest] + 1})"
                )
    return problems


def circles(edges: dict[str, dict[str, bool]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def deferred_in_circles(edges: dict[str, dict[str, bool]]) -> list[str]:
    """Function-level imports between modules of one circle (they only hide it)."""
    members = {m: i for i, c in enumerate(circles(edges)) for m in c}
    return [
        f"{m} -> {t}"
        for m, targets in sorted(edges.items())
        for t, at_top in sorted(targets.items())
        if not at_top and m in members and members.get(t) == members[m]
    ]


def test_every_package_has_a_layer():
    packages = {package_of(m) for m in modules()} - {ROOT}
    assert sorted(packages - set(LAYER_OF) - set(UNLAYERED)) == []


def test_no_import_against_the_layers():
    assert against_layers(graph()) == []


def test_no_import_circle():
    assert circles(graph()) == []


@pytest.mark.parametrize(
    ("files", "expected_problems", "expected_circles"),
    [
        ({"report/a.py": "from vlcomp.evaluate import b\n", "evaluate/b.py": ""}, 1, 0),
        ({"parse/a.py": "def f():\n    from vlcomp.world import w\n", "world/w.py": ""}, 1, 0),
        ({"report/a.py": "from vlcomp.vocabulary import ALL\n", "vocabulary.py": ""}, 0, 0),
        ({"world/a.py": "from vlcomp.evaluate import b\n", "evaluate/b.py": ""}, 1, 0),
        ({"world/checks/a.py": "from vlcomp.evaluate import b\n", "evaluate/b.py": ""}, 0, 0),
        ({"evaluate/a.py": "from . import b\n", "evaluate/b.py": "def f():\n    from . import a\n"},
         0, 1),
    ],
)  # fmt: skip
def test_the_checks_can_fail(tmp_path, files, expected_problems, expected_circles):
    for rel, text in files.items():
        path = tmp_path / ROOT / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        (path.parent / "__init__.py").touch()
    edges = graph(tmp_path)
    assert len(against_layers(edges)) == expected_problems
    assert len(circles(edges)) == expected_circles
