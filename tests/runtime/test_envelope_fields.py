"""Envelope's fields are declared once, in its class body: the writable base of the class
swap, the cheap builder (``stamped``), ``to_dict``/``to_json`` and the SQLite row writer
(``encode_row``) are all derived from them. A copy of the class with one more field,
made by adding one line to its source, is written, stored and read back with that field
and no other edit."""

from __future__ import annotations
import __future__

import inspect
import json
from typing import Any

import attrs

from flowc.runtime import envelope as envelope_module
from flowc.runtime import wal
from flowc.runtime.envelope import EV_TEXT, STAMPED, Envelope, stamped
from flowc.runtime.frozen import builder

NEW_FIELD = "    reply_to: str | None = None\n"


def envelope_with_one_more_field() -> type[Any]:
    """:class:`Envelope`'s own source with :data:`NEW_FIELD` added after its last field."""
    source = inspect.getsource(Envelope)
    last = "    ttl_seconds: float | None = None  # (any number, as the hub admits)\n"
    assert source.count(last) == 1
    namespace = dict(vars(envelope_module))
    code = compile(
        source.replace(last, last + NEW_FIELD),
        "<Envelope with reply_to>",
        "exec",
        flags=__future__.annotations.compiler_flag,
        dont_inherit=True,
    )
    exec(code, namespace)
    cls: type[Any] = namespace["Envelope"]
    assert cls is not Envelope
    return cls


def test_every_derived_part_follows_envelope_fields() -> None:
    names = [f.name for f in attrs.fields(Envelope)]
    base = Envelope.__mro__[1]
    assert Envelope.__slots__ == () and set(base.__slots__) == {*names, "__weakref__"}
    assert list(Envelope("c", "s", None, EV_TEXT, {}).to_dict()) == names
    assert set(STAMPED) <= set(names)
    values = {f.name: f.default for f in attrs.fields(Envelope)}
    values.update(channel_id="c", sender_id="s", audience=None, event_type=EV_TEXT)
    values.update(event_data={"text": "hi"}, envelope_id="e", created_at="t")
    assert stamped(*values.values()) == Envelope(**values)


def test_a_field_added_to_the_class_needs_no_other_edit() -> None:
    Copy = envelope_with_one_more_field()
    assert [f.name for f in attrs.fields(Copy)][-1] == "reply_to"
    assert "reply_to" in Copy.__mro__[1].__slots__  # the class swap's base

    build = builder(Copy)
    plain = Copy("c1", "a", None, EV_TEXT, {"text": "hi"}, "e1", created_at="t")
    answer = build("c1", "a", None, EV_TEXT, {"text": "hi"}, "e1", created_at="t", reply_to="e0")
    assert type(answer) is Copy and answer == attrs.evolve(plain, reply_to="e0")

    assert answer.to_dict()["reply_to"] == "e0"  # to_dict, and so to_json
    assert Copy.from_json(answer.to_json()) == answer

    encode = wal._row_writer(Copy)
    assert json.loads(encode(answer))["reply_to"] == "e0"  # stored when set
    assert "reply_to" not in json.loads(encode(plain))  # left out at its default
    assert Copy.from_json(encode(answer)) == answer
    assert Copy.from_json(encode(plain)) == plain
    # the envelope without the field is written as before
    assert encode(plain) == wal.encode_row(
        Envelope("c1", "a", None, EV_TEXT, {"text": "hi"}, "e1", created_at="t")
    )
