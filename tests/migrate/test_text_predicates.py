"""Classic ``is_termination_msg`` lambdas -> text conditions, checked by running both.

For every recognised lambda and every sample message, the Python lambda (evaluated here on
a classic message dict), the migrate-side evaluator and the runtime's registered vocabulary
classes must agree. Unrecognised lambdas must be refused, not approximated.
"""

from __future__ import annotations

import ast
from types import SimpleNamespace
from typing import Any

import pytest

from flowc.dsl import nodes as n
from flowc.migrate.textpred import evaluate, text_predicate
from flowc.runtime.vocabulary import TextContains, TextMatches

RECOGNISED = [
    'lambda x: "TERMINATE" in x.get("content", "")',
    'lambda x: "TERMINATE" in x["content"]',
    'lambda x: "TERMINATE" not in x.get("content", "")',
    'lambda m: m.get("content", "").rstrip().endswith("TERMINATE")',
    'lambda m: m.get("content", "").endswith("TERMINATE")',
    'lambda m: m.get("content", "").strip().startswith("DONE")',
    'lambda m: m["content"].strip() == "DONE"',
    'lambda m: m["content"] == "TERMINATE."',
    'lambda m: m["content"] != "TERMINATE"',
    'lambda m: (m.get("content") or "").lower().endswith("that settles it")',
    'lambda m: "approve" in m.get("content", "").lower()',
    'lambda m: content_str(m.get("content")) == "TERMINATE"',
    'lambda m: m.get("content", "").endswith(("TERMINATE", "DONE"))',
    'lambda m: "A" in m["content"] and "B" in m["content"]',
    'lambda m: "A" in m["content"] or m["content"].endswith("B?")',
    'lambda m: not ("x" in m["content"])',
    'lambda m: m["content"].lstrip().startswith("[END] ")',
    'lambda x: "TERMINATE" in x.get("content", "").rstrip()[-20:]',  # AutoGen Studio 0.1
    'lambda x: "END" not in x["content"][-5:]',
    # idioms of real notebooks and docs (issue 12, class 6; tests/migrate/real/manifest.json)
    'lambda x: x.get("content", "") and x.get("content", "").rstrip().endswith("TERMINATE")',
    'lambda x: x.get("content", "").find("TERMINATE") >= 0',
    'lambda x: content_str(x.get("content")).find("TERMINATE") >= 0 or content_str(x.get("content")) == ""',
    'lambda x: x.get("content", "").find("TERMINATE") == -1',
    'lambda x: "DONE!" in (x.get("content", "") or "").upper()',
    'lambda x: x.get("content", "") and "terminate" in x.get("content", "").lower()',
    'lambda x: x["content"] is not None and "TERMINATE" in x["content"]',
    'lambda x: "content" in x and x["content"] is not None and x["content"].rstrip().endswith("TERMINATE")',
    'lambda x: isinstance(x, dict) and str(x.get("content", ""))[-9:].upper() == "TERMINATE"',
    'lambda x: isinstance(x, dict) and "TERMINATE" == str(x.get("content", ""))[-9:].upper()',
    'lambda x: x.get("content", "")',
    'lambda x: "A" in x["content"] if x["content"].startswith("[") else "B" in x["content"]',
    "lambda x: True",
]

SAMPLES = [
    "",
    "TERMINATE",
    "TERMINATE.",
    "All done. TERMINATE",
    "All done. TERMINATE  \n",
    "terminate",
    "DONE",
    "  DONE  ",
    "DONE with it",
    "  DONE with it",
    "Well, That Settles It",
    "that settles it!",
    "I APPROVE",
    "approved",
    "A and B",
    "only A",
    "ends with B?",
    "x marks",
    "[END] bye",
    "   [END] bye",
    "a.b*c",
    "x" * 30 + "TERMINATE",
    "TERMINATE" + "x" * 11,
    "TERMINATE" + "x" * 12,
    "TERMINATE" + "x" * 11 + "   \n ",
    "TERMINATE\nabc\n",
    "END",
    "END.",
    "xxENDxxx",
]


def _content_str(value: Any) -> str:
    return "" if value is None else str(value)


def _runtime(cond: n.Cond, text: str) -> bool:
    env = SimpleNamespace(event_type="ag2.msg.text", event_data={"text": text}, envelope_id="e")
    if isinstance(cond, n.AlwaysCond):
        return True
    if isinstance(cond, n.CallCond):
        args = {a.name.value: a.value.value for a in cond.args}
        cls = {"text_contains": TextContains, "text_matches": TextMatches}[cond.name.value]
        return bool(cls(**args).evaluate(SimpleNamespace(), env))
    if isinstance(cond, n.NotCond):
        return not _runtime(cond.item, text)
    if isinstance(cond, n.AndCond):
        return all(_runtime(c, text) for c in cond.items)
    assert isinstance(cond, n.OrCond)
    return any(_runtime(c, text) for c in cond.items)


@pytest.mark.parametrize("source", RECOGNISED)
def test_recognised_predicates_agree_with_python(source: str) -> None:
    node = ast.parse(source, mode="eval").body
    pred = text_predicate(node, None)
    assert pred is not None, source
    fn = eval(source, {"content_str": _content_str})
    for text in SAMPLES:
        expected = bool(fn({"content": text, "role": "assistant"}))
        assert evaluate(pred.cond, text) is expected, (source, text)
        assert _runtime(pred.cond, text) is expected, (source, text)
    if pred.witness is not None:
        assert fn({"content": pred.witness}), (source, pred.witness)


def test_a_def_with_a_docstring_is_recognised() -> None:
    tree = ast.parse('def done(msg):\n    """Ends."""\n    return "BYE" in msg["content"]\n')
    fn = tree.body[0]
    assert isinstance(fn, ast.FunctionDef)
    pred = text_predicate(ast.Name("done"), {"done": fn})
    assert pred is not None and evaluate(pred.cond, "ok BYE") is True


DEFS = [
    # two-statement bodies of real notebooks: a local name, then `if ...: return True`
    'def done(content):\n    have = content.get("content", None) is not None\n'
    '    if have and "TERMINATE" in content["content"]:\n        return True\n    return False\n',
    'def done(content) -> bool:\n    have = content.get("content", None) is not None\n'
    '    return have and "TERMINATE" in content["content"]\n',
    'def done(x):\n    text = x.get("content", "").strip()\n    if text.endswith("BYE"):\n'
    '        return True\n    elif "ABORT" in text:\n        return True\n',
]


@pytest.mark.parametrize("source", DEFS)
def test_def_bodies_agree_with_python(source: str) -> None:
    fn = ast.parse(source).body[0]
    assert isinstance(fn, ast.FunctionDef)
    pred = text_predicate(ast.Name("done"), {"done": fn})
    assert pred is not None, source
    scope: dict[str, Any] = {}
    exec(source, scope)
    for text in [*SAMPLES, "x BYE  ", "ABORT now"]:
        expected = bool(scope["done"]({"content": text}))
        assert evaluate(pred.cond, text) is expected, (source, text)
        assert _runtime(pred.cond, text) is expected, (source, text)
    assert pred.witness is not None and scope["done"]({"content": pred.witness})


@pytest.mark.parametrize(
    "source",
    [
        'lambda m: len(m["content"]) > 5000',
        'lambda m: m.get("name") == "critic"',
        'lambda m: "TERMINATE" in m.get("content", "x")',
        'lambda m: m["content"].lower() == "Terminate"',  # can never hold: refused, not guessed
        'lambda m, n: "x" in m["content"]',
        'lambda m: re.search("x", m["content"])',
        'lambda m: m["content"].find("x") > 0',  # not a containment test
        'lambda m: "done" in m["content"].upper()',  # can never hold
        'lambda m: print(m) or "x" in m["content"]',
        'lambda m: "T" in other["content"]',
        "is_done",
    ],
)
def test_unrecognised_predicates_are_refused(source: str) -> None:
    node = ast.parse(source, mode="eval").body
    assert text_predicate(node, {}) is None
