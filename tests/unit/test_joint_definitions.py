"""Each scoring definition of the joint kinds against a forward pass written here from its
authors' code, on tiny random models (``vlcomp.models.tiny_models``):

- vqascore ``t2v_metrics``: t2v_metrics' LLaVA-1.5 wrapper (``llava_model.py``): the system
  message, ``expand2square``, ``tokenizer_image_token``, labels from the prompt's length
  minus its trailing space, ``Yes</s>``, exp(-mean cross-entropy);
- matching_head ``salesforce``: salesforce/BLIP ``train_retrieval.evaluation``:
  ``pre_caption``, 35 tokens, [ENC] for ITM, ITM match logit + ITC cosine for retrieval.

(``legacy_sum`` and ``transformers`` are checked against a direct forward pass in
``test_hf_joint``.) The max |difference| of each is printed."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from PIL import Image

from vlcomp.evaluate.embed import model_metadata
from vlcomp.evaluate.images import EmbeddingCache, ImageRef
from vlcomp.evaluate.joint_scoring import pair_cache, retrieval_ranks, score_pairs
from vlcomp.evaluate.metrics import pessimistic_rank
from vlcomp.models.catalogue import ModelSpec, ModelUnavailableError
from vlcomp.models.hf_models import TransformersSource, source_problem
from vlcomp.models.joint import for_retrieval, pre_caption
from vlcomp.models.loading import load_model
from vlcomp.models.tiny_models import (
    IMAGE,
    PATCH,
    save_tiny_blip_itm,
    save_tiny_llava,
    wordpiece_vocab,
)

SYSTEM = (
    "A chat between a curious user and an artificial intelligence assistant. The assistant "
    "gives helpful, detailed, and polite answers to the user's questions."
)
LONG = " ".join(["the quick xylophone zebra jumped"] * 8)  # 40 words: > 30 words, > 35 tokens
TEXTS = ["a red circle left of a blue square", "Two small green stars above a large heart!", LONG]
CAPTIONS = [  # the same after BLIP's pre_caption, written out by hand
    "a red circle left of a blue square",
    "two small green stars above a large heart",
    " ".join(LONG.split(" ")[:30]),
]


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("definitions")
    return {
        "blip": save_tiny_blip_itm(root / "blip"),
        "blip_tokens": save_tiny_blip_itm(root / "blip_tokens", blip_tokens=True),
        "llava": save_tiny_llava(root / "llava"),
    }


def entry(folder, kind, **options):
    return {"transformers": {"id": str(folder), "kind": kind, **options}}


def load(key, folder, kind, **options):
    return load_model(ModelSpec.from_config(key, entry(folder, kind, **options)), "cpu")


@pytest.fixture(scope="module")
def images(tmp_path_factory):
    """Images of three shapes (square, wide, tall): the t2v_metrics padding shows on two."""
    folder = tmp_path_factory.mktemp("images")
    rng = np.random.default_rng(1)
    refs = []
    for i, (h, w) in enumerate([(32, 32), (30, 50), (48, 40)]):
        path = folder / f"{i}.png"
        Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8)).save(path)
        refs.append(ImageRef(str(path)))
    return refs


# --------------------------------------------------------------------------- VQAScore


def t2v_metrics_by_hand(folder, refs, texts):
    """VQAScore of t2v_metrics' LLaVA-1.5 wrapper, one pair per forward pass."""
    from transformers import LlavaForConditionalGeneration, LlavaProcessor

    model = LlavaForConditionalGeneration.from_pretrained(folder).eval()
    processor = LlavaProcessor.from_pretrained(folder)
    tokenizer = processor.tokenizer
    image_id = tokenizer.convert_tokens_to_ids("<image>")
    n_image = (IMAGE // PATCH) ** 2  # vision_feature_select_strategy default: no CLS feature

    def tokenizer_image_token(text):
        before, after = text.split("<image>")
        first, second = tokenizer(before).input_ids, tokenizer(after).input_ids
        assert first[0] == second[0] == tokenizer.bos_token_id
        return first + [image_id] * n_image + second[1:]

    fill = tuple(int(255 * m) for m in processor.image_processor.image_mean)
    scores = np.zeros((len(refs), len(texts)))
    scored_tokens = set()
    with torch.inference_mode():
        for i, ref in enumerate(refs):
            image = Image.open(ref.path).convert("RGB")
            width, height = image.size
            side = max(width, height)
            square = Image.new("RGB", (side, side), fill)
            square.paste(image, ((side - width) // 2, (side - height) // 2))
            pixels = processor.image_processor(square, return_tensors="pt")["pixel_values"]
            for j, text in enumerate(texts):
                question = f'Does this figure show "{text}"? Please answer yes or no.'
                prompt = f"{SYSTEM} USER: <image>\n{question} ASSISTANT: "
                ids = tokenizer_image_token(prompt + "Yes</s>")
                start = len(tokenizer_image_token(prompt)) - 1  # minus the trailing space
                logits = model(input_ids=torch.tensor([ids]), pixel_values=pixels).logits[0]
                log_p = torch.log_softmax(logits.float(), dim=-1)
                per_token = [float(log_p[k - 1, ids[k]]) for k in range(start, len(ids))]
                scored_tokens.add(tuple(tokenizer.convert_ids_to_tokens(ids[start:])))
                scores[i, j] = np.exp(np.mean(per_token))
    return scores, scored_tokens


def test_t2v_metrics_vqascore_equals_its_wrapper_by_hand(folders, images):
    loaded = load("llava", folders["llava"], "vqascore")  # t2v_metrics is the default
    scorer = loaded.model
    assert scorer.definition == "t2v_metrics" and scorer.score_name.endswith("mean_log_probability")
    assert scorer.prompt == f"{SYSTEM} USER: {{image}}\n{{question}} ASSISTANT:"
    pairs = [(ref, text) for ref in images for text in TEXTS]
    ours, _ = score_pairs(loaded, pairs, batch_size=4)  # rows of different lengths: padding
    by_hand, scored_tokens = t2v_metrics_by_hand(folders["llava"], images, TEXTS)
    assert scored_tokens == {("ĠYes", "</s>")}
    difference = float(np.abs(np.exp(ours.reshape(by_hand.shape)) - by_hand).max())
    log_difference = float(np.abs(ours.reshape(by_hand.shape) - np.log(by_hand)).max())
    print(f"\nt2v_metrics VQAScore: max |exp(ours) - by hand| = {difference:.2e}, "
          f"max |log difference| = {log_difference:.2e}")  # fmt: skip
    assert difference < 1e-6 and log_difference < 1e-5
    assert float(np.log(by_hand).std()) > 1e-3  # random weights still tell pairs apart
    meta = model_metadata("llava", loaded)
    assert meta["joint_definition"] == "t2v_metrics"
    assert json.loads(meta["vqascore_answer_tokens"]) == ["ĠYes", "</s>"]
    assert loaded.fingerprint.endswith("+vqascore+t2v_metrics")


def test_vqascore_definitions_differ_and_never_share_a_cache(folders, images):
    t2v = load("t2v", folders["llava"], "vqascore")
    legacy = load("legacy", folders["llava"], "vqascore", definition="legacy_sum")
    assert legacy.model.prompt == "USER: {image}\n{question} ASSISTANT:"  # its own default
    assert legacy.model.answer_ids == t2v.model.answer_ids[:1]  # Yes, without </s>
    pairs = [(ref, TEXTS[0]) for ref in images]
    a, _ = score_pairs(t2v, pairs, 4)
    b, _ = score_pairs(legacy, pairs, 4)
    assert not np.allclose(a, b)
    assert t2v.fingerprint != legacy.fingerprint
    cache = EmbeddingCache(images[0].path + ".cache", "image")
    assert pair_cache(t2v, cache).modality != pair_cache(legacy, cache).modality


# --------------------------------------------------------------------------- BLIP


def blip_by_hand(folder, enc_id, refs, captions):
    """salesforce/BLIP's scores, one pair per pass: the ITM log-odds with [ENC] first, and
    the retrieval score ITM match logit + ITC cosine."""
    from transformers import BlipForImageTextRetrieval, BlipProcessor

    model = BlipForImageTextRetrieval.from_pretrained(folder).eval()
    processor = BlipProcessor.from_pretrained(folder)
    itm = np.zeros((len(refs), len(captions)))
    retrieval = np.zeros_like(itm)
    normalize = torch.nn.functional.normalize
    with torch.inference_mode():
        for i, ref in enumerate(refs):
            pixels = processor.image_processor(
                Image.open(ref.path).convert("RGB"), return_tensors="pt"
            )["pixel_values"]
            states = model.vision_model(pixel_values=pixels).last_hidden_state
            image_feature = normalize(model.vision_proj(states[:, 0, :]), dim=-1)
            for j, caption in enumerate(captions):
                text = processor.tokenizer(caption, truncation=True, max_length=35,
                                           return_tensors="pt")  # fmt: skip
                ids = text.input_ids.clone()
                assert ids.shape[1] <= 35
                text_states = model.text_encoder(ids, attention_mask=text.attention_mask)
                text_feature = normalize(
                    model.text_proj(text_states.last_hidden_state[:, 0, :]), dim=-1
                )
                ids[:, 0] = enc_id
                fused = model.text_encoder(
                    ids, attention_mask=text.attention_mask, encoder_hidden_states=states
                ).last_hidden_state
                logits = model.itm_head(fused[:, 0, :])[0]
                itm[i, j] = float(logits[1] - logits[0])
                retrieval[i, j] = float(logits[1] + image_feature[0] @ text_feature[0])
    return itm, retrieval


def test_pre_caption_as_blip_writes_it():
    assert [pre_caption(t) for t in TEXTS] == CAPTIONS
    assert pre_caption('A "quoted" caption:  with (marks)~ and #tags; ok.') == (
        "a quoted caption with marks and tags ok"
    )


def test_salesforce_blip_equals_blips_evaluation_by_hand(folders, images):
    loaded = load("blip", folders["blip"], "matching_head")  # salesforce is the default
    head = loaded.model
    enc_id = len(wordpiece_vocab()) + 1  # BERT's vocabulary, [DEC], then [ENC]
    assert head.definition == "salesforce" and head.enc_token_id == enc_id
    assert head.rerank_top_k == 256 and head.context == 35
    assert loaded.details["blip_enc_token_id"].startswith(f"{enc_id} (BLIP's vocabulary layout")
    assert len(head.tokenizer.tokenize(pre_caption(LONG))) > 35  # truncation is exercised
    pairs = [(ref, text) for ref in images for text in TEXTS]
    itm, retrieval = blip_by_hand(folders["blip"], enc_id, images, CAPTIONS)
    ours, _ = score_pairs(loaded, pairs, batch_size=4)
    itm_difference = float(np.abs(ours.reshape(itm.shape) - itm).max())
    reranking = for_retrieval(loaded)
    assert for_retrieval(reranking) is reranking
    assert reranking.model.counts is head.counts and reranking.model.rerank_top_k == 256
    ours_retrieval, _ = score_pairs(reranking, pairs, batch_size=4)
    retrieval_difference = float(np.abs(ours_retrieval.reshape(itm.shape) - retrieval).max())
    print(f"\nsalesforce BLIP: max |ITM log-odds difference| = {itm_difference:.2e}, "
          f"max |ITM logit + ITC difference| = {retrieval_difference:.2e}")  # fmt: skip
    assert itm_difference < 1e-5 and retrieval_difference < 1e-5
    assert float(itm.std()) > 1e-3
    # the retrieval ranks with k = all are BLIP's score matrix ranked
    owner = np.array([0, 1, 2])
    _, i2t, t2i, _ = retrieval_ranks(reranking, images, TEXTS, owner, 4, top_k=len(TEXTS))
    positive = owner[None, :] == np.arange(len(images))[:, None]
    assert i2t.tolist() == pessimistic_rank(retrieval, positive).tolist()
    assert t2i.tolist() == pessimistic_rank(retrieval.T, positive.T).tolist()
    # another definition: another fingerprint (embedding cache) and pair-cache name
    hf = load("blip_hf", folders["blip"], "matching_head", definition="transformers")
    assert hf.model.rerank_top_k == 16 and for_retrieval(hf) is hf
    assert loaded.fingerprint.endswith("+matching_head+salesforce")
    assert hf.fingerprint.endswith("+matching_head+transformers")
    cache = EmbeddingCache(images[0].path + ".cache", "image")
    assert pair_cache(loaded, cache).modality != pair_cache(hf, cache).modality
    assert pair_cache(reranking, cache).modality != pair_cache(loaded, cache).modality


def test_enc_token_from_the_tokenizer_or_blips_layout(folders, images, tmp_path):
    by_layout = load("a", folders["blip"], "matching_head")
    by_token = load("b", folders["blip_tokens"], "matching_head")
    assert by_token.details["blip_enc_token_id"].endswith("(the tokenizer's [ENC])")
    assert by_token.model.enc_token_id == by_layout.model.enc_token_id
    pairs = [(ref, text) for ref in images for text in TEXTS]
    assert np.array_equal(score_pairs(by_token, pairs, 4)[0], score_pairs(by_layout, pairs, 4)[0])
    # neither: the tokenizer lacks [ENC] and bos_token_id is not [DEC] of BLIP's layout
    folder = save_tiny_blip_itm(tmp_path / "other")
    config = json.loads((folder / "config.json").read_text())
    config["text_config"]["bos_token_id"] = 2
    (folder / "config.json").write_text(json.dumps(config))
    with pytest.raises(ModelUnavailableError, match=r"models\.c\.transformers\.definition: "
                       r"salesforce starts BLIP's ITM pass with the \[ENC\] token"):  # fmt: skip
        load("c", folder, "matching_head")
    assert load("c", folder, "matching_head", definition="transformers").model.enc_token_id is None


def test_definition_options_and_their_defaults(tmp_path):
    def source(kind, **options):
        return TransformersSource.from_entry({"id": str(tmp_path), "kind": kind, **options})

    assert source("matching_head").option("rerank_top_k") == 256
    assert source("matching_head", definition="transformers").option("rerank_top_k") == 16
    assert (
        source("matching_head", definition="transformers", rerank_top_k=8).option("rerank_top_k")
        == 8
    )
    assert source("vqascore").option("prompt").startswith(SYSTEM)
    assert source("vqascore", definition="legacy_sum").option("prompt").startswith("USER:")
    assert source_problem("m", source("vqascore", definition="salesforce")) == (
        "models.m.transformers.definition",
        "'salesforce' is not a definition of kind vqascore (known: t2v_metrics, legacy_sum)",
    )
    assert source_problem("m", source("dual_encoder", definition="t2v_metrics"))[1].startswith(
        "an option of kind matching_head, vqascore, not kind dual_encoder"
    )
