"""The README and ``docs/`` stand alone: every file they point at is in the repository, and they
never lean on material a reader does not have (the project's private design notes and the pages
of AG2 they were written from)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = sorted(
    [ROOT / "README.md", *(ROOT / "docs").rglob("*.md"), *(ROOT / "flowc" / "docs").glob("*.md")]
)

#: words that point outside the repository
OUTSIDE = re.compile(
    r"seed pages?|design pages?|design notes?|\bcatalogue\b|\.\./shared|\bshared/(design|seeds)\b"
    r"|ag2-network-[\w-]+",
    re.I,
)
#: a path in backquotes or a link target: a file with one of these suffixes, or a folder
FILE_SUFFIXES = (
    ".py",
    ".flow",
    ".md",
    ".json",
    ".yaml",
    ".yml",
    ".toml",
    ".sh",
    ".lark",
    ".txt",
    ".svg",
    ".html",
    ".xml",
    ".cfg",
)
#: what the commands write and the set-up creates: not in a fresh checkout
GENERATED = ("out/", ".venv/", ".flowc/", ".cache/")
LINK = re.compile(r"\[[^\]\n]*\]\(([^)\s]+)\)")
CODE = re.compile(r"`([^`\n]+)`")
PATH = re.compile(r"\.{0,2}[\w-][\w.-]*(/[\w.-]+)*/?")


def _ids(path: Path) -> str:
    return str(path.relative_to(ROOT))


def outside_words(text: str) -> list[str]:
    """
    >>> outside_words("The seed pages' common mistake, as the catalogue says (../shared/x.md).")
    ['seed pages', 'catalogue', '../shared']
    """
    return [m.group(0) for m in OUTSIDE.finditer(text)]


def referenced_paths(text: str) -> list[tuple[int, str, bool]]:
    """``(line, path, is_link)`` for every relative link target and every backquoted token
    that names a file of the repository (it has a ``/`` and a file suffix, or ends in ``/``).

    >>> referenced_paths("see [the pages](checks/) and `flowc/cli.py`, not `a / b` or `x.py`")
    [(1, 'checks/', True), (1, 'flowc/cli.py', False)]
    """
    out: list[tuple[int, str, bool]] = []
    for m in LINK.finditer(text):
        target = m.group(1).split("#")[0]
        if target and not re.match(r"[a-z][a-z0-9+.-]*:", target):
            out.append((text.count("\n", 0, m.start()) + 1, target, True))
    for m in CODE.finditer(text):
        for token in m.group(1).split():
            token = token.strip("'\",;:()")
            if "/" not in token or not PATH.fullmatch(token):
                continue
            if token.endswith(FILE_SUFFIXES) or token.endswith("/"):
                out.append((text.count("\n", 0, m.start()) + 1, token, False))
    return sorted(out)


@pytest.mark.parametrize("page", DOCS, ids=_ids)
def test_no_reference_to_material_outside_the_repository(page: Path) -> None:
    found = outside_words(page.read_text(encoding="utf-8"))
    assert not found, f"{_ids(page)} refers to material outside the repository: {found}"


@pytest.mark.parametrize("page", DOCS, ids=_ids)
def test_every_file_referenced_exists(page: Path) -> None:
    missing = []
    for line, path, is_link in referenced_paths(page.read_text(encoding="utf-8")):
        if path.startswith(GENERATED):
            continue
        # a link is relative to the page; a path in backquotes is relative to the repository
        base = page.parent if is_link else ROOT
        target = (base / path).resolve()
        if not target.exists() or not target.is_relative_to(ROOT):
            missing.append(f"line {line}: {path}")
    assert not missing, f"{_ids(page)} refers to files that do not exist: {missing}"


def test_the_check_sees_a_missing_file_and_the_words(tmp_path: Path) -> None:
    text = "Run `tools/record.py` as [the guide](guide.md) says; see the design page.\n"
    assert [p for _, p, _ in referenced_paths(text)] == ["guide.md", "tools/record.py"]
    assert outside_words(text) == ["design page"]
