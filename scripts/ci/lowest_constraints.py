"""Print pip constraints that pin every runtime dependency of flowc (and the `postgres`
and `view` extras) to the lowest release its declared bounds allow that this interpreter can
install: what the lowest-dependencies test job installs (scripts/ci/matrix.sh, run by `make test`).

Run with the interpreter of the environment to fill (it asks pip which releases exist
for it): ``python scripts/ci/lowest_constraints.py > constraints.txt``.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.version import InvalidVersion, Version

ROOT = Path(__file__).resolve().parents[2]


def releases(name: str) -> list[Version]:
    """The releases of ``name`` that pip can install for this interpreter."""
    done = subprocess.run(
        [sys.executable, "-m", "pip", "index", "versions", name, "--json"],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode == 0 and done.stdout.strip().startswith("{"):
        found = json.loads(done.stdout)["versions"]
    else:  # an older pip without --json: "Available versions: 1.2, 1.1"
        match = re.search(r"Available versions: (.*)", done.stdout)
        if match is None:
            raise SystemExit(f"pip lists no releases of {name}: {done.stderr.strip()}")
        found = match.group(1).split(", ")
    out = []
    for text in found:
        try:
            out.append(Version(text))
        except InvalidVersion:
            continue
    return out


def main() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    wanted = [*project["dependencies"], *extras["postgres"], *extras["view"]]
    for line in wanted:
        req = Requirement(line)
        allowed = [v for v in releases(req.name) if req.specifier.contains(v)]
        if not allowed:
            raise SystemExit(f"no release of {req.name} satisfies {req.specifier}")
        print(f"{req.name}=={min(allowed)}")


if __name__ == "__main__":
    main()
