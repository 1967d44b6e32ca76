"""CREPE productivity captions written by an LLM for complexities n >= 5.

Input: the TEMPLATE productivity benchmark (``negatives.productivity``: candidates and
items) and what built it (the Visual Genome folder, the productivity settings, the seed).
Items of complexity ``>= min_complexity`` (default 5, as in CREPE) get their texts
rewritten; smaller items keep the template texts unchanged.

What is rewritten, and why negatives too: every text of such an item — the positive AND
each hard negative — is rendered by the LLM from its own ``Pattern`` (the atoms the text
states; a negative's pattern is the positive's with one edit: an atom replaced, two atoms
swapped or one negated). Keeping template negatives next to LLM positives would make the
two sides differ in style (template "a dog and the dog ..." against fluent prose), so a
text-only model could tell them apart without looking at the image; with both sides written
by the same model, prompt and demonstrations, the pair differs only in what it states.
The edits and their graph checks (CREPE A.4, ``productivity_negatives``) are the template
benchmark's: the patterns are recovered, not re-drawn. The positive pattern comes from the
walk (``sample_walks`` with the same settings and seed reproduces it; the object ids in the
provenance are checked), each negative's from the single edit of the positive pattern whose
template rendering equals the template negative's text; a mismatch means the template
outputs do not come from these inputs and raises ``ValueError``.

Each distinct text to write — a walk's positive (shared by its family items) or one
negative — is one request (prompt ``resources/prompts/productivity.yaml``: the atom list with
numeric suffixes for repeated names, "not" for negated atoms, and the 5 demonstrations of
complexity n), temperature ``productivity`` (0), seed ``seed + attempt``. The caption is
checked by ``validate.ProductivityValidator`` against its pattern; a rejected text is asked
again with the next seed up to ``max_attempts``, then dropped. A walk whose positive is
dropped loses its items (``item: positive dropped``); an item keeps its valid negatives
(a negative equal to the positive or to an earlier one is dropped: ``negative: duplicate
text``; with a ``context.ContextCheck``, so is one that tokenises like the positive within
the text encoders' context: ``context: identical within N tokens``) and is dropped when
fewer than ``max(1, min_negatives)`` remain (``item: too few negatives``). Rejections are
counted by (reason, family, target, complexity); the positive's rejections carry family
``positive``.

Output rows keep the template's order and item ids; rewritten rows get generator
``llm:<model>`` and the template provenance JSON extended with ``llm`` (prompt version,
cache key, seed, attempt, the template text it replaces).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from vlcomp.contracts import CANDIDATES_SCHEMA, conform
from vlcomp.llm import LLMClient, Request
from vlcomp.negatives.context import ContextCheck
from vlcomp.negatives.productivity import (
    ITEMS_SCHEMA,
    ProductivitySettings,
    read_scene_graphs,
    sample_walks,
)
from vlcomp.negatives.productivity_negatives import negation_candidates, swap_candidates
from vlcomp.negatives.productivity_text import (
    Attr,
    Edge,
    Node,
    Pattern,
    atom_count,
    pattern_from_walk,
    render,
)
from vlcomp.text import collapse_spaces

from .prompts import ProductivityPrompts, atoms_text
from .sugarcrepe import generator_name
from .validate import ProductivityValidator, same_text

MIN_COMPLEXITY = 5
POSITIVE = "positive"
REJECTIONS_SCHEMA: dict[str, pl.DataType] = {
    "reason": pl.String,
    "family": pl.String,  # "positive" for a walk's positive caption
    "target": pl.String,
    "complexity": pl.Int64,
    "count": pl.Int64,
}
DROPPED = "dropped: max attempts"
POSITIVE_DROPPED = "item: positive dropped"
TOO_FEW = "item: too few negatives"
DUPLICATE = "negative: duplicate text"

Log = Callable[[str], None]


def _substitute(pattern: Pattern, kind: str, where: tuple[int, int], value: str) -> Pattern:
    i, j = where
    if kind == "obj":
        return pattern.with_node(i, Node(value, pattern.nodes[i].attributes))
    if kind == "att":
        attrs = list(pattern.nodes[i].attributes)
        attrs[j] = Attr(value, attrs[j].negated)
        return pattern.with_node(i, Node(pattern.nodes[i].name, tuple(attrs)))
    edge = pattern.edges[i]
    return pattern.with_edge(i, Edge(edge.subject, value, edge.object, edge.negated))


def edit_candidates(pattern: Pattern, change: Mapping[str, Any] | None) -> Iterable[Pattern]:
    """Every single edit of ``pattern`` that the template negative ``change`` may be."""
    change = change or {}
    if change.get("edit") == "replace":
        kind, old, new = change.get("kind"), change.get("from"), change.get("to")
        for i, node in enumerate(pattern.nodes):
            if kind == "obj" and node.name == old:
                yield _substitute(pattern, "obj", (i, -1), str(new))
            if kind == "att":
                for j, a in enumerate(node.attributes):
                    if a.value == old:
                        yield _substitute(pattern, "att", (i, j), str(new))
        if kind == "rel":
            for k, e in enumerate(pattern.edges):
                if e.predicate == old:
                    yield _substitute(pattern, "rel", (k, -1), str(new))
    elif change.get("edit") == "swap":
        yield from (p for _, p, _ in swap_candidates(pattern, lambda _: None))
    elif change.get("edit") == "negate":
        yield from (p for _, p, _ in negation_candidates(pattern))


@dataclass
class Unit:
    """One text to write: a walk's positive or one negative."""

    pattern: Pattern
    complexity: int
    family: str  # "positive" or the negative's family
    target: str | None
    attempt: int = 0
    key: str | None = None
    text: str | None = None


@dataclass
class Row:
    index: int  # in the template candidates
    row: dict[str, Any]
    unit: Unit


@dataclass
class ProductivityResult:
    candidates: pl.DataFrame
    items: pl.DataFrame
    rejections: pl.DataFrame
    rewritten_items: int
    dropped_items: int
    unchecked_atoms: int


def _complexity(provenance: str) -> int:
    return int(json.loads(provenance)["complexity"])


def recover_patterns(
    candidates: pl.DataFrame,
    vg_dir: str | Path,
    settings: ProductivitySettings,
    seed: int,
    min_complexity: int,
) -> tuple[list[Row], dict[tuple[str, int, int], Unit]]:
    """The rows to rewrite (template rows of items with n >= min_complexity) with their
    units; positive units are shared per walk (image, n, walk index)."""
    leading = settings.leading_attributes
    rows = candidates.to_dicts()
    wanted: dict[str, list[int]] = {}
    for i, row in enumerate(rows):
        if _complexity(row["provenance"]) >= min_complexity:
            wanted.setdefault(str(row["image"]), []).append(i)
    positives: dict[tuple[str, int, int], Unit] = {}
    out: list[Row] = []
    found: set[str] = set()
    for graph in read_scene_graphs(Path(vg_dir)):
        if graph.image_id not in wanted:
            continue
        found.add(graph.image_id)
        walks: dict[int, dict[int, Any]] = {}
        for i in wanted[graph.image_id]:
            row = rows[i]
            prov = json.loads(row["provenance"])
            n, w = int(prov["complexity"]), int(prov["walk"])
            if n not in walks:
                kept, _ = sample_walks(graph, n, settings, seed)
                walks[n] = {k.index: k for k in kept}
            kept_walk = walks[n].get(w)
            ids = (
                [graph.objects[o].object_id for o in kept_walk.walk.objects]
                if kept_walk is not None
                else None
            )
            if ids != prov["object_ids"]:
                raise ValueError(
                    f"{row['item_id']}: walk {w} of image {graph.image_id} (n={n}) is not the "
                    "template's: the template outputs come from other inputs, settings or seed"
                )
            pattern = pattern_from_walk(graph, kept_walk.walk)
            positive = render(pattern, leading)
            key = (graph.image_id, n, w)
            if key not in positives:
                positives[key] = Unit(pattern, n, POSITIVE, None)
            if row["is_positive"]:
                if row["text"] != positive:
                    raise ValueError(f"{row['item_id']}: positive is not the walk's template text")
                out.append(Row(i, row, positives[key]))
                continue
            edited = next(
                (
                    p
                    for p in edit_candidates(pattern, prov.get("change"))
                    if render(p, leading) == row["text"]
                ),
                None,
            )
            if edited is None:
                raise ValueError(
                    f"{row['item_id']}: no single edit of the walk renders the negative "
                    f"{row['text']!r}"
                )
            out.append(Row(i, row, Unit(edited, n, row["family"], row["target"])))
    missing = sorted(set(wanted) - found)
    if missing:
        raise ValueError(f"{vg_dir}: scene graphs of image(s) {missing[:5]} not found")
    return sorted(out, key=lambda r: r.index), positives


class ProductivityGenerator:
    def __init__(
        self,
        client: LLMClient,
        prompts: ProductivityPrompts,
        validator: ProductivityValidator,
        seed: int,
        log: Log = print,
    ) -> None:
        self.client = client
        self.prompts = prompts
        self.validator = validator
        self.seed = int(seed)
        self.log = log
        self.rejections: Counter[tuple[str, str | None, str | None, int]] = Counter()
        self.unchecked = 0

    def request(self, unit: Unit) -> Request:
        template = self.prompts.template(unit.complexity)
        return Request(
            messages=template.messages({"atoms": atoms_text(unit.pattern)}),
            temperature=self.client.settings.temperature("productivity"),
            seed=self.seed + unit.attempt,
            schema=template.schema,
            tag=f"productivity/n{unit.complexity}",
        )

    def _reject(self, unit: Unit, reason: str) -> None:
        self.rejections[(reason, unit.family, unit.target, unit.complexity)] += 1

    def run(self, units: Sequence[Unit]) -> None:
        """Fill ``text`` of every unit that gets a valid caption (others stay None)."""
        pending = list(units)
        if pending:
            refs = self.validator.references([u.pattern for u in pending])
            self.unchecked = sum(r.unchecked for r in refs)
        for attempt in range(self.client.settings.max_attempts):
            if not pending:
                break
            for u in pending:
                u.attempt = attempt
            responses = self.client.complete_many([self.request(u) for u in pending])
            self.client.raise_if_budget_exhausted()
            captions: list[str | None] = []
            for u, resp in zip(pending, responses, strict=True):
                u.key = resp.key
                captions.append(None if resp.error else resp.parsed["caption"])
            answered = [i for i, c in enumerate(captions) if c is not None]
            reasons, _ = self.validator.check(
                [captions[i] for i in answered], [pending[i].pattern for i in answered]
            )
            verdict: dict[int, str | None] = dict(zip(answered, reasons, strict=True))
            still = []
            for i, (u, resp) in enumerate(zip(pending, responses, strict=True)):
                reason = f"response: {resp.error}" if resp.error else verdict[i]
                if reason is None:
                    u.text = collapse_spaces(captions[i] or "")
                else:
                    self._reject(u, reason)
                    still.append(u)
            self.log(
                f"llm productivity, attempt {attempt + 1}: {len(pending) - len(still)} valid, "
                f"{len(still)} to retry"
            )
            pending = still
        for u in pending:
            self._reject(u, DROPPED)

    def rejection_table(self) -> pl.DataFrame:
        rows = sorted(
            ((r, f, t, n, c) for (r, f, t, n), c in self.rejections.items()),
            key=lambda x: (x[0], x[1] or "", x[2] or "", x[3]),
        )
        return pl.DataFrame(rows, schema=REJECTIONS_SCHEMA, orient="row")


def _provenance(row: dict[str, Any], unit: Unit, prompt_version: str, seed: int) -> str:
    record = json.loads(row["provenance"])
    record["llm"] = {
        "prompt_version": prompt_version,
        "key": unit.key,
        "seed": seed + unit.attempt,
        "attempt": unit.attempt,
        "template": row["text"],
    }
    return json.dumps(record, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def llm_productivity(
    candidates: pl.DataFrame,
    items: pl.DataFrame,
    vg_dir: str | Path,
    settings: Mapping[str, Any] | ProductivitySettings | None,
    seed: int,
    client: LLMClient,
    prompts: ProductivityPrompts,
    validator: ProductivityValidator,
    min_complexity: int = MIN_COMPLEXITY,
    log: Log = print,
    context: ContextCheck | None = None,
) -> ProductivityResult:
    """The productivity benchmark with LLM texts for n >= ``min_complexity`` (see the
    module docstring). ``settings`` and ``seed`` must be those of the template run;
    ``context`` drops negatives identical to the positive within the encoders' context."""
    s = (
        settings
        if isinstance(settings, ProductivitySettings)
        else ProductivitySettings.from_mapping(settings)
    )
    candidates = conform(candidates, CANDIDATES_SCHEMA, "productivity candidates")
    items = conform(items, ITEMS_SCHEMA, "productivity items")
    rows, positives = recover_patterns(candidates, vg_dir, s, seed, min_complexity)
    units = list(positives.values()) + [r.unit for r in rows if r.unit.family != POSITIVE]
    for u in units:
        if atom_count(u.pattern) != u.complexity:
            raise ValueError(
                f"a pattern of complexity {u.complexity} states {atom_count(u.pattern)} atoms"
            )
    generator = ProductivityGenerator(client, prompts, validator, seed, log)
    generator.run(units)

    # assemble: items in template order, the positive first
    by_item: dict[str, list[Row]] = {}
    for r in rows:
        by_item.setdefault(r.row["item_id"], []).append(r)
    dropped: set[str] = set()
    drop_rows: set[int] = set()
    for item_id, item_rows in by_item.items():
        positive = next(r for r in item_rows if r.row["is_positive"])
        family, n = positive.row["family"], positive.unit.complexity
        if positive.unit.text is None:
            dropped.add(item_id)
            generator.rejections[(POSITIVE_DROPPED, family, None, n)] += 1
            continue
        seen = [positive.unit.text]
        kept = 0
        for r in item_rows:
            if r.row["is_positive"]:
                continue
            text = r.unit.text
            if text is None:
                drop_rows.add(r.index)
            elif any(same_text(text, other) for other in seen):
                drop_rows.add(r.index)
                generator.rejections[(DUPLICATE, r.unit.family, r.unit.target, n)] += 1
            elif context is not None and context.identical(seen[0], text):
                drop_rows.add(r.index)
                generator.rejections[(context.reason, r.unit.family, r.unit.target, n)] += 1
            else:
                seen.append(text)
                kept += 1
        if kept < max(1, int(s.min_negatives)):
            dropped.add(item_id)
            generator.rejections[(TOO_FEW, family, None, n)] += 1
    rewritten = {r.index: r for r in rows}
    model, version = client.settings.model, prompts.version
    out = []
    for i, row in enumerate(candidates.to_dicts()):
        if row["item_id"] in dropped or i in drop_rows:
            continue
        r = rewritten.get(i)
        if r is not None:
            row = {
                **row,
                "text": r.unit.text,
                "generator": generator_name(model),
                "provenance": _provenance(row, r.unit, version, seed),
            }
        out.append(row)
    kept_items = items.filter(~pl.col("item_id").is_in(sorted(dropped)))
    return ProductivityResult(
        pl.DataFrame(out, schema=CANDIDATES_SCHEMA),
        kept_items,
        generator.rejection_table(),
        len(by_item) - len(dropped),
        len(dropped),
        generator.unchecked,
    )
