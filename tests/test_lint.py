"""The code standards are part of the test suite: ruff, snakefmt and snakemake --lint."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

BIN = Path(sys.executable).parent


@pytest.mark.parametrize(
    "command",
    [
        ["ruff", "check", "."],
        ["ruff", "format", "--check", "."],
        ["snakefmt", "--check", "Snakefile", "workflow"],
        ["snakemake", "--lint", "--cores", "1"],
    ],
    ids=["ruff", "ruff-format", "snakefmt", "snakemake-lint"],
)
def test_lint(command):
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    result = subprocess.run(
        [str(BIN / command[0]), *command[1:]], cwd=REPO, capture_output=True, text=True, env=env
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    if command[0] == "snakemake":
        assert "Congratulations" in result.stdout + result.stderr


def report_calls(text: str) -> list[tuple[int, str]]:
    """(line, arguments) of every ``report(...)`` call in a rule file."""
    calls = []
    for match in re.finditer(r"\breport\(", text):
        depth, end = 1, match.end()
        while depth:
            depth += {"(": 1, ")": -1}.get(text[end], 0)
            end += 1
        calls.append((text.count("\n", 0, match.start()) + 1, text[match.end() : end - 1]))
    return calls


def caption_problems(path: Path) -> list[str]:
    """What would break a caption as Snakemake renders it: Jinja with trim_blocks and
    lstrip_blocks, then RST."""
    import jinja2

    where, problems = path.relative_to(REPO), []
    lines = [*path.read_text().splitlines(), "", ""]
    for number, text in enumerate(lines[:-2], 1):
        # lstrip_blocks drops the indentation before a tag, which RST needs
        if re.match(r"\s+\{%.*?%\}\S", text):
            problems.append(f"{where}:{number}: indented text after a tag")
        # trim_blocks drops the newline after a tag: the next line of text is glued on, or
        # one blank line no longer ends the paragraph
        tag_ends_text = re.search(r"\S.*%\}$", text) and not re.fullmatch(
            r"\s*\{%((?!%\}).)*%\}", text
        )
        after = lines[number : number + 2]
        if tag_ends_text and after[0][:1] not in (" ", "{") and after != ["", ""]:
            problems.append(f"{where}:{number}: the newline after the tag is lost")
    try:
        jinja2.Environment(trim_blocks=True, lstrip_blocks=True).parse(path.read_text())
    except jinja2.TemplateSyntaxError as error:
        problems.append(f"{where}:{error.lineno}: {error.message}")
    return problems


def test_every_report_output_has_a_caption():
    """Each report() names an RST caption in workflow/report/ that exists and renders, and
    no caption lies unused."""
    used, problems = set(), []
    for smk in sorted((REPO / "workflow" / "rules").glob("*.smk")):
        for line, arguments in report_calls(smk.read_text()):
            where = f"{smk.relative_to(REPO)}:{line}"
            caption = re.search(r'caption="([^"]+)"', arguments)
            if caption is None:
                problems.append(f"{where}: report() without caption=")
                continue
            path = (smk.parent / caption[1]).resolve()
            if not path.is_file():
                problems.append(f"{where}: caption {caption[1]} not found")
                continue
            used.add(path)
            problems += caption_problems(path)
    assert used, "no report() with a caption in workflow/rules"
    unused = sorted(p.name for p in (REPO / "workflow" / "report").glob("*.rst") if p not in used)
    assert not problems and not unused, (problems, unused)
