import copy

import pytest
import yaml

from tests.conftest import REPO
from vlcomp.config import ConfigError, training_corpus, validate_config


@pytest.fixture
def default_config():
    return yaml.safe_load((REPO / "config" / "config.yaml").read_text())


def test_default_config_is_valid_and_gets_defaults(default_config):
    config = validate_config(default_config)
    assert config["evaluate"]["device"] == "auto"
    assert training_corpus(config, "world_cc12m") == "cc12m"


def test_validation_does_not_modify_its_input(default_config):
    before = copy.deepcopy(default_config)
    validate_config(default_config)
    assert default_config == before


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (lambda c: c["world"]["eval"].update(n_images="many"), "world.eval.n_images"),
        (lambda c: c["world"].update(colour_count=3), "unknown key(s) 'colour_count'"),
        (lambda c: c["world"]["corpora"]["cc12m"].update(format="csv"), "corpora.cc12m.format"),
        (lambda c: c["models"]["world_cc12m"].update(pretrained="openai"), "exactly one of"),
        (lambda c: c["evaluate"].update(models=["nope"]), "evaluate.models[0]': no model named"),
        (
            lambda c: c["models"]["world_cc12m"]["train"].update(corpus="yfcc"),
            "models.world_cc12m.train.corpus': no world corpus named 'yfcc'",
        ),
        (
            lambda c: c["models"].update(m={"open_clip": "RN50", "checkpoint": "/no/such.pt"}),
            "models.m.checkpoint': file not found: /no/such.pt",
        ),
        (lambda c: c.pop("evaluate"), "'evaluate' is a required property"),
    ],
)
def test_bad_config_names_the_key(default_config, mutate, expected):
    mutate(default_config)
    with pytest.raises(ConfigError) as error:
        validate_config(default_config)
    assert expected in str(error.value)


def test_config_readme_documents_every_key():
    from vlcomp.config import config_docs

    assert (REPO / "config" / "README.md").read_text() == config_docs(), (
        "config/README.md is stale: run `python -m vlcomp.config > config/README.md`"
    )


def test_world_semantics_are_checked_with_the_key(default_config):
    default_config["world"]["corpora"]["cc12m"]["holdout"]["bindings"].append(["teal", "circle"])
    with pytest.raises(
        ConfigError, match=r"config key 'world.corpora.cc12m.holdout.bindings\[4\]'"
    ):
        validate_config(default_config)
