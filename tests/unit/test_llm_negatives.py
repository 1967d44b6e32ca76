"""LLM hard negatives (vlcomp.negatives.llm): prompt files, validation rules, and the two
jobs driven through the REAL client (vlcomp.llm, the `openai` package) against the local
OpenAI-compatible test server (tests/llm_server.py) with canned answers written here.

The canned answers are what a well-behaved model would say for six COCO-like captions: the
located concepts and the proposals are listed per caption (``CAPTIONS``, ``NEW``, ...); the
composed sentence applies the proposal to the caption word for word. The productivity
"model" (``fluent_caption``) writes one clause per relation in the demonstrations' style.
Faults (two concepts changed, French, the positive again, too long, a missing atom) are
injected per test for the first seed only, so the retry with seed + 1 gets a good answer.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from tests.llm_server import llm_server  # noqa: F401 - the fixture
from vlcomp.contracts import CANDIDATES_SCHEMA, EVAL_ITEMS_SCHEMA
from vlcomp.errors import DryRun, LowYield
from vlcomp.llm import BudgetExhausted
from vlcomp.negatives.jobs import productivity_job
from vlcomp.negatives.llm import prompts as pr
from vlcomp.negatives.llm.jobs import llm_pairs_job, llm_productivity_job
from vlcomp.negatives.llm.productivity import recover_patterns
from vlcomp.negatives.llm.sugarcrepe import FAMILY_TARGETS
from vlcomp.negatives.llm.validate import (
    EQUAL,
    NON_ENGLISH,
    RULES,
    TOO_LONG,
    GraphReader,
    PairCheck,
    PairValidator,
    ProductivityValidator,
    english_rules,
    negation_count,
    text_reason,
)
from vlcomp.negatives.pairs import BOXES_SCHEMA
from vlcomp.negatives.productivity import ProductivitySettings
from vlcomp.negatives.productivity_text import atom_count
from vlcomp.splits.items import make_parser
from vlcomp.text import indefinite_article

SEED = 7
KEY_ENV = "VLCOMP_TEST_LLM_KEY"
SECRET = "sk-test-never-written-0123456789"
MODEL = "test-model"

# ----------------------------------------------------------------- canned answers

CAPTIONS: dict[str, dict[str, Any]] = {
    "A man riding a brown horse on a sandy beach.": {
        "obj": ["man", "horse", "beach"],
        "att": [("brown", "horse"), ("sandy", "beach")],
        "rel": [("riding", "man -> horse"), ("on", "man -> beach")],
        "swap_obj": ("man", "horse", "A brown horse riding a man on a sandy beach."),
        "swap_att": ("brown", "sandy", "A man riding a sandy horse on a brown beach."),
        "add_obj": "dog",
    },
    "A black cat sleeping on a red couch.": {
        "obj": ["cat", "couch"],
        "att": [("black", "cat"), ("red", "couch")],
        "rel": [("sleeping on", "cat -> couch")],
        "swap_obj": ("cat", "couch", "A red couch sleeping on a black cat."),
        "swap_att": ("black", "red", "A red cat sleeping on a black couch."),
        "add_obj": "lamp",
    },
    "A young woman holding a white umbrella next to a yellow taxi.": {
        "obj": ["woman", "umbrella", "taxi"],
        "att": [("young", "woman"), ("white", "umbrella"), ("yellow", "taxi")],
        "rel": [("holding", "woman -> umbrella"), ("next to", "woman -> taxi")],
        "swap_obj": (
            "woman",
            "taxi",
            "A yellow taxi holding a white umbrella next to a young woman.",
        ),
        "swap_att": (
            "white",
            "yellow",
            "A young woman holding a yellow umbrella next to a white taxi.",
        ),
        "add_obj": "dog",
    },
    "A small dog chasing a green ball in a park.": {
        "obj": ["dog", "ball", "park"],
        "att": [("small", "dog"), ("green", "ball")],
        "rel": [("chasing", "dog -> ball"), ("in", "dog -> park")],
        "swap_obj": ("dog", "ball", "A green ball chasing a small dog in a park."),
        "swap_att": ("small", "green", "A green dog chasing a small ball in a park."),
        "add_obj": "boy",
    },
    "A large red bus parked in front of a tall building.": {
        "obj": ["bus", "building"],
        "att": [("large", "bus"), ("red", "bus"), ("tall", "building")],
        "rel": [("parked in front of", "bus -> building")],
        "swap_obj": ("bus", "building", "A tall building parked in front of a large red bus."),
        "swap_att": ("large", "tall", "A tall red bus parked in front of a large building."),
        "add_obj": "tree",
    },
    "A white bowl of soup next to a blue cup.": {
        "obj": ["bowl", "soup", "cup"],
        "att": [("white", "bowl"), ("blue", "cup")],
        "rel": [("next to", "bowl -> cup")],
        "swap_obj": ("bowl", "cup", "A blue cup next to a white bowl of soup."),
        "swap_att": ("white", "blue", "A blue bowl of soup next to a white cup."),
        "add_obj": "spoon",
    },
}
NEW = {
    # objects
    "man": "woman",
    "horse": "camel",
    "beach": "field",
    "cat": "dog",
    "couch": "bed",
    "woman": "man",
    "umbrella": "purse",
    "taxi": "bus",
    "dog": "cat",
    "ball": "frisbee",
    "park": "yard",
    "bus": "truck",
    "building": "tree",
    "bowl": "plate",
    "soup": "rice",
    "cup": "glass",
    # attributes
    "brown": "white",
    "sandy": "rocky",
    "black": "gray",
    "red": "blue",
    "young": "elderly",
    "white": "black",
    "yellow": "green",
    "small": "large",
    "green": "orange",
    "large": "small",
    "tall": "short",
    "blue": "red",
    # relations
    "riding": "leading",
    "on": "along",
    "sleeping on": "sitting on",
    "holding": "closing",
    "next to": "behind",
    "chasing": "biting",
    "in": "near",
    "parked in front of": "parked behind",
}
ADD_ATT = {
    "man": "bald",
    "horse": "spotted",
    "beach": "wide",
    "cat": "fat",
    "couch": "old",
    "woman": "tall",
    "umbrella": "big",
    "taxi": "old",
    "dog": "wet",
    "ball": "round",
    "park": "empty",
    "bus": "new",
    "building": "old",
    "bowl": "large",
    "soup": "hot",
    "cup": "small",
}


def fix_articles(text: str) -> str:
    def repl(m: re.Match) -> str:
        return f"{indefinite_article(m.group(2), m.group(1))} {m.group(2)}"

    return re.sub(r"\b([Aa]n?) (\w+)", repl, text)


def fields_of(user: str) -> dict[str, str]:
    return dict(line.partition(": ")[::2] for line in user.split("\n"))


def step_of(body: dict) -> str:
    return body["response_format"]["json_schema"]["name"]


def user_of(body: dict) -> str:
    return body["messages"][-1]["content"]


def sugarcrepe_answer(body: dict) -> str:
    """What a careful model answers for the six captions (see the module docstring)."""
    step, system = step_of(body), body["messages"][0]["content"]
    f = fields_of(user_of(body))
    caption = f["Caption"]
    data = CAPTIONS[caption]
    if step == "locate":
        if "Kind: OBJECTS" in system:
            concepts = [{"concept": o, "context": ""} for o in data["obj"]]
        elif "Kind: ATTRIBUTES" in system:
            concepts = [{"concept": a, "context": o} for a, o in data["att"]]
        else:
            concepts = [{"concept": r, "context": c} for r, c in data["rel"]]
        return json.dumps({"concepts": concepts})
    if step == "swap":
        a, b, text = data["swap_obj"] if "Swap two OBJECTS" in system else data["swap_att"]
        return json.dumps({"possible": True, "first": a, "second": b, "caption": text})
    if step == "propose":
        if "Objects already in the caption" in f:
            return json.dumps({"new": data["add_obj"]})
        if "Object to describe" in f:
            return json.dumps({"new": ADD_ATT[f["Object to describe"]]})
        concept = next(v for k, v in f.items() if k.endswith("to replace")).split(" (")[0]
        return json.dumps({"new": NEW[concept]})
    assert step == "compose", step
    if "Object to add" in f:
        new = f["Object to add"]
        return json.dumps(
            {"caption": caption.rstrip(".") + f" next to {indefinite_article(new)} {new}."}
        )
    if "Attribute to add" in f:
        obj, new = f["To the object"], f["Attribute to add"]  # right after the article
        noun_phrase = rf"\b([Aa]n?|[Tt]he) ((?:(?!(?:[Aa]n?|[Tt]he|of)\b)\w+ )*){obj}\b"
        text, found = re.subn(noun_phrase, rf"\1 {new} \2{obj}", caption, count=1)
        if not found:  # no article of its own ("a bowl of soup")
            text = re.sub(rf"\b{obj}\b", f"{new} {obj}", caption, count=1)
        return json.dumps({"caption": fix_articles(text)})
    old = next(v for k, v in f.items() if k.startswith("Replace the")).split(" (")[0]
    text = re.sub(rf"\b{re.escape(old)}\b", f["With"], caption, count=1)
    return json.dumps({"caption": fix_articles(text)})


def parse_atoms(text: str) -> tuple[dict[str, list[str]], list[tuple[str, str, str]]]:
    objects: dict[str, list[str]] = {}
    relations: list[tuple[str, str, str]] = []
    section = None
    for line in text.split("\n"):
        if line in ("Objects:", "Relations:"):
            section = line
            continue
        item = line[2:]
        if section == "Objects:":
            label, _, attrs = item.partition(": ")
            objects[label] = [a for a in attrs.split(", ") if a]
        elif item != "none":
            labels = sorted(objects, key=len, reverse=True)
            s = next(lab for lab in labels if item.startswith(lab + " "))
            o = next(lab for lab in labels if item.endswith(" " + lab))
            relations.append((s, item[len(s) + 1 : len(item) - len(o) - 1], o))
    return objects, relations


def fluent_caption(atoms: str, skip_attribute: bool = False) -> str:
    """The productivity 'model': one clause per relation, later clauses with 'is', objects
    first mentioned with their attributes ("that is not <value>" for a negated one)."""
    objects, relations = parse_atoms(atoms)
    mentioned: set[str] = set()

    def ref(label: str) -> str:
        name = re.sub(r"_\d+$", "", label)
        if label in mentioned:
            return f"the {name}"
        mentioned.add(label)
        plain = [a for a in objects[label] if not a.startswith("not ")]
        if skip_attribute and plain:
            plain = plain[1:]
        negated = [a[4:] for a in objects[label] if a.startswith("not ")]
        words = " ".join([*plain, name])
        phrase = f"{indefinite_article(words)} {words}"
        return phrase + (" that is not " + " and not ".join(negated) if negated else "")

    clauses = []
    for k, (s, p, o) in enumerate(relations):
        negated = p.startswith("not ")
        verb = ("is " if k else "") + ("not " if negated else "")
        clauses.append(f"{ref(s)} {verb}{p[4:] if negated else p} {ref(o)}")
    clauses.extend(f"there is {ref(label)}" for label in objects if label not in mentioned)
    text = ", and ".join(clauses)
    return text[0].upper() + text[1:] + "."


def productivity_answer(body: dict) -> str:
    return json.dumps({"caption": fluent_caption(user_of(body))})


# ----------------------------------------------------------------- fixtures / helpers


def eval_items() -> pl.DataFrame:
    parser = make_parser({})
    rows = []
    for i, (text, graph) in enumerate(zip(CAPTIONS, parser.parse(list(CAPTIONS)), strict=True)):
        rows.append(
            {
                "item_id": f"coco/{i}",
                "source": "coco",
                "image_id": f"{100 + i}",
                "region_id": None,
                "text": text,
                "x": None if i % 2 else 10,
                "y": None if i % 2 else 20,
                "width": None if i % 2 else 300,
                "height": None if i % 2 else 200,
                **graph.row(),
            }
        )
    return pl.DataFrame(rows, schema=EVAL_ITEMS_SCHEMA)


@pytest.fixture(scope="module")
def reader() -> GraphReader:
    return GraphReader(make_parser({}))


@pytest.fixture
def server(llm_server, monkeypatch):  # noqa: F811 - the imported fixture
    monkeypatch.setenv(KEY_ENV, SECRET)
    llm_server.answer = sugarcrepe_answer
    return llm_server


def llm_settings(server, **extra: Any) -> dict[str, Any]:
    return {
        "base_url": server.base_url,
        "model": MODEL,
        "api_key_env": KEY_ENV,
        "timeout_s": 5,
        "max_retries": 1,
        "backoff_base_s": 0.01,
        "max_chars": 120,
        "prices": {MODEL: {"input": 1.0, "output": 2.0}},
        **extra,
    }


def run_pairs(
    tmp: Path, server, cache: str = "cache", job: dict | None = None, **extra: Any
) -> dict[str, Path]:
    tmp.mkdir(parents=True, exist_ok=True)
    items = tmp / "items.parquet"
    if not items.exists():
        eval_items().write_parquet(items)
    out = {k: tmp / f"{k}.parquet" for k in ("candidates", "boxes", "rejections")}
    out["stats"] = tmp / "stats.json"
    llm_pairs_job(
        str(items),
        llm_settings(server, **extra),
        SEED,
        "sugarcrepe_llm",
        str(tmp / cache),
        str(out["candidates"]),
        str(out["boxes"]),
        str(out["rejections"]),
        str(out["stats"]),
        log=lambda _: None,
        **(job or {}),
    )
    return out


def with_faults(fault: Callable[[dict], str | None]) -> Callable[[dict], str]:
    """The canned answer, unless ``fault`` returns another for this request."""

    def answer(body: dict) -> str:
        bad = fault(body)
        return bad if bad is not None else sugarcrepe_answer(body)

    return answer


def rejections(path: Path) -> dict[tuple[str, str | None, str | None], int]:
    return {
        (r["reason"], r["family"], r["target"]): r["count"]
        for r in pl.read_parquet(path).iter_rows(named=True)
    }


def negatives(path: Path) -> dict[str, dict[str, Any]]:
    frame = pl.read_parquet(path).filter(~pl.col("is_positive"))
    return {r["item_id"]: r for r in frame.iter_rows(named=True)}


def digest(paths: list[Path]) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in paths}


# ----------------------------------------------------------------- prompt files


def test_prompt_files_load_with_versions_and_demonstrations() -> None:
    sc = pr.load_sugarcrepe()
    assert set(sc.file_versions) == set(pr.SUGARCREPE_STEPS)
    assert all(v for v in sc.file_versions.values())
    for step, tasks in pr.SUGARCREPE_STEPS.items():
        for task in tasks:
            template = sc.template(step, task)
            assert len(template.demonstrations) >= pr.MIN_DEMONSTRATIONS, (step, task)
            assert template.schema["additionalProperties"] is False
            messages = template.messages({**template.demonstrations[0].fields})
            assert messages[0]["role"] == "system" and "JSON" in messages[0]["content"]
            # system, (user, assistant) per demonstration, the real user message
            assert len(messages) == 2 + 2 * len(template.demonstrations)
            assert all(json.loads(m["content"]) for m in messages[2:-1:2])
    for version in sc.file_versions.values():
        assert version in sc.version
    prod = pr.load_productivity()
    assert sorted(prod.demonstrations) == list(pr.PRODUCTIVITY_COMPLEXITIES)
    for n, demos in prod.demonstrations.items():
        assert len(demos) == pr.PRODUCTIVITY_DEMONSTRATIONS
        assert all(atom_count(d.pattern) == n for d in demos), n
    assert prod.version.startswith("productivity:productivity-")
    # repeated names carry numeric suffixes, negated atoms read "not"
    texts = [pr.atoms_text(d.pattern) for ds in prod.demonstrations.values() for d in ds]
    assert any("dog_1" in t and "dog_2" in t for t in texts)
    assert any(": not " in t for t in texts) and any(" not " in t.split(": ")[-1] for t in texts)
    assert prod.complexity_for(4) == 5 and prod.complexity_for(20) == 12


def test_prompt_version_changes_with_any_edit(tmp_path: Path) -> None:
    base = pr.load_sugarcrepe().version
    copy = tmp_path / "prompts"
    shutil.copytree(pr.PROMPTS_DIR, copy)
    assert pr.load_sugarcrepe(copy).version == base  # same bytes, same version
    compose = copy / "sugarcrepe" / "compose.yaml"
    compose.write_text(compose.read_text().replace("camel", "llama", 1))
    edited = pr.load_sugarcrepe(copy).version
    assert edited != base and edited.split(":")[1] == base.split(":")[1]  # content hash
    swap = copy / "sugarcrepe" / "swap.yaml"
    swap.write_text(swap.read_text().replace("version: swap-1", "version: swap-2"))
    assert "swap-2" in pr.load_sugarcrepe(copy).version
    prod = copy / "productivity.yaml"
    before = pr.load_productivity(copy).version
    prod.write_text(prod.read_text().replace("skateboard.", "skateboard!", 1))
    assert pr.load_productivity(copy).version != before
    # an incomplete file is refused, naming it
    locate = copy / "sugarcrepe" / "locate.yaml"
    locate.write_text(locate.read_text().split("demonstrations:")[0])
    with pytest.raises(pr.PromptError, match="locate.yaml"):
        pr.load_sugarcrepe(copy)


def test_demonstrations_pass_our_own_validation(reader: GraphReader) -> None:
    """What the prompts teach is what the validator accepts."""
    sc = pr.load_sugarcrepe()
    checks = []
    for (step, task), template in sc.templates.items():
        if step not in ("compose", "swap"):
            continue
        family, target = task.split("_")
        for demo in template.demonstrations:
            if step == "swap" and not demo.answer["possible"]:
                continue
            checks.append(PairCheck(demo.fields["caption"], demo.answer["caption"], family, target))
    assert len(checks) >= 5 * 7 + 2 * 6
    reasons = PairValidator(reader, 300).check(checks)
    assert [(c, r) for c, r in zip(checks, reasons, strict=True) if r] == []
    prod = pr.load_productivity()
    demos = [d for ds in prod.demonstrations.values() for d in ds]
    validator = ProductivityValidator(reader, 300)
    reasons, refs = validator.check([d.caption for d in demos], [d.pattern for d in demos])
    assert [(d.caption, r) for d, r in zip(demos, reasons, strict=True) if r] == []
    assert sum(r.unchecked for r in refs) == 0


# ----------------------------------------------------------------- validation rules


def test_text_checks() -> None:
    rules = english_rules()
    pos = "A black cat sleeping on a red couch."
    assert text_reason("", 100, rules, pos) == "text: empty"
    assert text_reason(None, 100, rules, pos) == "text: empty"
    assert text_reason("  a BLACK cat   sleeping on a red couch. ", 100, rules, pos) == EQUAL
    apostrophe = "A cat\u2019s toy on a red couch."
    assert text_reason(apostrophe, 100, rules, "a cat's toy on a red couch.") == EQUAL
    assert text_reason("Un chat noir qui dort sur le canapé rouge.", 100, rules, pos) == (
        NON_ENGLISH
    )
    assert text_reason("Ein schwarzer Hund schläft auf dem roten Sofa.", 100, rules) == (
        NON_ENGLISH
    )
    assert text_reason("黑猫睡在红色沙发上", 100, rules, pos) == NON_ENGLISH
    assert text_reason("A red cat sleeping on a black couch.", 20, rules, pos) == TOO_LONG
    assert text_reason("A red cat sleeping on a black couch.", 100, rules, pos) is None


def test_negation_words_are_the_text_layer_words() -> None:
    assert negation_count("The dog isn\u2019t on the bed and there is no cat.") == 2
    assert negation_count("The dog isn't on the bed") == 1
    assert negation_count("A non-slip mat, a no-entry sign") == 0  # hyphenated: one word


RULE_CASES = [
    # (family, target, positive, negative, expected reason or None)
    ("replace", "obj", "A black cat sleeping on a red couch.",
     "A black dog sleeping on a red couch.", None),
    ("replace", "obj", "A black cat sleeping on a red couch.",
     "A white dog sleeping on a red couch.", "graph: attributes: changed"),
    ("replace", "obj", "A black cat sleeping on a red couch.",
     "A black dog sleeping on a red bed.", "graph: objects: more than one replaced"),
    ("replace", "att", "A black cat sleeping on a red couch.",
     "A gray cat sleeping on a red couch.", None),
    ("replace", "att", "A black cat sleeping on a red couch.",
     "A gray dog sleeping on a red couch.", "graph: objects: changed"),
    ("replace", "att", "A black cat sleeping on a red couch.",
     "A gray cat sleeping on a blue couch.", "graph: attributes: more than one replaced"),
    ("replace", "att", "A black cat sleeping on a red couch.",
     "A black cat sitting on a red couch.", "graph: attributes: none replaced"),
    ("replace", "rel", "A man riding a brown horse on a sandy beach.",
     "A man leading a brown horse on a sandy beach.", None),
    ("replace", "rel", "A man riding a brown horse on a sandy beach.",
     "A man leading a white horse on a sandy beach.", "graph: attributes: changed"),
    ("swap", "obj", "A black cat sleeping on a red couch.",
     "A red couch sleeping on a black cat.", None),
    ("swap", "obj", "A white bowl of soup next to a blue cup.",
     "A blue cup next to a white bowl of soup.", None),
    ("swap", "obj", "A black cat sleeping on a red couch.",
     "A black couch sleeping on a red cat.", "graph: attributes: changed"),
    ("swap", "att", "A black cat sleeping on a red couch.",
     "A red cat sleeping on a black couch.", None),
    ("swap", "att", "A black cat sleeping on a red couch.",
     "A red cat sleeping on a blue couch.", "graph: attributes: values changed"),
    ("swap", "att", "A black cat sleeping on a red couch.",
     "A red couch sleeping on a black cat.", "graph: attributes: none swapped"),
    ("swap", "att", "A black cat sleeping on a red couch.",
     "A red cat lying on a black couch.", "graph: relations: changed"),
    ("add", "obj", "A small dog chasing a green ball in a park.",
     "A small dog chasing a green ball in a park next to a boy.", None),
    ("add", "obj", "A small dog chasing a green ball in a park.",
     "A small dog chasing a green ball in a park next to a tall boy.",
     "graph: attributes: changed"),
    ("add", "obj", "A small dog chasing a green ball in a park.",
     "A small cat chasing a green ball in a park next to a boy.", "graph: objects: removed"),
    ("add", "att", "A small dog chasing a green ball in a park.",
     "A small wet dog chasing a green ball in a park.", None),
    ("add", "att", "A small dog chasing a green ball in a park.",
     "A small wet dog chasing a green ball in a big park.",
     "graph: attributes: more than one added"),
    ("add", "att", "A small dog chasing a green ball in a park.",
     "A small wet dog biting a green ball in a park.", "graph: relations: changed"),
]  # fmt: skip


@pytest.mark.parametrize("family,target,positive,negative,expected", RULE_CASES)
def test_graph_rules(reader, family, target, positive, negative, expected) -> None:
    (reason,) = PairValidator(reader, 300).check([PairCheck(positive, negative, family, target)])
    assert reason == expected


def test_every_family_target_has_a_rule_with_cases() -> None:
    assert set(RULES) == set(FAMILY_TARGETS)
    accepted = {(f, t) for f, t, *_, expected in RULE_CASES if expected is None}
    rejected = {(f, t) for f, t, *_, expected in RULE_CASES if expected is not None}
    assert accepted == rejected == set(FAMILY_TARGETS)


def test_productivity_caption_missing_or_adding_an_atom_is_rejected(reader) -> None:
    pattern = pr.pattern_from_atoms(
        {"man": ["young"], "horse": ["brown"], "beach": []},
        [["man", "riding", "horse"], ["horse", "on", "beach"]],
    )
    validator = ProductivityValidator(reader, 300)
    captions = [
        "A young man riding a brown horse, and the horse is on a beach.",
        "A man riding a brown horse, and the horse is on a beach.",  # attribute missing
        "A young man riding a brown horse.",  # object and relation missing
        "A young man riding a brown horse, and the horse is on a sandy beach.",  # added
        "A young man riding a brown horse, and the horse is near a beach.",  # wrong relation
        "A young man riding a brown horse, and the horse is not on a beach.",  # negation
        "Un jeune homme sur un cheval brun, et le cheval est sur la plage.",
    ]
    reasons, _ = validator.check(captions, [pattern] * len(captions))
    assert reasons == [
        None,
        "productivity: omits attribute",
        "productivity: omits object",
        "productivity: adds attribute",
        "productivity: omits relation",
        "productivity: adds negation",
        NON_ENGLISH,
    ]


# ----------------------------------------------------------------- SugarCrepe job


def test_every_family_target_produces_valid_negatives(tmp_path, server, reader) -> None:
    out = run_pairs(tmp_path, server)
    cand = pl.read_parquet(out["candidates"])
    assert cand.schema == pl.Schema(CANDIDATES_SCHEMA)
    negs = negatives(out["candidates"])
    # every caption gets all seven negatives, and nothing was rejected
    assert len(negs) == len(CAPTIONS) * len(FAMILY_TARGETS)
    assert rejections(out["rejections"]) == {}
    for family, target in FAMILY_TARGETS:
        assert sum(1 for r in negs.values() if (r["family"], r["target"]) == (family, target)) == (
            len(CAPTIONS)
        )
    # each pair item: the eval item's caption as positive, one negative, all re-validated
    pairs = cand.group_by("item_id").agg(pl.col("is_positive").sum(), pl.len())
    assert pairs["is_positive"].to_list() == [1] * pairs.height
    assert pairs["len"].to_list() == [2] * pairs.height
    positives = {
        r["item_id"]: r["text"] for r in cand.filter(pl.col("is_positive")).iter_rows(named=True)
    }
    checks = [PairCheck(positives[i], r["text"], r["family"], r["target"]) for i, r in negs.items()]
    assert PairValidator(reader, 120).check(checks) == [None] * len(checks)
    # provenance: prompt version, seed, the cache key of every step, the change
    version = pr.load_sugarcrepe().version
    assert set(cand["generator"]) == {f"llm:{MODEL}"}
    for r in negs.values():
        prov = json.loads(r["provenance"])
        assert prov["prompt_version"] == version and prov["seed"] == SEED
        steps = {"swap"} if r["family"] == "swap" else {"locate", "propose", "compose"}
        assert set(prov["steps"]) == steps and all(len(k) == 64 for k in prov["steps"].values())
    att = negs["coco/1/replace_att"]
    assert (
        json.loads(att["provenance"])["change"]["new"]
        == NEW[json.loads(att["provenance"])["change"]["concept"]]
    )
    # boxes: one per pair item, the eval item's box (null = whole image)
    boxes = pl.read_parquet(out["boxes"])
    assert boxes.schema == pl.Schema(BOXES_SCHEMA)
    assert sorted(boxes["item_id"]) == sorted(negs)
    row0 = boxes.filter(pl.col("item_id") == "coco/0/swap_att").row(0, named=True)
    assert (row0["x"], row0["width"], row0["eval_item_id"]) == (10, 300, "coco/0")
    assert boxes.filter(pl.col("eval_item_id") == "coco/1")["x"].is_null().all()
    # the requests: one locate per (item, kind), per-step temperatures, strict schemas
    bodies = server.chat_bodies()
    by_step: dict[str, list[dict]] = {}
    for b in bodies:
        by_step.setdefault(step_of(b), []).append(b)
    assert len(by_step["locate"]) == len(CAPTIONS) * 3
    assert {b["temperature"] for b in by_step["propose"]} == {1.5}
    assert {b["temperature"] for s in ("locate", "compose", "swap") for b in by_step[s]} == {0}
    assert all(b["response_format"]["json_schema"]["strict"] for b in bodies)
    assert {b["seed"] for b in bodies} == {SEED}


def test_two_concept_answer_is_rejected_and_retried_with_a_new_seed(tmp_path, server) -> None:
    target_caption = "A black cat sleeping on a red couch."

    def fault(body: dict) -> str | None:
        f = fields_of(user_of(body))
        if (
            step_of(body) == "compose"
            and f.get("Caption") == target_caption
            and "Replace the attribute" in f
            and body["seed"] == SEED
        ):  # the attribute AND the object changed
            return json.dumps({"caption": "A gray dog sleeping on a red couch."})
        return None

    server.answer = with_faults(fault)
    out = run_pairs(tmp_path, server)
    assert rejections(out["rejections"]) == {("graph: objects: changed", "replace", "att"): 1}
    neg = negatives(out["candidates"])["coco/1/replace_att"]
    prov = json.loads(neg["provenance"])
    assert (prov["attempt"], prov["seed"]) == (1, SEED + 1)
    assert neg["text"] in {
        "A gray cat sleeping on a red couch.",
        "A black cat sleeping on a blue couch.",
    }
    retried = [
        b
        for b in server.chat_bodies()
        if step_of(b) == "compose"
        and fields_of(user_of(b)).get("Caption") == target_caption
        and "Replace the attribute" in user_of(b)
    ]
    assert sorted(b["seed"] for b in retried) == [SEED, SEED + 1]
    assert len(negatives(out["candidates"])) == len(CAPTIONS) * len(FAMILY_TARGETS)


def test_non_english_equal_too_long_and_persistent_failures(tmp_path, server) -> None:
    captions = list(CAPTIONS)

    def fault(body: dict) -> str | None:
        f, step = fields_of(user_of(body)), step_of(body)
        caption = f.get("Caption")
        first = body["seed"] == SEED
        if (
            step == "swap"
            and caption == captions[0]
            and "Swap two ATTRIBUTES" in (body["messages"][0]["content"])
        ):
            text = "Un homme sur un cheval sableux et la plage brune." if first else None
            return (
                None
                if text is None
                else json.dumps(
                    {"possible": True, "first": "brown", "second": "sandy", "caption": text}
                )
            )
        if step == "compose" and caption == captions[2] and "Replace the object" in f and first:
            return json.dumps({"caption": caption.upper()})  # the positive again
        if step == "compose" and caption == captions[3] and "Attribute to add" in f and first:
            return json.dumps({"caption": "A small wet dog " + "very " * 40 + "happily."})
        if step == "propose" and caption == captions[4] and "Object to describe" in f:
            return json.dumps({"new": ""})  # every attempt: the item is dropped
        return None

    server.answer = with_faults(fault)
    out = run_pairs(tmp_path, server)
    assert rejections(out["rejections"]) == {
        ("text: non-English", "swap", "att"): 1,
        ("text: equal to the positive", "replace", "obj"): 1,
        ("text: too long", "add", "att"): 1,
        ("propose: empty", "add", "att"): 3,
        ("dropped: max attempts", "add", "att"): 1,
    }
    negs = negatives(out["candidates"])
    assert "coco/4/add_att" not in negs
    assert len(negs) == len(CAPTIONS) * len(FAMILY_TARGETS) - 1
    for pair in ("coco/0/swap_att", "coco/2/replace_obj", "coco/3/add_att"):
        assert json.loads(negs[pair]["provenance"])["attempt"] == 1


def test_negatives_beyond_the_context_are_rejected_and_asked_again(tmp_path, server) -> None:
    """With a context of 6 tokens a negative that changes only what comes after
    "<start> A man riding a" is rejected like a failed check and asked for again: the next
    attempt (seed + 1) may change something the tower reads, else the pair is dropped. Pairs
    whose negative was read are kept as they were."""
    from vlcomp.negatives.context import ContextCheck, identical_negatives

    free = pl.read_parquet(run_pairs(tmp_path / "free", server)["candidates"])
    check = ContextCheck(6)
    unread = set(identical_negatives(free, check)["item_id"])
    assert 0 < len(unread) < free.height // 4  # the test is not vacuous either way
    out = run_pairs(tmp_path / "checked", server, job={"context_length": 6})
    kept = pl.read_parquet(out["candidates"])
    assert identical_negatives(kept, check).height == 0
    read = ~pl.col("item_id").is_in(sorted(unread))
    assert kept.filter(read).equals(free.filter(read))
    again = negatives(out["candidates"])
    retried = {i for i in unread if i in again}
    assert all(json.loads(again[i]["provenance"])["attempt"] >= 1 for i in retried)
    dropped = unread - retried
    assert retried and dropped  # both outcomes happen with these captions
    counts = rejections(out["rejections"])
    reason = "context: identical within 6 tokens"
    assert set(counts) <= {(r, f, t) for r in (reason, "dropped: max attempts")
                           for f, t in FAMILY_TARGETS}  # fmt: skip
    assert sum(n for (r, _, _), n in counts.items() if r == reason) >= len(unread)
    assert sum(n for (r, _, _), n in counts.items() if r != reason) == len(dropped)


def test_rerun_makes_zero_calls_and_writes_identical_bytes(tmp_path, server) -> None:
    first = run_pairs(tmp_path, server)
    files = [first["candidates"], first["boxes"], first["rejections"]]
    before = digest(files)
    stats = json.loads(first["stats"].read_text())
    assert stats["calls"] == server.chat_calls > 0 and stats["cache_hits"] == 0
    assert stats["model"] == MODEL and stats["prompt_version"] == pr.load_sugarcrepe().version
    assert stats["cost_usd"] > 0 and stats["prompt_tokens"] > 0
    # the key went to the server (from the environment variable) ...
    assert all(SECRET in str(r["headers"]) for r in server.requests)
    server.reset_records()
    second = run_pairs(tmp_path, server)
    assert server.chat_calls == 0
    assert digest(files) == before
    stats = json.loads(second["stats"].read_text())
    assert stats["calls"] == 0 and stats["cache_hits"] > 0
    # ... and into no file written: outputs, stats, cache
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path


def test_budget_exhaustion_writes_nothing_and_the_rerun_continues(tmp_path, server) -> None:
    full = run_pairs(tmp_path / "full", server)
    total = json.loads(full["stats"].read_text())["calls"]
    server.reset_records()
    budgeted = tmp_path / "budgeted"
    budgeted.mkdir()
    with pytest.raises(BudgetExhausted, match="budget"):
        run_pairs(budgeted, server, budget={"max_calls": 10})
    assert server.chat_calls == 10
    assert sorted(p.name for p in budgeted.iterdir()) == ["cache", "items.parquet"]
    server.reset_records()
    out = run_pairs(budgeted, server)
    assert server.chat_calls == total - 10  # no call made twice
    assert (
        digest([out["candidates"]])["candidates.parquet"]
        == (digest([full["candidates"]])["candidates.parquet"])
    )


def test_max_items_sends_a_seeded_sample(tmp_path, server) -> None:
    first = run_pairs(tmp_path / "a", server, job={"max_items": 2})
    stats = json.loads(first["stats"].read_text())
    assert stats["eval_items"] == 2 and stats["eval_items_available"] == len(CAPTIONS)
    assert stats["attempted"] == 2 * len(FAMILY_TARGETS) and 0 < stats["yield"] <= 1
    items = pl.read_parquet(first["candidates"])["item_id"].str.split("/").list.first()
    assert items.n_unique() <= 2
    second = run_pairs(tmp_path / "b", server, job={"max_items": 2})
    assert first["candidates"].read_bytes() == second["candidates"].read_bytes()
    assert stats["spend"]["spent"]["calls"] == stats["calls"] > 0


def nothing_found(body: dict) -> str:
    """A well-formed answer of each step that finds nothing (the swap step says the swap is
    not possible): below min_yield, not a malformed answer."""
    if step_of(body) == "swap":
        return json.dumps({"possible": False, "first": "", "second": "", "caption": ""})
    return '{"concepts": []}'


def test_a_yield_below_min_yield_fails_with_the_rejections_and_writes_nothing(
    tmp_path, server
) -> None:
    server.answer = with_faults(nothing_found)  # well-formed answers, nothing ever usable
    with pytest.raises(LowYield, match=r"0 of \d+ kept .*min_yield=0.1.*top rejections"):
        run_pairs(tmp_path, server)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cache", "items.parquet"]


def test_dry_run_sends_nothing_and_writes_nothing(tmp_path, server) -> None:
    with pytest.raises(DryRun, match="nothing was sent"):
        run_pairs(tmp_path, server, dry_run=True)
    assert server.chat_calls == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cache", "items.parquet"]


# ----------------------------------------------------------------- productivity


def write_vg(folder: Path) -> Path:
    def obj(oid: int, name: str, attrs: list[str], box: tuple[int, int, int, int]) -> dict:
        x, y, w, h = box
        return {"object_id": oid, "names": [name], "attributes": attrs, "x": x, "y": y,
                "w": w, "h": h}  # fmt: skip

    def rel(rid: int, s: int, p: str, o: int) -> dict:
        return {"relationship_id": rid, "subject_id": s, "predicate": p, "object_id": o}

    graphs = [
        {
            "image_id": 1,
            "objects": [
                obj(11, "man", ["young"], (100, 50, 200, 400)),
                obj(12, "horse", ["brown"], (150, 200, 400, 350)),
                obj(13, "beach", ["sandy"], (0, 400, 800, 200)),
                obj(14, "hat", ["red"], (150, 40, 80, 50)),
                obj(15, "dog", ["black"], (600, 450, 150, 120)),
            ],
            "relationships": [
                rel(101, 11, "riding", 12),
                rel(102, 11, "wearing", 14),
                rel(103, 12, "on", 13),
                rel(104, 15, "next to", 12),
            ],
        },
        {
            "image_id": 2,
            "objects": [
                obj(21, "cat", ["white"], (50, 100, 200, 150)),
                obj(22, "couch", ["green"], (0, 150, 640, 300)),
                obj(23, "pillow", ["blue"], (300, 120, 150, 100)),
                obj(24, "lamp", ["tall"], (500, 0, 100, 300)),
            ],
            "relationships": [
                rel(201, 21, "sleeping on", 22),
                rel(202, 23, "on", 22),
                rel(203, 24, "next to", 22),
            ],
        },
    ]
    sizes = [{"image_id": 1, "width": 800, "height": 600}, {"image_id": 2, "width": 640,
             "height": 480}]  # fmt: skip
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "scene_graphs.json").write_text(json.dumps(graphs))
    (folder / "image_data.json").write_text(json.dumps(sizes))
    return folder


PRODUCTIVITY = {
    "complexities": [4, 5, 6],
    "walks_per_image": 3,
    "negatives_per_type": 2,
    "min_area": 0,
    "min_area_fraction": 0.0,
    "min_aspect": 0.01,
    "max_aspect": 100.0,
    "dedupe_overlap": 1.0,
}


@pytest.fixture
def template(tmp_path: Path) -> dict[str, Path]:
    vg = write_vg(tmp_path / "vg")
    out = {k: tmp_path / "template" / f"{k}.parquet" for k in ("cand", "items", "fail", "sum")}
    productivity_job(
        str(vg), PRODUCTIVITY, 3, "crepe_productivity", *map(str, out.values()), log=lambda _: None
    )
    return {"vg": vg, **out}


def run_productivity(tmp: Path, server, template: dict[str, Path], **extra: Any) -> dict:
    out = {k: tmp / "llm" / f"{k}.parquet" for k in ("cand", "items", "rej", "sum")}
    out["stats"] = tmp / "llm" / "stats.json"
    llm_productivity_job(
        str(template["vg"]),
        PRODUCTIVITY,
        llm_settings(server, max_chars=300, **extra),
        3,
        str(tmp / "pcache"),
        str(template["cand"]),
        str(template["items"]),
        str(out["cand"]),
        str(out["items"]),
        str(out["rej"]),
        str(out["stats"]),
        log=lambda _: None,
        template_summary=str(template["sum"]),
        summary_out=str(out["sum"]),
    )
    return out


def positive_atoms(template: dict[str, Path]) -> str:
    """The atom list of the first n >= 5 positive with an attribute."""
    s = ProductivitySettings.from_mapping(PRODUCTIVITY)
    _, positives = recover_patterns(pl.read_parquet(template["cand"]), template["vg"], s, 3, 5)
    unit = next(u for u in positives.values() if any(n.attributes for n in u.pattern.nodes))
    return pr.atoms_text(unit.pattern)


def test_productivity_captions_replace_templates_from_n5(tmp_path, server, template, reader):
    target = positive_atoms(template)

    def answer(body: dict) -> str:  # one positive, first seed: an attribute left out
        if user_of(body) == target and body["seed"] == 3:
            return json.dumps({"caption": fluent_caption(target, skip_attribute=True)})
        return productivity_answer(body)

    server.answer = answer
    out = run_productivity(tmp_path, server, template)
    old = pl.read_parquet(template["cand"])
    new = pl.read_parquet(out["cand"])
    n_of = pl.col("provenance").str.json_path_match("$.complexity").cast(pl.Int64)
    # n = 4: the template rows, unchanged; n >= 5: every text written by the model
    assert new.filter(n_of < 5).equals(old.filter(n_of < 5))
    rewritten = new.filter(n_of >= 5)
    assert rewritten.height > 20 and set(rewritten["generator"]) == {f"llm:{MODEL}"}
    assert rewritten["text"].str.ends_with(".").all()
    assert set(rewritten["item_id"]) == set(old.filter(n_of >= 5)["item_id"])
    # the missing attribute was rejected, then fixed with the next seed
    rej = pl.read_parquet(out["rej"])
    assert rej.select("reason", "family", "count").rows() == [
        ("productivity: omits attribute", "positive", 1)
    ]
    retried = [json.loads(p)["llm"] for p in rewritten["provenance"]]
    assert {(r["attempt"], r["seed"]) for r in retried} == {(0, 3), (1, 4)}
    assert all(r["prompt_version"] == pr.load_productivity().version for r in retried)
    # every rewritten text states exactly its pattern (positives and negatives alike)
    s = ProductivitySettings.from_mapping(PRODUCTIVITY)
    rows, _ = recover_patterns(old, template["vg"], s, 3, 5)
    text_of = {
        (r["item_id"], json.loads(r["provenance"])["llm"]["template"]): r["text"]
        for r in rewritten.iter_rows(named=True)
    }
    texts = [text_of[(r.row["item_id"], r.row["text"])] for r in rows]
    reasons, _ = ProductivityValidator(reader, 300).check(texts, [r.unit.pattern for r in rows])
    assert reasons == [None] * len(rows)
    negated = [
        t
        for r, t in zip(rows, texts, strict=True)
        if r.row["family"] == "neg" and not r.row["is_positive"]
    ]
    assert negated and all(" not " in t for t in negated)
    # items and summary follow the kept items
    assert pl.read_parquet(out["items"]).equals(pl.read_parquet(template["items"]))
    summary = pl.read_parquet(out["sum"])
    assert summary.equals(pl.read_parquet(template["sum"]))  # nothing dropped here
    stats = json.loads(out["stats"].read_text())
    assert stats["unchecked_atoms"] == 0 and stats["dropped_items"] == 0
    # a rerun: zero calls, the same bytes
    files = [out["cand"], out["items"], out["rej"], out["sum"]]
    before = digest(files)
    server.reset_records()
    run_productivity(tmp_path, server, template)
    assert server.chat_calls == 0 and digest(files) == before


def test_productivity_drops_items_whose_positive_never_validates(tmp_path, server, template):
    target = positive_atoms(template)

    def answer(body: dict) -> str:
        if user_of(body) == target:
            return json.dumps({"caption": "A man."})  # omits atoms on every attempt
        return productivity_answer(body)

    server.answer = answer
    out = run_productivity(tmp_path, server, template)
    rej = pl.read_parquet(out["rej"])
    reasons = set(rej["reason"])
    assert {"productivity: omits object", "dropped: max attempts", "item: positive dropped"} <= (
        reasons
    )
    dropped = rej.filter(pl.col("reason") == "item: positive dropped")["count"].sum()
    kept = pl.read_parquet(out["items"])
    assert kept.height == pl.read_parquet(template["items"]).height - dropped
    cand = pl.read_parquet(out["cand"])
    assert set(cand["item_id"]) == set(kept["item_id"])
    assert not cand["text"].str.contains("^A man\\.$").any()
    assert json.loads(out["stats"].read_text())["dropped_items"] == dropped


def test_productivity_refuses_template_outputs_of_other_inputs(tmp_path, server, template):
    server.answer = productivity_answer
    other = dict(template)
    cand = pl.read_parquet(template["cand"])
    bad = cand.with_columns(
        pl.when(~pl.col("is_positive") & (pl.col("family") == "atom"))
        .then(pl.lit("a purple elephant"))
        .otherwise(pl.col("text"))
        .alias("text")
    )
    other["cand"] = tmp_path / "bad.parquet"
    bad.write_parquet(other["cand"])
    with pytest.raises(ValueError, match="no single edit"):
        run_productivity(tmp_path, server, other)
    assert server.chat_calls == 0


def test_productivity_dry_run_sends_nothing(tmp_path, server, template) -> None:
    server.answer = productivity_answer
    with pytest.raises(DryRun, match="calls to make"):
        run_productivity(tmp_path, server, template, dry_run=True)
    assert server.chat_calls == 0 and not (tmp_path / "llm").exists()
