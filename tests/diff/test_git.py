"""`flowc diff` with git: ``REV:path`` on either side, and as git's diff driver."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from flowc.cli import main
from tests.diff.test_known_edits import BASE

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def git(repo: Path, *args: str) -> str:
    proc = subprocess.run(
        ["git", *args],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
        env={
            "GIT_AUTHOR_NAME": "t",
            "GIT_AUTHOR_EMAIL": "t@example.com",
            "GIT_COMMITTER_NAME": "t",
            "GIT_COMMITTER_EMAIL": "t@example.com",
            "HOME": str(repo),
            "PATH": "/usr/bin:/bin",
        },
    )
    return proc.stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    git(tmp_path, "init", "-q", "-b", "main")
    (tmp_path / "flows").mkdir()
    (tmp_path / "flows" / "review.flow").write_text(BASE, encoding="utf-8")
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-q", "-m", "first")
    (tmp_path / "flows" / "review.flow").write_text(
        BASE.replace('"approved"', '"approved" priority 100'), encoding="utf-8"
    )
    return tmp_path


def test_a_revision_against_the_working_tree(
    repo: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(repo)
    assert main(["diff", "HEAD:flows/review.flow", "flows/review.flow"]) == 1
    out = capsys.readouterr().out
    assert out.startswith("flowc diff HEAD:flows/review.flow → flows/review.flow")
    assert "run: user → drafter → reviewer (approve)" in out
    assert main(["diff", "HEAD:flows/review.flow", "main:flows/review.flow"]) == 0
    capsys.readouterr()
    assert main(["diff", "HEAD:flows/nothing.flow", "flows/review.flow"]) == 2
    assert "HEAD:flows/nothing.flow" in capsys.readouterr().err


def test_as_git_diff_driver(repo: Path) -> None:
    (repo / ".gitattributes").write_text("*.flow diff=flowc\n", encoding="utf-8")
    root = Path(__file__).resolve().parents[2]
    git(
        repo,
        "config",
        "diff.flowc.command",
        f"PYTHONPATH={root} {sys.executable} -m flowc diff --git",
    )
    out = git(repo, "diff", "--ext-diff", "--", "flows/review.flow")
    assert "flowc diff a/flows/review.flow → b/flows/review.flow" in out
    assert 'OLD: → terminate "approved" (rule 1, line 10)' in out
    # a new file: git passes /dev/null as the old side
    (repo / "flows" / "new.flow").write_text(BASE, encoding="utf-8")
    git(repo, "add", "flows/new.flow")
    out = git(repo, "diff", "--cached", "--ext-diff", "--", "flows/new.flow")
    assert "flowc diff flows/new.flow: added" in out


DOC = Path(__file__).resolve().parents[2] / "docs" / "diff.md"


def test_the_documented_ci_step_writes_the_markdown_diff(repo: Path) -> None:
    """The CI recipe's diff step, run as written on a feature branch against its base."""
    import yaml

    text = DOC.read_text(encoding="utf-8")
    workflow = yaml.safe_load(text.split("```yaml\n", 1)[1].split("```", 1)[0])
    (step,) = [
        s for s in workflow["jobs"]["diff"]["steps"] if s.get("name", "").startswith("flowc diff")
    ]
    git(repo, "checkout", "-q", "-b", "feature")
    (repo / "flows" / "added.flow").write_text(BASE, encoding="utf-8")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "change")
    bin_dir = Path(sys.executable).parent
    proc = subprocess.run(
        ["bash", "-e", "-c", step["run"]],
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={"BASE": "main", "PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(repo)},
    )
    assert proc.returncode == 0, proc.stderr
    report = (repo / "flow-diff.md").read_text(encoding="utf-8")
    assert (
        "### `flowc diff` `main:flows/review.flow` → `flows/review.flow`: **behaviour changed**"
        in report
    )
    assert "| the shortest distinguishing run | user → drafter → reviewer (approve) |" in report
    assert "### `flows/added.flow`: a new flow" in report


def test_a_spec_starting_with_a_dash_never_reaches_git(
    repo: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """git would take ``--output=FILE:path`` as its option and write FILE."""
    monkeypatch.chdir(repo)
    written = repo / "written:review.flow"  # the file git would write
    for spec in (f"--output={repo}/written:review.flow", "-p:flows/review.flow"):
        assert main(["diff", "--", spec, "flows/review.flow"]) == 2
        err = capsys.readouterr().err
        assert not written.exists()
        assert f"{spec}: no such file, and a revision REV:path cannot start with '-'" in err


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        # a range: `git show` printed nothing and the empty text was checked as a flow
        ("main..HEAD:flows/review.flow", "invalid object name 'main..HEAD'"),
        # a folder: its listing was parsed as a flow
        ("HEAD:flows", "HEAD:flows: a folder in that revision, not a file"),
        ("HEAD:flows/", "HEAD:flows/: a folder in that revision, not a file"),
        ("nothing:flows/review.flow", "invalid object name 'nothing'"),
        ("HEAD:flows/nothing.flow", "path 'flows/nothing.flow' does not exist in 'HEAD'"),
    ],
)
def test_a_spec_that_is_not_one_file_in_git_is_an_error(
    repo: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    spec: str,
    message: str,
) -> None:
    monkeypatch.chdir(repo)
    assert main(["diff", spec, "flows/review.flow"]) == 2
    captured = capsys.readouterr()
    assert f"flowc diff: error: {spec}: " in captured.err
    assert message in captured.err
    assert "error[E" not in captured.err + captured.out  # not read as a flow


def test_a_file_whose_name_holds_a_colon(
    repo: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A file that exists is read as a file; ``REV:path`` reads it from git."""
    monkeypatch.chdir(repo)
    (repo / "flows" / "a:b.flow").write_text(BASE, encoding="utf-8")
    git(repo, "add", "--", "flows/a:b.flow")
    git(repo, "commit", "-q", "-m", "colon")
    monkeypatch.chdir(repo / "flows")
    assert main(["diff", "a:b.flow", "review.flow"]) == 1
    assert capsys.readouterr().out.startswith("flowc diff a:b.flow → review.flow")
    assert main(["diff", "HEAD:flows/a:b.flow", "a:b.flow"]) == 0
    assert main(["diff", "HEAD:./a:b.flow", "HEAD~1:flows/review.flow"]) == 0
