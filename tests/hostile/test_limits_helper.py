"""The limits helper itself: it reports exit codes, time-outs and memory of the child alone."""

from __future__ import annotations

from tests.hostile.limits import run_limited


def test_reports_a_clean_run() -> None:
    result = run_limited(["--version"], memory_mib=512, wall_seconds=60)
    assert result.returncode == 0, result.stderr
    assert not result.timed_out and not result.traceback
    assert 5 < result.peak_mib < 512
    assert "flowc" in result.stdout.lower()


def test_usage_error_is_exit_2() -> None:
    result = run_limited(["no-such-command"], memory_mib=512, wall_seconds=60)
    assert result.returncode == 2
    assert not result.traceback
