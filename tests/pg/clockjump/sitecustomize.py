"""Loaded at start-up by a worker the clock-jump tests start (this folder is put on its
``PYTHONPATH``): the process's wall clock (``time.time`` and ``time.time_ns``) is the
real one plus the offset, in seconds, that the file named by ``FLOWC_TEST_CLOCK_FILE``
holds when it is read (at most every 20 ms), so that a test can jump it forward and back
while the worker runs, as an NTP step or a person setting the clock would. The monotonic
clock stays as it is: it never jumps on a real host.

(libfaketime would do this below Python, but Debian's 0.9.10 makes Python's sleeps fail
with EINVAL when the monotonic clock is left real: it reads their absolute deadlines on
the monotonic clock as faked times.)"""

from __future__ import annotations

import os
import time

_FILE = os.environ.get("FLOWC_TEST_CLOCK_FILE")

if _FILE:
    _real_time, _real_time_ns, _real_monotonic = time.time, time.time_ns, time.monotonic
    _last = [-1.0, 0.0]  # when the file was last read (monotonic), the offset then

    def _offset() -> float:
        now = _real_monotonic()
        if now - _last[0] >= 0.02:
            try:
                with open(_FILE, encoding="utf-8") as f:
                    _last[1] = float(f.read().strip() or 0)
            except (OSError, ValueError):
                pass
            _last[0] = now
        return _last[1]

    def _time() -> float:
        return _real_time() + _offset()

    def _time_ns() -> int:
        return _real_time_ns() + int(_offset() * 1e9)

    time.time = _time
    time.time_ns = _time_ns
    # the test checks that this ran (a sitecustomize found first would silently skip it)
    with open(_FILE + ".loaded", "w", encoding="utf-8") as mark:
        mark.write(str(os.getpid()))
