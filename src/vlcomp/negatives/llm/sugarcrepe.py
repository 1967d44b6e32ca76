"""SugarCrepe-style hard negatives written by an LLM (REPLACE, SWAP, ADD).

For every evaluation item (``contracts.EVAL_ITEMS_SCHEMA``) and every (family, target) of
``FAMILY_TARGETS`` one pair item ``<eval item id>/<family>_<target>`` is attempted:

- REPLACE obj/att/rel and ADD obj/att, three steps (prompts ``resources/prompts/sugarcrepe``):
  1. *locate* (temperature ``locate``, 0): the concepts of the kind in the caption —
     objects for replace_obj, add_obj and add_att, attributes for replace_att, relations
     for replace_rel. The answer is a reading of the caption, asked once per (item, kind)
     and shared by the tasks that need it; concepts not found in the caption's text are
     dropped. An empty list skips the task (``skipped: no <kind> located``).
  2. *propose* (temperature ``propose``, 1.5): a new concept — replacing one located
     concept drawn with the task's seeded generator (replace), a new object given those
     already there (add_obj), or a new attribute for one drawn object (add_att).
  3. *compose* (temperature ``compose``, 0): the caption with only that change.
- SWAP obj/att, one step (temperature ``swap``, 0): the model first says whether a swap
  is possible (``skipped: swap not possible`` when not) and writes the swapped caption.

Every step is one batched ``LLMClient.complete_many`` call over all tasks of an attempt
(all locate requests, then all swap, all propose, all compose). Every negative is then
validated (``validate.PairValidator``); a rejected task — a failed or malformed answer, a
proposal equal to the concept, a negative failing a check — is counted by reason and
tried again with seed ``seed + attempt`` (attempt 1, 2, ...; a new seed changes the cache
key, so a new answer is asked for) up to ``max_attempts``; after the last one it is
dropped and counted (``dropped: max attempts``). With a ``context.ContextCheck`` a valid
negative that tokenises like the caption within the text encoders' context (it changes
only what they do not read) is rejected the same way (``context: identical within N
tokens``) and asked for again. The rejection table counts every rejection, skip and drop
by (reason, family, target).

Outputs: candidates (``CANDIDATES_SCHEMA``, positive then negative per pair item, items in
item_id order and tasks in ``FAMILY_TARGETS`` order; generator ``llm:<model>``, provenance
JSON with the prompt version, the seed and attempt, the cache key of every step and the
concept change) and the boxes of the pair items (``pairs.pair_boxes``). The same inputs and
cache give byte-identical outputs: every answer comes from the cache on a rerun.
"""

from __future__ import annotations

import json
import zlib
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl

from vlcomp.contracts import CANDIDATES_SCHEMA, EVAL_ITEMS_SCHEMA, conform
from vlcomp.llm import LLMClient, Request, Response
from vlcomp.negatives.context import ContextCheck
from vlcomp.negatives.pairs import pair_boxes
from vlcomp.text import collapse_spaces, normalise
from vlcomp.vocabulary import SUGARCREPE_TYPES

from .prompts import SugarCrepePrompts
from .validate import PairCheck, PairValidator, same_text

FAMILY_TARGETS: tuple[tuple[str, str], ...] = tuple(SUGARCREPE_TYPES.values())
LOCATE_KIND: dict[tuple[str, str], str] = {
    ("replace", "obj"): "obj",
    ("replace", "att"): "att",
    ("replace", "rel"): "rel",
    ("add", "obj"): "obj",
    ("add", "att"): "obj",
}
KIND_WORDS = {"obj": "objects", "att": "attributes", "rel": "relations"}

REJECTIONS_SCHEMA: dict[str, pl.DataType] = {
    "reason": pl.String,
    "family": pl.String,  # null for item-level reasons
    "target": pl.String,
    "count": pl.Int64,
}
NO_TEXT = "item: no text"
DROPPED = "dropped: max attempts"
SWAP_IMPOSSIBLE = "skipped: swap not possible"
NOT_IN_CAPTION = "locate: concepts not in caption"
PROPOSE_EMPTY = "propose: empty"
PROPOSE_SAME = "propose: same concept"
PROPOSE_PRESENT = "propose: already in caption"

Log = Callable[[str], None]


def generator_name(model: str) -> str:
    return f"llm:{model}"


def skipped_none(kind: str) -> str:
    return f"skipped: no {KIND_WORDS[kind]} located"


@dataclass
class Task:
    """One pair item being generated."""

    item_id: str
    image: str | None
    positive: str
    family: str
    target: str
    attempt: int = 0
    steps: dict[str, str] = field(default_factory=dict)  # step -> cache key
    concept: dict[str, str] | None = None  # the located concept changed (replace, add_att)
    new: str | None = None
    negative: str | None = None
    swapped: tuple[str, str] | None = None

    @property
    def task(self) -> str:
        return f"{self.family}_{self.target}"

    @property
    def pair_id(self) -> str:
        return f"{self.item_id}/{self.task}"


@dataclass
class Located:
    concepts: list[dict[str, str]]
    key: str


@dataclass
class PairsResult:
    candidates: pl.DataFrame
    boxes: pl.DataFrame
    rejections: pl.DataFrame
    items: int
    pairs: int


def _in_caption(concept: str, caption: str) -> bool:
    return bool(concept.strip()) and normalise(concept) in normalise(caption)


class SugarCrepeGenerator:
    """Runs the steps for many items through one ``LLMClient`` (see the module docstring)."""

    def __init__(
        self,
        client: LLMClient,
        prompts: SugarCrepePrompts,
        validator: PairValidator,
        seed: int,
        families: Sequence[tuple[str, str]] = FAMILY_TARGETS,
        log: Log = print,
        context: ContextCheck | None = None,
    ) -> None:
        unknown = [ft for ft in families if ft not in FAMILY_TARGETS]
        if unknown:
            raise ValueError(f"unknown family/target {unknown} (known: {list(FAMILY_TARGETS)})")
        self.client = client
        self.prompts = prompts
        self.validator = validator
        self.seed = int(seed)
        self.families = tuple(families)
        self.log = log
        self.context = context
        self.settings = client.settings
        self.rejections: Counter[tuple[str, str | None, str | None]] = Counter()
        self._located: dict[tuple[str, str], Located] = {}

    # -- requests ---------------------------------------------------------------------
    def _request(self, step: str, task: str, fields: dict[str, Any], attempt: int) -> Request:
        template = self.prompts.template(step, task)
        return Request(
            messages=template.messages(fields),
            temperature=self.settings.temperature(step),
            seed=self.seed + attempt,
            schema=template.schema,
            tag=f"{step}/{task}",
        )

    def _complete(self, requests: list[Request]) -> list[Response]:
        if not requests:
            return []
        responses = self.client.complete_many(requests)
        self.client.raise_if_budget_exhausted()
        return responses

    def _reject(self, task: Task, reason: str) -> None:
        self.rejections[(reason, task.family, task.target)] += 1

    def _rng(self, task: Task) -> np.random.Generator:
        return np.random.default_rng(
            [self.seed + task.attempt, zlib.crc32(task.pair_id.encode("utf-8"))]
        )

    # -- steps ------------------------------------------------------------------------
    def _locate(self, tasks: list[Task], attempt: int) -> tuple[list[Task], list[Task]]:
        """(tasks with their concepts located, tasks rejected); skips are dropped."""
        wanted: dict[tuple[str, str], str] = {}
        for t in tasks:
            key = (t.item_id, LOCATE_KIND[(t.family, t.target)])
            if key not in self._located:
                wanted[key] = t.positive
        keys = list(wanted)
        requests = [
            self._request("locate", kind, {"caption": wanted[(item, kind)]}, attempt)
            for item, kind in keys
        ]
        failed: dict[tuple[str, str], str] = {}
        for key, resp in zip(keys, self._complete(requests), strict=True):
            if resp.error is not None:
                failed[key] = f"locate: {resp.error}"
                continue
            raw = resp.parsed["concepts"]
            concepts = [c for c in raw if _in_caption(c["concept"], wanted[key])]
            if raw and not concepts:
                failed[key] = NOT_IN_CAPTION
                continue
            self._located[key] = Located(concepts, resp.key)
        ready, rejected = [], []
        for t in tasks:
            kind = LOCATE_KIND[(t.family, t.target)]
            key = (t.item_id, kind)
            if key in failed:
                self._reject(t, failed[key])
                rejected.append(t)
            elif not self._located[key].concepts:
                self._reject(t, skipped_none(kind))
            else:
                t.steps["locate"] = self._located[key].key
                ready.append(t)
        return ready, rejected

    def _propose(self, tasks: list[Task], attempt: int) -> tuple[list[Task], list[Task]]:
        requests = []
        for t in tasks:
            located = self._located[(t.item_id, LOCATE_KIND[(t.family, t.target)])].concepts
            fields: dict[str, Any] = {"caption": t.positive}
            if t.family == "add" and t.target == "obj":
                names = list(dict.fromkeys(c["concept"] for c in located))
                t.concept = {"concept": ", ".join(names), "context": ""}
                fields["concepts"] = ", ".join(names)
            else:
                chosen = located[int(self._rng(t).integers(len(located)))]
                t.concept = {"concept": chosen["concept"], "context": chosen["context"]}
                fields.update(t.concept)
            requests.append(self._request("propose", t.task, fields, attempt))
        ready, rejected = [], []
        for t, resp in zip(tasks, self._complete(requests), strict=True):
            t.steps["propose"] = resp.key
            reason = None
            if resp.error is not None:
                reason = f"propose: {resp.error}"
            else:
                t.new = collapse_spaces(resp.parsed["new"])
                assert t.concept is not None
                if not t.new:
                    reason = PROPOSE_EMPTY
                elif t.family == "add" and t.target == "obj":
                    names = [n.strip() for n in t.concept["concept"].split(",")]
                    if any(same_text(t.new, n) for n in names):
                        reason = PROPOSE_PRESENT
                elif same_text(t.new, t.concept["concept"]):
                    reason = PROPOSE_SAME
            if reason is None:
                ready.append(t)
            else:
                self._reject(t, reason)
                rejected.append(t)
        return ready, rejected

    def _compose(self, tasks: list[Task], attempt: int) -> tuple[list[Task], list[Task]]:
        requests = []
        for t in tasks:
            assert t.concept is not None and t.new is not None
            fields = {"caption": t.positive, **t.concept, "new": t.new}
            requests.append(self._request("compose", t.task, fields, attempt))
        ready, rejected = [], []
        for t, resp in zip(tasks, self._complete(requests), strict=True):
            t.steps["compose"] = resp.key
            if resp.error is not None:
                self._reject(t, f"compose: {resp.error}")
                rejected.append(t)
            else:
                t.negative = resp.parsed["caption"]
                ready.append(t)
        return ready, rejected

    def _swap(self, tasks: list[Task], attempt: int) -> tuple[list[Task], list[Task]]:
        requests = [self._request("swap", t.task, {"caption": t.positive}, attempt) for t in tasks]
        ready, rejected = [], []
        for t, resp in zip(tasks, self._complete(requests), strict=True):
            t.steps["swap"] = resp.key
            if resp.error is not None:
                self._reject(t, f"swap: {resp.error}")
                rejected.append(t)
            elif not resp.parsed["possible"]:
                self._reject(t, SWAP_IMPOSSIBLE)
            else:
                t.negative = resp.parsed["caption"]
                t.swapped = (resp.parsed["first"], resp.parsed["second"])
                ready.append(t)
        return ready, rejected

    def _validate(self, tasks: list[Task]) -> tuple[list[Task], list[Task]]:
        checks = [PairCheck(t.positive, t.negative, t.family, t.target) for t in tasks]
        ok, rejected = [], []
        for t, reason in zip(tasks, self.validator.check(checks), strict=True):
            if reason is None:
                t.negative = collapse_spaces(t.negative or "")
                if self.context is not None and self.context.identical(t.positive, t.negative):
                    reason = self.context.reason
            if reason is None:
                ok.append(t)
            else:
                self._reject(t, reason)
                rejected.append(t)
        return ok, rejected

    # -- driver -----------------------------------------------------------------------
    def tasks_of(self, items: list[dict[str, Any]]) -> list[Task]:
        tasks = []
        for item in items:
            text = item["text"]
            if not text or not text.strip():
                self.rejections[(NO_TEXT, None, None)] += 1
                continue
            for family, target in self.families:
                tasks.append(
                    Task(item["item_id"], item["image_id"], collapse_spaces(text), family, target)
                )
        return tasks

    def run(self, tasks: list[Task]) -> list[Task]:
        """The tasks that produced a valid negative (input order)."""
        done: list[Task] = []
        pending = list(tasks)
        for attempt in range(self.settings.max_attempts):
            if not pending:
                break
            for t in pending:
                t.attempt, t.steps = attempt, {}
                t.concept = t.new = t.negative = t.swapped = None
            three = [t for t in pending if t.family != "swap"]
            swaps = [t for t in pending if t.family == "swap"]
            three, failed = self._locate(three, attempt)
            swaps, failed_swap = self._swap(swaps, attempt)
            three, failed_propose = self._propose(three, attempt)
            three, failed_compose = self._compose(three, attempt)
            ok, failed_check = self._validate(three + swaps)
            done.extend(ok)
            pending = failed + failed_swap + failed_propose + failed_compose + failed_check
            self.log(
                f"llm negatives, attempt {attempt + 1}: {len(ok)} valid, {len(pending)} to retry"
            )
        for t in pending:
            self._reject(t, DROPPED)
        order = {id(t): i for i, t in enumerate(tasks)}
        return sorted(done, key=lambda t: order[id(t)])

    def rejection_table(self) -> pl.DataFrame:
        rows = sorted(
            ((r, f, t, n) for (r, f, t), n in self.rejections.items()),
            key=lambda row: (row[0], row[1] or "", row[2] or ""),
        )
        return pl.DataFrame(rows, schema=REJECTIONS_SCHEMA, orient="row")


def candidates_of(
    tasks: Sequence[Task], benchmark: str, model: str, prompt_version: str, seed: int
) -> pl.DataFrame:
    rows = []
    for t in tasks:
        common = {
            "benchmark": benchmark,
            "item_id": t.pair_id,
            "image": t.image,
            "family": t.family,
            "target": t.target,
            "generator": generator_name(model),
        }
        positive = {"eval_item": t.item_id, "prompt_version": prompt_version}
        negative = {
            "eval_item": t.item_id,
            "prompt_version": prompt_version,
            "seed": seed + t.attempt,
            "attempt": t.attempt,
            "steps": t.steps,
            "change": (
                {"swapped": list(t.swapped)}
                if t.swapped is not None
                else {**(t.concept or {}), "new": t.new}
            ),
        }
        rows.append(
            {**common, "text": t.positive, "is_positive": True, "provenance": _json(positive)}
        )
        rows.append(
            {**common, "text": t.negative, "is_positive": False, "provenance": _json(negative)}
        )
    return pl.DataFrame(rows, schema=CANDIDATES_SCHEMA)


def _json(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def llm_pairs(
    items: pl.DataFrame,
    client: LLMClient,
    prompts: SugarCrepePrompts,
    validator: PairValidator,
    seed: int,
    benchmark: str,
    families: Sequence[tuple[str, str]] = FAMILY_TARGETS,
    log: Log = print,
    context: ContextCheck | None = None,
) -> PairsResult:
    """Candidates, boxes and the rejection table of ``items`` (see the module docstring);
    ``context``: reject negatives identical to the caption within the encoders' context."""
    rows = conform(items, EVAL_ITEMS_SCHEMA, "eval items").sort("item_id").to_dicts()
    ids = Counter(row["item_id"] for row in rows)
    repeated = sorted(i for i, n in ids.items() if n > 1)
    if repeated:
        raise ValueError(f"eval items: item_id repeats: {repeated[:5]}")
    generator = SugarCrepeGenerator(client, prompts, validator, seed, families, log, context)
    done = generator.run(generator.tasks_of(rows))
    candidates = candidates_of(done, benchmark, client.settings.model, prompts.version, seed)
    return PairsResult(
        candidates,
        pair_boxes(candidates, items),
        generator.rejection_table(),
        len(rows),
        len(done),
    )


def first_requests(
    items: pl.DataFrame,
    prompts: SugarCrepePrompts,
    client: LLMClient,
    seed: int,
    families: Sequence[tuple[str, str]] = FAMILY_TARGETS,
) -> list[Request]:
    """The requests of a first attempt, for a dry-run estimate: locate and swap exactly;
    propose and compose with each item's own caption and a placeholder concept (their real
    fields depend on earlier answers), one each per replace/add task."""
    generator = SugarCrepeGenerator(client, prompts, None, seed, families, log=lambda _: None)  # type: ignore[arg-type]
    rows = conform(items, EVAL_ITEMS_SCHEMA, "eval items").sort("item_id").to_dicts()
    tasks = generator.tasks_of(rows)
    requests: list[Request] = []
    seen: set[tuple[str, str]] = set()
    placeholder = {"concept": "concept", "context": "context", "concepts": "a, b", "new": "new"}
    for t in tasks:
        if t.family == "swap":
            requests.append(generator._request("swap", t.task, {"caption": t.positive}, 0))
            continue
        kind = LOCATE_KIND[(t.family, t.target)]
        if (t.item_id, kind) not in seen:
            seen.add((t.item_id, kind))
            requests.append(generator._request("locate", kind, {"caption": t.positive}, 0))
        fields = {"caption": t.positive, **placeholder}
        requests.append(generator._request("propose", t.task, fields, 0))
        requests.append(generator._request("compose", t.task, fields, 0))
    return requests
