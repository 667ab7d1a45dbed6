"""Declared support is tested support: the Pythons the package claims (requires-python and
the trove classifiers) are exactly those `make test` runs the suite on, and the running
interpreter is one of them."""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

from packaging.specifiers import SpecifierSet

ROOT = Path(__file__).resolve().parents[1]


def _tested_pythons() -> list[str]:
    """PYTHONS, the Makefile's list of the versions the suite runs on."""
    match = re.search(r"^PYTHONS \?= (.+)$", (ROOT / "Makefile").read_text(), re.M)
    assert match, "the Makefile sets no PYTHONS"
    return match.group(1).split()


def test_the_claimed_pythons_are_the_tested_ones() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    versions = _tested_pythons()
    classified = sorted(
        c.rsplit(" :: ", 1)[1]
        for c in project["classifiers"]
        if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", c)
    )
    assert classified == sorted(versions, key=lambda v: tuple(map(int, v.split("."))))
    allowed = SpecifierSet(project["requires-python"])
    minors = [int(v.split(".")[1]) for v in versions]
    for minor in range(min(minors) - 1, max(minors) + 2):
        claimed = f"3.{minor}.0" in allowed
        assert claimed == (minor in minors), f"requires-python and 3.{minor}"
    # the interpreter running this suite is one of them
    assert f"{sys.version_info.major}.{sys.version_info.minor}" in versions
