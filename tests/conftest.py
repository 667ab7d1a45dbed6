"""Shared pytest configuration: Hypothesis profiles, the ``--update-golden`` option and its fixture.

``pytest --update-golden`` rewrites the expected files of the golden-case runners
(``tests/cases/*``) from what the code produces now; review the diff like code.
"""

from __future__ import annotations

import os

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
