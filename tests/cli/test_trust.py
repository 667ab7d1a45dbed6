"""The trust rule (`flowc.project.trust`, docs/trust.md) and `flowc trust`: which folders'
configured plugins may be imported, how `FLOWC_TRUST` and the user's list decide it, and
the command that keeps the list."""

from __future__ import annotations

from pathlib import Path

import pytest

from flowc.cli import main
from flowc.project.trust import (
    TrustError,
    TrustList,
    decide,
    environment_setting,
    read_trust_list,
    trust_file,
)


@pytest.fixture
def config_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "config"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home))
    monkeypatch.delenv("FLOWC_TRUST", raising=False)
    return home


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "work" / "app"
    (folder / "flows").mkdir(parents=True)
    (folder / "pyproject.toml").write_text('[tool.flowc]\nplugins = ["p.py"]\n')
    return folder


def listed(config_home: Path) -> list[str]:
    path = config_home / "flowc" / "trusted"
    return [x for x in path.read_text().splitlines() if x and not x.startswith("#")]


# ── the rule ──────────────────────────────────────────────────────────────────


@pytest.mark.parametrize(
    ("value", "meaning"),
    [
        ("1", True),
        ("true", True),
        ("YES", True),
        ("on", True),
        ("0", False),
        ("False", False),
        ("no", False),
        ("off", False),
        ("", None),
        ("  ", None),
    ],
)
def test_flowc_trust_values(value: str, meaning: bool | None) -> None:
    assert environment_setting({"FLOWC_TRUST": value}) is meaning


@pytest.mark.parametrize("value", ["2", "maybe", "/src/app", "all"])
def test_any_other_flowc_trust_is_refused(value: str) -> None:
    with pytest.raises(TrustError, match="give 1 to trust every folder, 0 to trust none"):
        environment_setting({"FLOWC_TRUST": value})


def test_where_the_list_is() -> None:
    assert trust_file({"XDG_CONFIG_HOME": "/x/cfg", "HOME": "/h"}) == Path("/x/cfg/flowc/trusted")
    # unset, empty or relative: ~/.config, as the XDG base directory rules say
    for env in (
        {"HOME": "/h"},
        {"XDG_CONFIG_HOME": "", "HOME": "/h"},
        {"XDG_CONFIG_HOME": "c", "HOME": "/h"},
    ):
        assert trust_file(env) == Path("/h/.config/flowc/trusted")


def test_a_listed_folder_covers_its_sub_folders_only(tmp_path: Path) -> None:
    (tmp_path / "src" / "app" / "deep").mkdir(parents=True)
    (tmp_path / "srcx").mkdir()
    trusted = TrustList(tmp_path / "t", (tmp_path / "src",))
    assert trusted.covering(tmp_path / "src") == tmp_path / "src"
    assert trusted.covering(tmp_path / "src" / "app" / "deep") == tmp_path / "src"
    assert trusted.covering(tmp_path / "srcx") is None  # a name that only begins the same
    assert trusted.covering(tmp_path) is None  # the parent of a trusted folder is not


def test_links_are_followed_both_ways(tmp_path: Path) -> None:
    """A folder is trusted by what it is, not what it is called: a link to a trusted
    folder is trusted, a trusted link trusts what it points at, and a link inside a
    trusted folder to a folder outside it trusts nothing."""
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "alias").symlink_to(real, target_is_directory=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    (real / "escape").symlink_to(outside, target_is_directory=True)
    assert TrustList(tmp_path / "t", (real,)).covering(tmp_path / "alias") == real
    assert TrustList(tmp_path / "t", (tmp_path / "alias",)).covering(real) == tmp_path / "alias"
    assert TrustList(tmp_path / "t", (real,)).covering(real / "escape") is None


def test_reading_the_list(tmp_path: Path) -> None:
    path = tmp_path / "trusted"
    assert read_trust_list(path) == TrustList(path)  # none yet: nothing trusted
    path.write_text("# comment\n\n  /a/b  \nrelative/c\n~/d\n/e\n")
    got = read_trust_list(path)
    assert got.folders == (Path("/a/b"), Path("/e"))
    assert got.ignored == ((4, "relative/c"), (5, "~/d"))


@pytest.mark.parametrize("bad", ["folder", "not utf-8"])
def test_a_list_that_cannot_be_read_is_an_error(tmp_path: Path, bad: str) -> None:
    path = tmp_path / "trusted"
    if bad == "folder":
        path.mkdir()
    else:
        path.write_bytes(b"/a\n\xff\n")
    with pytest.raises(TrustError, match=f"the list of trusted folders cannot be read: {path}"):
        read_trust_list(path)


def test_the_order_of_the_rule(tmp_path: Path) -> None:
    folder = tmp_path / "app"
    folder.mkdir()
    mine = TrustList(tmp_path / "t", (tmp_path,))
    nothing = TrustList(tmp_path / "t")
    assert decide(folder, trusted=mine, environ={}).trusted
    assert not decide(folder, trusted=nothing, environ={}).trusted
    assert decide(folder, trusted=nothing, environ={"FLOWC_TRUST": "1"}).trusted
    refused = decide(folder, trusted=mine, environ={"FLOWC_TRUST": "0"})
    assert not refused.trusted and refused.refused  # 0 wins over the list ...
    assert decide(folder, option=True, trusted=nothing, environ={"FLOWC_TRUST": "0"}).trusted
    # ... and --trust over everything, even a FLOWC_TRUST that means nothing
    assert decide(folder, option=True, environ={"FLOWC_TRUST": "maybe"}).why == "--trust"


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("off", "FLOWC_TRUST=off trusts no folder"),
        ("No", "FLOWC_TRUST=No trusts no folder"),
        ("0", "FLOWC_TRUST=0 trusts no folder"),
        (" yes ", "FLOWC_TRUST=yes trusts every folder"),
        ("true", "FLOWC_TRUST=true trusts every folder"),
    ],
)
def test_flowc_trust_is_echoed_as_written(tmp_path: Path, value: str, why: str) -> None:
    """The reason names FLOWC_TRUST as the user set it, never a `=0` or `=1` of flowc's."""
    decision = decide(tmp_path, trusted=TrustList(tmp_path / "t"), environ={"FLOWC_TRUST": value})
    assert decision.why == why
    if not decision.trusted:
        notice = decision.notice(tmp_path / "pyproject.toml")
        assert f"its plugins were not imported: {why}, so" in notice


# ── flowc trust ───────────────────────────────────────────────────────────────


def test_flowc_trust_adds_a_folder_once(
    config_home: Path, project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["trust", str(project)]) == 0
    assert f"trusted {project} and its sub-folders" in capsys.readouterr().err
    assert main(["trust", str(project / "flows")]) == 0  # already: inside a trusted folder
    assert f"{project / 'flows'} is already trusted (inside {project})" in capsys.readouterr().err
    assert main(["trust", str(project)]) == 0
    assert listed(config_home) == [str(project)]
    text = (config_home / "flowc" / "trusted").read_text()
    assert text.startswith("# Folders whose pyproject.toml may make flowc import Python")
    assert decide(project / "flows").trusted


def test_flowc_trust_stores_the_real_absolute_folder(
    config_home: Path, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    link = project.parent / "link"
    link.symlink_to(project, target_is_directory=True)
    monkeypatch.chdir(project.parent)
    assert main(["trust", "link"]) == 0
    assert listed(config_home) == [str(project)]


def test_flowc_trust_without_a_folder_trusts_the_nearest_pyproject_s(
    config_home: Path, project: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(project / "flows")
    assert main(["trust"]) == 0
    assert listed(config_home) == [str(project)]


def test_flowc_trust_refuses_what_it_cannot_trust(
    config_home: Path,
    project: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    lonely = tmp_path / "lonely"
    lonely.mkdir()
    monkeypatch.chdir(lonely)
    assert main(["trust"]) == 2
    err = capsys.readouterr().err
    assert err == (
        "flowc trust: error: no pyproject.toml in the current folder or above it: give the "
        "folder to trust (flowc trust FOLDER)\n"
    )
    assert main(["trust", "missing"]) == 2
    assert capsys.readouterr().err == "flowc trust: error: missing: no such folder\n"
    assert main(["trust", str(project / "pyproject.toml")]) == 2
    assert "no such folder" in capsys.readouterr().err
    assert not (config_home / "flowc" / "trusted").exists()


def test_a_folder_with_a_line_break_in_its_path_is_not_trusted(
    config_home: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    """A checkout's folder named `a<newline>` holding `tmp/pyproject.toml` would be written
    as two lines of the list, the second trusting /tmp: it is refused, the list untouched."""
    for brk in ("\n", "\r"):
        tricky = tmp_path / f"a{brk}" / "tmp"
        tricky.mkdir(parents=True)
        (tricky / "pyproject.toml").write_text('[tool.flowc]\nplugins = ["p.py"]\n')
        monkeypatch.chdir(tricky)
        assert main(["trust"]) == 2
        assert "holds a line break cannot be trusted" in capsys.readouterr().err
        assert main(["trust", str(tricky)]) == 2
        capsys.readouterr()
    assert not (config_home / "flowc" / "trusted").exists()
    assert not decide(Path("/tmp")).trusted


def test_flowc_trust_does_not_rewrite_a_list_it_cannot_read(
    config_home: Path, project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = config_home / "flowc" / "trusted"
    path.parent.mkdir(parents=True)
    path.write_bytes(b"/mine\n\xff\n")
    assert main(["trust", str(project)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"flowc trust: error: the list of trusted folders cannot be read: {path}")
    assert "Traceback" not in err
    assert path.read_bytes() == b"/mine\n\xff\n"


def test_flowc_trust_list_and_remove(
    config_home: Path, project: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["trust", "--list"]) == 0
    out, err = capsys.readouterr()
    assert out == "" and "no trusted folders" in err
    other = tmp_path / "other"
    other.mkdir()
    assert main(["trust", str(project)]) == 0
    assert main(["trust", str(other)]) == 0
    path = config_home / "flowc" / "trusted"
    path.write_text(path.read_text() + "relative/one\n")  # written by hand
    capsys.readouterr()
    assert main(["trust", "--list"]) == 0
    out, err = capsys.readouterr()
    assert out == f"{project}\n{other}\n"
    assert f"{path}:6: ignored: not an absolute folder: relative/one" in err
    # a folder trusted through its parent is not removed by naming it
    assert main(["trust", str(tmp_path / "work")]) == 0
    assert main(["trust", "--remove", str(project)]) == 0
    assert decide(project).trusted  # work still covers it
    capsys.readouterr()
    assert main(["trust", "--remove", str(project / "flows")]) == 2
    assert (
        f"{project / 'flows'} is trusted because {tmp_path / 'work'} is: remove that one"
        in capsys.readouterr().err
    )
    assert main(["trust", "--remove", str(tmp_path / "work")]) == 0
    assert not decide(project).trusted
    assert main(["trust", "--remove", str(project)]) == 2
    assert "is not in the list of trusted folders" in capsys.readouterr().err
    assert listed(config_home) == [str(other), "relative/one"]  # the rest is kept as written


def test_flowc_trust_says_when_flowc_trust_overrides_the_list(
    config_home: Path,
    project: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("FLOWC_TRUST", "0")
    assert main(["trust", str(project)]) == 0
    assert "note: FLOWC_TRUST is set: no folder is trusted, whatever the list says" in (
        capsys.readouterr().err
    )
    assert not decide(project).trusted


def test_the_list_is_only_created_by_flowc_trust(
    config_home: Path, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Commands read the list; none but `flowc trust` writes it (or makes its folder)."""
    (project / "flows" / "a.flow").write_text("speaker a: human\nspeaker b\nwhen from a then b\n")
    monkeypatch.chdir(project)
    assert main(["check", "flows"]) == 0  # (p.py does not exist: it was not looked for)
    assert not config_home.exists()


def test_the_notice_docs_trust_md_shows(
    config_home: Path,
    project: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    page = (Path(__file__).resolve().parents[2] / "docs" / "trust.md").read_text()
    (shown,) = [line for line in page.splitlines() if "note: its plugins were not imported" in line]
    (project / "flows" / "a.flow").write_text("speaker a: human\nspeaker b\nwhen from a then b\n")
    monkeypatch.chdir(project)
    assert main(["check", "flows"]) == 0
    (said,) = [x for x in capsys.readouterr().err.splitlines() if "note:" in x]
    assert said.replace(str(project), "/home/me/src/support") == shown


def test_a_list_kept_elsewhere_through_a_link_stays_a_link(
    config_home: Path, project: Path, tmp_path: Path
) -> None:
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    (dotfiles / "trusted").write_text("# mine\n")
    (config_home / "flowc").mkdir(parents=True)
    (config_home / "flowc" / "trusted").symlink_to(dotfiles / "trusted")
    assert main(["trust", str(project)]) == 0
    assert (config_home / "flowc" / "trusted").is_symlink()
    assert (dotfiles / "trusted").read_text() == f"# mine\n{project}\n"
