"""Run a flowc command in a child process under hard resource limits.

Every hostile-input test goes through :func:`run_limited`: the child gets an address-space
cap (``RLIMIT_AS``), a CPU-time cap (``RLIMIT_CPU``) and a file-size cap (``RLIMIT_FSIZE``),
and the parent adds a wall-clock timeout. A test then asserts on what the command did
within those limits: its exit code, a clean diagnostic on stderr, and the peak memory
and time it used (``Limited.peak_mib`` / ``Limited.seconds``, read with ``os.wait4``).

The child is started by a small launcher process (:data:`LAUNCHER`), not forked from the
test's own process: on Linux a process's peak RSS starts at that of the process it was
forked from (the high-water mark survives ``exec``), so a child forked from a pytest
process of 200+ MiB would report at least that, whatever it used itself.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

MIB = 1024 * 1024


@dataclass(frozen=True)
class Limited:
    """What a limited child did: exit code, output, peak RSS and wall time."""

    returncode: int
    stdout: str
    stderr: str
    peak_mib: float
    seconds: float
    timed_out: bool
    #: CPU time the child used (user + system), from its rusage
    cpu: float = 0.0

    @property
    def traceback(self) -> bool:
        return "Traceback (most recent call last)" in self.stderr


#: forks the command from a small process, under the limits, and reports its rusage
LAUNCHER = """
import json, os, resource, sys
conf = json.loads(sys.argv[1])
report = int(sys.argv[2])
pid = os.fork()
if pid == 0:
    os.close(report)
    if conf["obey"]:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        for cap in (1, 2, 3):  # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER
            if libc.prctl(24, cap, 0, 0, 0) != 0:  # PR_CAPBSET_DROP
                os._exit(125)
    resource.setrlimit(resource.RLIMIT_AS, (conf["mem"], conf["mem"]))
    resource.setrlimit(resource.RLIMIT_CPU, (conf["cpu"], conf["cpu"] + 1))
    resource.setrlimit(resource.RLIMIT_FSIZE, (conf["fsize"], conf["fsize"]))
    os.execv(conf["argv"][0], conf["argv"])
_, status, usage = os.wait4(pid, 0)
os.write(report, json.dumps([status, usage.ru_maxrss, usage.ru_utime + usage.ru_stime]).encode())
os.close(report)
"""


def run_limited(
    args: Sequence[str],
    *,
    cwd: Path | str | None = None,
    stdin: bytes | None = None,
    memory_mib: int = 1024,
    cpu_seconds: int = 60,
    wall_seconds: float = 90.0,
    output_mib: int = 64,
    obey_file_modes: bool = False,
    python_code: str | None = None,
    env: Mapping[str, str | None] | None = None,
) -> Limited:
    """Run ``python -m flowc ARGS`` under limits and report what it did.

    With ``python_code``, run ``python -c PYTHON_CODE ARGS`` instead (the Python API).
    ``env`` changes the child's environment: a name set to a value, or to None to unset it.

    ``memory_mib`` caps the address space (a Python process needs ~60 MiB of it to
    start), ``output_mib`` caps any file it writes and what we keep of its stdout.
    ``obey_file_modes`` makes a child of root meet file permissions as any user does
    (e.g. a read-only database): it drops the capabilities that let root read and
    write through mode bits (``CAP_DAC_OVERRIDE``, ``CAP_DAC_READ_SEARCH``,
    ``CAP_FOWNER``) from the bounding set, so the program it runs never has them.
    """

    import json

    environ = dict(os.environ, PYTHONUTF8="1", NO_COLOR="1")
    for name, value in (env or {}).items():
        if value is None:
            environ.pop(name, None)
        else:
            environ[name] = value
    argv = [
        sys.executable,
        *(["-c", python_code] if python_code is not None else ["-m", "flowc"]),
        *args,
    ]
    conf = {
        "mem": memory_mib * MIB,
        "cpu": cpu_seconds,
        "fsize": output_mib * MIB,
        "obey": obey_file_modes and os.geteuid() == 0,
        "argv": argv,
    }
    report_r, report_w = os.pipe()
    start = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-c", LAUNCHER, json.dumps(conf), str(report_w)],
        cwd=cwd,
        stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        pass_fds=(report_w,),
        start_new_session=True,
        env=environ,
    )
    os.close(report_w)
    keep = output_mib * MIB
    chunks: dict[str, bytearray] = {"out": bytearray(), "err": bytearray()}

    def drain(name: str, stream: IO[bytes]) -> None:
        # read everything (so the child never blocks on a full pipe), keep the first `keep` bytes
        while block := stream.read(65536):
            if len(chunks[name]) < keep:
                chunks[name] += block[: keep - len(chunks[name])]

    assert proc.stdout is not None and proc.stderr is not None
    readers = [
        threading.Thread(target=drain, args=("out", proc.stdout), daemon=True),
        threading.Thread(target=drain, args=("err", proc.stderr), daemon=True),
    ]
    for reader in readers:
        reader.start()
    if proc.stdin is not None:
        with contextlib.suppress(BrokenPipeError):
            proc.stdin.write(stdin or b"")
        proc.stdin.close()
    timed_out = False
    while proc.poll() is None:
        if time.monotonic() - start > wall_seconds:
            timed_out = True
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, 9)  # the launcher and the command
            proc.wait()
            break
        time.sleep(0.01)
    seconds = time.monotonic() - start
    with os.fdopen(report_r, "rb") as report:
        reported = report.read()
    if reported:
        status, maxrss, cpu = json.loads(reported)
        proc.returncode = os.waitstatus_to_exitcode(status)
    else:  # killed before the command ended
        maxrss, cpu = 0, 0.0
        proc.returncode = proc.returncode if proc.returncode is not None else -9
    for reader in readers:
        reader.join(timeout=10)
    return Limited(
        returncode=proc.returncode,
        stdout=chunks["out"].decode("utf-8", "replace"),
        stderr=chunks["err"].decode("utf-8", "replace"),
        peak_mib=maxrss / 1024,
        seconds=seconds,
        timed_out=timed_out,
        cpu=cpu,
    )
