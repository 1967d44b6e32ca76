"""WordNet set-up: a WordNet that NLTK already reads is copied; apt and the network are the
last resort, never tried while one is there."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import nltk
import pytest

from tests.conftest import REPO
from vlcomp import wordnet_setup
from vlcomp.wordnet_setup import WORDNET_FILES, ensure_wordnet, find_wordnet

REPO_WORDNET = REPO / "resources" / "nltk_data" / "corpora" / "wordnet"
pytestmark = pytest.mark.skipif(
    not (REPO_WORDNET / "lexnames").is_file(),
    reason=f"{REPO_WORDNET} missing: run `make setup` (these tests copy it)",
)


def user_copy(root: Path) -> Path:
    """An NLTK data folder with WordNet 3.0 in it, as a user's own NLTK_DATA."""
    shutil.copytree(REPO_WORDNET, root / "corpora" / "wordnet")
    return root


@pytest.fixture
def no_fetching(monkeypatch, tmp_path):
    """apt-get, dpkg-deb and nltk.download record their call and fail; an empty NLTK path
    and no /usr/share/wordnet, so each test says where WordNet is."""
    calls: list[str] = []

    def which(name, *args, **kwargs):
        calls.append(f"which {name}")
        return f"/usr/bin/{name}"

    def run(command, *args, **kwargs):
        calls.append(" ".join(map(str, command)))
        return subprocess.CompletedProcess(command, 100, "", "refused in this test")

    def download(*args, **kwargs):
        calls.append("nltk.download")
        return False

    monkeypatch.setattr(wordnet_setup.shutil, "which", which)
    monkeypatch.setattr(wordnet_setup.subprocess, "run", run)
    monkeypatch.setattr(nltk, "download", download)
    monkeypatch.setattr(wordnet_setup, "SYSTEM_WORDNET", tmp_path / "no_system_wordnet")
    monkeypatch.setattr(nltk.data, "path", [])
    monkeypatch.delenv("NLTK_DATA", raising=False)
    return calls


def test_wordnet_under_nltk_data_is_copied_without_apt(tmp_path, monkeypatch, no_fetching):
    user = user_copy(tmp_path / "user_nltk_data")
    monkeypatch.setenv("NLTK_DATA", f"{tmp_path / 'elsewhere'}:{user}")
    target = tmp_path / "repo" / "resources" / "nltk_data"

    origin = ensure_wordnet(target)

    assert no_fetching == []
    assert str(user / "corpora" / "wordnet") in origin
    for name in (*WORDNET_FILES, "lexnames"):
        copied = target / "corpora" / "wordnet" / name
        assert copied.read_bytes() == (REPO_WORDNET / name).read_bytes(), name
    nltk.data.path.insert(0, str(target))  # NLTK reads corpora only from its path
    reader = nltk.corpus.reader.WordNetCorpusReader(nltk.data.find("corpora/wordnet"), None)
    assert reader.synset("dog.n.01").lexname() == "noun.animal"
    assert ensure_wordnet(target) == "already present"


def test_wordnet_on_nltk_data_path_is_found(tmp_path, monkeypatch, no_fetching):
    home = user_copy(tmp_path / "home" / "nltk_data")
    monkeypatch.setattr(nltk.data, "path", [str(tmp_path / "empty"), str(home)])
    assert find_wordnet() == home / "corpora" / "wordnet"
    assert find_wordnet(exclude=home) is None
    ensure_wordnet(tmp_path / "target")
    assert no_fetching == []


def test_incomplete_or_other_wordnet_is_not_used(tmp_path, monkeypatch, no_fetching):
    partial = user_copy(tmp_path / "partial")
    (partial / "corpora" / "wordnet" / "index.sense").unlink()
    older = user_copy(tmp_path / "older")
    data_adj = older / "corpora" / "wordnet" / "data.adj"
    data_adj.write_bytes(
        data_adj.read_bytes().replace(b"WordNet 3.0 Copyright", b"WordNet 2.1 Copyright")
    )
    monkeypatch.setenv("NLTK_DATA", f"{partial}:{older}")
    assert find_wordnet() is None

    with pytest.raises(RuntimeError, match="WordNet 3.0 could not be installed"):
        ensure_wordnet(tmp_path / "target")
    # Only now, with no usable copy anywhere, are apt and the network tried.
    assert "apt-get download wordnet-base wordnet-sense-index" in no_fetching
    assert no_fetching[-1] == "nltk.download"
