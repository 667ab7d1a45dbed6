"""`flowc view` in a real headless Chromium against run databases written by the real
`flowc run`: the runs list, a finished run (transcript, diagram, timeline), a run driven
live by another process, a server killed and started again mid-run (every turn exactly
once), the why panel and the scenario block of each turn (equal to `flowc log --why N
--json` and `flowc log --scenario-upto N`), and a run whose names, texts, rules and
values are markup (no script runs, the text shows as written). Screenshots go to
tests/artifacts/view/."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.view.conftest import (
    ARTIFACTS,
    COUNT_TURN_EVENTS,
    LIVE_TURNS,
    ROOT,
    SCRIPT,
    ViewServer,
    flowc,
    free_port,
    needs_browser,
    start_live_run,
    wait_for,
)

pytestmark = needs_browser

ROUTING = ROOT / "examples" / "context_routing.flow"
ROUTING_SCRIPT = SCRIPT  # (conftest's: a tool that routes, a human's reply, a tool that ends)

HOSTILE_FLOW = """speaker `<img src=x onerror=window.__pwned=1>`: human
speaker `</script><script>window.__pwned=2</script>` { tool `<b>t</b>` sets `<i>k</i>` = "<svg onload=window.__pwned=3>" }
start `<img src=x onerror=window.__pwned=1>`
when context.`<i>k</i>` == "<script>window.__pwned=9</script>" then terminate "<b>never</b>"
when from `<img src=x onerror=window.__pwned=1>` then `</script><script>window.__pwned=2</script>`
when from `</script><script>window.__pwned=2</script>` then terminate "<img src=y onerror=window.__pwned=4>"
"""
HOSTILE_KICKOFF = "<img src=z onerror=window.__pwned=5><script>window.__pwned=6</script>"
HOSTILE_SAY = '<svg><script>window.__pwned=8</script></svg>\n\n"}]} data: evil\nid: 99'
HOSTILE_SCRIPT = {
    "kickoff": HOSTILE_KICKOFF,
    "script": {
        "</script><script>window.__pwned=2</script>": [
            {
                "tool": "<b>t</b>",
                "args": {
                    "<a href=javascript:alert(1)>": "<iframe srcdoc='<script>parent.__pwned=7</script>'>"
                },
                "say": HOSTILE_SAY,
            }
        ]
    },
}


def finished_run(
    workdir: Path, flow: Path, script: str, name: str = "s.yaml"
) -> tuple[Path, dict[str, Any]]:
    """A run written by `flowc run`, and `flowc log --json` of it."""
    db = workdir / "runs.db"
    (workdir / name).write_text(script, encoding="utf-8")
    done = flowc("run", str(flow), "--script", name, "--db", str(db), cwd=workdir)
    assert done.returncode == 0, done.stderr
    log = flowc("log", "last", "--json", "--db", str(db), cwd=workdir)
    assert log.returncode == 0, log.stderr
    return db, json.loads(log.stdout)


def transcript(page: Any) -> list[dict[str, Any]]:
    return page.evaluate(
        """() => Array.from(document.querySelectorAll('#transcript li')).map(li => ({
            n: Number(li.dataset.n),
            speaker: li.querySelector('.who').textContent,
            text: li.querySelector('.text').textContent,
            rule: li.querySelector('.rule').textContent,
        }))"""
    )


#: the why panel as the page shows it: each rule's label and condition lines, the values
#: read, the default's sentence, the rules for other speakers
WHY_SHOWN = """() => {
    const rules = sel => Array.from(document.querySelectorAll(sel + ' .why-rule')).map(d => ({
        rule: Number(d.dataset.rule),
        label: d.querySelector('.why-label').textContent,
        lines: Array.from(d.querySelectorAll('.why-cond')).map(s => s.textContent),
    }));
    const dts = Array.from(document.querySelectorAll('#why-values dt'));
    return {
        fired: rules('#why-fired'),
        checked: rules('#why-checked'),
        values: Object.fromEntries(dts.map(dt => [dt.textContent, dt.nextElementSibling.textContent])),
        default: document.getElementById('why-default').textContent,
        others: document.getElementById('why-others').textContent,
        routing: document.getElementById('why-routing').textContent,
        note: document.getElementById('why-note').textContent,
        // the parts with text, in the order the panel shows them
        order: Array.from(document.querySelectorAll('[id^="why-"]'))
            .filter(e => e.textContent.trim() !== '').map(e => e.id),
        error: document.getElementById('why-disagrees').textContent,
    };
}"""


def condition_lines(cond: dict[str, Any]) -> list[str]:
    """A condition of `--why --json` and its parts, one line each, as `--why` words them."""
    if cond["holds"] is None:
        line = f"`{cond['text']}` was not evaluated (an earlier part decided)"
    else:
        verdict = "held" if cond["holds"] else "was false"
        line = f"`{cond['text']}` {verdict}" + (f": {cond['because']}" if cond["because"] else "")
    return [line] + [x for part in cond["parts"] for x in condition_lines(part)]


def why_of(page: Any, n: int) -> dict[str, Any]:
    """Select turn ``n`` and read its why panel once it shows turn ``n``."""
    page.click(f"#turn-{n}")
    page.wait_for_selector(f"#why[data-turn='{n}']")
    return dict(page.evaluate(WHY_SHOWN))


def assert_why_equals_the_cli(
    shown: dict[str, Any], db: Path, run_id: str, n: int, workdir: Path
) -> dict[str, Any]:
    """The panel says what `flowc log RUN --why N --json` says (and its lines are lines of
    `flowc log RUN --why N`); returns the JSON document."""
    done = flowc("log", run_id, "--why", str(n), "--json", "--db", str(db), cwd=workdir)
    assert done.returncode == 0, done.stderr
    why = json.loads(done.stdout)
    text = flowc("log", run_id, "--why", str(n), "--db", str(db), cwd=workdir).stdout
    text_lines = {line.strip() for line in text.splitlines()}
    assert shown["error"] == ""
    for key in ("fired", "checked"):
        rules = why[key] if key == "checked" else [why[key]] if why[key] else []
        assert shown[key] == [
            {"rule": r["rule"], "label": r["label"], "lines": condition_lines(r["condition"])}
            for r in rules
        ], (n, key)
        for rule in shown[key]:
            assert {rule["label"], *rule["lines"]} <= text_lines, (n, rule)
    assert shown["values"] == {k: json.dumps(v) for k, v in why["context"].items()}
    default = why["default"]
    if shown["default"]:
        assert shown["default"].startswith(f"the default ({default['target']}) ")
        if default["next_speaker"] is not None:
            assert shown["default"].endswith(f"would have chosen {default['next_speaker']}")
        else:
            assert shown["default"].endswith(json.dumps(default["close_reason"]))
    else:  # the text leaves it out only for a hand-off or finish without a rule
        assert why["kind"] in ("handoff", "finish") and why["fired"] is None
    nums = why["other_speakers"]
    assert (shown["others"] != "") == bool(nums)
    for num in nums:
        assert str(num) in shown["others"]
    if why["kind"] in ("handoff", "finish"):
        assert str(why["routing"]["tool"]) in shown["routing"]
        # the tool's sentence, then the note on it ("without it, ..."), as `--why` prints
        # them: the note refers to the sentence before it
        lines = [line.strip() for line in text.splitlines()]
        said = [i for i, line in enumerate(lines) if line.startswith("the turn's tool ")]
        note = [i for i, line in enumerate(lines) if line.startswith("without it, ")]
        assert said and note and said[0] < note[0], text
        assert shown["note"].startswith("without it, ")
        order = shown["order"]
        assert order.index("why-routing") < order.index("why-note"), order
    else:
        assert shown["routing"] == ""
    return dict(why)


def title_of(page: Any, element_id: str) -> str:
    return str(
        page.evaluate(
            "id => document.getElementById(id).querySelector('title').textContent", element_id
        )
    )


def test_runs_list_links_each_run_with_its_status(workdir: Path, page: Any) -> None:
    db, log = finished_run(workdir, ROUTING, ROUTING_SCRIPT)
    (workdir / "h.flow").write_text(HOSTILE_FLOW, encoding="utf-8")
    (workdir / "h.json").write_text(json.dumps(HOSTILE_SCRIPT), encoding="utf-8")
    assert (
        flowc("run", "h.flow", "--script", "h.json", "--db", str(db), cwd=workdir).returncode == 0
    )
    listed = json.loads(flowc("log", "--json", "--db", str(db), cwd=workdir).stdout)
    server = ViewServer(db, cwd=workdir)
    try:
        page.goto(server.url)
        page.wait_for_selector("#runs tbody tr")
        rows = page.evaluate(
            """() => Array.from(document.querySelectorAll('#runs tbody tr')).map(tr =>
                Array.from(tr.children).map(td => td.textContent))"""
        )
        assert [r[0] for r in rows] == [r["run_id"] for r in listed]
        for row, run in zip(rows, listed, strict=True):
            assert row[3] == "closed" and row[5] == str(run["turns"])
            assert row[6] == run["close_reason"]
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "runs_list.png"), full_page=True)
        page.click(f"#runs a >> text={log['run_id']}")
        page.wait_for_selector("#transcript li")
        assert page.evaluate("location.pathname") == f"/run/{log['run_id']}"
        assert page.errors == []
    finally:
        server.stop()


def test_a_finished_run_shows_its_transcript_diagram_and_timeline(workdir: Path, page: Any) -> None:
    db, log = finished_run(workdir, ROUTING, ROUTING_SCRIPT)
    turns = log["turns"]
    server = ViewServer(db, log["run_id"], cwd=workdir)
    try:
        page.goto(server.url)
        page.wait_for_selector("body[data-ended=true]")
        page.wait_for_selector("#diagram svg g.edge")
        shown = transcript(page)
        assert [t["n"] for t in shown] == [t["number"] for t in turns]
        assert [t["speaker"] for t in shown] == [t["speaker"] for t in turns]
        assert [t["text"] for t in shown] == [t["text"] for t in turns]
        for row, turn in zip(shown, turns, strict=True):
            assert row["rule"].startswith(turn["decided_by"])
        # the last turn is selected: the run's ending is the current node
        assert page.input_value("#turn-slider") == str(len(turns))
        current = page.evaluate(
            "Array.from(document.querySelectorAll('#diagram g.node.current')).map(g => g.id)"
        )
        assert len(current) == 1
        assert title_of(page, current[0]) == f"[terminate {json.dumps(log['close_reason'])}]"
        assert title_of(page, "n1") == "customer"  # the humans are drawn as humans
        # the counts: each turn of this run went along an edge (a rule's, or the tool's
        # that finished it), and each edge shows how often it was taken
        counts = page.evaluate(
            "Object.fromEntries(Array.from(document.querySelectorAll('#diagram g.edge.taken'))"
            ".map(g => [g.id, Number(g.dataset.count)]))"
        )
        assert sum(counts.values()) == len(turns)
        for edge_id, count in counts.items():
            label = page.evaluate(
                "id => document.querySelector('#' + id + ' text.count').textContent", edge_id
            )
            assert label == f"×{count}"
        ending = f"[terminate {json.dumps(log['close_reason'])}]"
        # select each turn: the state after it, the diagram as it was
        for turn in turns:
            page.click(f"#turn-{turn['number']}")
            assert page.inner_text("#state-turn") == str(turn["number"])
            assert page.inner_text("#state-speaker") == turn["speaker"]
            assert page.inner_text("#state-decided") == turn["decided_by"]
            target = turn["next_speaker"] or ending
            node = page.evaluate("document.querySelector('#diagram g.node.current').id")
            assert title_of(page, node) == target
            if turn["next_speaker"] is not None:
                assert page.inner_text("#state-next") == turn["next_speaker"]
            selected = page.evaluate(
                "Array.from(document.querySelectorAll('#diagram g.edge.selected')).map(g => g.id)"
            )
            assert len(selected) == 1
            assert title_of(page, selected[0]) == f"{turn['speaker']}->{target}"
            total = page.evaluate(
                "Array.from(document.querySelectorAll('#diagram g.edge'))"
                ".reduce((s, g) => s + Number(g.dataset.count), 0)"
            )
            assert total == turn["number"]
            # the why panel's place shows the recorded decision for now
            if turn["rule"] is not None:
                assert f"rule {turn['rule']}" in page.inner_text("#why-recorded")
            else:
                assert turn["decided_by"] in page.inner_text("#why-recorded")
        # the context after turn 2 (the tool set it), from `flowc log` (the final one)
        page.fill("#turn-slider", "1")
        assert json.loads(page.inner_text("#state-context")) == {}
        page.fill("#turn-slider", str(len(turns)))
        assert json.loads(page.inner_text("#state-context")) == log["context_vars"]
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.click("#turn-2")
        page.screenshot(path=str(ARTIFACTS / "run_page.png"), full_page=True)
        assert page.errors == []
    finally:
        server.stop()


def test_the_why_panel_and_the_scenario_block_equal_flowc_log(workdir: Path, page: Any) -> None:
    db, log = finished_run(workdir, ROUTING, ROUTING_SCRIPT)
    run_id = log["run_id"]
    server = ViewServer(db, run_id, cwd=workdir)
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    try:
        page.goto(server.url)
        page.wait_for_selector("body[data-ended=true]")
        kinds = set()
        for turn in log["turns"]:
            n = turn["number"]
            why = assert_why_equals_the_cli(why_of(page, n), db, run_id, n, workdir)
            kinds.add(why["kind"])
            assert why["decided_by"] == turn["decided_by"]
            # the scenario block of turns 1 to N, as `flowc log --scenario-upto N` writes it
            assert page.is_hidden("#scenario")
            page.click("#scenario-show")
            page.wait_for_selector(f"#scenario[data-turn='{n}']")
            expected = flowc("log", run_id, "--scenario-upto", str(n), "--db", str(db), cwd=workdir)
            assert expected.returncode == 0, expected.stderr
            assert page.text_content("#scenario") == expected.stdout
            assert page.is_visible("#scenario-copy")
        # this run has turns decided by rules and by a tool that finished it
        assert {"rule", "finish"} <= kinds, kinds
        # a rule that did not fire shows the part of its condition that was false
        assert any(
            "was false" in line
            for n in range(1, len(log["turns"]) + 1)
            for rule in why_of(page, n)["checked"]
            for line in rule["lines"]
        )
        # the copy button puts the block on the clipboard
        page.click("#turn-3")
        page.click("#scenario-show")
        page.wait_for_selector("#scenario[data-turn='3']")
        page.click("#scenario-copy")
        wait_for(lambda: page.inner_text("#scenario-note") != "", what="the copy")
        assert page.evaluate("navigator.clipboard.readText()") == page.text_content("#scenario")
        # another turn hides the block of the one before
        page.click("#turn-1")
        assert page.is_hidden("#scenario")
        assert page.errors == []
    finally:
        server.stop()


def _shown_numbers(page: Any) -> list[int]:
    return list(
        page.evaluate(
            "Array.from(document.querySelectorAll('#transcript li')).map(li => Number(li.dataset.n))"
        )
    )


def test_a_live_run_streams_its_turns_as_they_are_committed(workdir: Path, page: Any) -> None:
    db, run, gate = start_live_run(workdir, workdir / "runs.db")
    run_id = json.loads(flowc("log", "--json", "--db", str(db), cwd=workdir).stdout)[0]["run_id"]
    server = ViewServer(db, run_id, cwd=workdir)
    try:
        page.goto(server.url)
        wait_for(lambda: _shown_numbers(page) == [1], what="the kickoff on the page")
        # the status and holder come with the feed's status message, which may follow the
        # kickoff's: wait for them as for the turns
        wait_for(lambda: page.inner_text("#run-status") == "running", what="the status running")
        wait_for(lambda: "pid" in page.inner_text("#run-holder"), what="the holder's pid")
        for k in range(1, LIVE_TURNS):
            (gate / f"go-{k}").touch()
            wait_for(
                lambda k=k: _shown_numbers(page) == list(range(1, k + 2)), what=f"turn {k + 1}"
            )
            # following the run: the newest turn is selected, its next speaker current
            assert page.inner_text("#state-turn") == str(k + 1)
        run.wait(timeout=30)
        page.wait_for_selector("body[data-ended=true]")
        assert page.inner_text("#run-status") == "closed"
        assert "max_turns" in page.inner_text("#run-end")
        log = json.loads(flowc("log", run_id, "--json", "--db", str(db), cwd=workdir).stdout)
        assert [t["text"] for t in transcript(page)] == [t["text"] for t in log["turns"]]
        assert page.errors == []
    finally:
        if run.poll() is None:
            run.kill()
        run.communicate()
        server.stop()


#: the page's visibility, set by the test (a headless page is always visible):
#: ``window.__hide(true)`` hides it as a tab behind another one is
VISIBILITY = """(() => {
    let hidden = false;
    Object.defineProperty(Document.prototype, 'hidden', {configurable: true, get: () => hidden});
    Object.defineProperty(Document.prototype, 'visibilityState',
        {configurable: true, get: () => hidden ? 'hidden' : 'visible'});
    window.__hide = h => { hidden = h; document.dispatchEvent(new Event('visibilitychange')); };
})()"""


def test_pages_behind_others_let_their_stream_go_so_many_pages_of_one_server_work(
    workdir: Path, browser: Any
) -> None:
    """Eight pages of a live run opened one after the other in one browser, each opened
    in front of the one before: Chromium opens at most 6 connections to a server, and
    each open event stream holds one, so the 7th page got nothing (not even its HTML)
    while 6 pages behind it held their streams (issue 28, point 6). A hidden page lets its
    stream go; shown again, it reads on from its last turn: every page ends with every
    turn once."""
    db, run, gate = start_live_run(workdir, workdir / "runs.db")
    run_id = json.loads(flowc("log", "--json", "--db", str(db), cwd=workdir).stdout)[0]["run_id"]
    server = ViewServer(db, run_id, cwd=workdir)
    pages: list[Any] = []
    errors: list[str] = []
    try:
        for i in range(8):
            if pages:
                pages[-1].evaluate("window.__hide(true)")  # behind the new one
            page = browser.new_page()
            page.set_default_timeout(15_000)
            page.on("pageerror", lambda err: errors.append(str(err)))
            page.add_init_script(VISIBILITY)
            page.goto(server.url)
            wait_for(lambda p=page: _shown_numbers(p) == [1], what=f"the kickoff on page {i + 1}")
            pages.append(page)
        front = pages[-1]
        for k in range(1, LIVE_TURNS):
            (gate / f"go-{k}").touch()
            wait_for(
                lambda k=k: _shown_numbers(front) == list(range(1, k + 2)), what=f"turn {k + 1}"
            )
        assert run.wait(timeout=30) == 0
        front.wait_for_selector("body[data-ended=true]")
        log = json.loads(flowc("log", run_id, "--json", "--db", str(db), cwd=workdir).stdout)
        want = [(t["number"], t["speaker"], t["text"]) for t in log["turns"]]
        for page in pages[:-1]:  # each shown in turn: it reads on from the kickoff
            assert _shown_numbers(page) == [1]
            front.evaluate("window.__hide(true)")
            page.evaluate("window.__hide(false)")
            front = page
            page.wait_for_selector("body[data-ended=true]")
        for page in pages:
            assert [(t["n"], t["speaker"], t["text"]) for t in transcript(page)] == want
        assert errors == []
    finally:
        for page in pages:
            page.close()
        if run.poll() is None:
            run.kill()
        run.communicate()
        server.stop()


def test_a_server_restarted_mid_run_leaves_no_gap_and_no_duplicate(
    workdir: Path, page: Any
) -> None:
    db, run, gate = start_live_run(workdir, workdir / "runs.db")
    run_id = json.loads(flowc("log", "--json", "--db", str(db), cwd=workdir).stdout)[0]["run_id"]
    port, token = free_port(), "restart-token-0123456789abcdef"
    # the page counts every turn event it receives, duplicates included
    page.add_init_script(COUNT_TURN_EVENTS)
    server = ViewServer(db, run_id, port=port, token=token, cwd=workdir)
    try:
        page.goto(server.url)
        for k in (1, 2, 3):
            (gate / f"go-{k}").touch()
        wait_for(lambda: _shown_numbers(page) == [1, 2, 3, 4], what="the first four turns")
        server.stop()
        # turns committed while no server runs
        for k in (4, 5):
            (gate / f"go-{k}").touch()
        wait_for(
            lambda: (
                len(
                    json.loads(flowc("log", run_id, "--json", "--db", str(db), cwd=workdir).stdout)[
                        "turns"
                    ]
                )
                == 6
            ),
            what="turns 5 and 6 in the store",
        )
        server = ViewServer(db, run_id, port=port, token=token, cwd=workdir)
        for k in range(6, LIVE_TURNS):
            (gate / f"go-{k}").touch()
        run.wait(timeout=30)
        page.wait_for_selector("body[data-ended=true]", timeout=20000)
        assert _shown_numbers(page) == list(range(1, LIVE_TURNS + 1))
        assert page.evaluate("window.__turnEvents") == list(range(1, LIVE_TURNS + 1))
        assert page.errors == []
    finally:
        if run.poll() is None:
            run.kill()
        run.communicate()
        server.stop()


def test_hostile_names_and_texts_run_no_script_and_show_as_written(
    workdir: Path, page: Any
) -> None:
    (workdir / "h.flow").write_text(HOSTILE_FLOW, encoding="utf-8")
    db, log = finished_run(workdir, workdir / "h.flow", json.dumps(HOSTILE_SCRIPT), "h.json")
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    server = ViewServer(db, cwd=workdir)
    try:
        page.goto(server.url)
        page.wait_for_selector("#runs tbody tr")
        assert page.inner_text("#runs tbody td:nth-child(7)") == log["close_reason"]
        page.click("#runs a")
        page.wait_for_selector("body[data-ended=true]")
        page.wait_for_selector("#diagram svg g.edge")
        shown = transcript(page)
        assert [t["speaker"] for t in shown] == [t["speaker"] for t in log["turns"]]
        assert [t["text"] for t in shown] == [HOSTILE_KICKOFF, HOSTILE_SAY]
        # the why panel shows the rules' texts and the values they read as written
        for n in (1, 2):
            why = assert_why_equals_the_cli(why_of(page, n), db, log["run_id"], n, workdir)
            page.click("#scenario-show")
            page.wait_for_selector(f"#scenario[data-turn='{n}']")
            expected = flowc(
                "log", log["run_id"], "--scenario-upto", str(n), "--db", str(db), cwd=workdir
            )
            assert page.text_content("#scenario") == expected.stdout
        assert why["checked"][0]["text"].startswith("when context.`<i>k</i>` == ")
        shown = page.evaluate(WHY_SHOWN)
        assert shown["values"] == {"<i>k</i>": json.dumps("<svg onload=window.__pwned=3>")}
        assert "<script>window.__pwned=9</script>" in shown["checked"][0]["label"]
        assert "<img src=y onerror=window.__pwned=4>" in page.text_content("#scenario")
        assert json.loads(page.inner_text("#state-context")) == log["context_vars"]
        calls = page.inner_text("#transcript .tools")
        assert "<iframe srcdoc='<script>parent.__pwned=7</script>'>" in calls
        # the diagram's labels are text, not elements
        names = page.evaluate(
            "Array.from(document.querySelectorAll('#diagram g.node title')).map(t => t.textContent)"
        )
        assert "<img src=x onerror=window.__pwned=1>" in names
        # nothing of the run became an element, and no script ran
        assert (
            page.evaluate(
                "document.querySelectorAll('#transcript img, #transcript script, #transcript svg, "
                "#transcript iframe, #transcript a, #diagram img, #diagram script, #diagram iframe, "
                "#state-context *, #runs img, #why img, #why script, #why svg, #why iframe, "
                "#why a, #why b, #why i, #scenario *').length"
            )
            == 0
        )
        page.wait_for_timeout(300)  # an image's error handler would have run by now
        assert page.evaluate("window.__pwned") is None
        assert dialogs == [] and page.errors == []
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "hostile_run.png"), full_page=True)
    finally:
        server.stop()


@pytest.mark.parametrize("wrong", ["", "?token=wrong"])
def test_the_page_without_the_token_is_refused_in_the_browser(
    workdir: Path, page: Any, wrong: str
) -> None:
    db, _ = finished_run(workdir, ROUTING, ROUTING_SCRIPT)
    server = ViewServer(db, cwd=workdir)
    try:
        answer = page.goto(server.base + "/" + wrong)
        assert answer.status == 403
        assert "token" in page.inner_text("body")
    finally:
        server.stop()


def test_a_broken_property_is_listed_and_marked_on_its_turn(workdir: Path, page: Any) -> None:
    from tests.view.test_view_http import BROKEN_FLOW

    (workdir / "p.flow").write_text(BROKEN_FLOW, encoding="utf-8")
    script = {"kickoff": "hi", "script": {"a": ["x"], "b": ["p", "q"]}}
    (workdir / "p.json").write_text(json.dumps(script), encoding="utf-8")
    db = workdir / "runs.db"
    done = flowc("run", "p.flow", "--script", "p.json", "--db", str(db), cwd=workdir)
    assert done.returncode == 3, done.stderr
    (run,) = json.loads(flowc("log", "--json", "--db", str(db), cwd=workdir).stdout)
    server = ViewServer(db, cwd=workdir)
    try:
        page.goto(server.url)
        page.wait_for_selector("#runs tbody tr")
        row = page.evaluate(
            "() => Array.from(document.querySelector('#runs tbody tr').children)"
            ".map(td => td.textContent)"
        )
        assert row[7] == "violated: quiet_b"
        page.click(f"#runs a >> text={run['run_id']}")
        wait_for(lambda: len(transcript(page)) == 4, what="the run's four turns")
        marked = page.evaluate(
            """() => Array.from(document.querySelectorAll('#transcript li')).map(li =>
                [Number(li.dataset.n), li.dataset.violated || '',
                 Array.from(li.querySelectorAll('.violated')).map(d => d.textContent)])"""
        )
        assert marked == [
            [1, "", []],
            [2, "true", ["violated: property quiet_b (`never from b`): turn 2 has `from b`"]],
            [3, "", []],
            [4, "", []],
        ]
        assert page.errors == []
    finally:
        server.stop()


#: a run id that is markup (no space nor '/': `flowc fork --run-id` takes neither)
HOSTILE_RUN_ID = "<svg><b>window.__pwned=11&amp;"


def test_a_new_run_from_a_turn_is_started_from_the_page(workdir: Path, page: Any) -> None:
    """The run page's "start a new run from here" posts the script for the selected turn;
    the new run opens, says which run and turn it came from (as text: the parent's id is
    markup here), and the runs list shows it."""
    from urllib.parse import quote

    db, log = finished_run(workdir, ROUTING, ROUTING_SCRIPT)
    forked = flowc(
        "fork", log["run_id"], "5", "--run-id", HOSTILE_RUN_ID, "--db", str(db), cwd=workdir
    )
    assert forked.returncode == 0, forked.stderr
    server = ViewServer(db, cwd=workdir)
    try:
        page.goto(server.url)  # the token's cookie
        page.wait_for_selector("#runs tbody tr")
        page.goto(f"{server.base}/run/{quote(HOSTILE_RUN_ID, safe='')}")
        page.wait_for_selector("body[data-ended=true]")
        assert page.is_visible("#run-forked")
        assert page.text_content("#run-parent") == log["run_id"]
        page.click("#turn-3")
        page.click("#fork summary")
        assert page.text_content("#fork-turn") == "3"
        after = {
            "script": {
                "customer": ["No, keep both."],
                "billing": [{"tool": "close_ticket", "say": "Nothing changed."}],
            }
        }
        page.fill("#fork-script", json.dumps(after))
        page.click("#fork-start")
        page.wait_for_selector("#fork-link:not([hidden])")
        assert (
            page.text_content("#fork-note") == "new run from turn 3 (5 turns, closed: resolved): "
        )
        new = page.text_content("#fork-link")
        page.click("#fork-link")
        page.wait_for_selector("body[data-ended=true]")
        assert page.text_content("#run-id") == new
        assert page.text_content("#run-parent") == HOSTILE_RUN_ID
        assert page.text_content("#run-parent-turn") == "3"
        assert [t["text"] for t in transcript(page)][3:] == ["No, keep both.", "Nothing changed."]
        # a script that does not fit is refused on the page, with the server's reason
        page.click("#turn-2")
        page.click("#fork summary")
        page.fill("#fork-script", '{"kickoff": "again"}')
        page.click("#fork-start")
        wait_for(lambda: "No new run" in page.inner_text("#fork-note"), what="the refusal")
        assert "so it has no kickoff" in page.inner_text("#fork-note")
        page.goto(server.url)
        page.wait_for_selector("#runs tbody tr:nth-child(3)")
        froms = page.evaluate(
            "Array.from(document.querySelectorAll('#runs .forked')).map(d => d.textContent)"
        )
        assert froms == [
            f"forked from {log['run_id']} at turn 5",
            f"forked from {HOSTILE_RUN_ID} at turn 3",
        ]
        assert page.evaluate("document.querySelectorAll('#runs img, #run-forked img').length") == 0
        page.wait_for_timeout(300)
        assert page.evaluate("window.__pwned") is None
        assert page.errors == []
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "forked_runs.png"), full_page=True)
    finally:
        server.stop()
