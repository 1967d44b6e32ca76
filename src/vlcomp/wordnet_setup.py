"""Make WordNet 3.0 readable by NLTK without internet and without root.

Sources, tried in order: the target folder itself; a WordNet 3.0 that NLTK already reads
(``corpora/wordnet/`` under any ``$NLTK_DATA`` or ``nltk.data.path`` entry), copied without
any package manager or network; Debian's ``wordnet-base`` package files (already installed
under /usr/share/wordnet, or fetched with ``apt-get download``, which needs no root, and
unpacked with ``dpkg-deb -x``); ``nltk.download`` for users with internet.

Run as ``python -m vlcomp.wordnet_setup <nltk_data_dir>``.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

WORDNET_FILES = (
    "adj.exc adv.exc cntlist cntlist.rev data.adj data.adv data.noun data.verb index.adj "
    "index.adv index.noun index.sense index.verb noun.exc verb.exc"
).split()

# The 45 lexicographer files of WordNet 3.0 (lexnames(5WN)), with their syntactic category
# (1 noun, 2 verb, 3 adjective, 4 adverb): the `lexnames` file NLTK expects and Debian omits.
LEXNAMES = (
    [("adj.all", 3), ("adj.pert", 3), ("adv.all", 4)]
    + [
        (f"noun.{n}", 1)
        for n in (
            "Tops act animal artifact attribute body cognition communication event feeling food "
            "group location motive object person phenomenon plant possession process quantity "
            "relation shape state substance time"
        ).split()
    ]
    + [
        (f"verb.{n}", 2)
        for n in (
            "body change cognition communication competition consumption contact creation "
            "emotion motion perception possession social stative weather"
        ).split()
    ]
    + [("adj.ppl", 3)]
)


SYSTEM_WORDNET = Path("/usr/share/wordnet")  # Debian's wordnet-base
_VERSION = re.compile(r"Word[nN]et (\d+(?:\.\d+)?) Copyright")  # as NLTK's get_version


def wordnet_ready(nltk_data: Path) -> bool:
    return (nltk_data / "corpora" / "wordnet" / "lexnames").is_file() and all(
        (nltk_data / "corpora" / "wordnet" / name).is_file() for name in WORDNET_FILES
    )


def wordnet_version(folder: Path) -> str | None:
    """The version a WordNet dict folder states in the licence header of ``data.adj``."""
    try:
        with (folder / "data.adj").open(encoding="latin-1") as handle:
            for _, line in zip(range(64), handle, strict=False):
                if match := _VERSION.search(line):
                    return match.group(1)
    except OSError:
        return None
    return None


def nltk_search_path() -> list[Path]:
    """Where NLTK looks for its data, in its order: the ``$NLTK_DATA`` entries (also those
    set after NLTK was imported), then ``nltk.data.path``."""
    import nltk

    entries = [p for p in os.environ.get("NLTK_DATA", "").split(os.pathsep) if p]
    out: list[Path] = []
    for entry in [*entries, *nltk.data.path]:
        path = Path(entry)
        if path not in out:
            out.append(path)
    return out


def find_wordnet(exclude: Path | None = None) -> Path | None:
    """The first ``corpora/wordnet/`` folder on NLTK's search path that NLTK can read as
    WordNet 3.0 (every dict file, ``lexnames``, a 3.0 header), other than ``exclude``'s."""
    skip = (exclude / "corpora" / "wordnet").resolve() if exclude is not None else None
    for entry in nltk_search_path():
        folder = entry / "corpora" / "wordnet"
        if folder.resolve() == skip or not wordnet_ready(entry):
            continue
        if wordnet_version(folder) == "3.0":
            return folder
    return None


def _install_from(source: Path, nltk_data: Path) -> None:
    target = nltk_data / "corpora" / "wordnet"
    staging = Path(tempfile.mkdtemp(prefix=".wordnet-", dir=nltk_data))
    try:
        for name in WORDNET_FILES:
            shutil.copyfile(source / name, staging / name)
        (staging / "lexnames").write_text(
            "".join(f"{i:02d}\t{name}\t{cat}\n" for i, (name, cat) in enumerate(LEXNAMES))
        )
        for path in staging.iterdir():
            path.chmod(0o644)
        staging.chmod(0o755)
        (nltk_data / "corpora").mkdir(parents=True, exist_ok=True)
        if target.exists():
            shutil.rmtree(target)
        os.replace(staging, target)
    finally:
        if staging.exists():
            shutil.rmtree(staging)


def _debian_download(workdir: Path) -> Path | None:
    if not shutil.which("apt-get") or not shutil.which("dpkg-deb"):
        return None
    result = subprocess.run(
        ["apt-get", "download", "wordnet-base", "wordnet-sense-index"],
        cwd=workdir,
        capture_output=True,
        text=True,
    )
    if result.returncode != 0:
        print(f"apt-get download failed: {result.stderr.strip()}", file=sys.stderr)
        return None
    for deb in workdir.glob("*.deb"):
        subprocess.run(["dpkg-deb", "-x", str(deb), str(workdir / "root")], check=True)
    source = workdir / "root" / "usr" / "share" / "wordnet"
    return source if (source / "data.noun").is_file() else None


def ensure_wordnet(nltk_data: Path) -> str:
    """Install WordNet under ``nltk_data`` if needed; return where it came from."""
    nltk_data = nltk_data.resolve()
    nltk_data.mkdir(parents=True, exist_ok=True)
    if wordnet_ready(nltk_data):
        return "already present"
    found = find_wordnet(exclude=nltk_data)
    if found is not None:
        _install_from(found, nltk_data)
        return f"copied from {found}, where NLTK already reads it"
    system = SYSTEM_WORDNET
    if all((system / name).is_file() for name in WORDNET_FILES):
        _install_from(system, nltk_data)
        return str(system)
    with tempfile.TemporaryDirectory() as tmp:
        source = _debian_download(Path(tmp))
        if source is not None:
            _install_from(source, nltk_data)
            return "Debian packages wordnet-base + wordnet-sense-index (apt-get download)"
    import nltk

    if (
        nltk.download("wordnet", download_dir=str(nltk_data), quiet=True)
        and (nltk_data / "corpora" / "wordnet.zip").exists()
    ):
        return "nltk.download"
    raise RuntimeError(
        "WordNet 3.0 could not be installed: no /usr/share/wordnet, `apt-get download "
        "wordnet-base wordnet-sense-index` failed (on Debian/Ubuntu run `apt-get update` "
        "first), and nltk.download('wordnet') had no network. Put the WordNet 3.0 dict files "
        f"in {nltk_data / 'corpora' / 'wordnet'} and rerun."
    )


def check_wordnet(nltk_data: Path) -> str:
    """The version of the WordNet NLTK reads from ``nltk_data``, after looking one synset up
    (reads the index, not every synset: a second, not fifteen)."""
    import nltk

    nltk.data.path.insert(0, str(nltk_data.resolve()))
    from nltk.corpus import wordnet

    if wordnet.synset("dog.n.01").lexname() != "noun.animal":
        raise RuntimeError(f"the WordNet under {nltk_data} does not read dog.n.01 right")
    return str(wordnet.get_version())


if __name__ == "__main__":
    directory = Path(sys.argv[1] if len(sys.argv) > 1 else "resources/nltk_data")
    origin = ensure_wordnet(directory)
    version = check_wordnet(directory)
    print(f"WordNet {version} at {directory}/corpora/wordnet ({origin})")
