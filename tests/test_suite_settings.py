"""The suite's own settings: nothing in it depends on how fast the machine is."""

from __future__ import annotations

from hypothesis import HealthCheck, settings


def test_property_tests_are_not_timed() -> None:
    """Hypothesis's per-example deadline and its too-slow health check fail tests on a
    loaded machine: the suite's profiles turn both off (deterministic and explore)."""
    for name in ("deterministic", "explore"):
        profile = settings.get_profile(name)
        assert profile.deadline is None
        assert HealthCheck.too_slow in profile.suppress_health_check
    assert settings.default.deadline is None
