"""A SQLite row's JSON, written field by field (and a usual turn's as one f-string with
its run, event type and sender quoted once), against the plain computation: the sorted
JSON of :meth:`Envelope.to_json` without the fields at their default. Strings are the
hostile ones: quotes, backslashes, every control character and NUL, non-BMP, thousands
of characters, in every field and in the text of a usual turn; each envelope goes through
a real SQLite file and reads back equal. A lone surrogate (a script's ``"\\ud800"``) reads
into an envelope but UTF-8 cannot hold it: the append is refused with a clean error and
the run database stays usable."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flowc.runtime.envelope import EV_TEXT, Envelope
from flowc.runtime.wal import SqliteStore, WalError, encode_row, holder_id
from tests.hostile.limits import run_limited

OPTIONAL = {
    "task_id": None,
    "causation_id": None,
    "trace_id": None,
    "priority": "normal",
    "depth": 0,
    "idempotency_key": None,
    "ttl_seconds": None,
}
HOSTILE = [
    '"',
    "\\",
    '\\"',
    "\x00",
    "\x1f\x7f",
    "\u2028\u2029",
    "\U0001f600",
    "é",
    "</script>",
    "\ud7ff\ue000\uffff",
    "a" * 101,
    "\\u0000",
    "x" * 5000,
]
#: text with no lone surrogate (a SQLite file can keep it)
hostile_text = st.lists(st.sampled_from(HOSTILE) | st.text(max_size=6), max_size=4).map("".join)
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.sampled_from([2**70, -(2**64)])
    | st.floats(allow_nan=False)
    | hostile_text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(hostile_text, inner, max_size=3),
    max_leaves=6,
)


def plain_row(env: Envelope) -> str:
    full = json.loads(env.to_json())
    kept = {k: v for k, v in full.items() if k not in OPTIONAL or v != OPTIONAL[k]}
    return json.dumps(kept, sort_keys=True, ensure_ascii=False)


@st.composite
def envelopes(draw: Any, channel: str | None = None) -> Envelope:
    # about half are usual turns (no optional field set, one-string text): the f-string road
    usual = draw(st.booleans())
    optional: dict[str, Any] = (
        {}
        if usual
        else draw(
            st.fixed_dictionaries(
                {},
                optional={
                    "task_id": hostile_text,
                    "causation_id": hostile_text,
                    "trace_id": hostile_text,
                    "priority": st.sampled_from(["background", "normal", "urgent"]) | hostile_text,
                    "depth": st.integers(0, 5) | st.sampled_from([2**40]),
                    "idempotency_key": hostile_text,
                    "ttl_seconds": st.integers(0, 10**6),
                },
            )
        )
    )
    data = (
        {draw(st.sampled_from(["text", "content"]) | hostile_text): draw(hostile_text)}
        if usual or draw(st.booleans())
        else draw(st.dictionaries(hostile_text, json_values, max_size=3))
    )
    return Envelope(
        channel if channel is not None else draw(hostile_text),
        draw(st.sampled_from(["a", "b"]) | hostile_text),
        None if usual else draw(st.none() | st.lists(hostile_text, max_size=2).map(tuple)),
        draw(st.sampled_from([EV_TEXT, "ag2.msg.packet"]) | hostile_text),
        data,
        envelope_id=draw(hostile_text),
        created_at=draw(hostile_text),
        **optional,
    )


@settings(max_examples=300, deadline=None)
@given(st.lists(envelopes(), min_size=1, max_size=4))
def test_a_row_is_the_plain_json_of_the_envelope(envs: list[Envelope]) -> None:
    for env in envs * 2:  # the second time, its run, type and sender are quoted already
        assert encode_row(env) == plain_row(env)
        assert Envelope.from_json(encode_row(env)) == env


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(st.lists(envelopes(channel="run-1"), min_size=1, max_size=5))
def test_hostile_rows_go_through_a_sqlite_file_and_read_back(
    tmp_path_factory: Any, envs: list[Envelope]
) -> None:
    db = tmp_path_factory.mktemp("rows") / "runs.db"
    store = SqliteStore(db)
    lease = store.acquire("run-1", holder_id("hub"))
    envs = [
        Envelope(
            e.channel_id,
            e.sender_id,
            e.audience,
            e.event_type,
            e.event_data,
            envelope_id=f"{i}:{e.envelope_id}",
            created_at=e.created_at,
        )
        if i % 2
        else e
        for i, e in enumerate(envs)
    ]
    envs = [e for i, e in enumerate(envs) if e.envelope_id not in {x.envelope_id for x in envs[:i]}]
    for i, env in enumerate(envs):
        store.append(env, lease if i % 2 else None)
    assert list(store.read("run-1")) == envs
    store.close()
    con = sqlite3.connect(db)
    try:
        rows = [r for (r,) in con.execute("SELECT envelope FROM wal ORDER BY seq")]
    finally:
        con.close()
    assert rows == [plain_row(e) for e in envs]


def test_a_lone_surrogate_is_refused_cleanly_and_the_file_stays_usable(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "runs.db")
    lease = store.acquire("r", holder_id("hub"))
    good = Envelope("r", "a", None, EV_TEXT, {"text": "ok"}, envelope_id="e1")
    store.append(good, lease)
    for i, env in enumerate(
        [
            Envelope("r", "a", None, EV_TEXT, {"text": "x\ud800y"}, envelope_id="e2"),
            Envelope("r", "a", None, EV_TEXT, {"k\udfff": 1}, envelope_id="e3", depth=1),
            Envelope("r", "a", None, EV_TEXT, {"text": "x"}, envelope_id="e4\udc00"),
        ]
    ):
        # the row's text is still the plain computation's
        assert encode_row(env) == json.dumps(
            {k: v for k, v in env.to_dict().items() if k not in OPTIONAL or v != OPTIONAL[k]},
            sort_keys=True,
            ensure_ascii=False,
        )
        with pytest.raises(WalError, match="a lone surrogate, which is not Unicode text"):
            store.append(env, lease if i % 2 else None)
    after = Envelope("r", "b", None, EV_TEXT, {"text": "still here"}, envelope_id="e5")
    store.append(after, lease, "e1")
    assert list(store.read("r")) == [good, after]
    store.close()
    fresh = SqliteStore(tmp_path / "runs.db")  # a first append to a new run, the slow road
    with pytest.raises(WalError, match="lone surrogate"):
        fresh.append(Envelope("s", "a", None, EV_TEXT, {"text": "\ud800"}, envelope_id="s1"))
    fresh.append(Envelope("s", "a", None, EV_TEXT, {"text": "x"}, envelope_id="s1"))
    assert [e.envelope_id for e in fresh.read("s")] == ["s1"]
    fresh.close()


@pytest.mark.parametrize("db", ["runs.db", ":memory:"])
@pytest.mark.parametrize(
    ("name", "text", "where"),
    [
        (
            "s.json",
            '{"kickoff": "hi", "script": {"b": ["x\\udc00y"], "a": ["z"]}}',
            "s.json:1:36: error: a string holds a lone surrogate (\\udc00), which is not Unicode "
            "text (at script.b[0])",
        ),
        (
            "k.json",
            '{"kickoff": "h\\ud800i", "script": {"b": ["x"], "a": ["z"]}}',
            "k.json:1:13: error: a string holds a lone surrogate (\\ud800), which is not Unicode "
            "text (at kickoff)",
        ),
        (
            "s.yaml",
            'kickoff: hi\nscript:\n  b: ["x\\udc00y"]\n  a: [z]\n',
            "s.yaml:3:7: error: a string holds a lone surrogate (\\udc00), which is not Unicode "
            "text (at script.b[0])",
        ),
    ],
)
def test_a_script_with_a_lone_surrogate_is_refused_when_read_in_every_store(
    tmp_path: Path, db: str, name: str, text: str, where: str
) -> None:
    # in memory as on a SQLite file: refused where the script says it, before the run
    # begins (in memory it used to run, its turns silently left unprinted)
    flow = tmp_path / "pair.flow"
    flow.write_text(
        "speaker a: human\nspeaker b: human\nstart a\nmax_turns 3\n"
        "when from a then b\nwhen from b then a\n"
    )
    script = tmp_path / name
    script.write_text(text)
    result = run_limited(
        [
            "run",
            str(flow),
            "--script",
            str(script),
            "--db",
            db if db == ":memory:" else str(tmp_path / db),
        ],
        cwd=tmp_path,
        memory_mib=512,
        cpu_seconds=30,
        wall_seconds=60.0,
    )
    out = result.stdout + result.stderr
    assert not result.timed_out and not result.traceback, out[-3000:]
    assert result.returncode == 1, out[-3000:]
    assert result.stderr == f"{tmp_path / where}\n", out
    assert result.stdout == "", out
    assert not (tmp_path / "runs.db").exists()  # nothing begun
