"""Prompt files: loading, few-shot messages and the prompt version.

The prompts live in ``resources/prompts/`` (YAML, our own words — SugarCrepe and CREPE
never released theirs):

- ``sugarcrepe/locate.yaml``, ``propose.yaml``, ``compose.yaml``, ``swap.yaml``: one file per
  step, each with a ``version``, a ``system`` text, a strict JSON ``schema`` for the answer
  (its ``title`` names it) and ``tasks``: per task (locate: obj/att/rel; propose and
  compose: replace_obj, replace_att, replace_rel, add_obj, add_att; swap: swap_obj,
  swap_att) an ``instruction``, a ``user`` format string and ``demonstrations`` (fields of the
  user message + the ``answer``). ``locate.yaml`` shares one list of demonstration captions
  between its tasks: each demonstration holds the answer list of every task, wrapped as
  ``{answer_field: [...]}``.
- ``productivity.yaml``: ``version``, ``system``, ``user`` (with ``{atoms}``), ``schema`` and
  ``demonstrations`` per complexity n: each an atom list (``objects``: name -> attributes,
  ``relations``: [subject, predicate, object]; "not <value>" / "not <predicate>" negate an
  atom; repeated names carry numeric suffixes, dog_1 / dog_2) and its ``caption``.

A request's messages are: the system text (the file's ``system`` + the task's
``instruction``), then each demonstration as a user message and the assistant's JSON answer,
then the real user message. The prompt version of a set of files is
``<name>:<version>+<version>...:<sha256 of the files' bytes, 16 hex>``, so any edit of a
prompt file — wording, a demonstration, a schema, a version string — changes every cache
key and shows in every candidate's provenance.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from vlcomp.negatives.productivity_text import Attr, Edge, Node, Pattern

PROMPTS_DIR = Path(__file__).resolve().parents[4] / "resources" / "prompts"
SUGARCREPE_STEPS: dict[str, tuple[str, ...]] = {
    "locate": ("obj", "att", "rel"),
    "propose": ("replace_obj", "replace_att", "replace_rel", "add_obj", "add_att"),
    "compose": ("replace_obj", "replace_att", "replace_rel", "add_obj", "add_att"),
    "swap": ("swap_obj", "swap_att"),
}
MIN_DEMONSTRATIONS = 7
PRODUCTIVITY_DEMONSTRATIONS = 5
PRODUCTIVITY_COMPLEXITIES: tuple[int, ...] = tuple(range(5, 13))
NOT = "not "


class PromptError(ValueError):
    """A prompt file that is missing, malformed or incomplete (names the file)."""


@dataclass(frozen=True)
class Demonstration:
    fields: Mapping[str, str]
    answer: Mapping[str, Any]


@dataclass(frozen=True)
class Template:
    """One (step, task): system text, user format, answer schema and demonstrations."""

    name: str  # e.g. "propose/replace_att"
    system: str
    user: str
    schema: Mapping[str, Any]
    demonstrations: tuple[Demonstration, ...]

    def user_text(self, fields: Mapping[str, Any]) -> str:
        try:
            return self.user.format(**fields)
        except KeyError as e:
            raise PromptError(f"{self.name}: user message needs field {e}") from None

    def messages(self, fields: Mapping[str, Any]) -> tuple[dict[str, str], ...]:
        out = [{"role": "system", "content": self.system}]
        for demo in self.demonstrations:
            out.append({"role": "user", "content": self.user_text(demo.fields)})
            out.append({"role": "assistant", "content": answer_json(demo.answer)})
        out.append({"role": "user", "content": self.user_text(fields)})
        return tuple(out)


def answer_json(answer: Mapping[str, Any]) -> str:
    return json.dumps(answer, ensure_ascii=False)


def prompt_version(name: str, files: Sequence[Path], versions: Sequence[str]) -> str:
    digest = hashlib.sha256()
    for path in files:
        data = path.read_bytes()
        digest.update(f"{path.name}\0{len(data)}\0".encode())
        digest.update(data)
    return f"{name}:{'+'.join(versions)}:{digest.hexdigest()[:16]}"


def _read(path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise PromptError(f"{path}: prompt file not found")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as e:
        raise PromptError(f"{path}: not valid YAML ({e})") from None
    if not isinstance(data, dict):
        raise PromptError(f"{path}: must be a mapping")
    for key in ("version", "system", "schema"):
        if not data.get(key):
            raise PromptError(f"{path}: needs {key!r}")
    if not isinstance(data["version"], str):
        raise PromptError(f"{path}: version must be a string")
    return data


def _system(data: Mapping[str, Any], instruction: str | None) -> str:
    parts = [str(data["system"]).strip()]
    if instruction:
        parts.append(str(instruction).strip())
    return "\n\n".join(parts)


def _demonstrations(raw: Any, where: str, answer_of: Any) -> tuple[Demonstration, ...]:
    if not isinstance(raw, list):
        raise PromptError(f"{where}: demonstrations must be a list")
    out = []
    for i, demo in enumerate(raw):
        if not isinstance(demo, dict):
            raise PromptError(f"{where}: demonstration {i} must be a mapping")
        answer = answer_of(demo)
        if not isinstance(answer, dict):
            raise PromptError(f"{where}: demonstration {i} has no answer mapping")
        fields = {k: str(v) for k, v in demo.items() if not isinstance(v, dict | list)}
        out.append(Demonstration(fields, answer))
    return tuple(out)


@dataclass(frozen=True)
class SugarCrepePrompts:
    version: str
    templates: Mapping[tuple[str, str], Template]  # (step, task)
    files: tuple[Path, ...]
    file_versions: Mapping[str, str]

    def template(self, step: str, task: str) -> Template:
        return self.templates[(step, task)]


def load_sugarcrepe(prompts_dir: str | Path | None = None) -> SugarCrepePrompts:
    base = Path(prompts_dir) if prompts_dir is not None else PROMPTS_DIR
    templates: dict[tuple[str, str], Template] = {}
    files, versions = [], {}
    for step, tasks in SUGARCREPE_STEPS.items():
        path = base / "sugarcrepe" / f"{step}.yaml"
        data = _read(path)
        files.append(path)
        versions[step] = data["version"]
        raw_tasks = data.get("tasks") or {}
        for task in tasks:
            spec = raw_tasks.get(task)
            where = f"{path} task {task}"
            if not isinstance(spec, dict):
                raise PromptError(f"{path}: needs task {task!r}")
            user = spec.get("user") or data.get("user")
            if not user:
                raise PromptError(f"{where}: needs a user format")
            if "demonstrations" in spec:
                demos = _demonstrations(spec["demonstrations"], where, lambda d: d.get("answer"))
            else:
                field = data.get("answer_field")
                if not field:
                    raise PromptError(f"{where}: needs demonstrations (or answer_field)")
                demos = _demonstrations(
                    data.get("demonstrations"), where, lambda d, t=task, f=field: {f: d.get(t)}
                )
            if len(demos) < MIN_DEMONSTRATIONS:
                raise PromptError(
                    f"{where}: {len(demos)} demonstrations, at least {MIN_DEMONSTRATIONS} needed"
                )
            templates[(step, task)] = Template(
                f"{step}/{task}",
                _system(data, spec.get("instruction")),
                user,
                data["schema"],
                demos,
            )
    version = prompt_version("sugarcrepe", files, [versions[s] for s in SUGARCREPE_STEPS])
    return SugarCrepePrompts(version, templates, tuple(files), versions)


# ------------------------------------------------------------------ productivity

_SUFFIX = re.compile(r"_\d+$")


def node_labels(pattern: Pattern) -> list[str]:
    """Names with numeric suffixes for repeated names (dog_1, dog_2, in node order)."""
    counts: dict[str, int] = {}
    for node in pattern.nodes:
        counts[node.name] = counts.get(node.name, 0) + 1
    seen: dict[str, int] = {}
    out = []
    for node in pattern.nodes:
        if counts[node.name] > 1:
            seen[node.name] = seen.get(node.name, 0) + 1
            out.append(f"{node.name}_{seen[node.name]}")
        else:
            out.append(node.name)
    return out


def atoms_text(pattern: Pattern) -> str:
    """The atom list the productivity prompt shows (objects with attributes, relations)."""
    labels = node_labels(pattern)
    lines = ["Objects:"]
    for label, node in zip(labels, pattern.nodes, strict=True):
        attrs = ", ".join(f"{NOT}{a.value}" if a.negated else a.value for a in node.attributes)
        lines.append(f"- {label}: {attrs}" if attrs else f"- {label}")
    lines.append("Relations:")
    if not pattern.edges:
        lines.append("- none")
    for e in pattern.edges:
        predicate = f"{NOT}{e.predicate}" if e.negated else e.predicate
        lines.append(f"- {labels[e.subject]} {predicate} {labels[e.object]}")
    return "\n".join(lines)


def pattern_from_atoms(objects: Mapping[str, Any], relations: Sequence[Any]) -> Pattern:
    """A ``Pattern`` from a demonstration's atoms (labels may carry _<k> suffixes)."""
    index: dict[str, int] = {}
    nodes = []
    for label, attrs in objects.items():
        values = attrs or []
        if not isinstance(values, list):
            raise PromptError(f"object {label}: attributes must be a list")
        index[str(label)] = len(nodes)
        nodes.append(
            Node(
                _SUFFIX.sub("", str(label)),
                tuple(
                    Attr(v[len(NOT) :], True) if v.startswith(NOT) else Attr(v)
                    for v in map(str, values)
                ),
            )
        )
    edges = []
    for rel in relations or []:
        if not isinstance(rel, list) or len(rel) != 3:
            raise PromptError(f"relation {rel!r}: must be [subject, predicate, object]")
        s, p, o = map(str, rel)
        if s not in index or o not in index:
            raise PromptError(f"relation {rel!r}: unknown object")
        negated = p.startswith(NOT)
        edges.append(Edge(index[s], p[len(NOT) :] if negated else p, index[o], negated))
    return Pattern(tuple(nodes), tuple(edges))


@dataclass(frozen=True)
class ProductivityDemo:
    pattern: Pattern
    caption: str


@dataclass(frozen=True)
class ProductivityPrompts:
    version: str
    system: str
    user: str
    schema: Mapping[str, Any]
    demonstrations: Mapping[int, tuple[ProductivityDemo, ...]]
    files: tuple[Path, ...]

    def complexity_for(self, n: int) -> int:
        """The demonstrations' complexity used for n (n itself, else the nearest)."""
        return min(self.demonstrations, key=lambda k: (abs(k - n), k))

    def template(self, n: int) -> Template:
        demos = tuple(
            Demonstration({"atoms": atoms_text(d.pattern)}, {"caption": d.caption})
            for d in self.demonstrations[self.complexity_for(n)]
        )
        return Template(f"productivity/n{n}", self.system, self.user, self.schema, demos)


def load_productivity(prompts_dir: str | Path | None = None) -> ProductivityPrompts:
    base = Path(prompts_dir) if prompts_dir is not None else PROMPTS_DIR
    path = base / "productivity.yaml"
    data = _read(path)
    if not data.get("user") or "{atoms}" not in data["user"]:
        raise PromptError(f"{path}: needs a user format with {{atoms}}")
    raw = data.get("demonstrations")
    if not isinstance(raw, dict):
        raise PromptError(f"{path}: demonstrations must map complexity -> list")
    demos: dict[int, tuple[ProductivityDemo, ...]] = {}
    for n, items in raw.items():
        where = f"{path} complexity {n}"
        if not isinstance(items, list):
            raise PromptError(f"{where}: must be a list")
        out = []
        for i, d in enumerate(items):
            if not isinstance(d, dict) or not d.get("caption") or "objects" not in d:
                raise PromptError(f"{where}: demonstration {i} needs objects and caption")
            try:
                pattern = pattern_from_atoms(d["objects"] or {}, d.get("relations") or [])
            except PromptError as e:
                raise PromptError(f"{where}: demonstration {i}: {e}") from None
            out.append(ProductivityDemo(pattern, str(d["caption"])))
        demos[int(n)] = tuple(out)
    for n in PRODUCTIVITY_COMPLEXITIES:
        if len(demos.get(n, ())) < PRODUCTIVITY_DEMONSTRATIONS:
            raise PromptError(
                f"{path}: complexity {n} has {len(demos.get(n, ()))} demonstrations, "
                f"{PRODUCTIVITY_DEMONSTRATIONS} needed"
            )
    version = prompt_version("productivity", [path], [data["version"]])
    return ProductivityPrompts(
        version,
        _system(data, data.get("instruction")),
        data["user"],
        data["schema"],
        demos,
        (path,),
    )
