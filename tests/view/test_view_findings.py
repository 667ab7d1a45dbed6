"""The checker's findings on a run's page of `flowc view` (issue 28, point 1):
``/api/run/ID/findings`` gives what `flowc check` gives for the run's stored graph
written to a JSON file (the real command, compared field by field), the properties the
run stored decided as `flowc check` decides them on the flow, the marks `flowc render
--check` draws, "clean" only when every run was checked (a run past the state bound is
"partial"), worked out once per run, behind the same guard as every answer; and, in a
real Chromium, the page's findings panel and the marks on its diagram, with hostile
names shown as text."""

from __future__ import annotations

import json
import re
import threading
import urllib.request
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("starlette")
from starlette.testclient import TestClient

from flowc.runtime.stores import open_store
from flowc.view.feed import RunView
from flowc.view.server import ViewSettings, make_app
from tests.view.conftest import ARTIFACTS, ROOT, ViewServer, flowc, needs_browser

TOKEN = "test-token-0123456789abcdef"

#: a dead rule (W203) on the stored graph; no tools, no humans: the view's diagram is
#: the one `flowc render` draws of the stored graph, element for element
DEAD_RULE_FLOW = """speaker a
speaker b
speaker c
start a
max_turns 6
when from a then b
when from b then a
when from b then c
"""
DEAD_RULE_SCRIPT = {"kickoff": "hi", "script": {"a": ["x", "y"], "b": ["p", "q", "r"]}}

#: one property broken, two that hold
PROPERTY_FLOW = """flow pingpong "two agents in turn"
speaker a
speaker b
start a
max_turns 4
when from a then b
when from b then a
property quiet_b: never from b
property a_first: never turn == 1 and from b
property ends_cap: eventually ends
"""
PROPERTY_SCRIPT = {"kickoff": "hi", "script": {"a": ["x"], "b": ["p", "q"]}}

#: nothing to fix on the stored graph (only I303, the JSON graph's assumptions)
CLEAN_FLOW = """speaker a
speaker b
start a
max_turns 6
when from a then b
when from b then a
"""

#: names that are markup: a speaker and a property (broken), a close reason
HOSTILE_FLOW = """speaker `<img src=x onerror=window.__pwned=1>`
speaker `</script><script>window.__pwned=2</script>`
start `<img src=x onerror=window.__pwned=1>`
max_turns 4
when from `<img src=x onerror=window.__pwned=1>` then `</script><script>window.__pwned=2</script>`
when from `</script><script>window.__pwned=2</script>` then `<img src=x onerror=window.__pwned=1>`
when from `</script><script>window.__pwned=2</script>` then terminate "<b>dead</b>"
property `<svg onload=window.__pwned=3>`: never from `</script><script>window.__pwned=2</script>`
"""
HOSTILE_SCRIPT = {
    "kickoff": "hi",
    "script": {
        "</script><script>window.__pwned=2</script>": ["p", "q"],
        "<img src=x onerror=window.__pwned=1>": ["x"],
    },
}


def needs_real_browser(test: Any) -> Any:
    """Chromium, Playwright and Graphviz, or the test is skipped (tests/view/conftest.py)."""
    for mark in needs_browser:
        test = mark(test)
    return test


#: what the view adds to each finding of `flowc check --format json`
VIEW_KEYS = ("line", "nodes", "edges", "mark")


def stored_run(
    folder: Path, flow: str, script: dict[str, Any], name: str = "f"
) -> tuple[Path, str]:
    """A run of ``flow`` written by the real `flowc run` (its own database); its id."""
    (folder / f"{name}.flow").write_text(flow, encoding="utf-8")
    (folder / f"{name}.json").write_text(json.dumps(script), encoding="utf-8")
    db = folder / f"{name}.db"
    done = flowc("run", f"{name}.flow", "--script", f"{name}.json", "--db", str(db), cwd=folder)
    # 1: stalled once the script ran out (the run is stored), 3: a property was broken
    assert done.returncode in (0, 1, 3) and "error" not in done.stderr, done.stderr
    (run,) = json.loads(flowc("log", "--json", "--db", str(db), cwd=folder).stdout)
    return db, str(run["run_id"])


def stored_graph(folder: Path, db: Path, run_id: str) -> str:
    """The run's stored knobs written to ``RUN.json`` (the name the view checks them under)."""
    store = open_store(str(db), readonly=True)
    try:
        view = RunView.load(store, run_id)
    finally:
        store.close()
    assert view is not None
    name = f"{run_id}.json"
    (folder / name).write_text(json.dumps(view.metadata.knobs, indent=2), encoding="utf-8")
    return name


def check_json(folder: Path, *args: str) -> list[dict[str, Any]]:
    done = flowc("check", *args, "--format", "json", cwd=folder)
    assert done.returncode in (0, 1), done.stderr
    return list(json.loads(done.stdout))


def client_of(db: Path, **settings: Any) -> TestClient:
    app = make_app(ViewSettings(str(db), TOKEN, **settings))
    return TestClient(app, base_url="http://127.0.0.1:8124")  # type: ignore[arg-type]


def findings_of(client: TestClient, run_id: str) -> dict[str, Any]:
    answer = client.get(f"/api/run/{run_id}/findings?token={TOKEN}")
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"].startswith("application/json")
    return dict(answer.json())


def without_view_keys(found: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in f.items() if k not in VIEW_KEYS} for f in found]


_COLOURS = {"#c2255c": "violation", "#9a9a9a": "dead", "#d9480f": "orange"}


def render_marks(folder: Path, path: str) -> dict[str, str]:
    """The elements `flowc render PATH --check -f dot` marks, and how (by colour: a
    priority trap and a loop share theirs)."""
    done = flowc("render", path, "--check", "-f", "dot", cwd=folder)
    assert done.returncode == 0, done.stderr
    out = {}
    for line in done.stdout.splitlines():
        found = re.search(r'\[id="([ne][0-9]+)"', line)
        colour = re.search(r'(?<!fill)color="(#[0-9a-f]{6})"', line)
        if found and colour and colour.group(1) in _COLOURS:
            out[found.group(1)] = _COLOURS[colour.group(1)]
    return out


def view_marks(answer: dict[str, Any]) -> dict[str, str]:
    return {k: "orange" if v in ("trap", "loop") else v for k, v in answer["marks"].items()}


def test_the_findings_are_flowc_check_s_on_the_stored_graph(tmp_path: Path) -> None:
    db, run_id = stored_run(tmp_path, DEAD_RULE_FLOW, DEAD_RULE_SCRIPT)
    name = stored_graph(tmp_path, db, run_id)
    expected = check_json(tmp_path, name)
    assert "W203" in [f["code"] for f in expected]  # the flow has something to mark
    answer = findings_of(client_of(db), run_id)
    assert answer["status"] == "complete" and answer["clean"] is False
    assert answer["max_states"] == 300_000  # the checker's default bound
    assert without_view_keys(answer["findings"]) == expected
    assert answer["counts"] == {
        s: sum(f["severity"] == s for f in expected) for s in ("error", "warning", "info")
    }
    # marked as `flowc render --check` marks the same graph
    assert view_marks(answer) == render_marks(tmp_path, name) != {}
    (dead,) = [f for f in answer["findings"] if f["code"] == "W203"]
    assert dead["mark"] == "dead" and dead["edges"]
    assert dead["json_path"] == "graph.transitions[2]"
    assert dead["line"] == 8  # the rule's line in the flow, which the run stored


APPROVAL = ROOT / "examples" / "approval.flow"
#: the kickoff, then the assistant's turn: the run stalls on the employee (a human)
APPROVAL_SCRIPT = {"kickoff": "Taxi to the client, 42 EUR", "script": {"assistant": ["ok"]}}


@pytest.mark.parametrize(
    ("flow", "script", "decided"),
    [
        (PROPERTY_FLOW, PROPERTY_SCRIPT, ["E116", "I306", "I306"]),
        # humans who write what they declare, a tool that finishes the run: the property
        # that holds on the flow holds here too (not on the graph alone, where any
        # speaker may call `pay`)
        (APPROVAL.read_text(encoding="utf-8"), APPROVAL_SCRIPT, ["I306", "E116"]),
    ],
    ids=["pingpong", "approval"],
)
def test_the_run_s_properties_are_decided_as_flowc_check_decides_them(
    tmp_path: Path, flow: str, script: dict[str, Any], decided: list[str]
) -> None:
    db, run_id = stored_run(tmp_path, flow, script)
    answer = findings_of(client_of(db), run_id)
    codes = ("E116", "I305", "I306")
    on_flow = [f for f in check_json(tmp_path, "f.flow") if f["code"] in codes]
    assert [f["code"] for f in on_flow] == decided
    keys = ("code", "name", "severity", "message", "notes", "fix")
    shown = [f for f in answer["findings"] if f["code"] in codes]

    def fields(found: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return sorted(({k: f[k] for k in keys} for f in found), key=lambda f: f["message"])

    assert fields(shown) == fields(on_flow)
    # the broken property's run is marked as `flowc render FLOW --check` marks it
    (broken,) = [f for f in shown if f["code"] == "E116"]
    assert broken["mark"] == "violation" and broken["edges"]
    assert view_marks(answer) == render_marks(tmp_path, "f.flow")
    # the rest is what `flowc check` gives for the stored graph (which has no properties)
    rest = [f for f in answer["findings"] if f["code"] not in codes]
    assert without_view_keys(rest) == check_json(tmp_path, stored_graph(tmp_path, db, run_id))


def test_clean_only_when_every_run_was_checked(tmp_path: Path) -> None:
    db, run_id = stored_run(tmp_path, CLEAN_FLOW, PROPERTY_SCRIPT)
    name = stored_graph(tmp_path, db, run_id)
    whole = findings_of(client_of(db), run_id)
    assert whole["status"] == "complete" and whole["clean"] is True
    assert [f["code"] for f in whole["findings"]] == ["I303"] and whole["marks"] == {}
    # the same graph past a bound of 2 states: partial, never clean, though nothing is wrong
    cut = findings_of(client_of(db, max_states=2), run_id)
    assert cut["status"] == "partial" and cut["clean"] is False and cut["max_states"] == 2
    assert "I301" in [f["code"] for f in cut["findings"]]
    assert without_view_keys(cut["findings"]) == check_json(tmp_path, name, "--max-states", "2")


#: a custom condition: the view reads and checks its runs only with ``--plugin``
CUSTOM_FLOW = """speaker a
speaker b
start a
max_turns 6
condition long_text(min: int)
when from a and long_text(min=3) then terminate "long"
when from a then b
when from b then a
"""
CUSTOM_PLUGIN = """from typing import Any, ClassVar

import attrs

import flowc


@flowc.register_condition
@attrs.frozen
class LongText:
    name: ClassVar[str] = "long_text"
    min: int = 10

    def evaluate(self, state: Any, envelope: Any) -> bool:
        data = envelope.event_data
        return len(data.get("body", data.get("text")) or "") >= self.min
"""


def test_a_run_with_custom_conditions_is_read_and_checked_with_its_plugin(
    tmp_path: Path,
) -> None:
    (tmp_path / "f.flow").write_text(CUSTOM_FLOW, encoding="utf-8")
    (tmp_path / "long_text.py").write_text(CUSTOM_PLUGIN, encoding="utf-8")
    script = {"kickoff": "hi", "script": {"a": ["a long text"], "b": ["p"]}}
    (tmp_path / "f.json").write_text(json.dumps(script), encoding="utf-8")
    db = tmp_path / "f.db"
    args = ("--script", "f.json", "--db", str(db), "--plugin", "long_text.py", "--trust")
    done = flowc("run", "f.flow", *args, cwd=tmp_path)
    assert done.returncode == 0 and 'closed: "long"' in done.stdout, done
    plugin = ("--plugin", "long_text.py")
    (run,) = json.loads(flowc("log", "--json", "--db", str(db), *plugin, cwd=tmp_path).stdout)
    # without the plugin the runtime cannot fold the run: the list says so, and what
    # reads it, in one line (it was a traceback and a 500 for the whole list)
    listed = client_of(db).get(f"/api/runs?token={TOKEN}")
    assert listed.status_code == 200, listed.text
    (line,) = listed.json()
    assert line["status"] == "damaged" and "no condition registered as `long_text`" in line["error"]
    assert "read with the plugins that register them (--plugin" in line["error"]
    bare = flowc("log", "--db", str(db), cwd=tmp_path)
    assert bare.returncode == 1 and "Traceback" not in bare.stderr
    assert "read with the plugins that register them (--plugin" in bare.stderr
    client = client_of(db)
    for path in (f"/run/{run['run_id']}", f"/api/run/{run['run_id']}/findings"):
        page = client.get(f"{path}?token={TOKEN}")
        # (a graph the runtime refuses is a run it cannot read: 422, as a damaged run;
        # a 500 is a bug in flowc)
        assert page.status_code == 422 and "(--plugin MODULE_OR_FILE" in page.text, page.text
    name = stored_graph(tmp_path, db, str(run["run_id"]))
    # with the plugin, `flowc view --plugin` checks the graph as `flowc check --plugin`
    server = ViewServer(db, *plugin, cwd=tmp_path)
    try:
        url = f"{server.base}/api/run/{run['run_id']}/findings?token={server.token}"
        with urllib.request.urlopen(url, timeout=60) as got:
            checked = json.loads(got.read())
        # and its turns stream to the page, to the close the plugin's condition decided
        events = url.replace("/findings?", "/events?")
        with urllib.request.urlopen(events, timeout=60) as got:
            stream = b""
            while b"event: end" not in stream:
                chunk = got.read1(65536)
                assert chunk, stream
                stream += chunk
        assert stream.count(b"event: turn") == 3 and b'"close_reason": "long"' in stream
    finally:
        server.stop()
    assert checked["status"] == "complete", checked
    assert "E103" not in [f["code"] for f in checked["findings"]]
    assert without_view_keys(checked["findings"]) == check_json(tmp_path, name, *plugin)


def test_a_property_left_undecided_is_partial(tmp_path: Path) -> None:
    db, run_id = stored_run(tmp_path, PROPERTY_FLOW.replace("max_turns 4\n", ""), PROPERTY_SCRIPT)
    cut = findings_of(client_of(db, max_states=1), run_id)
    codes = [f["code"] for f in cut["findings"]]
    assert cut["status"] == "partial" and cut["clean"] is False
    assert "I301" in codes and "I306" not in codes
    assert codes.count("I305") == 3  # each property said undecided, none "holds"


def test_the_findings_are_worked_out_once_per_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import flowc.view.findings as module

    db, run_id = stored_run(tmp_path, DEAD_RULE_FLOW, DEAD_RULE_SCRIPT)
    calls: list[str] = []
    real = module.run_findings

    def counted(view: RunView, max_states: int | None = None) -> dict[str, Any]:
        calls.append(view.run_id)
        return real(view, max_states)

    monkeypatch.setattr(module, "run_findings", counted)
    client = client_of(db)
    answers: list[dict[str, Any]] = []
    asks = [
        threading.Thread(target=lambda: answers.append(findings_of(client, run_id)))
        for _ in range(4)
    ]
    for t in asks:
        t.start()
    for t in asks:
        t.join()
    answers.append(findings_of(client, run_id))
    assert calls == [run_id]
    assert all(a == answers[0] for a in answers) and len(answers) == 5


def test_the_findings_are_guarded_as_every_answer(tmp_path: Path) -> None:
    db, run_id = stored_run(tmp_path, DEAD_RULE_FLOW, DEAD_RULE_SCRIPT)
    client = client_of(db)
    url = f"/api/run/{run_id}/findings"
    assert client.get(url).status_code == 403
    assert client.get(url + "?token=wrong" + TOKEN).status_code == 403
    for headers in (
        {"Origin": "http://evil.example"},
        {"Sec-Fetch-Site": "cross-site"},
        {"Host": "evil.example:8124"},
    ):
        assert client.get(f"{url}?token={TOKEN}", headers=headers).status_code == 403, headers
    assert client.post(f"{url}?token={TOKEN}").status_code == 405
    unknown = client.get(f"/api/run/wf-nope/findings?token={TOKEN}")
    assert unknown.status_code == 404 and "wf-nope" in unknown.json()["error"]
    answer = client.get(f"{url}?token={TOKEN}")
    assert answer.status_code == 200
    assert "script-src 'self'" in answer.headers["content-security-policy"]


@needs_real_browser
def test_the_page_lists_the_findings_and_marks_them_with_hostile_names_as_text(
    tmp_path: Path, page: Any
) -> None:
    db, run_id = stored_run(tmp_path, HOSTILE_FLOW, HOSTILE_SCRIPT)
    expected = findings_of(client_of(db), run_id)
    (broken,) = [f for f in expected["findings"] if f["code"] == "E116"]
    assert "<svg onload=window.__pwned=3>" in broken["message"]
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    server = ViewServer(db, run_id, cwd=tmp_path)
    try:
        page.goto(server.url)
        page.wait_for_selector("body[data-findings-marked=true]")
        assert page.get_attribute("body", "data-findings") == "complete"
        status = page.inner_text("#findings-status")
        assert status.startswith("Every run of the stored graph was checked: 1 error")
        shown = page.evaluate(
            """() => Array.from(document.querySelectorAll('#findings-list li')).map(li =>
                [li.dataset.code, li.querySelector('.finding-head').textContent])"""
        )
        assert [c for c, _ in shown] == [f["code"] for f in expected["findings"]]
        for (_, head), f in zip(shown, expected["findings"], strict=True):
            assert head.startswith(f"{f['severity']}[{f['code']}]: {f['message']}")
        # the diagram's marks are the answer's, on the elements it names
        marked = page.evaluate(
            """() => Object.fromEntries(Array.from(document.querySelectorAll(
                '#diagram g.mark-violation, #diagram g.mark-dead, #diagram g.mark-trap, '
                + '#diagram g.mark-loop')).map(g => [g.id, Array.from(g.classList)
                .find(c => c.startsWith('mark-')).slice(5)]))"""
        )
        assert marked == expected["marks"]
        assert broken["edges"]  # the breaking run is drawn, names and all
        assert set(broken["edges"]) <= {k for k, v in marked.items() if v == "violation"}
        # nothing of the findings became an element, and no script ran
        assert (
            page.evaluate(
                "document.querySelectorAll('#findings img, #findings script, #findings svg, "
                "#findings iframe, #findings a, #findings b').length"
            )
            == 0
        )
        page.wait_for_timeout(300)  # an image's error handler would have run by now
        assert page.evaluate("window.__pwned") is None
        assert dialogs == [] and page.errors == []
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "findings.png"), full_page=True)
    finally:
        server.stop()


@needs_real_browser
def test_the_page_says_clean_only_when_every_run_was_checked(tmp_path: Path, page: Any) -> None:
    db, run_id = stored_run(tmp_path, CLEAN_FLOW, PROPERTY_SCRIPT)
    for args, said, state in (
        ((), "Clean: every run of the stored graph was checked", "clean"),
        (("--max-states", "2"), "Partial: the checker stopped at its bound of 2 states", "partial"),
    ):
        server = ViewServer(db, run_id, *args, cwd=tmp_path)
        try:
            page.goto(server.url)
            page.wait_for_selector("body[data-findings-marked=true]")
            assert page.get_attribute("body", "data-findings") == state
            status = page.inner_text("#findings-status")
            assert status.startswith(said), status
            assert ("Clean" in status) == (state == "clean")
            codes = page.evaluate(
                "Array.from(document.querySelectorAll('#findings-list li')).map(li => li.dataset.code)"
            )
            assert ("I301" in codes) == (state == "partial")
            assert page.errors == []
        finally:
            server.stop()


def test_a_bound_below_one_is_refused_in_one_line(tmp_path: Path) -> None:
    db, _ = stored_run(tmp_path, CLEAN_FLOW, PROPERTY_SCRIPT)
    refused = flowc("view", "--db", str(db), "--no-open", "--max-states", "0", cwd=tmp_path)
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1
    assert "--max-states must be >= 1" in refused.stderr


@pytest.mark.parametrize("path", sorted((ROOT / "examples").glob("*.flow")), ids=lambda p: p.stem)
def test_a_run_s_declarations_make_the_system_check_makes_of_its_flow(
    tmp_path: Path, path: Path
) -> None:
    """What a run of the flow stores (its labels, read back by the view) explores as the
    `.flow` file does: the same abstract system, so the same verdicts on its properties."""
    from flowc import compile_flow
    from flowc.compiler.analysis.system import system_of_declarations, system_of_flow
    from flowc.compiler.pipeline import LoadedGraph
    from flowc.view.findings import declarations_of

    text = path.read_text(encoding="utf-8")
    db, run_id = stored_run(tmp_path, text, {"kickoff": "hi"})
    store = open_store(str(db), readonly=True)
    try:
        view = RunView.load(store, run_id)
    finally:
        store.close()
    assert view is not None
    compiled = compile_flow(text)
    declared = declarations_of(view.target)
    assert declared is not None and declared.properties == tuple(compiled.properties)
    loaded = LoadedGraph(view.target.graph, dict(view.target.context_vars), True)
    assert system_of_declarations(loaded, declared).shape() == system_of_flow(compiled).shape()


def test_properties_stored_without_declarations_are_never_clean(tmp_path: Path) -> None:
    """A run that stored its properties but not the declarations they are decided with
    (no ``tools`` label: written by a flowc that did not store them) has them undecided:
    partial, never clean, though the bare graph's own check finds nothing."""
    import sqlite3

    db, run_id = stored_run(tmp_path, PROPERTY_FLOW, PROPERTY_SCRIPT)
    whole = findings_of(client_of(db), run_id)
    assert whole["properties_undecided"] is False
    con = sqlite3.connect(db)
    try:
        seq, raw = con.execute(
            "SELECT seq, envelope FROM wal WHERE channel_id = ? ORDER BY seq LIMIT 1", (run_id,)
        ).fetchone()
        opening = json.loads(raw)
        assert opening["event_data"]["metadata"]["labels"].pop("tools") is not None
        con.execute("UPDATE wal SET envelope = ? WHERE seq = ?", (json.dumps(opening), seq))
        con.commit()
    finally:
        con.close()
    cut = findings_of(client_of(db), run_id)
    assert cut["properties_undecided"] is True
    assert cut["status"] == "partial" and cut["clean"] is False
    assert not {"E116", "I306"} & {f["code"] for f in cut["findings"]}
