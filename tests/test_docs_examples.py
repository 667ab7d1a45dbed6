"""The outputs the README and ``docs/`` show are what flowc prints: each example here runs the
command its page shows, on the inputs the page uses, and compares the whole output with the
page's block (absolute paths and trailing whitespace aside), so that a page cannot drop a
line of the output without saying so.

- ``docs/runtime.md``: the first ``flowc run`` transcript. The page names its flow and script
  without showing them; :data:`REVIEW_FLOW` and :data:`REVIEW_SCRIPT` are the ones its
  transcript quotes (the rules by number, line and text, the turns' texts).
- ``README.md``: ``flowc check demo/review.flow``, run from the repository's root as the
  README shows it; the README's ```flow block above it is that file's text.
- ``docs/properties.md``: each ```flow block followed by a ```text block that starts
  ``$ flowc check NAME.flow``, checked as NAME.flow.
"""

from __future__ import annotations

import itertools
import re
import shlex
from pathlib import Path

import pytest

from flowc.cli import main
from tests.runtime.test_cli import FLOW, SCRIPT_YAML

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
RUNTIME = ROOT / "docs" / "runtime.md"
PROPERTIES = ROOT / "docs" / "properties.md"
BLOCK = re.compile(r"```(?P<info>[^\n]*)\n(?P<body>.*?)\n```", re.S)

#: the flow of docs/runtime.md's first example (`review.flow`) and its script
#: (`script.yaml`): the runtime tests' own
REVIEW_FLOW, REVIEW_SCRIPT = FLOW, SCRIPT_YAML


def blocks(page: Path) -> list[tuple[str, str]]:
    """``(info string, body)`` of every fenced code block of ``page``, in order."""
    return [(m.group("info").strip(), m.group("body")) for m in BLOCK.finditer(page.read_text())]


def shown(page: Path, command: str) -> tuple[list[str], str]:
    """The command of the block that starts ``$ COMMAND`` (as argv, without ``flowc`` and
    without a trailing ``# comment``) and the output the block shows under it."""
    found = [body for _, body in blocks(page) if body.startswith(f"$ {command}")]
    assert len(found) == 1, f"{page.name} has {len(found)} blocks that start `$ {command}`"
    line, _, output = found[0].partition("\n")
    program, *argv = shlex.split(line.removeprefix("$ "), comments=True)
    assert program == "flowc", line
    return argv, output


def normalized(text: str, *folders: Path) -> str:
    """``text`` with the absolute paths of ``folders`` made relative and each line's trailing
    whitespace (and the blank lines at the end) dropped.

    >>> normalized("  --> /tmp/x/a.flow:1:1  \\n\\n", Path("/tmp/x"))
    '  --> a.flow:1:1'
    """
    for folder in folders:
        text = text.replace(f"{folder}/", "").replace(str(folder), ".")
    return "\n".join(line.rstrip() for line in text.splitlines()).rstrip("\n")


def printed(
    argv: list[str], cwd: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> tuple[int, str]:
    """The exit code and the standard output of ``flowc ARGV`` run in ``cwd``."""
    monkeypatch.chdir(cwd)
    capsys.readouterr()
    code = main(argv)
    return code, normalized(capsys.readouterr().out, cwd, ROOT)


def test_the_first_run_of_the_runtime_page(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    argv, output = shown(RUNTIME, "flowc run review.flow --script script.yaml")
    assert argv == ["run", "review.flow", "--script", "script.yaml"]
    # the comment on the command names the declaration the run turns on
    assert "tool approve sets done = true" in REVIEW_FLOW
    (tmp_path / "review.flow").write_text(REVIEW_FLOW)
    (tmp_path / "script.yaml").write_text(REVIEW_SCRIPT)
    code, out = printed(argv, tmp_path, capsys, monkeypatch)
    assert code == 0
    assert out == normalized(output)


def test_the_check_of_the_readme(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    argv, output = shown(README, "flowc check demo/review.flow")
    assert argv == ["check", "demo/review.flow"]
    # the ```flow block the README shows before it is the file (after its opening lines)
    flows = [body for info, body in blocks(README) if info == "flow"]
    before = next(body for body in flows if 'otherwise terminate "max_revisions"' in body)
    assert (ROOT / "demo" / "review.flow").read_text().endswith(f"\n{before}\n")
    _, out = printed(argv, ROOT, capsys, monkeypatch)
    assert out == normalized(output)


def property_checks() -> list[tuple[str, str, str]]:
    """``(file name, flow text, the output shown)`` of every ``flowc check`` of
    docs/properties.md that follows its ```flow block."""
    out = []
    for (info, body), (next_info, next_body) in itertools.pairwise(blocks(PROPERTIES)):
        if info != "flow" or next_info != "text" or not next_body.startswith("$ flowc check "):
            continue
        command, _, output = next_body.partition("\n")
        out.append((command.split()[-1], body + "\n", output))
    return out


def test_the_properties_page_shows_its_checks() -> None:
    names = [name for name, _, _ in property_checks()]
    assert {"chat.flow", "decision.flow", "refund.flow"} <= set(names)
    assert len(names) >= 7


@pytest.mark.parametrize(
    ("name", "text", "output"),
    property_checks(),
    ids=[f"{name}-{n}" for n, (name, _, _) in enumerate(property_checks())],
)
def test_the_checks_of_the_properties_page(
    name: str,
    text: str,
    output: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    (tmp_path / name).write_text(text, encoding="utf-8")
    _, out = printed(["check", name], tmp_path, capsys, monkeypatch)
    assert out == normalized(output)
