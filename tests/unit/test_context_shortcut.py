"""The exact shortcuts around open_clip's SimpleTokenizer (vlcomp.negatives.context): the
pieces and byte-pair merges reproduced without torch, the pairs and candidate sets the text
alone decides, and the evaluation flags (``evaluate.jobs.flag_tokens``), which must be the
flags the tokenizer's ids give, on generated and adversarial sets and on the benchmark
candidates of a default run when they are on disk."""

from __future__ import annotations

import re
import string
import subprocess
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from tests.conftest import REPO
from vlcomp.negatives.context import (
    ClipBpe,
    ContextCheck,
    clip_words,
    decided_by_text,
    text_decides,
)

SimpleTokenizer = pytest.importorskip("open_clip.tokenizer").SimpleTokenizer

CONTEXTS = (5, 8, 16, 32, 77)
WORDS = (
    "a the an red blue purple orange small large cube circle hexagon star triangle left "
    "right of above below next to and another that is not first second one two"
).split()
# the old shortcut read these as different; the tokenizer reads each pair alike
SAME_TO_THE_TOKENIZER = [
    ("a dog.", "a dog ."),
    ("12 cats", "1 2 cats"),
    ("the dog's ball", "the dog 's ball"),
    ("red,blue", "red , blue"),
    ("A Red  Cube ", " a red cube"),
]
ADVERSARIAL = [
    *SAME_TO_THE_TOKENIZER,
    ("a red cube", "a red cubes"),
    ("a red cube.", "a red cube!"),
    ("a red cube..", "a red cube. ."),
    ("it's red", "it s red"),
    ("x's", "x'S"),
    ("Tom &amp; Jerry", "Tom & Jerry"),
    ("a café", "a cafe"),
    ("a ｒｅｄ cube", "a red cube"),
    ("a red cube <end_of_text>", "a red cube"),
    ("a red\tcube", "a red cube"),
    ("", " "),
]


def _texts(rng: np.random.Generator, n: int) -> list[str]:
    return [" ".join(rng.choice(WORDS, size=int(rng.integers(1, 40)))) for _ in range(n)]


def _changed(rng: np.random.Generator, text: str) -> str:
    """One word changed, dropped, or added at a random place, or the case or spacing."""
    words = text.split()
    at = int(rng.integers(len(words)))
    how = int(rng.integers(5))
    if how == 0:
        words[at] = str(rng.choice(WORDS))
    elif how == 1 and len(words) > 1:
        del words[at]
    elif how == 2:
        words.insert(at, str(rng.choice(WORDS)))
    elif how == 3:
        words[at] = words[at].upper() + "."
    else:
        return "  ".join(words) + " "
    return " ".join(words)


def _same(tokenizer, a: str, b: str) -> bool:
    return bool((np.asarray(tokenizer([a])) == np.asarray(tokenizer([b]))).all())


# --------------------------------------------------------------- pieces and merges


def test_pieces_and_merges_give_the_tokenizers_ids() -> None:
    """On printable ASCII (random characters, punctuation runs, contractions, digits, case
    and spacing) ``clip_words`` + ``ClipBpe`` give exactly SimpleTokenizer.encode's ids;
    texts with ``&``, ``<`` or other characters are left to the tokenizer."""
    tokenizer, bpe = SimpleTokenizer(), ClipBpe()
    rng = np.random.default_rng(1)
    alphabet = list(string.printable[:95]) + ["'s", "'ll", "'d", "  ", "--", "..."]
    texts = ["".join(rng.choice(alphabet, size=int(rng.integers(0, 30)))) for _ in range(400)]
    texts += _texts(rng, 200) + [t for pair in ADVERSARIAL for t in pair]
    checked = 0
    for text in texts:
        words = clip_words(text)
        if words is None:
            assert not (text.isascii() and text.isprintable()) or {"&", "<"} & set(text)
            continue
        ids = [tokenizer.encoder[token] for piece in words for token in bpe.tokens(piece)]
        assert ids == tokenizer.encode(text), text
        checked += 1
    assert checked > 450


def test_the_check_needs_no_torch_for_ascii_texts() -> None:
    """Pairs whose difference falls near the end of the context (which the text alone does
    not decide) are compared by the merges: no torch, and the tokenizer's verdict."""
    pairs = [
        ("a red cube left of a star", "a red cube left of a cube"),
        ("a red cube left of a blue star", "a red cube left of a blue star."),
        ("a qzxvj qzxvj red", "a qzxvj qzxvj blue"),  # qzxvj: 4 tokens
    ]
    code = (
        "import sys\n"
        "from vlcomp.negatives.context import ContextCheck, decided_by_text\n"
        f"pairs = {pairs!r}\n"
        "print([decided_by_text(a, b, 11) for a, b in pairs])\n"
        "check = ContextCheck(11)\n"
        "print([check.identical(a, b) for a, b in pairs])\n"
        "print('torch' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True
    )
    undecided, verdicts, torch = out.stdout.split("\n")[:3]
    assert undecided == "[None, None, None]"
    tokenizer = SimpleTokenizer(context_length=11)
    assert verdicts == str([_same(tokenizer, a, b) for a, b in pairs])
    assert verdicts == "[False, False, True]"
    assert torch == "False"


def test_the_check_agrees_with_the_tokenizer_on_every_pair() -> None:
    rng = np.random.default_rng(2)
    texts = _texts(rng, 150)
    pairs = ADVERSARIAL + [(t, _changed(rng, t)) for t in texts]
    for n in CONTEXTS:
        tokenizer, check = SimpleTokenizer(context_length=n), ContextCheck(n)
        for a, b in pairs:
            assert check.identical(a, b) == _same(tokenizer, a, b), (n, a, b)


# ------------------------------------------------------------------ the text alone


def test_the_text_decides_only_what_the_tokenizer_agrees_with() -> None:
    rng = np.random.default_rng(3)
    texts = _texts(rng, 200)
    pairs = ADVERSARIAL + [(t, _changed(rng, t)) for t in texts]
    pairs += [(texts[i], texts[i + 1]) for i in range(100)]
    decided = 0
    for n in CONTEXTS:
        tokenizer = SimpleTokenizer(context_length=n)
        for a, b in pairs:
            verdict = decided_by_text(a, b, n)
            if verdict is not None:
                decided += 1
                assert verdict == _same(tokenizer, a, b), (n, a, b)
    assert decided > 0.6 * len(pairs) * len(CONTEXTS)
    for a, b in SAME_TO_THE_TOKENIZER:
        assert decided_by_text(a, b, 77) is True


def test_which_tokenizers_the_text_decides_for() -> None:
    assert text_decides(SimpleTokenizer(context_length=32)) == 32
    assert text_decides(SimpleTokenizer(clean="whitespace")) is None
    assert text_decides(SimpleTokenizer(additional_special_tokens=["red"])) is None
    assert text_decides(SimpleTokenizer(reduction_mask="simple")) is None
    assert text_decides(lambda texts: np.zeros((len(texts), 8))) is None


# -------------------------------------------------------------------- evaluation flags


def _candidates(rng: np.random.Generator) -> pl.DataFrame:
    """Sets of one positive (sometimes two) and 1-4 negatives, each a changed positive,
    with adversarial sets (case, spacing, beyond the context, other characters)."""
    rows = []
    for i, text in enumerate(_texts(rng, 120)):
        positives = [text] + ([_changed(rng, text)] if i % 7 == 0 else [])
        negatives = [_changed(rng, text) for _ in range(int(rng.integers(1, 5)))]
        rows += [(f"g{i}", t, True) for t in positives]
        rows += [(f"g{i}", t, False) for t in negatives]
    for i, (a, b) in enumerate(ADVERSARIAL):
        rows += [(f"a{i}", a, True), (f"a{i}", b, False)]
    return pl.DataFrame(rows, schema=["item_id", "text", "is_positive"], orient="row")


def _scored(candidates: pl.DataFrame, rng: np.random.Generator) -> pl.DataFrame:
    """SCORES_SCHEMA rows with similarities on a coarse grid (ties happen)."""
    from vlcomp.contracts import text_key
    from vlcomp.evaluate.retrieval_sets import SCORES_SCHEMA

    n = candidates.height
    return (
        candidates.with_columns(
            model=pl.lit("m"),
            benchmark=pl.lit("b"),
            image=pl.lit("0"),
            family=pl.lit("replace"),
            target=pl.lit("obj"),
            complexity=pl.lit(None, pl.Int64),
            text_key=pl.col("text").map_elements(text_key, return_dtype=pl.String),
            similarity=pl.Series(rng.integers(0, 4, size=n) / 4, dtype=pl.Float64),
        )
        .select(list(SCORES_SCHEMA))
        .cast(SCORES_SCHEMA)  # type: ignore[arg-type]
    )


def _flags_both_ways(candidates: pl.DataFrame, n: int, seed: int) -> tuple[int, int, int, int]:
    """Flags with and without the shortcuts must be equal; returns (sets decided by their
    text, by the tokenizer's merges, by its ids, sets)."""
    from vlcomp.evaluate.jobs import flag_tokens, token_ids
    from vlcomp.evaluate.metrics import set_flags

    tokenizer = SimpleTokenizer(context_length=n)
    scored = _scored(candidates, np.random.default_rng(seed))
    lines: list[str] = []
    fast = set_flags(*flag_tokens(tokenizer, scored, candidates, "p", lines.append))
    slow = set_flags(scored, token_ids(tokenizer, candidates["text"].to_list()))
    assert fast.equals(slow), n
    sets = candidates["item_id"].n_unique()
    assert fast.height == sets
    found = re.fullmatch(
        rf"{sets} sets \[p\]: flags of (\d+) decided by their text, (\d+) by the "
        r"tokenizer's merges, (\d+) by its ids",
        lines[0],
    )
    assert found is not None and len(lines) == 1, lines
    text, merges, ids = map(int, found.groups())
    assert text + merges + ids == sets
    return text, merges, ids, sets


def test_flags_with_and_without_the_shortcut_are_equal() -> None:
    candidates = _candidates(np.random.default_rng(4))
    shares = [_flags_both_ways(candidates, n, n) for n in CONTEXTS]
    assert all(0 < text < sets and merges > 0 for text, merges, _, sets in shares)
    # the adversarial sets with &, <, a tab or other characters go to the tokenizer
    assert {ids for *_, ids, _ in shares} == {5}
    # the sets the adversarial texts make: flags that need the tokenizer, and flags that
    # the text decides (though the old shortcut decided them wrongly)
    from vlcomp.evaluate.jobs import flag_tokens
    from vlcomp.evaluate.metrics import set_flags

    adversarial = candidates.filter(pl.col("item_id").str.starts_with("a"))
    scored = _scored(adversarial, np.random.default_rng(0))
    flags = set_flags(*flag_tokens(SimpleTokenizer(), scored, adversarial))
    same = dict(flags.select("item_id", "indistinguishable").rows())
    assert [same[f"a{i}"] for i in range(len(SAME_TO_THE_TOKENIZER))] == [True] * 5
    tokenizer = SimpleTokenizer()
    assert [same[f"a{i}"] for i in range(len(ADVERSARIAL))] == [
        _same(tokenizer, a, b) for a, b in ADVERSARIAL
    ]
    assert same["a10"] is same["a12"] is True  # &amp; and full-width letters: by the tokenizer
    assert same["a5"] is False


def test_another_tokenizer_tokenises_every_set() -> None:
    from vlcomp.evaluate.jobs import flag_tokens, token_ids

    candidates = _candidates(np.random.default_rng(5))
    scored = _scored(candidates, np.random.default_rng(5))
    tokenizer = SimpleTokenizer(context_length=16, clean="whitespace")
    lines: list[str] = []
    out, tokens = flag_tokens(tokenizer, scored, candidates, None, lines.append)
    assert out.equals(scored) and lines == []
    assert tokens == token_ids(tokenizer, candidates["text"].to_list())


BENCHMARKS = sorted(Path(REPO, "results", "negatives").glob("**/candidates.parquet"))


@pytest.mark.parametrize("path", BENCHMARKS, ids=lambda p: str(p.parent.name))
def test_flags_on_a_slice_of_benchmark_candidates(path: Path) -> None:
    """Candidates of a default run (when on disk): the first 400 sets, at the default's
    context (32) and CLIP's (77)."""
    candidates = pl.read_parquet(path, columns=["item_id", "text", "is_positive"])
    first = candidates["item_id"].unique(maintain_order=True).head(400)
    candidates = candidates.filter(pl.col("item_id").is_in(first.implode()))
    for n in (32, 77):
        text, _, _, sets = _flags_both_ways(candidates, n, 0)
        assert 0 < text <= sets
