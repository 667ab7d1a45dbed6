"""Properties: what a user says must hold on every run of a flow (``property`` in `.flow`).

This module is the model only: the lowered form of a ``property`` statement, shared by
the parser's lowering (:mod:`flowc.compiler.lower`), the checker that decides a property
over every run, and what watches one run (a scenario's in ``flowc test``, a live run's in
``flowc run``, ``resume`` and the workers). Its meaning is fixed here, and
``docs/properties.md`` says it in the user's words.

A run is a sequence of turns 1..n (turn 1 is the kickoff, the start speaker's first
message; ``max_turns`` counts it). After turn *t* the run either goes on or ends with a
reason (a ``terminate``, a tool's ``finish``, ``"after_work"``, or ``"max_turns"`` when
turn *t* is the cap and nothing else ended the run).

**Expressions** hold or not at a turn *t*, read after that turn, exactly as a rule's
condition reads the run after a turn:

- ``from a, b`` (:class:`~flowc.compiler.model.FromSpeaker`, or ``AnyOf`` of them):
  turn *t* was spoken by ``a`` or ``b``;
- ``tool T`` (:class:`~flowc.compiler.model.ToolCalled`): turn *t* called tool ``T``;
- ``context.k == v`` / ``!=`` (:class:`~flowc.compiler.model.ContextEquals`, under
  ``Not`` for ``!=``): the context after turn *t*'s writes, compared as a rule compares
  it;
- ``ends`` / ``ends "r"`` (:class:`Ends`): the run ends after turn *t* (with reason r);
- ``turn < 5`` and the other comparisons (:class:`TurnIs`): the number *t*;
- ``previous E`` (:class:`Previous`): *t* > 1 and E held at turn *t* - 1;
- ``not``, ``and``, ``or`` (:class:`~flowc.compiler.model.Not`, ``AllOf``, ``AnyOf``).

No custom condition appears in a property (its outcome is not known from the run).

**Scopes** cut a run into intervals of turns [a, b] (a > b is an empty interval):

- :class:`Globally`: [1, n];
- :class:`Before` R: [1, r - 1] for the first turn r where R holds; no interval when R
  never holds;
- :class:`After` Q: [q, n] for the first turn q where Q holds; none when Q never holds;
- :class:`Between` Q and R (written ``after Q before R``): for every turn q where Q holds
  and R does not, [q, r - 1] for the first turn r > q where R holds; no interval from a q
  that no R follows;
- :class:`AfterUntil` Q, R (``after Q until R``): as ``Between``, but a q that no R
  follows opens [q, n].

**Patterns** judge one interval [a, b]; a property holds on a run when its pattern holds
on every interval its scope cuts, and holds on the flow when it holds on every run:

- :class:`Never` P: no turn of the interval has P;
- :class:`Always` P: every turn of the interval has P;
- :class:`Eventually` P: some turn of the interval has P; with ``within`` N, some turn
  among its first N (a run cut by ``max_turns`` has ended: "eventually" is not
  satisfied by a turn the run never has);
- :class:`AtMost` P, N: at most N turns of the interval have P;
- :class:`OnlyAfter` P, S (``P only after S``): every turn i of the interval with P has
  a turn j, a <= j <= i, with S (the same turn counts);
- :class:`Responds` P, S (``after P, S``; ``within N turns``): every turn i of the
  interval with P has a later turn j, i < j <= b, with S (and j <= i + N).

These are the specification patterns of Dwyer, Avrunin and Corbett (absence,
universality, existence, bounded existence, precedence, response) under their five
scopes, read on finite runs.

**Runs without a last turn.** A flow without ``max_turns`` may have runs that go round a
loop for ever: turns 1, 2, ... with no n. On such a run nothing ends (``ends`` never
holds), an ``After`` or ``AfterUntil`` interval that no R closes is [q, ∞), and a
``Before`` or ``Between`` interval that no R closes is still no interval. The patterns
read the same on an infinite interval, with one difference: there is no end to judge
what is pending, so ``Eventually`` P (without ``within``) is violated when no turn of
the interval ever has P, and ``Responds`` P, S (without ``within``) when some P is never
followed by S; the other patterns are violated, if at all, on a turn, as on a finite
run. A run that merely stops (a scenario that is over, a run that stalls or is
interrupted) is neither: it has not ended, and what it leaves pending is not judged.
"""

from __future__ import annotations

from typing import Any, Literal, TypeAlias

import attrs

from flowc.compiler import model as m
from flowc.source import Span

# ── expressions ───────────────────────────────────────────────────────────────


@attrs.frozen
class Ends:
    """``ends`` (any reason) or ``ends "r"``: the run ends after this turn."""

    reason: str | None = None


TurnOp: TypeAlias = Literal["==", "!=", "<", "<=", ">", ">="]


@attrs.frozen
class TurnIs:
    """``turn OP N``: the number of this turn (the kickoff is turn 1)."""

    op: TurnOp
    number: int


@attrs.frozen
class Previous:
    """``previous E``: E held on the turn before this one (never on turn 1)."""

    expr: Expr


#: a property expression: the rule conditions' built-in atoms and composites (never a
#: custom condition, never ``always``), and the atoms above
Expr: TypeAlias = (
    m.FromSpeaker
    | m.ToolCalled
    | m.ContextEquals
    | m.AllOf
    | m.AnyOf
    | m.Not
    | Ends
    | TurnIs
    | Previous
)

# ── patterns ──────────────────────────────────────────────────────────────────


@attrs.frozen
class Never:
    p: Expr


@attrs.frozen
class Always:
    p: Expr


@attrs.frozen
class Eventually:
    p: Expr
    within: int | None = None  # N >= 1: among the interval's first N turns


@attrs.frozen
class AtMost:
    p: Expr
    times: int  # N >= 0


@attrs.frozen
class OnlyAfter:
    p: Expr
    s: Expr


@attrs.frozen
class Responds:
    p: Expr
    s: Expr
    within: int | None = None  # N >= 1: S within N turns after P


Pattern: TypeAlias = Never | Always | Eventually | AtMost | OnlyAfter | Responds

# ── scopes ────────────────────────────────────────────────────────────────────


@attrs.frozen
class Globally:
    pass


@attrs.frozen
class Before:
    r: Expr


@attrs.frozen
class After:
    q: Expr


@attrs.frozen
class Between:
    q: Expr
    r: Expr


@attrs.frozen
class AfterUntil:
    q: Expr
    r: Expr


Scope: TypeAlias = Globally | Before | After | Between | AfterUntil


@attrs.frozen
class Property:
    """One ``property NAME: PATTERN [SCOPE]`` statement, lowered."""

    name: str
    pattern: Pattern
    scope: Scope = attrs.field(factory=Globally)
    #: the statement's span (None for a property built in code)
    span: Span | None = attrs.field(default=None, eq=False, repr=False)
    #: the statement as written, formatted (for messages)
    text: str = attrs.field(default="", eq=False)


Verdict: TypeAlias = Literal["holds", "violated", "unknown"]


def expressions(prop: Property) -> tuple[Any, ...]:
    """The top-level expressions a property reads (pattern's, then scope's)."""
    pat = prop.pattern
    exprs: list[Any] = [pat.p]
    if isinstance(pat, OnlyAfter | Responds):
        exprs.append(pat.s)
    scope = prop.scope
    if isinstance(scope, Before):
        exprs.append(scope.r)
    elif isinstance(scope, After):
        exprs.append(scope.q)
    elif isinstance(scope, Between | AfterUntil):
        exprs += [scope.q, scope.r]
    return tuple(exprs)


# ── as JSON (what a run's WAL records of its flow's properties) ──────────────────

_PATTERNS: dict[str, type[Any]] = {
    "never": Never,
    "always": Always,
    "eventually": Eventually,
    "at_most": AtMost,
    "only_after": OnlyAfter,
    "responds": Responds,
}
_SCOPES: dict[str, type[Any]] = {
    "globally": Globally,
    "before": Before,
    "after": After,
    "between": Between,
    "after_until": AfterUntil,
}


def _expr_json(e: Any) -> Any:
    if isinstance(e, m.FromSpeaker):
        return {"from": e.agent_id}
    if isinstance(e, m.ToolCalled):
        return {"tool": e.tool_name}
    if isinstance(e, m.ContextEquals):
        return {"context": e.key, "equals": e.value}
    if isinstance(e, m.AllOf):
        return {"all": [_expr_json(c) for c in e.conditions]}
    if isinstance(e, m.AnyOf):
        return {"any": [_expr_json(c) for c in e.conditions]}
    if isinstance(e, m.Not):
        return {"not": _expr_json(e.condition)}
    if isinstance(e, Ends):
        return {"ends": e.reason}
    if isinstance(e, TurnIs):
        return {"turn": e.op, "number": e.number}
    if isinstance(e, Previous):
        return {"previous": _expr_json(e.expr)}
    raise ValueError(f"a property cannot hold {type(e).__name__}")


def _expr(data: Any, depth: int = 0) -> Any:
    if depth > 200 or not isinstance(data, dict):
        raise ValueError(f"not a property expression: {data!r:.60}")
    if "from" in data:
        return m.FromSpeaker(str(data["from"]))
    if "tool" in data:
        return m.ToolCalled(str(data["tool"]))
    if "context" in data:
        return m.ContextEquals(str(data["context"]), data.get("equals"))
    for key, kind in (("all", m.AllOf), ("any", m.AnyOf)):
        if key in data:  # (a `.flow` file's `and` / `or` joins two conditions or more)
            items = tuple(_expr(c, depth + 1) for c in data[key])
            if len(items) < 2:
                raise ValueError(f"`{key}` of fewer than two conditions: {data!r:.60}")
            return kind(items)
    if "not" in data:
        return m.Not(_expr(data["not"], depth + 1))
    if "ends" in data:
        reason = data["ends"]
        return Ends(None if reason is None else str(reason))
    if "turn" in data:
        op, number = data["turn"], data.get("number")
        if op not in ("==", "!=", "<", "<=", ">", ">=") or type(number) is not int:
            raise ValueError(f"not a turn comparison: {data!r:.60}")
        return TurnIs(op, number)
    if "previous" in data:
        return Previous(_expr(data["previous"], depth + 1))
    raise ValueError(f"not a property expression: {data!r:.60}")


def property_json(prop: Property) -> dict[str, Any]:
    """A property as plain JSON (what a run records, so that ``flowc resume`` and the
    workers watch the same properties); :func:`property_of_json` reads it back.

    >>> p = Property("p", Responds(m.ToolCalled("t"), Ends("ok"), 2), Before(TurnIs(">", 9)))
    >>> property_of_json(property_json(p)) == p
    True
    """
    pat, scope = prop.pattern, prop.scope
    kind = next(k for k, c in _PATTERNS.items() if isinstance(pat, c))
    pattern: dict[str, Any] = {"kind": kind, "p": _expr_json(pat.p)}
    if isinstance(pat, OnlyAfter | Responds):
        pattern["s"] = _expr_json(pat.s)
    if isinstance(pat, Eventually | Responds) and pat.within is not None:
        pattern["within"] = pat.within
    if isinstance(pat, AtMost):
        pattern["times"] = pat.times
    where: dict[str, Any] = {"kind": next(k for k, c in _SCOPES.items() if isinstance(scope, c))}
    if isinstance(scope, After | Between | AfterUntil):
        where["q"] = _expr_json(scope.q)
    if isinstance(scope, Before | Between | AfterUntil):
        where["r"] = _expr_json(scope.r)
    return {"name": prop.name, "text": prop.text, "pattern": pattern, "scope": where}


def property_of_json(data: Any) -> Property:
    """The property :func:`property_json` wrote; :class:`ValueError` for anything else."""
    try:
        pat, scope = data["pattern"], data["scope"]
        cls = _PATTERNS[pat["kind"]]
        args: list[Any] = [_expr(pat["p"])]
        if cls in (OnlyAfter, Responds):
            args.append(_expr(pat["s"]))
        if cls is AtMost:
            args.append(int(pat["times"]))
        if cls in (Eventually, Responds) and pat.get("within") is not None:
            args.append(int(pat["within"]))
        where = _SCOPES[scope["kind"]]
        sargs = []
        if where in (After, Between, AfterUntil):
            sargs.append(_expr(scope["q"]))
        if where in (Before, Between, AfterUntil):
            sargs.append(_expr(scope["r"]))
        return Property(
            str(data["name"]), cls(*args), where(*sargs), text=str(data.get("text", ""))
        )
    except (KeyError, TypeError, AttributeError, OverflowError) as err:  # (int(1e999))
        raise ValueError(f"not a property ({type(err).__name__}: {err})") from None
