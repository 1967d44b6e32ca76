"""A transformers model whose tokenizer reads the wrong vocabulary file is refused at load
time, naming the model, the probe caption and the fraction of unknown tokens, rather than
evaluated on texts of [UNK]s; every library version, transformers' included, is in the
provenance of every model's tables."""

from __future__ import annotations

import importlib.metadata

import pytest

from vlcomp.evaluate.embed import model_metadata
from vlcomp.models.catalogue import ModelSpec, ModelUnavailableError
from vlcomp.models.loading import PROBE_CAPTION, load_model
from vlcomp.models.tiny_models import save_tiny_blip_itm, save_tiny_llava
from vlcomp.models.versions import provenance

# German words and the special tokens: no English word and no single letter
WRONG_VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "der", "die", "das", "und", "ist"]


def entry(folder, kind):
    return {"transformers": {"id": str(folder), "kind": kind}}


def test_a_tokenizer_of_another_vocabulary_fails_at_load(tmp_path):
    from transformers import BertTokenizer

    folder = save_tiny_blip_itm(tmp_path / "blip")
    spec = ModelSpec.from_config("blip_wrong", entry(folder, "matching_head"))
    load_model(spec, "cpu")  # its own tokenizer passes
    wrong = BertTokenizer(vocab={t: i for i, t in enumerate(WRONG_VOCAB)}, model_max_length=64)
    wrong.save_pretrained(folder)  # replaces vocab.txt and the tokenizer files
    with pytest.raises(ModelUnavailableError) as raised:
        load_model(spec, "cpu")
    message = str(raised.value)
    n_words = len(PROBE_CAPTION.split())
    assert message.startswith(f"models.blip_wrong ({folder}): its tokenizer (BertTokenizer)")
    assert f"maps {n_words} of the {n_words} tokens of the probe caption {PROBE_CAPTION!r}" in (
        message
    )
    assert "to its unknown token '[UNK]' (100%, more than 50%)" in message


def test_transformers_version_is_in_every_models_provenance(tmp_path):
    version = importlib.metadata.version("transformers")
    assert provenance()["transformers"] == version  # open_clip models' tables too
    loaded = load_model(ModelSpec.from_config("l", entry(save_tiny_llava(tmp_path), "vqascore")))
    meta = model_metadata("l", loaded)
    assert meta["transformers"] == version and meta["torch"] and meta["open_clip"]
