"""Set-up says what it does: ``make demo`` installs only what the demo needs, the browser
tools come with ``make test`` only, every system package is named before it is installed,
and the package metadata is what pip and setuptools expect (SPDX licence, the ``ag2`` extra)."""

from __future__ import annotations

import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def dry_run(target: str) -> str:
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    proc = subprocess.run(
        ["make", "-n", "-B", target],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_make_demo_installs_flowc_and_graphviz_only() -> None:
    plan = dry_run("demo")
    assert "pip install --quiet -e .\n" in plan and "scripts/deps/graphviz.sh" in plan
    assert "[dev]" not in plan and "browser.sh" not in plan and "npm" not in plan
    assert "browsers-more.sh" not in plan


def test_make_test_adds_the_dev_extra_and_the_browser_tools() -> None:
    plan = dry_run("test")
    assert (
        "'.[dev]'" in plan
        and "scripts/deps/graphviz.sh" in plan
        and "scripts/deps/browser.sh" in plan
        and "scripts/deps/browsers-more.sh" in plan
    )


def test_apt_install_names_the_packages_before_installing_them(tmp_path: Path) -> None:
    """Run the installer against a stand-in ``apt-get`` (and ``id`` saying root) that records its
    calls on the same stream: the announcement comes before any call."""
    for name, body in {"apt-get": 'echo "apt-get $*"', "id": "echo 0"}.items():
        tool = tmp_path / name
        tool.write_text(f"#!/bin/sh\n{body}\n")
        tool.chmod(0o755)
    env = {**os.environ, "PATH": f"{tmp_path}:{os.environ['PATH']}"}
    proc = subprocess.run(
        ["bash", "-c", '. scripts/lib/install.sh; apt_install "for the diagrams" graphviz'],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "installing system packages with apt-get: graphviz (for the diagrams)"


def test_every_deps_script_says_what_it_installs() -> None:
    for script in sorted((ROOT / "scripts" / "deps").glob("*.sh")):
        text = script.read_text(encoding="utf-8")
        head = "".join(line for line in text.splitlines(keepends=True)[1:6] if line.startswith("#"))
        assert "install" in head.lower() or "apt: " in head, (
            f"{script.name}: say what it installs first"
        )
        assert "apt-get install" not in text.replace("'apt-get install", ""), (
            f"{script.name}: install through apt_install, which names the packages first"
        )


def test_package_metadata() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert (
        project["license"] == "Apache-2.0"
    )  # an SPDX expression: no setuptools deprecation warning
    assert not [c for c in project.get("classifiers", []) if c.startswith("License ::")]
    assert any(dep.startswith("ag2") for dep in project["optional-dependencies"]["ag2"])
    metadata = importlib.metadata.metadata("flowc")
    assert metadata["License-Expression"] == "Apache-2.0"
    assert "ag2" in (metadata.get_all("Provides-Extra") or [])


def test_every_runtime_dependency_has_an_upper_bound() -> None:
    """`foo>=1.2,<2` (or an exact pin), and the installed version is inside the range."""
    from packaging.requirements import Requirement

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    runtime = [
        *project["dependencies"],
        *project["optional-dependencies"]["ag2"],
        *project["optional-dependencies"]["postgres"],
    ]
    for line in runtime:
        req = Requirement(line)
        operators = {spec.operator for spec in req.specifier}
        assert operators & {"<", "<=", "==", "~=", "==="}, f"{line}: no upper bound"
        installed = importlib.metadata.version(req.name)
        assert req.specifier.contains(installed, prereleases=True), (line, installed)


def test_the_readme_says_how_to_put_flowc_on_the_path() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert 'export PATH="$PWD/.venv/bin:$PATH"' in readme and ". .venv/bin/activate" in readme


def test_the_demo_runs_and_writes_no_escape_codes_into_a_pipe(tmp_path: Path) -> None:
    """The README's first command (`make demo` runs scripts/demo.sh) works end to end, and its
    output, read through a pipe as a CI log would, holds no terminal escape codes. It writes
    into a folder of its own (``OUT``; ``make demo`` writes into ``out/``): another test job
    may be running the demo beside it, and the last run of a shared database would be that
    job's."""
    flowc = ROOT / ".venv" / "bin" / "flowc"
    if not flowc.exists():
        pytest.skip("the demo runs the flowc of .venv (made by `make setup`)")
    out = tmp_path / "out"
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "NO_COLOR")}
    env["OUT"] = str(out)
    proc = subprocess.run(
        ["bash", str(ROOT / "scripts" / "demo.sh")],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "$ .venv/bin/flowc check" in proc.stdout
    assert 'closed: "approved"' in proc.stdout
    # it ends with the `flowc view` command of the run it wrote
    last = proc.stdout.rstrip().splitlines()[-1]
    db = f"{out}/runs.sqlite"
    found = re.fullmatch(r"  \.venv/bin/flowc view (wf-[0-9a-f]+) --db " + re.escape(db), last)
    assert found is not None, last
    log = subprocess.run(
        [str(flowc), "log", "last", "--json", "--db", db],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(log.stdout)["run_id"] == found.group(1)
    assert "\x1b" not in proc.stdout + proc.stderr
