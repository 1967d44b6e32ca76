"""Text-only scorers: n-gram KN, causal LMs, CoLA / Vera code paths, MiniLM familiarity, cache."""

import math
from collections import Counter, defaultdict

import numpy as np
import polars as pl
import pytest
import torch

from vlcomp.contracts import text_key
from vlcomp.io import read_parquet_metadata, write_parquet
from vlcomp.scorers import TextScorer
from vlcomp.scorers.cache import read_scores, score_texts
from vlcomp.scorers.factory import make_scorer
from vlcomp.scorers.hf import ModelNotAvailableError
from vlcomp.scorers.ngram import (
    BOS,
    EOS,
    FALLBACK_DISCOUNTS,
    UNK,
    NgramLM,
    tokenize,
    train_ngram,
)
from vlcomp.text import words

COLORS = ["red", "blue", "green", "white", "black", "brown"]
THINGS = ["dog", "cat", "car", "chair", "table", "horse", "bike", "cup"]
RELATIONS = ["next to", "on top of", "behind", "near", "under"]

TINY_GPT2 = {
    "vocab_size": 300,
    "n_layer": 1,
    "n_embd": 32,
    "n_head": 2,
    "epochs": 4,
    "batch_size": 32,
    "lr": 3e-3,
    "max_length": 24,
    "threads": 1,
}


def make_captions(n: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        c1, c2 = rng.choice(COLORS, 2)
        t1, t2 = rng.choice(THINGS, 2, replace=False)
        relation = RELATIONS[rng.integers(len(RELATIONS))]
        out.append(f"a {c1} {t1} {relation} a {c2} {t2}")
    return out


def scramble(text: str, seed: int) -> str:
    words = text.split()
    rng = np.random.default_rng(seed)
    for _ in range(20):
        shuffled = list(rng.permutation(words))
        if shuffled != words:
            return " ".join(shuffled)
    return " ".join(words[::-1])


@pytest.fixture(scope="module")
def corpus():
    return make_captions(400, seed=0)


@pytest.fixture(scope="module")
def heldout(corpus):
    seen = set(corpus)
    fresh = [c for c in make_captions(200, seed=1) if c not in seen][:40]
    return fresh, [scramble(c, i) for i, c in enumerate(fresh)]


# -- n-gram -------------------------------------------------------------------------------


def reference_mkn(sentences: list[list[str]], order: int, min_count: int):
    """A direct, slow transcription of interpolated modified Kneser-Ney (one ``<s>``)."""
    counts = Counter(w for s in sentences for w in s)
    vocab = sorted({w for w, c in counts.items() if c >= min_count} | {EOS, UNK})
    seqs = [[BOS] + [w if counts[w] >= min_count else UNK for w in s] + [EOS] for s in sentences]
    raw = Counter()
    for seq in seqs:
        for i in range(1, len(seq)):
            for k in range(1, order + 1):
                if i - k + 1 >= 0:
                    raw[tuple(seq[i - k + 1 : i + 1])] += 1
    left = defaultdict(set)
    for gram in raw:
        if len(gram) > 1:
            left[gram[1:]].add(gram[0])

    def adjusted(gram):
        if len(gram) == order or gram[0] == BOS:
            return raw[gram]
        return len(left[gram])

    levels = defaultdict(dict)
    for gram in raw:
        levels[len(gram)][gram] = adjusted(gram)
    discounts = {}
    for k, grams in levels.items():
        n = [sum(1 for a in grams.values() if a == i) for i in range(1, 5)]
        y = n[0] / (n[0] + 2 * n[1]) if n[0] else math.nan
        estimates = [i - (i + 1) * y * n[i] / n[i - 1] if n[i - 1] else math.nan for i in (1, 2, 3)]
        discounts[k] = [
            d if 0 < d < i else FALLBACK_DISCOUNTS[i - 1] for i, d in enumerate(estimates, 1)
        ]

    def prob(word, context):
        k = len(context) + 1
        lower = 1 / len(vocab) if k == 1 else prob(word, context[1:])
        grams = {g: a for g, a in levels[k].items() if g[:-1] == tuple(context)}
        total = sum(grams.values())
        if total == 0:
            return lower
        d = discounts[k]

        def disc(a):
            return d[min(a, 3) - 1]

        freed = sum(disc(a) for a in grams.values())
        a = grams.get((*context, word), 0)
        return (a - disc(a) if a else 0.0) / total + freed / total * lower

    return vocab, prob


@pytest.mark.parametrize("order", [1, 2, 3, 4])
def test_kneser_ney_matches_reference_and_sums_to_one(order):
    texts = [
        "a man riding a horse",
        "a woman riding a bike",
        "a man holding an umbrella",
        "the dog is on the grass",
        "a dog on a bench",
        "a man on a bench",
        "a man on the grass",
        "the man riding the horse",
        "a red car",
        "a dog",
    ]
    model = NgramLM.fit(texts, order=order, min_count=1)
    vocab, prob = reference_mkn(tokenize(texts).to_list(), order, 1)
    assert sorted(model.vocabulary) == vocab
    contexts = [[], [BOS], [BOS, "a"], ["a", "man"], ["riding", "a"], ["zebra", "qqq"], ["on"]]
    for context in contexts:
        logps = model.next_word_logprobs(context)
        assert math.fsum(math.exp(v) for v in logps.values()) == pytest.approx(1.0, abs=1e-12)
        usable = [BOS if w == BOS else (w if w in vocab else UNK) for w in context]
        usable = usable[-(order - 1) :] if order > 1 else []
        for word in vocab:
            assert math.exp(logps[word]) == pytest.approx(prob(word, usable), rel=1e-9)


def test_ngram_prefers_fluent_text_and_handles_unknown_words(corpus, heldout):
    fluent, scrambled = heldout
    model = NgramLM.fit(corpus, order=3)
    good, bad = model.score(fluent), model.score(scrambled)
    assert np.mean(good > bad) >= 0.95
    oov = model.score(["a purple dog near a red cat", "a zzz dog near a red cat"])
    assert np.isfinite(oov).all()
    total = model.total_logprob(fluent[:3])
    n_tokens = np.array([len(t.split()) + 1 for t in fluent[:3]])
    assert np.allclose(total / n_tokens, good[:3])
    assert np.allclose(model.perplexity(fluent[:3]), np.exp(-good[:3]))
    assert model.score(["A  RED dog, near a cat."])[0] == model.score(["a red dog near a cat"])[0]


def test_ngram_train_save_load_is_deterministic(corpus, tmp_path):
    captions = tmp_path / "captions.parquet"
    pl.DataFrame(
        {"caption_id": [str(i) for i in range(len(corpus))], "text": corpus}
    ).write_parquet(captions)
    first = train_ngram([captions], tmp_path / "a.parquet", order=3)
    train_ngram([captions], tmp_path / "b.parquet", order=3)
    assert (tmp_path / "a.parquet").read_bytes() == (tmp_path / "b.parquet").read_bytes()
    loaded = make_scorer({"kind": "ngram", "model": str(tmp_path / "a.parquet"), "order": 3})
    assert isinstance(loaded, TextScorer)
    assert loaded.name == first.name and loaded.name.startswith("ngram3-")
    texts = corpus[:5] + ["an unseen sentence entirely"]
    assert np.array_equal(loaded.score(texts), first.score(texts))
    other = NgramLM.fit(corpus[:-1], order=3)
    assert other.name != first.name
    with pytest.raises(ValueError, match="order-3 model"):
        make_scorer({"kind": "ngram", "model": str(tmp_path / "a.parquet"), "order": 4})


def test_ngram_tokens_are_the_text_layer_words():
    texts = [
        "A man\u2019s T-shirt - and a one-way sign.",
        "The man's hat isn`t red -- 2 dogs_here",
        "board.Cabbage \u00c9T\u00c9 stra\u00dfe -dog cat-",
        "",
    ]
    assert tokenize(texts).to_list() == [words(t) for t in texts]
    assert tokenize(["a man\u2019s t-shirt"]).to_list() == [["a", "man's", "t-shirt"]]


def test_ngram_model_of_another_tokeniser_is_refused(corpus, tmp_path):
    path = tmp_path / "lm.parquet"
    NgramLM.fit(corpus[:50], order=2).save(path)
    metadata = read_parquet_metadata(path)
    write_parquet(pl.read_parquet(path), path, {**metadata, "tokenizer": "old"})
    with pytest.raises(ValueError, match="another tokeniser"):
        NgramLM.load(path)


# -- causal LM ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tiny_gpt2(corpus, tmp_path_factory):
    from vlcomp.scorers.tiny_gpt2 import fit_tiny_gpt2

    out = tmp_path_factory.mktemp("gpt2") / "tiny"
    fit_tiny_gpt2(corpus, out, TINY_GPT2, seed=3)
    return out


def test_tiny_gpt2_prefers_fluent_text(tiny_gpt2, heldout):
    fluent, scrambled = heldout
    scorer = make_scorer({"kind": "causal_lm", "model": str(tiny_gpt2), "batch_size": 16})
    assert scorer.name.startswith("causal_lm/tiny@")
    assert np.mean(scorer.score(fluent) > scorer.score(scrambled)) >= 0.9


def test_causal_lm_padding_and_bos(tiny_gpt2):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from vlcomp.scorers.causal_lm import CausalLMScorer

    texts = ["a red dog", "a blue cat next to a green chair under a table", "a"]
    batched = CausalLMScorer(str(tiny_gpt2), batch_size=3)
    single = CausalLMScorer(str(tiny_gpt2), batch_size=1)
    assert np.allclose(batched.score(texts), single.score(texts), atol=1e-5)
    # By hand: BOS + tokens, each token's log-probability given its prefix.
    tokenizer = AutoTokenizer.from_pretrained(tiny_gpt2)
    model = AutoModelForCausalLM.from_pretrained(tiny_gpt2).eval()
    ids = [tokenizer.bos_token_id, *tokenizer(texts[1], add_special_tokens=False)["input_ids"]]
    with torch.no_grad():
        logp = model(torch.tensor([ids])).logits[0, :-1].log_softmax(-1)
    expected = logp[torch.arange(len(ids) - 1), torch.tensor(ids[1:])].mean().item()
    assert batched.score(texts)[1] == pytest.approx(expected, abs=1e-5)
    assert np.allclose(batched.perplexity(texts), np.exp(-batched.score(texts)))
    nobos = CausalLMScorer(str(tiny_gpt2), add_bos=False)
    assert nobos.name != batched.name
    with_bos, without = batched.token_logprob_sums(texts)[1], nobos.token_logprob_sums(texts)[1]
    assert (without == with_bos - 1).all()  # without BOS the first token is not predicted
    neg_ppl = CausalLMScorer(str(tiny_gpt2), score="neg_perplexity")
    assert np.allclose(neg_ppl.score(texts), -batched.perplexity(texts))
    average = make_scorer(
        {"kind": "causal_lm_average", "models": [str(tiny_gpt2)] * 2, "score": "neg_perplexity"}
    )
    assert np.allclose(average.score(texts), neg_ppl.score(texts))


def test_tiny_gpt2_training_is_deterministic(corpus, tiny_gpt2, tmp_path):
    from vlcomp.scorers.tiny_gpt2 import fit_tiny_gpt2

    fit_tiny_gpt2(corpus, tmp_path / "again", TINY_GPT2, seed=3)
    for name in ("model.safetensors", "tokenizer.json", "config.json", "vlcomp_train.json"):
        assert (tmp_path / "again" / name).read_bytes() == (tiny_gpt2 / name).read_bytes()
    with pytest.raises(ValueError, match="unknown tiny GPT-2 setting"):
        fit_tiny_gpt2(corpus, tmp_path / "bad", {"layers": 2})


def test_missing_hub_model_fails_fast_with_a_clear_message(tmp_path, network_attempts):
    with pytest.raises(ModelNotAvailableError, match=r"gpt2-not-cached-xyz.*hf download"):
        make_scorer({"kind": "causal_lm", "model": "vlcomp-test/gpt2-not-cached-xyz"})
    with pytest.raises(ModelNotAvailableError, match="does not exist"):
        make_scorer({"kind": "cola", "model": str(tmp_path / "nowhere")})
    assert network_attempts == []


def test_make_scorer_rejects_bad_specs():
    with pytest.raises(ValueError, match="kind must be one of"):
        make_scorer({"kind": "bleu"})
    with pytest.raises(ValueError, match=r"unknown \['models'\]"):
        make_scorer({"kind": "causal_lm", "model": "gpt2", "models": []})
    with pytest.raises(ValueError, match=r"missing \['index'\]"):
        make_scorer({"kind": "minilm_familiarity"})


# -- CoLA and Vera code paths, on tiny random models of the same architectures ------------

WORDS = sorted({w for c in make_captions(50, 0) for w in c.split()} | {"is", "the"})


@pytest.fixture(scope="module")
def tiny_cola(tmp_path_factory):
    from transformers import (
        DistilBertConfig,
        DistilBertForSequenceClassification,
        DistilBertTokenizerFast,
    )

    out = tmp_path_factory.mktemp("cola")
    vocab = out / "vocab.txt"
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS]) + "\n")
    tokenizer = DistilBertTokenizerFast(vocab_file=str(vocab))
    torch.manual_seed(0)
    config = DistilBertConfig(
        vocab_size=len(WORDS) + 5, dim=32, n_layers=1, n_heads=2, hidden_dim=64, num_labels=2
    )
    DistilBertForSequenceClassification(config).save_pretrained(out / "model")
    tokenizer.save_pretrained(out / "model")
    return out / "model"


def test_cola_scores_probability_of_label_1(tiny_cola):
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    texts = ["a red dog", "a blue cat next to a green chair", "dog dog a"]
    scorer = make_scorer({"kind": "cola", "model": str(tiny_cola), "batch_size": 2})
    scores = scorer.score(texts)
    assert scorer.name.startswith("cola/model@")
    tokenizer = AutoTokenizer.from_pretrained(tiny_cola)
    model = AutoModelForSequenceClassification.from_pretrained(tiny_cola).eval()
    for text, score in zip(texts, scores, strict=True):
        with torch.no_grad():
            probs = model(**tokenizer(text, return_tensors="pt")).logits.softmax(-1)[0]
        assert score == pytest.approx(probs[1].item(), abs=1e-6)
    assert ((scores > 0) & (scores < 1)).all()


@pytest.fixture(scope="module")
def tiny_vera(tmp_path_factory):
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast, T5Config, T5EncoderModel

    out = tmp_path_factory.mktemp("vera") / "model"
    vocab = {"<pad>": 0, "</s>": 1, "<unk>": 2, **{w: i + 3 for i, w in enumerate(WORDS)}}
    backend = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    backend.post_processor = processors.TemplateProcessing(
        single="$A </s>", special_tokens=[("</s>", 1)]
    )
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend, pad_token="<pad>", eos_token="</s>", unk_token="<unk>"
    )
    torch.manual_seed(0)
    config = T5Config(
        vocab_size=32128, d_model=16, d_kv=8, d_ff=32, num_layers=1, num_heads=2,
        feed_forward_proj="gated-gelu",
    )  # fmt: skip
    model = T5EncoderModel(config)
    with torch.no_grad():
        model.shared.weight[32097, 0] = 2.5  # the calibration temperature
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


def test_vera_follows_the_model_card_scoring(tiny_vera):
    from transformers import AutoTokenizer, T5EncoderModel

    texts = ["a red dog", "a blue cat next to a green chair under a table", "dog"]
    scorer = make_scorer({"kind": "vera", "model": str(tiny_vera), "batch_size": 3})
    scores = scorer.score(texts)
    tokenizer = AutoTokenizer.from_pretrained(tiny_vera)
    model = T5EncoderModel.from_pretrained(tiny_vera).eval()
    weight, bias = model.shared.weight[32099], model.shared.weight[32098, 0]
    temperature = model.shared.weight[32097, 0].item()
    assert temperature == 2.5
    for text, score in zip(texts, scores, strict=True):
        ids = tokenizer([text], return_tensors="pt").input_ids
        assert ids[0, -1].item() == 1  # the statement ends with </s>
        with torch.no_grad():
            hidden = model(ids).last_hidden_state[0, -1]
            expected = torch.sigmoid((hidden @ weight + bias) / temperature).item()
        assert score == pytest.approx(expected, abs=1e-6)
    assert scorer.name.startswith("vera/model@")


# -- MiniLM familiarity -------------------------------------------------------------------


def test_minilm_familiarity_ranks_training_captions_first(corpus, tmp_path):
    from vlcomp.scorers.familiarity import build_index_from_texts

    build_index_from_texts(corpus, tmp_path / "a.parquet", sample=60, seed=4)
    build_index_from_texts(corpus, tmp_path / "b.parquet", sample=60, seed=4)
    assert (tmp_path / "a.parquet").read_bytes() == (tmp_path / "b.parquet").read_bytes()
    indexed = pl.read_parquet(tmp_path / "a.parquet")["text"].to_list()
    assert len(indexed) == 60
    scorer = make_scorer(
        {"kind": "minilm_familiarity", "index": str(tmp_path / "a.parquet"), "k": 3}
    )
    unrelated = "quarterly tax revenue rose sharply according to the finance ministry"
    in_corpus, far = scorer.score([indexed[0], unrelated])
    assert in_corpus > far
    assert scorer.name.startswith("minilm_familiarity/k3@")


def test_minilm_queries_embedded_once_give_the_same_scores(corpus, tmp_path, monkeypatch):
    from vlcomp.scorers import familiarity
    from vlcomp.scorers.trained import embed_minilm_queries

    familiarity.build_index_from_texts(corpus, tmp_path / "index.parquet", sample=60, seed=4)
    queries = ["a cat on a mat", "two dogs in a park", "a cat on a mat", "a red bus"]
    pl.DataFrame({"text": queries[:2] + [None]}).write_parquet(tmp_path / "candidates.parquet")
    embed_minilm_queries(str(tmp_path / "candidates.parquet"), str(tmp_path / "q.parquet"))
    assert pl.read_parquet(tmp_path / "q.parquet")["text"].to_list() == [
        "a cat on a mat",
        "two dogs in a park",
    ]
    spec = {"kind": "minilm_familiarity", "index": str(tmp_path / "index.parquet"), "k": 3}
    plain = make_scorer(spec)
    expected = plain.score(queries)
    reused = make_scorer({**spec, "queries": str(tmp_path / "q.parquet")})
    assert reused.name == plain.name
    embedded: list[list[str]] = []
    real_embed = familiarity.embed
    monkeypatch.setattr(
        familiarity,
        "embed",
        lambda m, t, b=128, progress=False: embedded.append(list(t)) or real_embed(m, t, b),
    )
    assert reused.score(queries) == pytest.approx(expected, abs=1e-6)
    assert embedded == [["a red bus"]]  # only the text the queries file lacks
    with pytest.raises(ValueError, match="index.parquet: not a vlcomp-minilm-queries/1 file"):
        make_scorer({**spec, "queries": str(tmp_path / "index.parquet")})


# -- score cache --------------------------------------------------------------------------


class CountingScorer:
    def __init__(self, name: str = "count/v1") -> None:
        self.name = name
        self.seen: list[str] = []

    def score(self, texts):
        self.seen.extend(texts)
        return np.array([float(len(t)) for t in texts])


def test_score_cache_scores_each_new_text_once(tmp_path):
    cache = tmp_path / "scores.parquet"
    scorer = CountingScorer()
    texts = ["a dog", "a cat", "a dog", "a red car"]
    first = score_texts(scorer, texts, cache, batch_size=2, progress=False)
    assert first.tolist() == [5.0, 5.0, 5.0, 9.0]
    assert sorted(scorer.seen) == ["a cat", "a dog", "a red car"]
    scorer.seen.clear()
    again = score_texts(scorer, ["a red car", "a bike", "a dog"], cache, progress=False)
    assert again.tolist() == [9.0, 6.0, 5.0]
    assert scorer.seen == ["a bike"]
    other = CountingScorer("count/v2")
    score_texts(other, ["a dog"], cache, progress=False)
    assert other.seen == ["a dog"]
    rows = read_scores(cache)
    assert rows.schema == pl.Schema(
        {"scorer": pl.String, "text_key": pl.String, "score": pl.Float64}
    )
    assert len(rows) == 5 and len(read_scores(cache, "count/v1")) == 4
    assert text_key("a bike") in read_scores(cache, "count/v1")["text_key"].to_list()
    before = cache.read_bytes()
    score_texts(scorer, texts, cache, progress=False)
    assert cache.read_bytes() == before  # nothing new: the file is not rewritten


def test_score_cache_rejects_a_scorer_returning_the_wrong_shape(tmp_path):
    class Broken:
        name = "broken"

        def score(self, texts):
            return np.zeros(len(texts) + 1)

    with pytest.raises(ValueError, match="returned shape"):
        score_texts(Broken(), ["a", "b"], tmp_path / "s.parquet", progress=False)
    assert not (tmp_path / "s.parquet").exists()


def test_every_offline_scorer_meets_the_protocol(corpus, tiny_gpt2, tmp_path):
    ngram = NgramLM.fit(corpus, order=2)
    for scorer in (ngram, make_scorer({"kind": "causal_lm", "model": str(tiny_gpt2)})):
        assert isinstance(scorer, TextScorer)
        out = scorer.score(["a red dog", "b"])
        assert out.shape == (2,) and out.dtype == np.float64
        assert scorer.score([]).shape == (0,)


def test_training_input_rejects_holes(tmp_path):
    from vlcomp.scorers.corpus import read_texts

    path = tmp_path / "captions.parquet"
    pl.DataFrame({"text": ["a dog", None]}, schema={"text": pl.String}).write_parquet(path)
    with pytest.raises(ValueError, match="1 null value"):
        read_texts([path])
    with pytest.raises(TypeError, match="not a string"):
        score_texts(CountingScorer(), ["a", None], tmp_path / "s.parquet", progress=False)


def test_hub_id_resolves_from_the_local_cache(tiny_gpt2, tmp_path, monkeypatch):
    import shutil

    from huggingface_hub import constants

    commit = "0123456789abcdef0123456789abcdef01234567"
    repo = tmp_path / "hub" / "models--vlcomp-test--tiny"
    shutil.copytree(tiny_gpt2, repo / "snapshots" / commit)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(commit)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    scorer = make_scorer({"kind": "causal_lm", "model": "vlcomp-test/tiny"})
    assert scorer.name == "causal_lm/vlcomp-test/tiny@0123456789ab/mean_logprob"
    local = make_scorer({"kind": "causal_lm", "model": str(tiny_gpt2)})
    assert np.allclose(scorer.score(["a red dog"]), local.score(["a red dog"]))


def test_minilm_queries_name_a_table_without_texts(tmp_path):
    from vlcomp.scorers.trained import embed_minilm_queries

    pl.DataFrame({"caption": ["a cat"]}).write_parquet(tmp_path / "candidates.parquet")
    with pytest.raises(ValueError, match="candidates.parquet: no 'text' column"):
        embed_minilm_queries(str(tmp_path / "candidates.parquet"), str(tmp_path / "q.parquet"))
    assert not (tmp_path / "q.parquet").exists()
