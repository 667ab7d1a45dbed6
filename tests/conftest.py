"""Shared pytest configuration: the ``--update-golden`` option and its fixture.

``pytest --update-golden`` rewrites the expected files of the golden-case runners
(``tests/cases/*``) from what the code produces now; review the diff like code.
"""

from __future__ import annotations

import pytest


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
