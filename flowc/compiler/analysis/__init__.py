"""Static analysis of flows: ``flowc check``.

The flow's abstract state space (speaker x abstract context, see
:mod:`flowc.compiler.analysis.system`) is explored into a ``networkx.DiGraph``
(:mod:`flowc.compiler.analysis.explore`); the checks, one family a module, run in
the order of :data:`CHECKS` and read the shared :class:`Facts`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import attrs

from flowc._compat import dd_out_of_memory
from flowc.compiler import model as m
from flowc.compiler.analysis.ag2diff import AG2_CODES, check_ag2_differences, summary
from flowc.compiler.analysis.bound import check_state_bound
from flowc.compiler.analysis.cap import check_after_max_turns, check_implied_cap
from flowc.compiler.analysis.declarations import (
    check_human_initiator,
    check_json_assumptions,
    check_model_start_speaker,
    check_round_robin_order,
    check_undeclared_tools,
    check_unset_context_keys,
)
from flowc.compiler.analysis.endings import NO_RUN_ENDS, check_scenario_endings
from flowc.compiler.analysis.explore import StateSpace, explore
from flowc.compiler.analysis.facts import CheckOptions, Facts, Finding
from flowc.compiler.analysis.loops import check_non_termination, check_sticky_loops
from flowc.compiler.analysis.properties import (
    check_properties,
    declared_property_findings,
    reads_turns,
)
from flowc.compiler.analysis.reachability import (
    check_max_turns,
    check_silent_after_work,
    check_unreachable_speakers,
    check_unreachable_terminate,
)
from flowc.compiler.analysis.rules import check_dead_default, check_dead_rules
from flowc.compiler.analysis.suppress import apply_ignores, note_silenced_causes
from flowc.compiler.analysis.system import (
    Declarations,
    RuleTexts,
    System,
    system_of_flow,
    system_of_graph,
)
from flowc.compiler.analysis.worst import check_worst_case
from flowc.compiler.compiled import CompiledFlow
from flowc.compiler.lower import PATTERN_HELP
from flowc.compiler.pipeline import LoadedGraph, compile_source, load_graph_json
from flowc.compiler.portability import bare_ag2_graph_problems, bare_ag2_problems
from flowc.compiler.registry import TransitionRegistry, custom_problems, pattern_problems
from flowc.diagnostics import (
    E103,
    E111,
    E114,
    E116,
    I301,
    I305,
    I307,
    OPT_IN,
    Diagnostic,
    has_errors,
)
from flowc.dsl.formatter import joined_lines
from flowc.source import SourceFile

__all__ = [
    "CHECKS",
    "PARTIAL_CODES",
    "CheckOptions",
    "Facts",
    "Finding",
    "SpaceCache",
    "analyze",
    "analyze_graph",
    "apply_ignores",
    "check",
    "check_compiled",
    "check_source",
    "check_status",
    "facts_of",
    "findings_of",
    "load_checked_graph",
    "pattern_refusals",
    "read_input",
]

Check = Callable[[Facts], Iterator[Finding]]

#: every check, in the order findings are produced
CHECKS: tuple[Check, ...] = (
    check_json_assumptions,
    check_state_bound,
    check_model_start_speaker,
    check_undeclared_tools,
    check_unset_context_keys,
    check_unreachable_speakers,
    check_dead_default,
    check_dead_rules,
    check_sticky_loops,
    check_non_termination,
    check_unreachable_terminate,
    check_max_turns,
    check_after_max_turns,
    check_implied_cap,
    check_silent_after_work,
    check_human_initiator,
    check_round_robin_order,
    check_scenario_endings,
    check_ag2_differences,
    check_properties,
    check_worst_case,
)

#: the findings that say a check did not see every run: the exploration stopped at its
#: state bound (I301), a property was left undecided (I305)
PARTIAL_CODES = frozenset({I301.id, I305.id})


def check_status(diags: Sequence[Diagnostic]) -> str:
    """What the findings of :func:`check_source` say of the check itself, for whoever
    reports it (`flowc check --strict`, the view's findings panel): ``"stopped"`` when
    nothing was explored (an error from reading or compiling the input, after which
    :func:`check_source` returns; the errors the analysis itself reports are a broken
    property, E116, and a scenario's ending no run reaches, the E111 that begins
    :data:`~flowc.compiler.analysis.endings.NO_RUN_ENDS`), ``"partial"`` when not every
    run was seen (:data:`PARTIAL_CODES`), else ``"complete"``.

    >>> [check_status(check_source(SourceFile("f.flow", text))) for text in (
    ...     "speaker a\\nspeaker b\\nstart a\\nwhen from a then b\\n",
    ...     "speaker a\\nspeaker a\\nstart a\\n",
    ... )]
    ['complete', 'stopped']
    >>> check_status(check_source(SourceFile("f.flow", "speaker a\\nspeaker b\\nstart a\\n"
    ...     "when from a then b\\nwhen from b then a\\n"), CheckOptions(max_states=1)))
    'partial'
    >>> ending = "speaker a\\nspeaker b\\nstart a\\nmax_turns 1\\nwhen from a then b\\n"
    >>> [check_status(check_source(SourceFile("f.flow", ending + scenario))) for scenario in (
    ...     'when from b then terminate "x"\\nscenario "s" { a: "hi"\\n expect terminate "x" }\\n',
    ...     'scenario "s" { a: "hi"\\n expect terminate "nowhere" }\\n',
    ... )]
    ['complete', 'stopped']
    """
    if any(d.is_error and not _analysis_error(d) for d in diags):
        return "stopped"
    return "partial" if any(d.code.id in PARTIAL_CODES for d in diags) else "complete"


def _analysis_error(d: Diagnostic) -> bool:
    """Whether error ``d`` is one the analysis reports (it explored the flow)."""
    return d.code is E116 or (d.code is E111 and d.message.startswith(NO_RUN_ENDS))


#: checks whose findings are all of one code of :data:`flowc.diagnostics.OPT_IN`: run only
#: when that code is asked for (the work is not done for a finding nobody sees)
OPT_IN_CHECKS: dict[Check, str] = {check_worst_case: I307.id}


class SpaceCache:
    """The last state space explored for one document, kept for its next version.

    An edit that leaves the flow's shape as it was (:meth:`System.shape`: a comment, a
    scenario, blank lines, the order of declarations that do not route) leaves its
    state space as it was too, so the language server explores it once, not on every
    keystroke; the checks still run on the new version, with its spans. (The routing
    it keeps also holds the outcomes the flow's properties' wider system added, which
    is explored with this space's routing, ``explore(..., like=)``: they are kept by
    values the flow's own system never holds.)

    >>> from flowc import compile_flow
    >>> from flowc.compiler.analysis.system import system_of_flow
    >>> cache = SpaceCache()
    >>> one = cache.space(system_of_flow(compile_flow("speaker a\\nspeaker b\\nwhen from a then b")), 100)
    >>> two = cache.space(system_of_flow(compile_flow("# a comment\\nspeaker a\\nspeaker b\\nwhen from a then b")), 100)
    >>> (two.graph is one.graph, cache.reused)
    (True, 1)
    """

    def __init__(self) -> None:
        self._last: tuple[tuple[Any, ...], int, StateSpace] | None = None
        #: how many explorations it saved (for tests and benchmarks)
        self.reused = 0
        #: the rules' texts, kept for the next version too
        self.texts = RuleTexts()

    def space(self, system: System, max_states: int) -> StateSpace:
        """The state space of ``system`` under the bound: the last one, rebound to
        ``system``, when its shape and the bound are the same; else explored anew."""
        shape = system.shape()
        last = self._last
        record = _keeps_turns(system)
        if (
            last is not None
            and last[1] == max_states
            and last[0] == shape
            # a flow that gained properties wants each node's turns kept
            and (last[2].recorded is not None or not record)
        ):
            self.reused += 1
            space = last[2].rebound(system)
        else:
            space = explore(system, max_states, record=record)
        self._last = (shape, max_states, space)
        return space


def _keeps_turns(system: System) -> bool:
    """Whether the exploration keeps each node's turns: for a flow with properties that
    are decided on this exploration (:mod:`flowc.compiler.analysis.properties`), not on
    another that tells apart values its rules do not compare (:func:`reads_turns`)."""
    return reads_turns(system)


def findings_of(
    system: System, options: CheckOptions, filename: str = "<input>"
) -> tuple[Finding, ...]:
    """Explore ``system`` and run every check; findings carry their counterexample runs."""
    return facts_of(system, options, filename)[1]


def facts_of(
    system: System,
    options: CheckOptions,
    filename: str = "<input>",
    spaces: SpaceCache | None = None,
    *,
    proofs: bool = True,
) -> tuple[Facts, tuple[Finding, ...]]:
    """The explored facts of ``system`` and every finding the checks make of them
    (with ``spaces``, the state space explored for an earlier version of the same
    shape is used again; with ``proofs`` false, the findings do not carry the rules they
    prove never fire, which only the diagram reads: see
    :func:`~flowc.compiler.analysis.proven.with_proofs`).

    When the exploration was cut short, the checks ask the symbolic count further
    questions (loops, runs beyond the explored states); if its diagrams run out of the
    memory CUDD was given there, the flow is checked again from the explored states alone
    (I301 then says what is not reported), rather than failing."""
    if spaces is not None:
        system.share_texts(spaces.texts)
        space = spaces.space(system, options.max_states)
    else:
        space = explore(system, options.max_states, record=_keeps_turns(system))
    facts = Facts(system, space, filename)
    try:
        return facts, _findings(facts, options, proofs)
    except (MemoryError, RuntimeError, ValueError) as error:
        if not space.truncated or not dd_out_of_memory(error):
            raise
    facts = Facts(system, space, filename, symbolic=False)
    return facts, _findings(facts, options, proofs)


def _findings(facts: Facts, options: CheckOptions, proofs: bool = True) -> tuple[Finding, ...]:
    out: list[Finding] = []
    differences: list[Diagnostic] = []  # W218-W222, one I304 without `--target ag2`
    wants = _wanted(options)
    for check in CHECKS:
        code = OPT_IN_CHECKS.get(check)
        if code is not None and not options.wants(code):
            continue
        for f in check(facts):
            if options.target != "ag2" and f.diagnostic.code.id in AG2_CODES:
                differences.append(f.diagnostic)
            elif wants(f.diagnostic.code.id):
                out.append(f)
    note = summary(differences)
    if note is not None and options.wants(note.code.id):
        out.append(Finding(note))
    found = tuple(sorted(out, key=lambda f: f.diagnostic.sort_key()))
    if not proofs:
        return found
    from flowc.compiler.analysis.proven import with_proofs

    return with_proofs(facts, found)


def analyze(
    compiled: CompiledFlow,
    options: CheckOptions | None = None,
    *,
    filename: str = "<input>",
    spaces: SpaceCache | None = None,
    proofs: bool = True,
    on_facts: Callable[[Facts], object] | None = None,
) -> tuple[Diagnostic, ...]:
    """The findings of a compiled `.flow`, sorted by position (ignore comments not applied;
    ``proofs``: as :func:`facts_of`; ``on_facts`` is called with the facts the checks
    read, once they are done).

    >>> from flowc import compile_flow
    >>> flow = compile_flow("speaker a\\nspeaker b\\nwhen from a then b")
    >>> [d.code.id for d in analyze(flow)]
    ['W207']
    """
    options = options or CheckOptions()
    facts, found = facts_of(system_of_flow(compiled), options, filename, spaces, proofs=proofs)
    if on_facts is not None:
        on_facts(facts)
    return tuple(f.diagnostic for f in found)


def analyze_graph(
    loaded: LoadedGraph,
    options: CheckOptions | None = None,
    *,
    filename: str = "<input>",
    declared: Declarations | None = None,
) -> tuple[Diagnostic, ...]:
    """The findings of a JSON graph, under the assumptions for graphs without declarations;
    with ``declared`` (what a stored run kept of its flow), its properties are decided too,
    with those declarations, as ``check`` decides them on the flow
    (:func:`~flowc.compiler.analysis.properties.declared_property_findings`).

    >>> from flowc.compiler import model as m
    >>> g = m.TransitionGraph("a", (m.Transition(m.FromSpeaker("a"), m.AgentTarget("b")),))
    >>> [d.code.id for d in analyze_graph(LoadedGraph(g, {}, False))]
    ['I303']
    """
    options = options or CheckOptions()
    found = findings_of(system_of_graph(loaded), options, filename)
    if declared is not None and declared.properties:
        # (decided on an exploration of their own: when it alone stops at the bound, the
        # graph's findings report no I301, and the properties' note says so)
        own_complete = not any(f.diagnostic.code.id == "I301" for f in found)
        decided = declared_property_findings(
            loaded, declared, options.max_states, filename, retold=own_complete
        )
        wants = _wanted(options)
        found = tuple(
            sorted(
                (*found, *(f for f in decided if wants(f.diagnostic.code.id))),
                key=lambda f: f.diagnostic.sort_key(),
            )
        )
    return tuple(f.diagnostic for f in found)


def unloadable_names(
    graph: m.TransitionGraph,
    filename: str,
    registry: TransitionRegistry | None = None,
    prefix: str = "",
) -> tuple[Diagnostic, ...]:
    """E103 for every custom name of a JSON graph that neither is built in nor loads
    (see :func:`flowc.compiler.registry.custom_problems`): what ``run`` refuses.

    >>> g = m.TransitionGraph("a", (m.Transition(m.CustomCondition("from_speakr",
    ...     {"agent_id": "a"}), m.TerminateTarget()),))
    >>> [d.json_path for d in unloadable_names(g, "g.json", TransitionRegistry())]
    ['transitions[0].when.name']
    """
    return pattern_refusals(graph, filename, prefix) + tuple(
        Diagnostic(
            E103,
            f"{prefix}{p.path}: {p.message}",
            filename,
            json_path=prefix + p.path,
            help="fix the name, or load the module that registers the class (`--plugin "
            "MODULE_OR_FILE`, or `plugins` in [tool.flowc], imported only from a folder you "
            "trust: `flowc trust FOLDER`, or `--trust` for one command; from Python, "
            "flowc.load_plugins)",
        )
        for p in custom_problems(graph, registry)
    )


def pattern_refusals(
    graph: m.TransitionGraph, filename: str, prefix: str = ""
) -> tuple[Diagnostic, ...]:
    """E114 for each ``text_matches`` pattern of a JSON graph that flowc does not match,
    at its JSON path from the file's top (``prefix``: ``"graph."`` in a knobs file).
    ``flowc run`` asks this before its plugins load, and the custom names after."""
    return tuple(
        Diagnostic(
            E114,
            f"{prefix}{p.path}: {p.message}",
            filename,
            json_path=prefix + p.path,
            help=PATTERN_HELP,
        )
        for p in pattern_problems(graph)
    )


def load_checked_graph(
    source: SourceFile, registry: TransitionRegistry | None = None
) -> tuple[LoadedGraph | None, tuple[Diagnostic, ...]]:
    """A JSON graph as ``flowc check`` reads it (and every command that compares or
    analyses one, such as ``flowc diff``): None with its errors when it does not have
    the graph's shape or names a custom condition or target that does not load
    (:func:`unloadable_names`); else the graph and its warnings.

    >>> src = SourceFile("g.json", '{"initial_speaker": "a", "transitions": [{"when": '
    ...     '{"name": "foo", "args": {}}, "then": {"name": "terminate", "args": {}}}]}')
    >>> loaded, diags = load_checked_graph(src, TransitionRegistry())
    >>> loaded, [(d.code.id, d.json_path) for d in diags]
    (None, [('E103', 'transitions[0].when.name')])
    """
    loaded, diags = load_graph_json(source)
    if loaded is None or has_errors(diags):
        return None, diags
    prefix = "graph." if loaded.is_knobs else ""
    unknown = unloadable_names(loaded.graph, source.name, registry, prefix)
    if unknown:
        return None, unknown
    return loaded, diags


def check_source(
    source: SourceFile,
    options: CheckOptions | None = None,
    *,
    as_json: bool | None = None,
    declared: Declarations | None = None,
) -> tuple[Diagnostic, ...]:
    """Everything ``flowc check`` reports for one input: compile errors, or the findings.

    ``as_json`` None decides by the name (``.json``) or by a leading ``{``. Ignore
    comments apply; ``select``/``ignore`` filter every finding but the errors. A JSON
    graph ``declared`` with (a stored run's) has its properties decided too
    (:func:`analyze_graph`).

    >>> src = SourceFile("f.flow", "speaker a\\nspeaker b  # flowc: ignore[W201]\\nstart a\\n")
    >>> [d.code.id for d in check_source(src)]
    ['W207']
    """
    options = options or CheckOptions()
    if as_json is None:
        as_json = source.name.endswith(".json") or (
            not source.name.endswith(".flow") and source.text.lstrip().startswith("{")
        )
    if as_json:
        loaded, diags = load_checked_graph(source, options.registry)
        if loaded is None:
            return diags
        prefix = "graph." if loaded.is_knobs else ""
        if options.target == "ag2":
            diags = (*diags, *bare_ag2_graph_problems(loaded.graph, source.name, prefix))
        found = analyze_graph(loaded, options, filename=source.name, declared=declared)
        return tuple(sorted((*diags, *found), key=Diagnostic.sort_key))
    compiled, diags = compile_source(source)
    return check_compiled(compiled, diags, options, filename=source.name)


def check_compiled(
    compiled: CompiledFlow | None,
    diags: tuple[Diagnostic, ...],
    options: CheckOptions | None = None,
    *,
    filename: str = "<input>",
    spaces: SpaceCache | None = None,
    proofs: bool = True,
    on_facts: Callable[[Facts], object] | None = None,
) -> tuple[Diagnostic, ...]:
    """What :func:`check_source` reports for a `.flow` file already compiled
    (``compile_source``'s result): for a caller that keeps the compiled flow too, such
    as the language server, so that the file is parsed and lowered once (and, with
    ``spaces``, explored once for as long as its shape stays the same). With ``proofs``
    false the same findings, without the rules each proves never fire (data for the
    diagram alone, left out of every report: the editor does not ask for them).
    ``on_facts``, when the flow is analysed, is called with the facts its checks read
    (the language server takes the reasons runs end with from them, for completion).

    >>> from flowc.compiler.pipeline import compile_source
    >>> src = SourceFile("f.flow", "speaker a\\nspeaker b\\nstart a\\n")
    >>> [d.code.id for d in check_compiled(*compile_source(src), filename=src.name)]
    ['W201', 'W207']
    """
    options = options or CheckOptions()
    if compiled is None or has_errors(diags):
        return diags
    if options.target == "ag2":
        diags = (*diags, *bare_ag2_problems(compiled, filename))
    # every finding first, so that an ignore comment for a deselected code is not "unused";
    # the AG2 differences (W218-W222) in both forms, so that an ignore comment naming a
    # warning, or the I304 that lists them, is used with or without `--target ag2`
    found = analyze(
        compiled,
        attrs.evolve(options, select=(), ignore=(), target="ag2", also=options.opted_in),
        filename=filename,
        spaces=spaces,
        proofs=proofs,
        on_facts=on_facts,
    )
    comments = compiled.flow.comments
    # (an ignore comment on a line of a statement written over several is on each)
    joined = joined_lines(compiled.flow)
    differences = [d for d in found if d.code.id in AG2_CODES]
    # a difference that an ignore comment on its line names is not in the I304
    listed = [
        d
        for d in apply_ignores(differences, comments, filename, joined=joined)
        if d.code.id in AG2_CODES
    ]
    note = summary(listed)
    # an opt-in code not selected was not looked for: an ignore comment naming it is for
    # the checks that select it
    unchecked = OPT_IN.difference(options.opted_in)
    if options.target == "ag2":
        hidden = [note] if note is not None else []
        kept = apply_ignores((*diags, *found), comments, filename, hidden, unchecked, joined)
    else:
        shown = [d for d in found if d.code.id not in AG2_CODES]
        if note is not None:
            shown.append(note)
        kept = apply_ignores((*diags, *shown), comments, filename, differences, unchecked, joined)
    # errors are always reported, but for a property the flow breaks (E116): the user chose
    # to check it, and `--select` / `--ignore` choose it as any other code
    wants = _wanted(options)
    shown_now = [d for d in kept if (d.is_error and d.code.id != E116.id) or wants(d.code.id)]
    return note_silenced_causes(shown_now, kept, found)


def _wanted(options: CheckOptions) -> Callable[[str], bool]:
    """``options.wants``, worked out once per code: a large file has thousands of
    findings of a few codes."""
    known: dict[str, bool] = {}

    def wants(code: str) -> bool:
        found = known.get(code)
        if found is None:
            found = known[code] = options.wants(code)
        return found

    return wants


def check(
    source: str | os.PathLike[str] | Mapping[str, Any],
    *,
    options: CheckOptions | None = None,
    filename: str | None = None,
) -> tuple[Diagnostic, ...]:
    """Check `.flow` text, a file (a ``Path``, or a string naming an existing file), or a
    graph dict / knobs dict as AG2's ``TransitionGraph.to_dict()`` writes it.

    Returns every finding, errors and infos included, as ``flowc check`` reports them,
    so a test suite can assert that its graphs are clean (a graph dict or a JSON file
    always gets the info I303). A file that cannot be read raises ``OSError``.

    >>> [d.code.id for d in check("speaker user: human\\nspeaker bot\\nwhen from user then bot\\n")]
    []
    >>> [d.code.id for d in check("speaker a\\nspeaker b\\nwhen from a then b\\n")]
    ['W207']
    >>> end = {"name": "terminate", "args": {"reason": "done"}}
    >>> graph = {"initial_speaker": "a", "transitions": [], "default_target": end, "max_turns": None}
    >>> [d.code.id for d in check(graph)]
    ['I303']
    """
    if isinstance(source, Mapping):
        text = json.dumps(source, default=str)
        return check_source(SourceFile(filename or "<graph>", text), options, as_json=True)
    read, diags, as_json = read_input(source, filename)
    if read is None:
        return diags
    return check_source(read, options, as_json=as_json)


def read_input(
    source: str | os.PathLike[str], filename: str | None = None
) -> tuple[SourceFile | None, tuple[Diagnostic, ...], bool]:
    """``(source, errors, is_json)`` of what :func:`check` was given: `.flow` text, or a file.

    A ``Path``, or a one-line string that ends in ``.flow`` / ``.json``, names a file that
    exists, or holds a ``/`` and names anything that exists (``/dev/zero``, a folder), is a
    file, read as every command reads one (:func:`flowc.inputs.read_bytes`:
    a regular file of at most 16 MiB); a file that cannot be read raises ``OSError`` (a
    missing ``"missing.flow"`` is ``FileNotFoundError``, never flow text; ``/dev/zero``, a
    FIFO or a larger file is refused before it is read). Text that is not UTF-8 is an E001
    at the first bad byte, with no source.

    >>> read_input("speaker a\\nspeaker b\\n")[0].name
    '<input>'
    >>> read_input("missing.flow")
    Traceback (most recent call last):
    ...
    flowc.inputs.MissingInputError: missing.flow: no such file
    """
    from flowc.diagnostics import decode_source
    from flowc.inputs import read_bytes

    looks_like_path = (
        isinstance(source, str)
        and "\n" not in source
        and (
            source.strip().endswith((".flow", ".json"))
            or os.path.isfile(source)
            or (os.sep in source and os.path.exists(source))
        )
    )
    if isinstance(source, os.PathLike) or looks_like_path:
        path = os.fspath(source)
        name = filename or path
        read, diags = decode_source(name, read_bytes(path))
        if read is None:
            return None, diags, name.endswith(".json")
    else:
        read, diags = SourceFile(filename or "<input>", str(source)), ()
    name, text = read.name, read.text
    as_json = name.endswith(".json") or (
        not name.endswith(".flow") and text.lstrip().startswith("{")
    )
    return read, diags, as_json
