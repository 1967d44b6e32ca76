"""transformers models that score (image, text) pairs jointly: a tiny random BLIP ITM
(``matching_head``) and a tiny random LLaVA (``vqascore``), saved with ``save_pretrained``
(real tokenizer and processor files, ``vlcomp.models.tiny_models``) and loaded through the
config path. Under the ``transformers`` and ``legacy_sum`` definitions they must score a pair
as a direct transformers forward pass does (the authors' definitions: ``test_joint_
definitions``); the ITC -> rerank with k = all is exhaustive pair scoring; scores repeat;
the evaluation jobs write the same tables as for embedding models."""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest
import torch
from PIL import Image

from tests.unit import test_evaluate_jobs
from tests.unit.test_evaluate_jobs import PAIRS, SETTINGS, candidates, retrieval_items
from vlcomp.config import ConfigError, validate_config
from vlcomp.contracts import PREDICTION_FLAGS_SCHEMA
from vlcomp.evaluate.embed import embed_image_refs, embed_texts, model_metadata
from vlcomp.evaluate.images import EmbeddingCache, ImageRef
from vlcomp.evaluate.jobs import evaluate_benchmark_job, evaluate_two_image_job, retrieval_job
from vlcomp.evaluate.joint_scoring import pair_cache, rerank_ranks, retrieval_ranks, score_pairs
from vlcomp.evaluate.metrics import METRIC_SCHEMA, RANKS_SCHEMA, pessimistic_rank
from vlcomp.evaluate.retrieval_sets import SET_PREDICTIONS_SCHEMA
from vlcomp.evaluate.scoring import EmbeddingScorer, JointScorer, scorer_of
from vlcomp.evaluate.selection import image_pair_selection
from vlcomp.evaluate.two_image import TWO_IMAGE_PREDICTIONS_SCHEMA
from vlcomp.models.catalogue import ModelSpec, ModelUnavailableError
from vlcomp.models.joint import for_retrieval
from vlcomp.models.loading import check_available, load_model
from vlcomp.models.tiny_models import save_tiny_blip_itm, save_tiny_llava

data = test_evaluate_jobs.data  # a fixture: images 0-3 ok, 4 missing, 5 not an image
checkpoint = test_evaluate_jobs.checkpoint  # a fixture: random open_clip world ViT weights
TEXTS = [
    "a red circle left of a blue square",
    "a blue circle left of a red square",
    "Two small green stars above a large yellow heart!",
]


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("joint")
    return {"blip": save_tiny_blip_itm(root / "blip"), "llava": save_tiny_llava(root / "llava")}


def entry(folder, kind, **options):
    return {"transformers": {"id": str(folder), "kind": kind, **options}}


@pytest.fixture(scope="module")
def blip(folders):
    return load_model(ModelSpec.from_config("blip", entry(folders["blip"], "matching_head")), "cpu")


@pytest.fixture(scope="module")
def blip_hf(folders):
    """BLIP as ``BlipForImageTextRetrieval.forward`` scores it."""
    spec = ModelSpec.from_config(
        "blip_hf", entry(folders["blip"], "matching_head", definition="transformers")
    )
    return load_model(spec, "cpu")


@pytest.fixture(scope="module")
def llava(folders):
    return load_model(ModelSpec.from_config("llava", entry(folders["llava"], "vqascore")), "cpu")


@pytest.fixture(scope="module")
def llava_legacy(folders):
    spec = ModelSpec.from_config(
        "llava_legacy", entry(folders["llava"], "vqascore", definition="legacy_sum")
    )
    return load_model(spec, "cpu")


@pytest.fixture(scope="module")
def refs(tmp_path_factory):
    """Four images of different sizes (the processors resize them) and a crop of one."""
    folder = tmp_path_factory.mktemp("pictures")
    rng = np.random.default_rng(0)
    out = []
    for i, (h, w) in enumerate([(32, 32), (48, 40), (64, 64), (30, 50)]):
        path = folder / f"{i}.png"
        Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8)).save(path)
        out.append(ImageRef(str(path)))
    return [*out, ImageRef(out[2].path, (8, 8, 40, 32))]


def pil(ref: ImageRef) -> Image.Image:
    image = Image.open(ref.path).convert("RGB")
    if ref.box is None:
        return image
    x, y, w, h = ref.box
    return image.crop((x, y, x + w, y + h))


def direct_itm(folder, refs, texts):
    """BLIP's ITM log-odds and ITC cosine from BlipForImageTextRetrieval.forward, one pair
    per call."""
    from transformers import BlipForImageTextRetrieval, BlipProcessor

    model = BlipForImageTextRetrieval.from_pretrained(folder).eval()
    processor = BlipProcessor.from_pretrained(folder)
    itm = np.zeros((len(refs), len(texts)))
    itc = np.zeros((len(refs), len(texts)))
    with torch.inference_mode():
        for i, ref in enumerate(refs):
            for j, text in enumerate(texts):
                inputs = processor(images=pil(ref), text=text, return_tensors="pt")
                logits = model(**inputs).itm_score[0]
                itm[i, j] = float(logits[1] - logits[0])
                itc[i, j] = float(model(**inputs, use_itm_head=False).itm_score[0, 0])
    return itm, itc


def test_matching_head_scores_equal_a_direct_forward_pass(folders, blip_hf, refs):
    pairs = [(ref, text) for ref in refs for text in TEXTS]
    ours, computed = score_pairs(blip_hf, pairs, batch_size=4)
    assert computed == len(pairs)
    counts = blip_hf.model.counts
    assert counts["pair"] >= len(pairs) and counts["vision"] >= len(refs)
    itm, itc = direct_itm(folders["blip"], refs, TEXTS)
    difference = float(np.abs(ours.reshape(itm.shape) - itm).max())
    print(f"max |ITM log-odds difference| ours vs BlipForImageTextRetrieval: {difference:.2e}")
    assert difference < 1e-5
    assert float(itm.std()) > 1e-3  # random weights still tell pairs apart
    # the ITC embeddings (embedding path, normalised there) give the model's ITC cosine
    images, _ = embed_image_refs(blip_hf, refs, batch_size=2)
    texts, _ = embed_texts(blip_hf, TEXTS, batch_size=2)
    itc_difference = float(np.abs(images @ texts.T - itc).max())
    print(f"max |ITC cosine difference| ours vs BlipForImageTextRetrieval: {itc_difference:.2e}")
    assert itc_difference < 1e-5


def direct_vqascore(folder, refs, texts, question, prompt, answer):
    """log P(answer | image, prompt) from LlavaForConditionalGeneration.forward, one pair per
    call: the answer tokens' log-softmax at the positions before them."""
    from transformers import LlavaForConditionalGeneration, LlavaProcessor

    model = LlavaForConditionalGeneration.from_pretrained(folder).eval()
    processor = LlavaProcessor.from_pretrained(folder)
    answer_ids = processor.tokenizer(" " + answer, add_special_tokens=False)["input_ids"]
    out = np.zeros((len(refs), len(texts)))
    with torch.inference_mode():
        for i, ref in enumerate(refs):
            for j, text in enumerate(texts):
                q = question.replace("{text}", text)
                full = prompt.replace("{image}", "<image>").replace("{question}", q)
                inputs = processor(images=pil(ref), text=f"{full} {answer}", return_tensors="pt")
                ids = inputs["input_ids"][0]
                assert ids[-len(answer_ids) :].tolist() == answer_ids
                log_p = torch.log_softmax(model(**inputs).logits[0].float(), dim=-1)
                n = len(ids)
                out[i, j] = sum(
                    float(log_p[n - len(answer_ids) - 1 + k, token])
                    for k, token in enumerate(answer_ids)
                )
    return out, answer_ids


def test_legacy_vqascore_equals_a_direct_forward_pass(folders, llava_legacy, refs):
    pairs = [(ref, text) for ref in refs for text in TEXTS]
    ours, _ = score_pairs(llava_legacy, pairs, batch_size=3)  # mixed lengths: right padding
    scorer = llava_legacy.model
    direct, answer_ids = direct_vqascore(
        folders["llava"], refs, TEXTS, scorer.question, scorer.prompt, scorer.answer
    )
    assert scorer.answer_ids == answer_ids
    difference = float(np.abs(ours.reshape(direct.shape) - direct).max())
    print(f"max |log P(Yes) difference| ours vs LlavaForConditionalGeneration: {difference:.2e}")
    assert difference < 1e-5
    assert float(direct.std()) > 1e-4
    meta = model_metadata("llava", llava_legacy)
    assert meta["vqascore_answer"] == "Yes" and meta["vqascore_question"] == scorer.question
    assert meta["joint_definition"] == "legacy_sum"
    assert json.loads(meta["vqascore_answer_token_ids"]) == answer_ids
    assert len(meta["weights_sha256"]) == 64 and meta["transformers_kind"] == "vqascore"


def test_vqascore_options_a_two_token_answer_and_another_template(folders, refs):
    options = {"question": "Is it {text}?", "prompt": "{image} Q: {question} A:",
               "answer": "Yes please"}  # fmt: skip
    loaded = load_model(
        ModelSpec.from_config(
            "v2", entry(folders["llava"], "vqascore", definition="legacy_sum", **options)
        ),
        "cpu",
    )
    assert len(loaded.model.answer_ids) == 2
    pairs = [(ref, text) for ref in refs[:2] for text in TEXTS]
    ours, _ = score_pairs(loaded, pairs, batch_size=4)
    direct, _ = direct_vqascore(folders["llava"], refs[:2], TEXTS, **options)
    difference = float(np.abs(ours.reshape(direct.shape) - direct).max())
    print(f"max |log P(Yes please) difference|: {difference:.2e}")
    assert difference < 1e-5
    # the template is part of the pair cache's name: another template never reads it
    default = load_model(
        ModelSpec.from_config("v", entry(folders["llava"], "vqascore", definition="legacy_sum")),
        "cpu",
    )
    image_cache = EmbeddingCache(refs[0].path + ".cache", "image")
    assert pair_cache(loaded, image_cache).modality != pair_cache(default, image_cache).modality


def test_scores_repeat_and_come_back_from_the_cache(blip, refs, tmp_path):
    pairs = [(ref, text) for ref in refs for text in TEXTS]
    first, _ = score_pairs(blip, pairs, batch_size=4)
    second, _ = score_pairs(blip, pairs, batch_size=4)
    assert first.tobytes() == second.tobytes()
    cache = pair_cache(blip, EmbeddingCache(tmp_path, "image"))
    cold, computed = score_pairs(blip, pairs, batch_size=4, cache=cache)
    assert computed == len(pairs)
    again = pair_cache(blip, EmbeddingCache(tmp_path, "image"))  # read back from disk
    warm, computed = score_pairs(blip, pairs + pairs[:2], batch_size=4, cache=again)
    assert computed == 0
    assert np.array_equal(warm[: len(pairs)], cold) and np.array_equal(cold, first)


def test_rerank_ranks_by_hand():
    first = np.array([[0.9, 0.8, 0.7, 0.1]])  # ITC: top 2 are columns 0 and 1
    second = np.array([[0.0, 5.0, np.nan, np.nan]])  # ITM, read in the top only
    top = np.array([[True, True, False, False]])
    for positive, rank in [
        ([False, True, False, False], 0),  # reranked to first
        ([True, False, False, False], 1),  # below column 1 after the rerank
        ([False, False, True, False], 2),  # outside the top: after both, first by ITC
        ([False, False, False, True], 3),
        ([False, False, True, True], 2),  # the best positive counts
    ]:
        mask = np.array([positive])
        assert rerank_ranks(first, second, top, mask).tolist() == [rank]
    # the top everywhere: the second score alone, ties against the positive
    scores = np.array([[1.0, 2.0, 2.0], [3.0, 1.0, 0.5]])
    positive = np.array([[False, True, False], [True, False, False]])
    everything = np.ones_like(positive)
    assert rerank_ranks(np.zeros_like(scores), scores, everything, positive).tolist() == (
        pessimistic_rank(scores, positive).tolist()
    )


@pytest.mark.parametrize("definition", ["salesforce", "transformers"])
def test_rerank_with_k_all_is_exhaustive_pair_scoring(folders, refs, definition):
    blip = load_model(
        ModelSpec.from_config("b", entry(folders["blip"], "matching_head", definition=definition)),
        "cpu",
    )
    reranking = for_retrieval(blip)  # salesforce: ITM match logit + ITC; transformers: ITM
    texts = [*TEXTS, "a pink triangle", "three hearts", "a star near a circle"]
    owner = np.array([0, 0, 1, 2, 3, 4])
    everything = max(len(texts), len(refs))
    usable, i2t, t2i, counts = retrieval_ranks(reranking, refs, texts, owner, 4, top_k=everything)
    assert usable.all() and counts["pair"] == len(refs) * len(texts)
    full, _ = score_pairs(reranking, [(r, t) for r in refs for t in texts], batch_size=4)
    full = full.reshape(len(refs), len(texts))
    positive = owner[None, :] == np.arange(len(refs))[:, None]
    assert i2t.tolist() == pessimistic_rank(full, positive).tolist()
    assert t2i.tolist() == pessimistic_rank(full.T, positive.T).tolist()
    # k = 1: each query's ITC best only, so at most (images + texts) pair passes, and a
    # query whose positive is not ITC's first ranks as ITC puts it
    _, i2t_1, t2i_1, counts_1 = retrieval_ranks(reranking, refs, texts, owner, 4, top_k=1)
    assert counts_1["pair"] <= len(refs) + len(texts)
    images, _ = embed_image_refs(blip, refs, batch_size=4)
    vectors, _ = embed_texts(blip, texts, batch_size=4)
    itc = images @ vectors.T
    itc_ranks = pessimistic_rank(itc, positive)
    assert all(a == b for a, b in zip(i2t_1, itc_ranks, strict=True) if b > 0)


def test_vqascore_retrieval_scores_every_pair(llava, refs):
    texts = TEXTS[:2]
    usable, i2t, t2i, counts = retrieval_ranks(llava, refs[:3], texts, np.array([0, 1]), 4)
    assert counts == {"vision": 0, "text": 0, "pair": 6}
    full, _ = score_pairs(llava, [(r, t) for r in refs[:3] for t in texts], batch_size=4)
    positive = np.array([0, 1])[None, :] == np.arange(3)[:, None]
    assert t2i.tolist() == pessimistic_rank(full.reshape(3, 2).T, positive.T).tolist()


def _config(models: dict) -> dict:
    return {"models": models, "benchmarks": {}, "evaluate": {"models": sorted(models)}}


def test_config_names_bad_options(tmp_path, network_attempts):
    good = validate_config(_config({"m": entry(tmp_path, "matching_head", rerank_top_k=8)}))
    assert good["models"]["m"]["transformers"]["rerank_top_k"] == 8
    cases = [
        (entry(tmp_path, "dual_encoder", rerank_top_k=8),
         "models.m.transformers.rerank_top_k': an option of kind matching_head, not kind "
         "dual_encoder"),
        (entry(tmp_path, "vqascore", rerank_top_k=8),
         "models.m.transformers.rerank_top_k': an option of kind matching_head, not kind "
         "vqascore (its options: definition, question, prompt, answer)"),
        (entry(tmp_path, "matching_head", question="Is it {text}?"),
         "models.m.transformers.question': an option of kind vqascore, not kind matching_head"),
        (entry(tmp_path, "vqascore", question="Is it there?"),
         "models.m.transformers.question': must hold {text} exactly once"),
        (entry(tmp_path, "vqascore", prompt="{question} ASSISTANT:"),
         "models.m.transformers.prompt': must hold {image} exactly once"),
        (entry(tmp_path, "matching_head", rerank_top_k=0),
         "models.m.transformers.rerank_top_k': 0 is less than the minimum of 1"),
        (entry(tmp_path, "matching_head", top_k=3), "unknown key(s) 'top_k'"),
        (entry(tmp_path, "siamese"), "'siamese' is not a known kind"),
    ]  # fmt: skip
    for model, message in cases:
        escaped = message.replace(".", r"\.").replace("(", r"\(").replace(")", r"\)")
        with pytest.raises(ConfigError, match=escaped.replace("{", r"\{").replace("}", r"\}")):
            validate_config(_config({"m": model}))
    hub = {"transformers": {"id": "Salesforce/blip-itm-base-coco", "kind": "matching_head",
                            "revision": "1a2b3c4"}}  # fmt: skip
    with pytest.raises(
        ModelUnavailableError,
        match="huggingface-cli download Salesforce/blip-itm-base-coco --revision 1a2b3c4",
    ):
        check_available(ModelSpec.from_config("m", hub))
    assert network_attempts == []


def test_a_folder_of_another_architecture_is_refused(folders):
    spec = ModelSpec.from_config("x", entry(folders["llava"], "matching_head"))
    with pytest.raises(ModelUnavailableError, match="kind matching_head loads "
                       "BlipForImageTextRetrieval"):  # fmt: skip
        load_model(spec, "cpu")


def test_benchmark_retrieval_and_two_image_jobs_with_a_matching_head(data, folders):
    folder, index_path = data
    model = entry(folders["blip"], "matching_head", rerank_top_k=2)
    sets = {**PAIRS, "b5": ("5", ["a red square", "a blue square"])}  # 5: not an image
    candidates(sets).write_parquet(folder / "pairs.parquet")
    part = {"candidates": str(folder / "pairs.parquet"), "boxes": None, "splits": None,
            "split_column": "split", "label": None}  # fmt: skip
    out = {k: str(folder / f"{k}.parquet") for k in ("predictions", "metrics", "excluded")}
    lines: list[str] = []
    evaluate_benchmark_job("blip", model, None, SETTINGS, [part], index_path,
                           str(folder / "cache"), out["predictions"], out["metrics"],
                           out["excluded"], lines.append)  # fmt: skip
    predictions = pl.read_parquet(out["predictions"])
    metrics = pl.read_parquet(out["metrics"])
    assert predictions.schema == pl.Schema({**SET_PREDICTIONS_SCHEMA, **PREDICTION_FLAGS_SCHEMA})
    assert metrics.schema == pl.Schema(METRIC_SCHEMA)
    assert predictions.height == len(PAIRS)
    assert pl.read_parquet(out["excluded"])["item_id"].to_list() == ["b5"]
    # 18 pairs, 8 distinct with a readable image (the items repeat)
    assert any("scored 8/18 (image, text) pairs" in line for line in lines)
    meta = pl.read_parquet_metadata(out["metrics"])
    assert meta["transformers_kind"] == "matching_head" and meta["rerank_top_k"] == "2"
    assert meta["joint_score"].startswith("ITM log-odds")
    # the scores are the model's pair scores
    loaded = load_model(ModelSpec.from_config("blip", model), "cpu")
    index = dict(pl.read_parquet(index_path).select("image_id", "path").iter_rows())
    row = predictions.row(0, named=True)
    texts = PAIRS[row["item_id"]][1]
    direct, _ = score_pairs(loaded, [(ImageRef(index[row["image"]]), t) for t in texts], 4)
    assert [row["pos_score"], row["neg_score"]] == pytest.approx(direct.tolist(), abs=1e-6)
    # a rerun reads every pair from the cache and writes the same bytes
    again = str(folder / "again.parquet")
    evaluate_benchmark_job("blip", model, None, SETTINGS, [part], index_path,
                           str(folder / "cache"), str(folder / "p2.parquet"), again,
                           str(folder / "e2.parquet"), lines.append)  # fmt: skip
    assert any("scored 0/18 (image, text) pairs" in line for line in lines)
    assert pl.read_parquet(again).equals(metrics)

    items = retrieval_items(folder)
    ranks_out = {k: str(folder / f"r_{k}.parquet") for k in ("ranks", "metrics", "excluded")}
    retrieval_job("blip", model, None, SETTINGS, items, index_path, str(folder / "cache"),
                  ranks_out["ranks"], ranks_out["metrics"], ranks_out["excluded"],
                  log=lines.append)  # fmt: skip
    ranks = pl.read_parquet(ranks_out["ranks"])
    assert ranks.schema == pl.Schema(RANKS_SCHEMA)
    assert ranks.group_by("direction").len().sort("direction").rows() == [("i2t", 4), ("t2i", 8)]
    assert pl.read_parquet(ranks_out["excluded"]).select("item_id", "status").rows() == [
        ("c40", "missing"), ("c50", "unreadable")
    ]  # fmt: skip
    assert any("ITC ranking, top 2 reranked by " in line for line in lines)

    two = pl.DataFrame(
        {"benchmark": "wino", "item_id": ["w0", "w1"], "caption_0": ["a red square"] * 2,
         "caption_1": ["a green square", "a blue square"], "image_0": ["0", "0"],
         "image_1": ["1", "2"], "family": ["swap", None], "target": ["att", None],
         "generator": "test", "provenance": ""}
    )  # fmt: skip
    two.write_parquet(folder / "two.parquet")
    two_out = {k: str(folder / f"t_{k}.parquet") for k in ("predictions", "metrics", "excluded")}
    evaluate_two_image_job("blip", model, None, SETTINGS, str(folder / "two.parquet"),
                           index_path, str(folder / "cache"), two_out["predictions"],
                           two_out["metrics"], two_out["excluded"], lines.append)  # fmt: skip
    scored = pl.read_parquet(two_out["predictions"])
    assert scored.schema == pl.Schema(TWO_IMAGE_PREDICTIONS_SCHEMA)
    direct, _ = score_pairs(
        loaded,
        [(ImageRef(index[i]), c) for c in ("a red square", "a green square") for i in "01"],
        4,
    )
    first = scored.row(0, named=True)
    assert [first[k] for k in ("sim_c0_i0", "sim_c0_i1", "sim_c1_i0", "sim_c1_i1")] == (
        pytest.approx(direct.tolist(), abs=1e-6)
    )


def test_family_benchmark_counts_forward_passes(tmp_path, capsys):
    """Every family runs through the same path; a set of K candidates costs K pair passes
    (and one vision pass for the matching head). Rates are printed, not asserted."""
    from vlcomp_dev.bench.evaluate import run_family_benchmark
    from vlcomp_dev.bench.report import model_families_section

    lines: list[str] = []
    result = run_family_benchmark(n_items=6, negatives=2, repeats=1, data_dir=tmp_path,
                                  log=lines.append)  # fmt: skip
    families = result["families"]
    assert list(families) == ["open_clip", "transformers dual encoder",
                              "matching head (BLIP ITM)", "vqascore (LLaVA)"]  # fmt: skip
    matching = families["matching head (BLIP ITM)"]["forward_passes_per_item"]
    assert matching == {"pair": 3.0, "vision": 1.0}
    assert families["vqascore (LLaVA)"]["forward_passes_per_item"] == {"pair": 3.0}
    assert families["open_clip"]["forward_passes_per_item"] == {}
    assert all(numbers["items_per_s"] > 0 for numbers in families.values())
    section = "\n".join(model_families_section(result))
    assert "| vqascore (LLaVA) |" in section and "3 pair" in section
    with capsys.disabled():
        print("\n" + "\n".join(lines))


def test_two_positive_and_image_selection_sets_with_pair_scorers(blip, llava, refs):
    from vlcomp.evaluate.two_image import score_image_selection, score_sugarcrepe_pp

    images = {str(i): ref.path for i, ref in enumerate(refs[:4])}
    triples = pl.DataFrame(
        {"benchmark": "b", "item_id": ["t0", "t1"], "image": ["0", "2"], "family": "swap_att",
         "p1": TEXTS[:2], "p2": TEXTS[1:3], "n": ["a pink triangle", "three hearts"]}
    )  # fmt: skip
    boxes = {"t1": (8, 8, 40, 32)}
    image_sims, text_sims, unreadable = score_sugarcrepe_pp(blip, triples, images, boxes, 4)
    expected, _ = score_pairs(
        blip,
        [(ImageRef(images["0"]), t) for t in (TEXTS[0], TEXTS[1], "a pink triangle")]
        + [(refs[4], t) for t in (TEXTS[1], TEXTS[2], "three hearts")],
        4,
    )
    assert image_sims.reshape(-1).tolist() == pytest.approx(expected.tolist(), abs=1e-6)
    vectors, _ = embed_texts(blip, [TEXTS[0], TEXTS[1]], 4)  # TOT: the ITC text embeddings
    assert text_sims[0, 0] == pytest.approx(float(vectors[0] @ vectors[1]), abs=1e-6)
    assert not unreadable
    with pytest.raises(ValueError, match="has no text embeddings, which the text-only accuracy"):
        score_sugarcrepe_pp(llava, triples, images, boxes, 4)
    selection = pl.DataFrame(
        {"item_id": ["s0"], "caption": [TEXTS[2]], "image_0": ["1"], "image_1": ["3"]}
    )
    similarity, _ = score_image_selection(llava, selection, images, 4)
    expected, _ = score_pairs(llava, [(ImageRef(images[i]), TEXTS[2]) for i in "13"], 4)
    assert similarity.tolist() == [pytest.approx(expected.tolist(), abs=1e-6)]


def test_every_model_presents_one_scorer(blip, llava, refs, checkpoint):
    """The same questions to an embedding model and to both pair scorers, each answered its
    own way: cosine of cached embeddings, or the model's pair scores."""
    world = load_model(ModelSpec("w", "vlcomp-world-vit", checkpoint=checkpoint), "cpu")
    embedding, matching, vqa = scorer_of(world), scorer_of(blip), scorer_of(llava)
    assert isinstance(embedding, EmbeddingScorer) and embedding.score_name == "cosine"
    assert isinstance(matching, JointScorer) and matching.score_name == "itm_log_odds"
    assert vqa.score_name == "vqascore_mean_log_probability"  # t2v_metrics, the default
    assert matching.settings() == blip.model.settings() and embedding.counts() == {}
    assert embedding.has_text_similarity and matching.has_text_similarity
    assert not vqa.has_text_similarity
    with pytest.raises(ValueError, match="text-only similarity is not available"):
        vqa.text_vectors(TEXTS, 4, None, None)
    images = {str(i): ref.path for i, ref in enumerate(refs[:4])}
    items = pl.DataFrame({"item_id": ["w0"], "caption_0": [TEXTS[0]], "caption_1": [TEXTS[1]],
                          "image_0": ["0"], "image_1": ["3"]})  # fmt: skip
    shape = (image_pair_selection(items, images, ["caption_0", "caption_1"]), 4, None, None,
             lambda label: None, None)  # fmt: skip
    cosine = embedding.score_selection(*shape, None)
    pictures, _ = embed_image_refs(world, [refs[0], refs[3]], 4)
    texts, _ = embed_texts(world, TEXTS[:2], 4)
    assert cosine[0] == pytest.approx(texts @ pictures.T, abs=1e-6)
    before = matching.counts()
    unreadable: dict = {}
    itm = matching.score_selection(*shape, unreadable)
    assert matching.counts()["pair"] - before.get("pair", 0) == 4 and not unreadable
    direct, _ = score_pairs(blip, [(refs[i], t) for t in TEXTS[:2] for i in (0, 3)], 4)
    assert itm.reshape(-1).tolist() == pytest.approx(direct.tolist(), abs=1e-6)
    assert vqa.score_selection(*shape, None).shape == cosine.shape == (1, 2, 2)
