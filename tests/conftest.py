"""Shared pytest configuration: Hypothesis profiles, the ``--update-golden`` option and its fixture.

``pytest --update-golden`` rewrites the expected files of the golden-case runners
(``tests/cases/*``) from what the code produces now; review the diff like code.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile

import pytest
from hypothesis import HealthCheck, settings

# Property tests are deterministic by default (the same examples on every run, as CI needs);
# `HYPOTHESIS_PROFILE=explore pytest` draws fresh random examples to hunt for new failures.
# Neither depends on the machine's speed: no deadline per example and no health check that
# times the data generation (a loaded 2-core machine must fail no test for being slow).
_NOT_TIMED = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow]}
settings.register_profile("deterministic", derandomize=True, **_NOT_TIMED)
settings.register_profile("explore", derandomize=False, **_NOT_TIMED)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "deterministic"))

# Whether a folder's configured plugins load depends on FLOWC_TRUST and on the user's list
# of trusted folders (`flowc trust`, in $XDG_CONFIG_HOME): every test, and every flowc it
# starts, sees neither, whatever the machine that runs the suite has set or trusted
os.environ.pop("FLOWC_TRUST", None)
os.environ["XDG_CONFIG_HOME"] = tempfile.mkdtemp(prefix="flowc-tests-config-")
atexit.register(shutil.rmtree, os.environ["XDG_CONFIG_HOME"], True)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-golden",
        action="store_true",
        default=False,
        help="rewrite the expected files of golden cases instead of comparing with them",
    )


@pytest.fixture
def update_golden(request: pytest.FixtureRequest) -> bool:
    """True when the run was started with ``--update-golden``."""
    return bool(request.config.getoption("--update-golden"))


# the throw-away PostgreSQL cluster's fixtures (pg_cluster, pg_dsn) for every test directory
pytest_plugins = ("tests.pgcluster",)
