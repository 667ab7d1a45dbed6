"""Graphs AG2 1.2.1 refuses when the channel opens are refused by every flowc command,
with the JSON path, and ``check`` says so exactly as ``run`` does.

Each refusal is first shown on the real AG2 hub (``HubClient.open`` raising), then on
flowc's ``check`` / ``run`` / ``render`` / ``decompile`` / hub.
"""

from __future__ import annotations

import asyncio
import copy
import json
from pathlib import Path
from typing import Any, ClassVar

import attrs
import pytest
from ag2.knowledge import MemoryKnowledgeStore
from ag2.network import Hub as AG2Hub
from ag2.network import HubClient, LocalLink, Passport

import flowc
from flowc.cli import main
from flowc.compiler.analysis import CheckOptions, check_source
from flowc.compiler.registry import TransitionRegistry
from flowc.runtime import GraphError, Hub, MemoryStore
from flowc.source import SourceFile


def cond(name: str, **args: Any) -> dict[str, Any]:
    return {"name": name, "args": args}


def graph(
    *rules: tuple[dict[str, Any], dict[str, Any]],
    default: dict[str, Any] | None = None,
    start: str = "user",
) -> dict[str, Any]:
    return {
        "initial_speaker": start,
        "transitions": [{"when": w, "then": t, "priority": 0} for w, t in rules],
        "default_target": default or cond("terminate", reason="done"),
        "max_turns": None,
    }


FROM_USER = cond("from_speaker", agent_id="user")
TO_WRITER = cond("agent", agent_id="writer")
END = cond("terminate", reason="written")


def ag2_open(knobs: dict[str, Any]) -> BaseException | None:
    """Open ``knobs`` on the real AG2 hub among `user` and `writer`; the error, if any."""

    async def go() -> BaseException | None:
        hub = await AG2Hub.open(MemoryKnowledgeStore(), ttl_sweep_interval=0)
        link = LocalLink(hub)
        user = await HubClient(link, hub=hub).register_human(Passport(name="user", kind="human"))
        writer = await HubClient(link, hub=hub).register_human(
            Passport(name="writer", kind="human")
        )
        ids = {"user": user.agent_id, "writer": writer.agent_id}
        bound = json.loads(json.dumps(knobs))
        text = json.dumps(bound["graph"])
        for name, agent_id in ids.items():
            text = text.replace(f'"{name}"', f'"{agent_id}"')
        bound["graph"] = json.loads(text)
        try:
            await user.open(type="workflow", target=list(ids.values()), knobs=bound)
            return None
        except Exception as err:  # what AG2 raises is the subject
            return err
        finally:
            await hub.close()

    return asyncio.run(go())


def flowc_open(knobs: dict[str, Any]) -> BaseException | None:
    async def go() -> BaseException | None:
        hub = await Hub.open(store=MemoryStore())
        user = hub.register_human("user")
        hub.register_human("writer")
        try:
            await user.open("workflow", target=["writer"], knobs=copy.deepcopy(knobs))
            return None
        except Exception as err:
            return err

    return asyncio.run(go())


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


SCRIPT = {
    "kickoff": "hi",
    "script": {"writer": ["ok"]},
    "participants": ["user", "writer"],
    "humans": ["user"],
}


# ── a name neither built in nor loaded ──────────────────────────────────────────


def test_a_misspelt_builtin_is_refused_by_ag2() -> None:
    err = ag2_open(
        {"graph": graph((cond("from_speakr", agent_id="user"), TO_WRITER)), "context_vars": {}}
    )
    assert err is not None and "no transition condition registered for 'from_speakr'" in str(err)


def test_check_refuses_an_unknown_name_as_run_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    g = graph(
        (cond("from_speakr", agent_id="user"), TO_WRITER),
        (cond("all_of", conditions=[cond("tool_caled", tool_name="t")]), END),
        default=cond("agnet", agent_id="writer"),
    )
    path = tmp_path / "g.json"
    path.write_text(json.dumps(g))
    (tmp_path / "s.json").write_text(json.dumps(SCRIPT))
    expected = [
        "transitions[0].when.name: no condition registered as `from_speakr`; did you mean `from_speaker`?",
        "transitions[1].when.args.conditions[0].name: no condition registered as `tool_caled`; "
        "did you mean `tool_called`?",
        "default_target.name: no target registered as `agnet`; did you mean `agent`?",
    ]
    code, out, _ = cli(capsys, "check", str(path), "--format", "json")
    assert code == 1
    found = json.loads(out)
    items = found if isinstance(found, list) else found["diagnostics"]
    assert sorted(d["message"] for d in items) == sorted(expected)
    assert {d["code"] for d in items} == {"E103"}
    assert sorted(d["json_path"] for d in items) == sorted(e.split(": ")[0] for e in expected)
    code, _, err = cli(
        capsys, "run", str(path), "--script", str(tmp_path / "s.json"), "--db", ":memory:"
    )
    assert code == 1
    for line in expected:
        assert line in err
    # the Python API says the same
    assert sorted(d.message for d in flowc.check(g)) == sorted(expected)


def test_a_target_name_used_as_a_condition_says_so() -> None:
    diags = flowc.check(graph((cond("agent", agent_id="writer"), TO_WRITER)))
    assert [d.message for d in diags] == [
        "transitions[0].when.name: no condition registered as `agent`; `agent` is a target, "
        "not a condition"
    ]


@attrs.frozen
class Urgent:
    name: ClassVar[str] = "urgent"
    level: int

    def evaluate(self, state: Any, envelope: Any) -> bool:
        return True


def test_a_loaded_name_is_checked_with_its_args() -> None:
    registry = TransitionRegistry()
    registry.register_condition(Urgent)
    options = CheckOptions(registry=registry)

    def codes(g: dict[str, Any]) -> list[str]:
        diags = check_source(SourceFile("g.json", json.dumps(g)), options)
        return [d.message for d in diags if d.code.id == "E103"]

    assert codes(graph((cond("urgent", level=1), TO_WRITER), (FROM_USER, TO_WRITER))) == []
    bad = codes(graph((cond("urgent", levle=1), TO_WRITER)))
    assert len(bad) == 1 and bad[0].startswith("transitions[0].when.args: args do not fit `urgent`")
    # in a registry without it, refused, with no guess when nothing is close
    empty = check_source(
        SourceFile("g.json", json.dumps(graph((cond("urgent", level=1), TO_WRITER)))),
        CheckOptions(registry=TransitionRegistry()),
    )
    assert [d.message for d in empty] == [
        "transitions[0].when.name: no condition registered as `urgent`"
    ]


def test_flowcs_shipped_vocabulary_counts_as_loaded() -> None:
    g = graph((cond("text_contains", text="DONE"), END), (FROM_USER, TO_WRITER))
    assert "E103" not in [d.code.id for d in flowc.check(g)]


# ── a built-in without an argument it needs ─────────────────────────────────────

NO_VALUE = graph((cond("context_equals", key="done"), END), (FROM_USER, TO_WRITER))


def test_context_equals_without_value_is_a_type_error_on_ag2() -> None:
    err = ag2_open({"graph": NO_VALUE, "context_vars": {}})
    assert isinstance(err, TypeError) and "'value'" in str(err)


def test_context_equals_without_value_is_refused_by_every_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "g.json"
    path.write_text(json.dumps(NO_VALUE))
    (tmp_path / "s.json").write_text(json.dumps(SCRIPT))
    where = "transitions[0].when.args.value"
    for argv in (
        ["check", str(path)],
        ["run", str(path), "--script", str(tmp_path / "s.json"), "--db", ":memory:"],
        ["render", str(path), "-f", "dot"],
        ["decompile", str(path)],
    ):
        code, out, err = cli(capsys, *argv)
        assert code == 1, (argv, out, err)
        assert where in out + err, (argv, out, err)
    assert [d.json_path for d in flowc.check(NO_VALUE)] == [where]
    with pytest.raises(GraphError, match=where.replace(".", r"\.").replace("[", r"\[")):
        raise flowc_open({"graph": NO_VALUE}) or AssertionError("opened")
    # with the value (even null) it loads on both
    ok = graph((cond("context_equals", key="done", value=None), END), (FROM_USER, TO_WRITER))
    assert ag2_open({"graph": ok, "context_vars": {}}) is None
    assert flowc_open({"graph": ok}) is None


# ── knobs["context_vars"] = None ────────────────────────────────────────────────

PLAIN = graph((FROM_USER, TO_WRITER))


def test_context_vars_none_is_refused_as_ag2_refuses_it() -> None:
    err = ag2_open({"graph": PLAIN, "context_vars": None})
    assert err is not None and "context_vars" in str(err)
    mine = flowc_open({"graph": PLAIN, "context_vars": None})
    assert isinstance(mine, GraphError)
    assert [str(p) for p in mine.problems] == ["context_vars: expected an object, got null"]
    # absent is `{}` on both
    assert ag2_open({"graph": PLAIN}) is None
    assert flowc_open({"graph": PLAIN}) is None
    with pytest.raises(Exception, match="context_vars"):
        flowc.run({"graph": PLAIN, "context_vars": None}, SCRIPT)


# every built-in: a missing required argument or an argument it does not take

BUILTIN_ARGS = {
    ("condition", "from_speaker"): {"agent_id": "user"},
    ("condition", "tool_called"): {"tool_name": "t"},
    ("condition", "context_equals"): {"key": "k", "value": 1},
    ("condition", "always"): {},
    ("target", "agent"): {"agent_id": "writer"},
    ("target", "terminate"): {"reason": "x"},
    ("target", "stay"): {},
}


def variants() -> list[tuple[str, str, str, dict[str, Any]]]:
    out = []
    for (kind, name), args in BUILTIN_ARGS.items():
        for missing in args:
            if (name, missing) == ("terminate", "reason"):
                continue  # AG2's TerminateTarget defaults it to "after_work", as flowc does
            out.append(
                (kind, name, f"without {missing}", {k: v for k, v in args.items() if k != missing})
            )
        out.append((kind, name, "with an extra arg", {**args, "extra": 1}))
    return out


@pytest.mark.parametrize(
    ("kind", "name", "label", "args"), variants(), ids=[f"{v[1]} {v[2]}" for v in variants()]
)
def test_a_builtin_with_wrong_args_is_refused_by_both(
    kind: str, name: str, label: str, args: dict[str, Any]
) -> None:
    if kind == "condition":
        g = graph((cond(name, **args), TO_WRITER), (FROM_USER, TO_WRITER))
        where = "transitions[0].when.args"
    else:
        g = graph((FROM_USER, cond(name, **args)))
        where = "transitions[0].then.args"
    err = ag2_open({"graph": g, "context_vars": {}})
    assert isinstance(err, TypeError), (label, err)  # AG2: cls(**args) when the channel opens
    found = [d for d in flowc.check(g) if d.is_error]
    assert found and all(
        d.code.id == "E108" and (d.json_path or "").startswith(where) for d in found
    )
    assert isinstance(flowc_open({"graph": g}), GraphError)
