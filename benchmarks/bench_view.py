"""`flowc view` in headless Chromium (Debian's ``chromium``, driven by Playwright), against
runs written by the real ``flowc run`` (targets from issue 28):

- live: a run whose agents answer every 0.2 s, watched on its page; each turn's latency
  is from its envelope's time stamp (the hub stamps it as it admits the turn, just before
  the commit) to the moment its transcript entry is in the page (target: p95 under
  250 ms; the server looks for new rows every 0.1 s);
- size: a scripted 10,000-turn run: the time until its page has every turn, then the time
  of selecting a turn (state panel and diagram) for 200 turns picked at random (target:
  p95 under 50 ms), and the time from selecting a turn to its why panel shown (the server
  explains it from the run's start): turn N-1 first (nothing kept yet), then 50 turns
  picked at random (target: p95 under 50 ms).

Run: ``.venv/bin/python benchmarks/bench_view.py [TURNS]``. Needs chromium, Graphviz and
the view extra; prints the measures and exits 1 when a target is missed.
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
LIVE_TARGET_MS = 250.0
SELECT_TARGET_MS = 50.0
LIVE_TURNS = 60

LIVE_FLOW = f"""speaker user: human
speaker writer
speaker critic
start user
max_turns {LIVE_TURNS}
when from user then writer
when from writer then critic
when from critic then writer
"""
LIVE_AGENTS = """
import asyncio

async def writer(turn):
    await asyncio.sleep(0.2)
    return "draft"

async def critic(turn):
    await asyncio.sleep(0.2)
    return "critique"

AGENTS = {"writer": writer, "critic": critic}
"""

#: the page notes when each transcript entry appears
WATCH = """(() => {
    window.__seen = {};
    new MutationObserver(records => {
        const now = performance.timeOrigin + performance.now();
        for (const r of records) for (const n of r.addedNodes)
            if (n.dataset && n.dataset.n && !(n.dataset.n in window.__seen)) window.__seen[n.dataset.n] = now;
    }).observe(document, {childList: true, subtree: true});
})()"""


#: select turn n, and resolve with the milliseconds until its why panel shows it
WHY_SHOWN = """n => new Promise(resolve => {
    const why = document.getElementById('why');
    const t0 = performance.now();
    const seen = new MutationObserver(() => {
        if (why.dataset.turn === String(n)) { seen.disconnect(); resolve(performance.now() - t0); }
    });
    seen.observe(why, {attributes: true, attributeFilter: ['data-turn']});
    document.getElementById('turn-' + n).click();
})"""


def env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


def flowc(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "flowc", *args], cwd=cwd, env=env(), capture_output=True, text=True
    )


def serve(db: Path, cwd: Path) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "flowc", "view", "--db", str(db), "--no-open"],
        cwd=cwd,
        env=env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    found = re.search(r"(http://\S+)", proc.stdout.readline())
    assert found is not None
    return proc, found.group(1)


def p95(values: list[float]) -> float:
    return sorted(values)[max(0, int(len(values) * 0.95) - 1)]


def live(page: Any, folder: Path) -> float:
    db = folder / "live.db"
    (folder / "live.flow").write_text(LIVE_FLOW)
    (folder / "agents.py").write_text(LIVE_AGENTS)
    (folder / "live.yaml").write_text('kickoff: "go"\n')
    run = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "flowc",
            "run",
            "live.flow",
            "--script",
            "live.yaml",
            "--agents",
            "agents.py",
            "--db",
            str(db),
        ],
        cwd=folder,
        env=env(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    while not db.exists() or flowc("log", "--json", "--db", str(db), cwd=folder).stdout in (
        "",
        "[]\n",
    ):
        time.sleep(0.05)
    server, url = serve(db, folder)
    try:
        page.add_init_script(WATCH)
        page.goto(
            url.replace(
                "/?",
                "/run/"
                + json.loads(flowc("log", "--json", "--db", str(db), cwd=folder).stdout)[0][
                    "run_id"
                ]
                + "?",
            )
        )
        page.wait_for_selector("body[data-ended=true]", timeout=120_000)
        run.wait()
        seen = page.evaluate("window.__seen")
    finally:
        server.terminate()
        server.wait()
    log = json.loads(flowc("log", "last", "--json", "--db", str(db), cwd=folder).stdout)
    stamps = [
        datetime.fromisoformat(e.created_at.replace("Z", "+00:00")).timestamp() * 1000
        for e in _turn_envelopes(db, log["run_id"])
    ]
    # the turns committed before the page had its first turns are left out: they came
    # in one go when it connected, not live
    opened = min(seen.values()) if seen else float("inf")
    latencies = [
        seen[str(n)] - stamp
        for n, stamp in enumerate(stamps, start=1)
        if str(n) in seen and stamp > opened
    ]
    if not latencies:
        raise SystemExit(f"live: no turn measured (the page saw {len(seen)} turns)")
    result = p95(latencies)
    if os.environ.get("BENCH_VERBOSE"):
        print("live latencies (ms):", [round(x) for x in latencies])
    print(
        f"live: {len(latencies)} turns, commit to page: median {statistics.median(latencies):.0f} ms, "
        f"p95 {result:.0f} ms (target {LIVE_TARGET_MS:.0f} ms)"
    )
    return result


def _turn_envelopes(db: Path, run_id: str) -> list[Any]:
    from flowc.runtime.envelope import EV_PACKET, EV_TEXT
    from flowc.runtime.stores import open_store

    store = open_store(str(db), readonly=True)
    try:
        return [e for e in store.read(run_id) if e.event_type in (EV_TEXT, EV_PACKET)]
    finally:
        store.close()


def size(page: Any, folder: Path, turns: int) -> float:
    flow = f"speaker a\nspeaker b\nstart a\nmax_turns {turns}\nwhen from a then b\nwhen from b then a\n"
    (folder / "long.flow").write_text(flow)
    half = turns // 2 + 1
    (folder / "long.json").write_text(
        json.dumps(
            {
                "kickoff": "go",
                "script": {
                    "a": [f"a {i}" for i in range(half)],
                    "b": [f"b {i}" for i in range(half)],
                },
            }
        )
    )
    db = folder / "long.db"
    started = time.perf_counter()
    done = flowc("run", "long.flow", "--script", "long.json", "--db", str(db), "--json", cwd=folder)
    assert done.returncode == 0, done.stderr
    print(f"size: a {turns:,}-turn run written in {time.perf_counter() - started:.1f} s")
    run_id = json.loads(done.stdout)["run_id"]
    server, url = serve(db, folder)
    try:
        started = time.perf_counter()
        page.goto(url.replace("/?", f"/run/{run_id}?"))
        page.wait_for_selector("#transcript li")
        page.wait_for_selector("#diagram svg g.edge")
        usable = time.perf_counter() - started
        page.wait_for_selector("body[data-ended=true]", timeout=120_000)
        page.wait_for_function(
            f"document.querySelectorAll('#transcript li').length === {turns}", timeout=120_000
        )
        page.wait_for_selector("#diagram svg g.edge")
        loaded = time.perf_counter() - started
        picks = random.Random(28).sample(range(1, turns + 1), 200)
        times = page.evaluate(
            """picks => picks.map(n => {
                const li = document.getElementById('turn-' + n);
                const t0 = performance.now();
                li.click();
                document.body.offsetHeight;  // the style and layout the change needs
                return performance.now() - t0;
            })""",
            picks,
        )
        assert page.inner_text("#state-turn") == str(picks[-1])
        why_picks = [turns - 1, *random.Random(9).sample(range(1, turns + 1), 50)]
        why_times = [page.evaluate(WHY_SHOWN, n) for n in why_picks]
    finally:
        server.terminate()
        server.wait()
    why_first, why_rest = why_times[0], why_times[1:]
    why_p95 = p95(why_rest)
    print(
        f"size: why of turn {turns - 1:,}, the first asked: {why_first:.0f} ms; then "
        f"{len(why_rest)} turns: median {statistics.median(why_rest):.0f} ms, p95 {why_p95:.0f} ms "
        f"(target {SELECT_TARGET_MS:.0f} ms)"
    )
    result = max(p95(times), why_p95)
    print(
        f"size: the first turns and the diagram on the page in {usable:.2f} s, every turn in {loaded:.2f} s; selecting a turn: median "
        f"{statistics.median(times):.1f} ms, p95 {p95(times):.1f} ms (target {SELECT_TARGET_MS:.0f} ms)"
    )
    return result


def main() -> int:
    turns = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    if CHROMIUM is None or shutil.which("dot") is None:
        print("needs chromium and Graphviz's dot")
        return 2
    with tempfile.TemporaryDirectory(prefix="flowc-bench-view-") as tmp, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
        try:
            folder = Path(tmp)
            live_p95 = live(browser.new_page(viewport={"width": 1400, "height": 900}), folder)
            select_p95 = size(
                browser.new_page(viewport={"width": 1400, "height": 900}), folder, turns
            )
        finally:
            browser.close()
    return 0 if live_p95 <= LIVE_TARGET_MS and select_p95 <= SELECT_TARGET_MS else 1


if __name__ == "__main__":
    sys.exit(main())
