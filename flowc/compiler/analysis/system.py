"""The abstract transition system of a flow: what the explorer steps through.

A state is the speaker about to speak and an abstract valuation of the context keys
that conditions read. Each key ranges over the literals the flow compares it with,
plus ``unset`` and ``other``. A speaker's turn may do what its declared tools allow
(or, for a JSON graph, what the graph-without-declarations assumptions allow).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, TypeAlias, TypeVar, cast

import attrs

from flowc.compiler import model as m
from flowc.compiler.compiled import CompiledFlow, RuleInfo
from flowc.compiler.describe import Describer, condition_key, condition_text, rule_label
from flowc.compiler.pipeline import LoadedGraph
from flowc.compiler.properties import Property
from flowc.compiler.tool_effects import ToolEffectInfo
from flowc.diagnostics import elide
from flowc.dsl.formatter import format_name, format_value
from flowc.identity import ByIdentity

UNSET, OTHER = 0, 1  # abstract values; literal j of a key is 2 + j

#: an abstract valuation: one abstract value per tracked key
Valuation: TypeAlias = tuple[int, ...]


@attrs.frozen
class Atom:
    """A custom condition call, which the checker assumes may be true or false."""

    id: int
    label: str


#: a compiled condition: evaluated three-valued against (sender, tool, valuation, assumptions)
CondCode: TypeAlias = tuple[Any, ...]

_T = TypeVar("_T")


@attrs.frozen
class Action:
    """One thing a speaker's turn may do."""

    tool: str | None = None
    tool_index: int = -1
    #: abstract writes: (key index, abstract value), applied in order (clears first)
    writes: tuple[tuple[int, int], ...] = ()
    #: the concrete writes, for display and replay
    sets: tuple[tuple[str, Any], ...] = ()
    clears: tuple[str, ...] = ()
    handoff: int | None = None
    finish: str | None = None
    #: keys a human may write on its turn, each to any value or unset (tracked key indices)
    any_writes: tuple[int, ...] = ()

    @property
    def is_plain(self) -> bool:
        return self.tool is None and not self.sets and not self.clears and not self.any_writes


PLAIN = Action()


@attrs.frozen
class RuleSpec:
    """One compiled transition as the explorer sees it."""

    index: int  # position in the compiled transition list (file order)
    rank: int  # position after the stable sort by priority (evaluation order)
    when: m.Condition
    then: m.Target
    priority: int
    code: CondCode
    senders: frozenset[int] | None  # the only senders it can match, None for any
    tools: frozenset[int | None] | None  # the only routing tools it can match
    reads: frozenset[int]  # tracked keys it reads
    info: RuleInfo | None  # source rule (None for a JSON graph)
    json_path: str | None
    #: ``when``'s :func:`flowc.compiler.describe.condition_key`
    when_key: Any = attrs.field(default=None, eq=False, repr=False)

    def reads_alike(self, key: int, values: Iterable[int]) -> bool:
        """Whether every comparison of the rule on ``key`` answers alike for all the
        abstract ``values``: unset and ``null`` (an unset key reads as ``null``), or two
        values the rule does not name, are one to it.

        >>> rule = RuleSpec(0, 0, m.Always(), m.StayTarget(), 0, ("ctx", 0, frozenset({0, 2})),
        ...                 None, None, frozenset({0}), None, None)
        >>> rule.reads_alike(0, {UNSET, 2}), rule.reads_alike(0, {UNSET, OTHER})
        (True, False)
        """
        hits = [c[2] for c in code_parts(self.code, "ctx") if c[1] == key]
        return len({tuple(v in h for h in hits) for v in values}) <= 1


@attrs.frozen
class System:
    """Everything the explorer and the checks need about one flow."""

    speakers: tuple[str, ...]  # display names, in participant order
    ids: tuple[str, ...]  # agent ids, same order
    humans: frozenset[int]
    start: int
    initiator: int
    keys: tuple[str, ...]
    literals: tuple[tuple[Any, ...], ...]
    initial: Valuation
    initial_context: dict[str, Any]
    tool_names: tuple[str, ...]
    rules: tuple[RuleSpec, ...]  # file order
    ordered: tuple[RuleSpec, ...]  # evaluation order
    default: m.Target
    max_turns: int | None
    actions: tuple[tuple[Action, ...], ...]  # per speaker
    atoms: tuple[Atom, ...]
    custom_results: dict[str, tuple[str | None, ...] | None]
    json_mode: bool
    compiled: CompiledFlow | None
    json_prefix: str = ""
    # lookups built once (a list's .index() per call made large flows quadratic)
    id_names: dict[str, str] = attrs.field(
        init=False,
        eq=False,
        repr=False,
        default=attrs.Factory(
            lambda self: dict(zip(self.ids, self.speakers, strict=True)), takes_self=True
        ),
    )
    _id_index: dict[str, int] = attrs.field(
        init=False,
        eq=False,
        repr=False,
        default=attrs.Factory(lambda self: {a: i for i, a in enumerate(self.ids)}, takes_self=True),
    )
    _speaker_index: dict[str, int] = attrs.field(
        init=False,
        eq=False,
        repr=False,
        default=attrs.Factory(
            lambda self: {a: i for i, a in enumerate(self.speakers)}, takes_self=True
        ),
    )
    _rule_texts: dict[int, str] = attrs.field(init=False, eq=False, repr=False, factory=dict)
    #: the texts kept from the document's earlier versions (:meth:`share_texts`)
    _shared_texts: RuleTexts | None = attrs.field(init=False, eq=False, repr=False, default=None)
    _labels: dict[int, str] = attrs.field(init=False, eq=False, repr=False, factory=dict)
    #: what :meth:`made_for` made, by what for and the object it was made of
    _made: dict[str, ByIdentity[Any, tuple[Any]]] = attrs.field(
        init=False, eq=False, repr=False, factory=dict
    )
    _describer: Describer = attrs.field(
        init=False,
        eq=False,
        repr=False,
        default=attrs.Factory(lambda self: Describer(self.id_names), takes_self=True),
    )

    def shape(self) -> tuple[Any, ...]:
        """Everything the explorer reads of this system, and nothing of where it was
        written (spans, JSON paths, the source): two systems of one shape have the same
        state space, node for node, so a space explored for one serves the other
        (:class:`flowc.compiler.analysis.SpaceCache`; an edit to a comment, a scenario
        or the layout of a file keeps the shape)."""
        return (
            self.speakers,
            self.ids,
            self.humans,
            self.start,
            self.initiator,
            self.keys,
            self.literals,
            self.initial,
            tuple(sorted(self.initial_context.items(), key=lambda kv: kv[0])),
            self.tool_names,
            tuple(
                (r.index, r.rank, r.when, r.then, r.priority, r.code, r.senders, r.tools, r.reads)
                for r in self.rules
            ),
            tuple(r.index for r in self.ordered),
            self.default,
            self.max_turns,
            self.actions,
            self.atoms,
            tuple(sorted(self.custom_results.items(), key=lambda kv: kv[0])),
            self.json_mode,
        )

    # display -------------------------------------------------------------

    def name(self, speaker: int) -> str:
        return format_name(self.speakers[speaker])

    def show_value(self, key: int, value: int) -> str:
        if value == UNSET:
            return "unset"
        if value == OTHER:
            return "another value"
        return format_value(self.literals[key][value - 2])

    def abstract(self, key: int, value: Any) -> int:
        """The abstract value of a concrete one."""
        for j, lit in enumerate(self.literals[key]):
            if m.values_equal(lit, value):
                return 2 + j
        return OTHER

    def value_outside(self, key: int) -> str:
        """A value no condition compares ``key`` with (its abstract value is ``other``),
        for a help that proposes writing one: ``"done"``, else ``"done_2"`` ..."""
        value, n = "done", 1
        while self.abstract(key, value) != OTHER:  # (a key has finitely many literals)
            n += 1
            value = f"done_{n}"
        return value

    # a finding quotes rules, conditions and targets: each is cut to a bounded length so
    # that findings quoting the same huge rule do not repeat all of it

    def describe_target(self, target: m.Target) -> str:
        return elide(self._describer.target(target))

    def describe_cond(self, cond: m.Condition) -> str:
        return elide(self._describer.condition(cond))

    def call_text(self, target: m.Target) -> str:
        """A custom target's call as written (not cut short): what identifies it."""
        return self._describer.target(target)

    def describe_rule(self, rule: RuleSpec) -> str:
        texts = self._rule_texts
        text = texts.get(rule.index)
        if text is None:
            shared = self._shared_texts
            text = shared.get(rule) if shared is not None else None
            if text is None:
                text = elide(
                    self._describer.rule(rule.when, rule.then, rule.priority, rule.when_key)
                )
                if shared is not None:
                    shared.put(rule, text)
            texts[rule.index] = text
        return text

    def share_texts(self, texts: RuleTexts) -> None:
        """Take the rules' texts from ``texts``, and leave the new ones there (the
        language server's, per document: :class:`RuleTexts`)."""
        texts.begin(self.id_names, len(self.rules))
        object.__setattr__(self, "_shared_texts", texts)

    def made_for(self, what: str, obj: Any, make: Callable[[], _T]) -> _T:
        """``make()``, made once for this system, ``what`` is made and ``obj`` (by its
        identity: e.g. the flow's properties, read by several checks)."""
        kept = self._made.get(what)
        if kept is None:
            kept = self._made[what] = ByIdentity()
        return cast(_T, kept.made(obj, lambda: (make(),))[0])

    def line_of(self, rule: RuleSpec) -> int | None:
        return rule.info.line if rule.info is not None else None

    def label(self, rule: RuleSpec, *, code: bool = True) -> str:
        """``rule 3, line 14 (`when from a then b`)``: the run's, log's and diagram's name."""
        if not code:
            return rule_label(rule.index, self.line_of(rule), self.describe_rule(rule), code=code)
        text = self._labels.get(rule.index)
        if text is None:
            text = self._labels[rule.index] = rule_label(
                rule.index, self.line_of(rule), self.describe_rule(rule), code=True
            )
        return text

    def where(self, rule: RuleSpec) -> str:
        if rule.info is not None:
            return f"line {rule.info.span.line}"
        return f"`{self.json_path(rule.json_path or '')}`"

    def json_path(self, path: str) -> str:
        """A path inside the graph as a path in the file: ``graph.transitions[2]`` in a
        knobs file; the graph itself (``""``) is ``graph`` there."""
        if not self.json_prefix:
            return path
        return self.json_prefix + path if path else self.json_prefix.rstrip(".")

    def index_of(self, agent_id: str) -> int:
        return self._id_index[agent_id]

    def routes_to(self, rule: RuleSpec) -> frozenset[int]:
        """The speakers ``rule`` may give the turn to, from each sender it can match, as
        the explorer resolves its target: `next` the speaker after the sender (in
        participant order), `stay` the sender, `initiator` the initiator, a custom target
        the speakers of its `->` list (any speaker without one).

        >>> from flowc import compile_flow
        >>> flow = compile_flow("speakers u: human, a, b\\nwhen from u then next\\nwhen from b then stay")
        >>> s = system_of_flow(flow)
        >>> [sorted(s.routes_to(r)) for r in s.rules]
        [[1], [2]]
        """
        senders = range(len(self.speakers)) if rule.senders is None else rule.senders
        then = rule.then
        if isinstance(then, m.AgentTarget):
            found = self._id_index.get(then.agent_id)
            return frozenset(() if found is None else (found,))
        if isinstance(then, m.RoundRobinTarget):
            return frozenset((s + 1) % len(self.speakers) for s in senders if s >= 0)
        if isinstance(then, m.StayTarget):
            return frozenset(s for s in senders if s >= 0)
        if isinstance(then, m.RevertToInitiatorTarget):
            return frozenset((self.initiator,))
        if isinstance(then, m.CustomTarget):
            results = self.custom_results.get(then.name)
            names = self.speakers if results is None else results
            return frozenset(self._speaker_index[r] for r in names if r in self._speaker_index)
        return frozenset()

    def speaker_index(self, name: str) -> int:
        """The index of a speaker by its display name."""
        return self._speaker_index[name]


class RuleTexts:
    """The rules' texts (:meth:`System.describe_rule`) kept from one version of a
    document to the next: the language server lowers a rule an edit did not touch to the
    same condition and target objects (:class:`flowc.compiler.lower.RuleCache`), whose
    text is then taken from here, not written again (on a 10,000-rule file, thousands of
    findings quote their rules). An entry keeps its condition, so that an identity is
    never that of an object since thrown away. The target, the priority and the
    speakers' names are part of the text: each is checked too, though objects kept by
    the lowering already imply them (a guard for any other caller).

    >>> from flowc import compile_flow
    >>> texts = RuleTexts()
    >>> flow = compile_flow("speaker a\\nspeaker b\\nwhen from a then b priority 2")
    >>> one, two = system_of_flow(flow), system_of_flow(flow)
    >>> one.share_texts(texts); two.share_texts(texts)
    >>> one.describe_rule(one.rules[0]), texts.reused
    ('when from a then b priority 2', 0)
    >>> two.describe_rule(two.rules[0]), texts.reused
    ('when from a then b priority 2', 1)
    >>> same = two.rules[0]  # the same condition, another target or priority: not its text
    >>> texts.get(attrs.evolve(same, priority=3)), texts.get(attrs.evolve(same, then=two.default))
    (None, None)
    >>> texts.begin({"a": "renamed"}, 1)  # other names: every entry forgotten
    >>> three = system_of_flow(flow); three.share_texts(texts)
    >>> three.describe_rule(three.rules[0]), texts.reused
    ('when from a then b priority 2', 1)
    """

    def __init__(self) -> None:
        self._names: dict[str, str] | None = None
        self._of: ByIdentity[m.Condition, tuple[m.Target, int, str]] = ByIdentity()
        #: how many texts were taken from an earlier version (for tests and benchmarks)
        self.reused = 0

    def begin(self, names: Mapping[str, str], rules: int) -> None:
        """For a version whose speakers are named ``names`` and that has ``rules`` rules."""
        if names != self._names or len(self._of) > 2 * rules + 64:
            self._of.clear()
            self._names = dict(names)

    def get(self, rule: RuleSpec) -> str | None:
        found = self._of.get(rule.when)
        if found is not None and found[0] is rule.then and found[1] == rule.priority:
            self.reused += 1
            return found[2]
        return None

    def put(self, rule: RuleSpec, text: str) -> None:
        self._of.put(rule.when, (rule.then, rule.priority, text))


# ── building ──────────────────────────────────────────────────────────────────


class _Builder:
    def __init__(
        self,
        graph: m.TransitionGraph,
        ids: Sequence[str],
        json_mode: bool,
        extra: Mapping[str, Sequence[Any]] | None = None,
        base: System | None = None,
    ):
        """``base``: a system of the same graph whose keys, values and tools to start
        from, instead of reading them from the rules (whose codes it keeps: the builder
        then compiles no rule; :func:`system_of_flow`)."""
        self.graph = graph
        self.ids = tuple(ids)
        self.index = {a: i for i, a in enumerate(self.ids)}
        self.json_mode = json_mode
        self.interned: dict[Any, Any] = {}
        keys: dict[str, list[Any]] = {}
        tools: dict[str, None] = {}
        #: each rule's condition_key (none with ``base``: :meth:`rules` is not for it)
        self.cond_keys: list[Any] = []
        self.from_base = base is not None
        if base is not None:
            keys = {k: list(values) for k, values in zip(base.keys, base.literals, strict=True)}
            tools = dict.fromkeys(base.tool_names)
        else:
            self.cond_keys = [condition_key(t.when) for t in graph.transitions]
            seen: set[Any] = set()
            for t, key in zip(graph.transitions, self.cond_keys, strict=True):
                if key is not None:
                    if key in seen:
                        continue  # the same condition again names nothing new
                    seen.add(key)
                for c in m.walk_condition(t.when):
                    if isinstance(c, m.ContextEquals):
                        lits = keys.setdefault(c.key, [])
                        if not any(m.values_equal(x, c.value) for x in lits):
                            lits.append(c.value)
                    elif isinstance(c, m.ToolCalled):
                        tools.setdefault(c.tool_name, None)
        for key, values in (extra or {}).items():  # after the rules' own: their indices stay
            lits = keys.setdefault(key, [])
            for value in values:
                if not any(m.values_equal(x, value) for x in lits):
                    lits.append(value)
        self.keys = tuple(keys)
        self.key_index = {k: i for i, k in enumerate(self.keys)}
        self.literals = tuple(tuple(v) for v in keys.values())
        self.tools: dict[str, int] = {t: i for i, t in enumerate(tools)}
        self.atoms: dict[tuple[str, str], Atom] = {}

    def add_tool(self, name: str) -> int:
        return self.tools.setdefault(name, len(self.tools))

    def abstract(self, key: int, value: Any) -> int:
        for j, lit in enumerate(self.literals[key]):
            if m.values_equal(lit, value):
                return 2 + j
        return OTHER

    def compile_cond(self, cond: m.Condition) -> CondCode:
        code = self._compile_cond(cond)
        # equal conditions share one code (a large flow repeats the same few conditions)
        return self.interned.setdefault(code, code)  # type: ignore[no-any-return]

    def _compile_cond(self, cond: m.Condition) -> CondCode:
        if isinstance(cond, m.Always):
            return ("T",)
        if isinstance(cond, m.FromSpeaker):
            return ("from", self.index.get(cond.agent_id, -1))
        if isinstance(cond, m.ToolCalled):
            return ("tool", self.add_tool(cond.tool_name))
        if isinstance(cond, m.ContextEquals):
            k = self.key_index[cond.key]
            hits = {self.abstract(k, cond.value)} - {OTHER}
            if cond.value is None:
                hits.add(UNSET)
            return ("ctx", k, frozenset(hits))
        if isinstance(cond, m.AllOf):
            return ("all", tuple(self.compile_cond(c) for c in cond.conditions))
        if isinstance(cond, m.AnyOf):
            return ("any", tuple(self.compile_cond(c) for c in cond.conditions))
        if isinstance(cond, m.Not):
            return ("not", self.compile_cond(cond.condition))
        key = (cond.name, m.json_text(cond.args))
        atom = self.atoms.get(key)
        if atom is None:
            atom = Atom(len(self.atoms), condition_text(cond))
            self.atoms[key] = atom
        return ("custom", atom)

    def shared(self, value: _T) -> _T:
        """One object for equal values."""
        return self.interned.setdefault(value, value)  # type: ignore[no-any-return]

    def rules(self, infos: Sequence[RuleInfo] | None) -> tuple[RuleSpec, ...]:
        assert not self.from_base, "a builder made from a base system keeps its rules"
        order = sorted(
            range(len(self.graph.transitions)), key=lambda i: self.graph.transitions[i].priority
        )
        rank = {i: r for r, i in enumerate(order)}
        out = []
        # a large flow repeats a few conditions: each is compiled once
        compiled: dict[Any, tuple[CondCode, Any, Any, frozenset[int]]] = {}
        for i, t in enumerate(self.graph.transitions):
            key = self.cond_keys[i]
            found = compiled.get(key) if key is not None else None
            if found is None:
                code = self.compile_cond(t.when)
                found = (
                    code,
                    self.shared(_senders(code)),
                    self.shared(_tools(code)),
                    self.shared(frozenset(_reads(code))),
                )
                if key is not None:
                    compiled[key] = found
            code, senders, tools, reads = found
            out.append(
                RuleSpec(
                    index=i,
                    rank=rank[i],
                    when=t.when,
                    then=t.then,
                    priority=t.priority,
                    code=code,
                    senders=senders,
                    tools=tools,
                    reads=reads,
                    info=infos[i] if infos is not None else None,
                    json_path=None if infos is not None else f"transitions[{i}]",
                    when_key=key,
                )
            )
        return tuple(out)


def _senders(code: CondCode) -> frozenset[int] | None:
    kind = code[0]
    if kind == "from":
        return frozenset({code[1]})
    if kind == "all":
        found = [s for s in (_senders(c) for c in code[1]) if s is not None]
        return frozenset.intersection(*found) if found else None
    if kind == "any":
        subs = [_senders(c) for c in code[1]]
        if subs and all(s is not None for s in subs):
            return frozenset().union(*(s for s in subs if s is not None))
        return None
    return None


def _tools(code: CondCode) -> frozenset[int | None] | None:
    kind = code[0]
    if kind == "tool":
        return frozenset({code[1]})
    if kind == "all":
        found = [s for s in (_tools(c) for c in code[1]) if s is not None]
        return frozenset.intersection(*found) if found else None
    if kind == "any":
        subs = [_tools(c) for c in code[1]]
        if subs and all(s is not None for s in subs):
            return frozenset().union(*(s for s in subs if s is not None))
        return None
    return None


def code_parts(code: CondCode, kind: str) -> Iterator[CondCode]:
    """The comparisons of one kind (``"ctx"``, ``"tool"``, ``"from"``, ``"custom"``) in a
    compiled condition, through its ``and``, ``or`` and ``not``.

    >>> list(code_parts(("all", (("ctx", 0, frozenset({2})), ("not", ("tool", 1)))), "tool"))
    [('tool', 1)]
    """
    k = code[0]
    if k == kind:
        yield code
    elif k in ("all", "any"):
        for c in code[1]:
            yield from code_parts(c, kind)
    elif k == "not":
        yield from code_parts(code[1], kind)


def _reads(code: CondCode) -> Iterator[int]:
    return (c[1] for c in code_parts(code, "ctx"))


def _speaker_actions(
    b: _Builder,
    speakers: Sequence[str],
    human_writes: Mapping[str, Iterable[str]],
    tools: Mapping[str, Sequence[tuple[str, tuple[ToolEffectInfo, ...]]]],
) -> tuple[tuple[Action, ...], ...]:
    """Each speaker's possible turns: a plain reply (with the keys a human may write),
    and each alternative of each declared tool call (``tools``: per speaker, each tool's
    name and alternatives, in the flow's order), with its writes as abstract values."""
    index = {s: i for i, s in enumerate(speakers)}
    actions: list[tuple[Action, ...]] = []
    for s in speakers:
        written = tuple(b.key_index[k] for k in human_writes.get(s, ()) if k in b.key_index)
        acts: list[Action] = [Action(any_writes=written) if written else PLAIN]
        for tool, alternatives in tools.get(s, ()):
            t_index = b.add_tool(tool)
            for alt in alternatives or (None,):
                if alt is None:
                    acts.append(Action(tool, t_index))
                    continue
                writes = [(b.key_index[k], UNSET) for k in alt.clears if k in b.key_index]
                writes += [
                    (b.key_index[k], b.abstract(b.key_index[k], v))
                    for k, v in alt.sets
                    if k in b.key_index
                ]
                handoff = index[alt.handoff] if alt.handoff is not None else None  # (declared)
                acts.append(
                    Action(tool, t_index, tuple(writes), alt.sets, alt.clears, handoff, alt.finish)
                )
        unique: dict[str, Action] = {}
        for act in acts:  # values may be lists or objects: dedupe on their JSON
            key = m.json_text([act.tool, act.sets, act.clears, act.handoff, act.finish])
            unique.setdefault(key, act)
        actions.append(tuple(unique.values()))
    return tuple(actions)


def system_of_flow(
    compiled: CompiledFlow,
    extra: Mapping[str, Sequence[Any]] | None = None,
    *,
    base: System | None = None,
) -> System:
    """The abstract system of a compiled `.flow`: tools as declared.

    ``extra`` adds context keys and values to tell apart beside those the rules compare
    (the values properties compare: :mod:`flowc.compiler.analysis.properties`); they
    come after the rules' own, whose abstract values stay the same.

    ``base``, a system of the same flow (``system_of_flow(compiled)``, with or without
    values of its own), is the one to add ``extra`` to: its rules, their order and its
    custom conditions are kept as they are (their codes name the same keys and values:
    each key's new values come after the ones it has), and the keys, the values, the
    initial valuation, the tools and each speaker's turns (the tools' writes, the keys a
    human may write) are made again. From ``system_of_flow(compiled)`` the system is the
    one made without ``base`` (a test compares them field by field), in a fraction of
    the time on a large flow; from a base with values of its own, it tells apart those
    and then ``extra``'s.

    >>> from flowc import compile_flow
    >>> flow = compile_flow("speakers u: human, b\\nwhen context.k == 1 then b")
    >>> s = system_of_flow(flow)
    >>> s.speakers, s.keys, s.show_value(0, 2)
    (('u', 'b'), ('k',), '1')
    >>> more = system_of_flow(flow, {"k": [2], "j": ["x"]}, base=s)
    >>> more.keys, more.literals, more.rules is s.rules
    (('k', 'j'), ((1, 2), ('x',)), True)
    >>> more == system_of_flow(flow, {"k": [2], "j": ["x"]})
    True
    """
    if base is not None and (base.compiled is not compiled or base.json_mode):
        raise ValueError("system_of_flow: base is a system of another flow")
    ids = tuple(compiled.agent_id(s) for s in compiled.speakers)
    b = _Builder(compiled.graph, ids, json_mode=False, extra=extra, base=base)
    rules = base.rules if base is not None else b.rules(compiled.rules)
    speaker_index = {s: i for i, s in enumerate(compiled.speakers)}
    actions = _speaker_actions(
        b,
        compiled.speakers,
        compiled.human_writes,
        {s: [(t.name, t.alternatives) for t in compiled.tools_of(s)] for s in compiled.speakers},
    )
    initial = tuple(
        b.abstract(i, compiled.context_vars[k]) if k in compiled.context_vars else UNSET
        for i, k in enumerate(b.keys)
    )
    return System(
        speakers=compiled.speakers,
        ids=ids,
        humans=frozenset(speaker_index[h] for h in compiled.humans),
        start=speaker_index[compiled.start],
        initiator=speaker_index[compiled.initiator],
        keys=b.keys,
        literals=b.literals,
        initial=initial,
        initial_context=dict(compiled.context_vars),
        tool_names=tuple(b.tools),
        rules=rules,
        ordered=base.ordered if base is not None else tuple(sorted(rules, key=lambda r: r.rank)),
        default=compiled.graph.default_target,
        max_turns=compiled.graph.max_turns,
        actions=tuple(actions),
        atoms=base.atoms if base is not None else tuple(b.atoms.values()),
        custom_results={c.name: c.results for c in compiled.customs if c.kind == "target"},
        json_mode=False,
        compiled=compiled,
    )


def system_of_graph(
    loaded: LoadedGraph, participants: Sequence[str] = (), initiator: str | None = None
) -> System:
    """The abstract system of a JSON graph, under the no-declarations assumptions.

    The participants are ``participants`` (in their order, as `next` rotates over them)
    and then any other agent the graph names; without them, the agents the graph names
    (as a run of a bare graph takes them). The initiator is the start speaker unless given.

    >>> g = m.TransitionGraph("a", (m.Transition(m.ToolCalled("go"), m.AgentTarget("b")),))
    >>> s = system_of_graph(LoadedGraph(g, {}, False))
    >>> s.speakers, [a.tool for a in s.actions[0]]
    (('a', 'b'), [None, 'go'])
    >>> system_of_graph(LoadedGraph(g, {}, False), ("c", "a")).speakers
    ('c', 'a', 'b')
    """
    graph = loaded.graph
    ids = tuple(dict.fromkeys([*participants, *m.agent_ids(graph)]))
    b = _Builder(graph, ids, json_mode=True)
    rules = b.rules(None)
    prefix = "graph." if loaded.is_knobs else ""
    actions = tuple((PLAIN, *(Action(t, i) for i, t in enumerate(b.tools))) for _ in ids)
    initial = tuple(
        b.abstract(i, loaded.context_vars[k]) if k in loaded.context_vars else UNSET
        for i, k in enumerate(b.keys)
    )
    return System(
        speakers=ids,
        ids=ids,
        humans=frozenset(),
        start=ids.index(graph.initial_speaker),
        initiator=ids.index(initiator) if initiator in ids else ids.index(graph.initial_speaker),
        keys=b.keys,
        literals=b.literals,
        initial=initial,
        initial_context=dict(loaded.context_vars),
        tool_names=tuple(b.tools),
        rules=rules,
        ordered=tuple(sorted(rules, key=lambda r: r.rank)),
        default=graph.default_target,
        max_turns=graph.max_turns,
        actions=actions,
        atoms=tuple(b.atoms.values()),
        custom_results={},
        json_mode=True,
        compiled=None,
        json_prefix=prefix,
    )


@attrs.frozen
class Declarations:
    """What a run stores of its flow besides the graph (``flowc run`` writes it with the
    run: :meth:`flowc.runtime.target.RunTarget.labels`): the speakers by name, the humans,
    the declared tools and what each call does, the keys each human may write, the
    results of custom targets and the properties. Enough to explore the runs of the flow
    the run ran as ``check`` explores them from the `.flow` file
    (:func:`system_of_declarations`), the file gone."""

    speakers: tuple[str, ...]  # names, in participant order
    ids: Mapping[str, str]  # name -> agent id
    humans: frozenset[str]
    start: str
    initiator: str
    #: (speaker, tool) -> each alternative of a call, in the flow's order
    tools: Mapping[tuple[str, str], tuple[ToolEffectInfo, ...]]
    human_writes: Mapping[str, frozenset[str]]
    custom_results: Mapping[str, tuple[str | None, ...] | None]
    properties: tuple[Property, ...] = ()


def system_of_declarations(
    loaded: LoadedGraph, decl: Declarations, extra: Mapping[str, Sequence[Any]] | None = None
) -> System:
    """The abstract system of a stored run's graph with its flow's declarations: the one
    :func:`system_of_flow` makes of the `.flow` file (tools as declared, humans writing
    the keys they declare), from what the run stored. ``extra`` as for
    :func:`system_of_flow`.

    >>> from flowc import compile_flow
    >>> c = compile_flow(
    ...     "speaker u: human\\nspeaker b { tool t sets k = 1 }\\nwhen context.k == 1 then u"
    ... )
    >>> d = Declarations(c.speakers, {s: c.agent_id(s) for s in c.speakers}, c.humans, c.start,
    ...     c.initiator, {(t.speaker, t.name): t.alternatives for t in c.tools}, {}, {})
    >>> s = system_of_declarations(LoadedGraph(c.graph, dict(c.context_vars), True), d)
    >>> s.shape() == system_of_flow(c).shape()
    True
    """
    graph = loaded.graph
    ids = tuple(decl.ids.get(s, s) for s in decl.speakers)
    b = _Builder(graph, ids, json_mode=False, extra=extra)
    rules = b.rules(None)
    index = {s: i for i, s in enumerate(decl.speakers)}
    by_speaker: dict[str, list[tuple[str, tuple[ToolEffectInfo, ...]]]] = {}
    for (speaker, tool), alternatives in decl.tools.items():
        by_speaker.setdefault(speaker, []).append((tool, alternatives))
    actions = _speaker_actions(b, decl.speakers, decl.human_writes, by_speaker)
    context = loaded.context_vars
    return System(
        speakers=tuple(decl.speakers),
        ids=ids,
        humans=frozenset(index[h] for h in decl.humans if h in index),
        start=index[decl.start],
        initiator=index.get(decl.initiator, index[decl.start]),
        keys=b.keys,
        literals=b.literals,
        initial=tuple(
            b.abstract(i, context[k]) if k in context else UNSET for i, k in enumerate(b.keys)
        ),
        initial_context=dict(context),
        tool_names=tuple(b.tools),
        rules=rules,
        ordered=tuple(sorted(rules, key=lambda r: r.rank)),
        default=graph.default_target,
        max_turns=graph.max_turns,
        actions=tuple(actions),
        atoms=tuple(b.atoms.values()),
        custom_results=dict(decl.custom_results),
        json_mode=False,
        compiled=None,
    )
