"""Names are read as Python binds them where they are read (issue 12, classes 1 and 2)."""

from __future__ import annotations

import ast

import pytest

from flowc.migrate.pyread import NotStatic, PyModule, callee


def _value_at(src: str, marker: str) -> object:
    """The value of the name read in the statement ``probe(NAME)  # marker``."""
    mod = PyModule.parse("t.py", src)
    for node in ast.walk(mod.tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "probe"
            and mod.source.line_text(node.lineno).rstrip().endswith(marker)
        ):
            return mod.const(node.args[0])
    raise AssertionError(f"no probe {marker}")


def test_module_statements_in_order() -> None:
    src = "x = 'a'\nprobe(x)  # 1\nx = 'b'\nprobe(x)  # 2\n"
    assert _value_at(src, "# 1") == "a"
    assert _value_at(src, "# 2") == "b"


def test_a_name_read_before_any_binding_is_not_static() -> None:
    with pytest.raises(NotStatic):
        _value_at("probe(x)  # 1\nx = 'later'\n", "# 1")


def test_function_scopes_are_separate() -> None:
    src = (
        "name = 'Admin'\n"
        "def other():\n    name = 'proxy'\n    probe(name)  # in\n"
        "probe(name)  # out\n"
    )
    assert _value_at(src, "# out") == "Admin"
    assert _value_at(src, "# in") == "proxy"


def test_a_function_reads_module_names_when_the_chat_runs() -> None:
    src = "def f():\n    probe(x)  # f\nx = 'early'\nrun = 1\nx = 'late'\n"
    mod = PyModule.parse("t.py", src)
    call = next(n for n in ast.walk(mod.tree) if isinstance(n, ast.Call))
    assert mod.const(call.args[0]) == "late"  # by default: the end of the file
    mod.horizon = (4, 7)  # the chat is built on line 4
    assert mod.const(call.args[0]) == "early"


def test_loop_and_parameter_names_are_not_followed() -> None:
    with pytest.raises(NotStatic):
        _value_at("x = 'a'\nfor x in items:\n    probe(x)  # 1\n", "# 1")
    with pytest.raises(NotStatic):
        _value_at("x = 'a'\ndef f(x):\n    probe(x)  # 1\n", "# 1")


def test_dicts_and_lists_built_up_after_their_literal() -> None:
    src = (
        "d = {}\nd['a'] = ['b']\nd['b'] = ['c']\nd['a'].append('c')\nd.update({'c': []})\n"
        "probe(d)  # 1\nd['z'] = []\n"
        "xs = []\nxs.append('p')\nxs.extend(['q', 'r'])\nprobe(xs)  # 2\n"
        "e = dict()\ne['k'] = 1\nprobe(e)  # 3\n"
    )
    assert _value_at(src, "# 1") == {"a": ["b", "c"], "b": ["c"], "c": []}
    assert _value_at(src, "# 2") == ["p", "q", "r"]
    assert _value_at(src, "# 3") == {"k": 1}


@pytest.mark.parametrize(
    "change",
    [
        "if flag:\n    d['b'] = 2\n",  # may or may not run
        "for k in keys:\n    d[k] = 2\n",  # runs any number of times
        "d['a'] += 1\n",  # not a literal write
        "del d['a']\n",
        "d.pop('a')\n",
    ],
)
def test_changes_that_cannot_be_followed_make_the_dict_not_static(change: str) -> None:
    with pytest.raises(NotStatic):
        _value_at("d = {'a': 1}\n" + change + "probe(d)  # 1\n", "# 1")


def _unrolled(src: str) -> tuple[list[str], int | None]:
    mod = PyModule.parse("t.py", src)
    call = next(c for c in mod.calls() if callee(c) == "reg")
    copies, loop = mod.unrolled(call)
    return [ast.unparse(c) for c in copies], (loop.lineno if loop is not None else None)


def test_calls_in_for_loops_are_unrolled_as_python_runs_them() -> None:
    assert _unrolled("xs = [a, b]\nfor x in xs:\n    reg(agent=x, to=t)\n") == (
        ["reg(agent=a, to=t)", "reg(agent=b, to=t)"],
        None,
    )
    assert _unrolled("for x, y in ((a, 1), (b, 2)):\n    reg(x, y)\n") == (
        ["reg(a, 1)", "reg(b, 2)"],
        None,
    )
    assert _unrolled("for x in [a]:\n    for y in (b, c):\n        reg(x, y)\n") == (
        ["reg(a, b)", "reg(a, c)"],
        None,
    )
    assert _unrolled("for x in [a, b]:\n    reg(t)\n") == (["reg(t)"], None)  # not read: once
    assert _unrolled("reg(a)\n") == (["reg(a)"], None)
    # names inside the loop body still resolve where they are read
    mod = PyModule.parse("t.py", "t = 1\nfor x in [a, b]:\n    reg(x, t)\nt = 2\n")
    call = next(c for c in mod.calls() if callee(c) == "reg")
    assert [mod.const(c.args[1]) for c in mod.unrolled(call)[0]] == [1, 1]


@pytest.mark.parametrize(
    "src",
    [
        "for x in make():\n    reg(x)\n",
        "for x in [a, b]:\n    if x is a:\n        reg(x)\n",
        "for x in [a, b]:\n    reg(x)\n    break\n",
        "for x in [a, b]:\n    if x is a:\n        continue\n    reg(x)\n",
        "for x, y in [a, b]:\n    reg(x)\n",
    ],
)
def test_loops_that_cannot_be_unrolled_name_the_loop(src: str) -> None:
    assert _unrolled(src) == ([], 1)
