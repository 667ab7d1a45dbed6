"""`flowc test` (scenarios, selection, JUnit XML, coverage) and `flowc scenarios`.

Exit codes: 0 every selected scenario passed (and coverage is at least
``--fail-under``); 1 a scenario failed, a file did not compile (or holds a scenario
no run can pass, E111), or coverage is under the bar or, under ``--fail-under``
without ``--allow-partial``, partial (the analysis of a file stopped at its state
bound, I301); 2 the command could not run (a missing file, a bad option, a ``-k``
that selects none of the scenarios there are).
"""

from __future__ import annotations

import argparse
import fnmatch
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path

from flowc.commands.config import add_plugin_option, setup_plugins
from flowc.commands.console import (
    EXIT_ERRORS,
    EXIT_OK,
    EXIT_USAGE,
    UsageError,
    check_distinct_outputs,
    check_output,
    collect,
    is_json_input,
    no_inputs,
    print_diagnostics,
    read_source,
    report_unimplemented,
    write_output,
)
from flowc.commands.reports import (
    CaseResult,
    SuiteResult,
    compile_error,
    coverage_cobertura,
    coverage_json,
    coverage_table,
    junit_xml,
    partial_files,
    total,
)
from flowc.commands.texts import add_command
from flowc.compiler.analysis.facts import DEFAULT_MAX_STATES, MAX_CAP_RUN, CheckOptions
from flowc.compiler.analysis.generate import GeneratedScenario
from flowc.compiler.analysis.targets import CAP_REASON
from flowc.compiler.compiled import CompiledFlow
from flowc.compiler.properties import Property
from flowc.diagnostics import Diagnostic, counted, has_errors
from flowc.dsl import nodes as n
from flowc.escaping import written_as
from flowc.project.config import Config
from flowc.runtime.adapters.base import ProtocolError
from flowc.runtime.coverage import FlowCoverage, coverage_targets, measure
from flowc.runtime.scenarios import ScenarioResult, run_scenario
from flowc.runtime.target import RunTarget
from flowc.source import SourceFile

# ── loading ───────────────────────────────────────────────────────────────────


def compile_file(path: str, options: CheckOptions | None = None) -> CompiledFlow | None:
    """A `.flow` file compiled, its diagnostics printed; ``None`` when it has errors."""
    return _compile_read(*read_source(path), options)[0]


def _compile_read(
    source: SourceFile | None, diags: tuple[Diagnostic, ...], options: CheckOptions | None
) -> tuple[CompiledFlow | None, tuple[Diagnostic, ...], bool]:
    """A `.flow` file already read (:func:`read_source`'s result) compiled, its diagnostics
    printed, with the errors that stopped it (none when it compiled), among them a
    scenario expecting a close reason no run ends with (E111, found by exploring the flow
    within ``options``' bound); and whether it compiled (as `flowc compile` takes it:
    true when only such an E111 stopped it)."""
    from flowc.compiler.analysis.endings import scenario_ending_errors
    from flowc.compiler.pipeline import compile_source

    if source is None:
        print_diagnostics(diags, {})
        return None, tuple(diags), False
    compiled, diags = compile_source(source)
    compiles = compiled is not None and not has_errors(diags)
    if compiles:
        assert compiled is not None
        diags = (*diags, *scenario_ending_errors(compiled, options, filename=source.name))
    if diags:
        print_diagnostics(diags, {source.name: source})
    if compiled is None or has_errors(diags):
        return None, tuple(d for d in diags if d.is_error), compiles
    return compiled, (), True


def _graph_errors(
    source: SourceFile | None, diags: tuple[Diagnostic, ...]
) -> tuple[Diagnostic, ...] | None:
    """The errors (printed) that keep a JSON graph or knobs dict (read: ``source`` and
    ``diags``, as :func:`read_source` gives them) from loading, as ``flowc check`` reads it;
    None when it loads."""
    from flowc.compiler.analysis import load_checked_graph

    if source is not None:
        loaded, diags = load_checked_graph(source)
        if loaded is not None and not has_errors(diags):
            return None
    print_diagnostics(diags, {source.name: source} if source is not None else {})
    return tuple(d for d in diags if d.is_error)


def selector(patterns: list[str] | None) -> Callable[[str, str], bool]:
    """``-k``: a scenario runs when each pattern matches its title or ``FILE::title``
    (case-insensitive; a pattern with ``*``, ``?`` or ``[`` is a glob, any other a
    substring; a leading ``not `` inverts it).

    >>> keep = selector(["approv", "not loop"])
    >>> keep("a.flow", "approval ends it"), keep("a.flow", "approval ends the loop")
    (True, False)
    >>> selector(["b.flow::*cap"])("b.flow", "stops at the cap")
    True
    """

    def one(pattern: str, path: str, title: str) -> bool:
        p = pattern.strip().lower()
        negate = p.startswith("not ")
        if negate:
            p = p[4:].strip()
        names = (title.lower(), f"{path}::{title}".lower())
        if any(c in p for c in "*?["):
            hit = any(fnmatch.fnmatchcase(name, p) for name in names)
        else:
            hit = any(p in name for name in names)
        return hit != negate

    def keep(path: str, title: str) -> bool:
        return all(one(p, path, title) for p in patterns or ())

    return keep


# ── flowc test ────────────────────────────────────────────────────────────────


def _run(
    target: RunTarget, sc: n.Scenario, properties: tuple[Property, ...] = ()
) -> tuple[ScenarioResult, float]:
    start = time.perf_counter()
    try:
        result = run_scenario(target, sc, properties)
    except ProtocolError as err:  # the graph cannot open a channel (an unregistered custom)
        result = ScenarioResult(sc.title.value, sc.span.line, False, str(err), 0)
    return result, time.perf_counter() - start


#: the report files ``flowc test`` writes: (option, its argparse name)
_OUTPUTS = (
    ("--junit-xml", "junit_xml"),
    ("--coverage-json", "coverage_json"),
    ("--coverage-xml", "coverage_xml"),
)


def cmd_test(args: argparse.Namespace) -> int:
    # a folder as check and fmt walk it: an entry that cannot be read is said, the rest run
    inputs = collect(args.files)
    files = [path for path, _ in inputs.files]
    if not files and not inputs.problems:
        raise no_inputs(args.files, ".flow files", "no scenarios to run")
    if args.fail_under is not None and not 0 <= args.fail_under <= 100:
        raise UsageError("--fail-under takes a percentage from 0 to 100")
    if args.max_states is not None and args.max_states < 1:
        raise UsageError("--max-states must be >= 1")
    options = CheckOptions(max_states=args.max_states or DEFAULT_MAX_STATES)
    for option, out in _OUTPUTS:
        check_output(getattr(args, out), option, [*files, *(args.plugin or ())])
    check_distinct_outputs([(option, getattr(args, out)) for option, out in _OUTPUTS])
    want_coverage = bool(
        args.coverage or args.coverage_json or args.coverage_xml or args.fail_under is not None
    )
    keep = selector(args.k)
    setup_plugins(args, files)
    passed = failed = broken = deselected = unrunnable = impossible = unloaded = read = 0
    suites: list[SuiteResult] = []
    coverages: list[FlowCoverage] = []
    for path in files:
        if args.exitfirst and (failed or broken):
            break
        read_once = inputs.read(path)  # (once: a file changed meanwhile is not read again)
        if read_once is None:
            continue
        got = read_once[1:]
        read += 1
        print(path)
        if is_json_input(path):  # (read as `check` reads it: a broken graph is no pass)
            errors = _graph_errors(*got)
            if errors is not None:
                broken += 1
                unloaded += 1
                print("  ERROR the file does not load")
                suites.append(
                    SuiteResult(path, (), *compile_error(errors, "the file does not load"))
                )
            else:
                print("  (no scenarios: scenarios are written in .flow files)")
            continue
        compiled, errors, compiles = _compile_read(*got, options)
        if compiled is None:
            broken += 1
            # (a file that compiles may still hold a scenario no run can pass: E111, which
            # only exploring the flow finds, as `check` does)
            head = (
                "a scenario expects what no run of the flow does"
                if compiles
                else "the file does not compile"
            )
            impossible += compiles
            print(f"  ERROR {head}")
            suites.append(SuiteResult(path, (), *compile_error(errors, head)))
            continue
        if compiled.scenarios and report_unimplemented(compiled, path):
            broken += 1
            unrunnable += 1
            print("  ERROR custom conditions or targets have no implementation (see above)")
            suites.append(
                SuiteResult(path, (), "custom conditions or targets have no implementation")
            )
            continue
        source = got[0]
        assert source is not None
        target = RunTarget.from_compiled(
            compiled, source_text=source.text, label=path, filename=source.name
        )
        chosen = [sc for sc in compiled.scenarios if keep(path, sc.title.value)]
        deselected += len(compiled.scenarios) - len(chosen)
        if not compiled.scenarios:
            print("  (no scenarios)")
        results: list[ScenarioResult] = []
        cases: list[CaseResult] = []
        for sc in chosen:
            res, seconds = _run(target, sc, compiled.properties)
            results.append(res)
            cases.append(CaseResult(res.title, res.line, seconds, res.failure))
            if res.passed:
                passed += 1
                print(f"  ok    {res.title}")
            else:
                failed += 1
                print(f"  FAIL  {res.title}")
                print(f"        {res.failure}")
                if args.exitfirst:
                    break
        suites.append(SuiteResult(path, tuple(cases)))
        if want_coverage:
            coverages.append(
                measure(coverage_targets(compiled, options, filename=path), results, path)
            )
    total_run = passed + failed
    if read or not inputs.problems:  # (a path that could not be read is the whole story)
        stopped = args.exitfirst and bool(failed or broken)
        print(
            _summary(
                passed, failed, deselected, broken, (unrunnable, impossible, unloaded), stopped
            )
        )
    # (a file that did not compile may hold the scenarios meant: the note, and exit 1)
    if not (total_run or inputs.problems) and _selected_none(args.k, deselected) and not broken:
        return EXIT_USAGE  # (no report is written: none would say what was meant)
    for where, why in inputs.unread:  # (in the report too: CI reads it, not the exit status)
        suites.append(SuiteResult(where, (), f"the file cannot be read: {why}"))
    if args.junit_xml:
        write_output(junit_xml(suites), args.junit_xml, "--junit-xml")
    ok = failed == 0 and broken == 0
    if want_coverage:
        ok = _report_coverage(args, coverages) and ok
    inputs.report("test")
    if inputs.problems:
        return EXIT_USAGE
    return EXIT_OK if ok else EXIT_ERRORS


def _selected_none(patterns: list[str] | None, deselected: int) -> bool:
    """Whether ``-k`` deselected every scenario there is (said on stderr): a mistyped
    pattern would otherwise pass in CI with nothing run."""
    if not patterns or not deselected:
        return False
    print(
        f"flowc test: -k selected none of the {counted(deselected, 'scenario')}: "
        + ", ".join(repr(k) for k in patterns),
        file=sys.stderr,
    )
    return True


def _summary(
    passed: int,
    failed: int,
    deselected: int,
    broken: int,
    why: tuple[int, int, int],
    stopped: bool,
) -> str:
    """`flowc test`'s last line: the scenarios run, and the files that did not run
    (``broken`` of them; ``why``: how many for want of custom implementations, for a
    scenario no run can pass, as JSON graphs that do not load; the rest did not compile).

    >>> _summary(1, 0, 1, 3, (0, 1, 1), False)
    '1 scenario: 1 passed, 0 failed (1 deselected by -k); 1 file did not compile; 1 file did not load; 1 file with scenarios no run can pass (E111)'
    """
    unrunnable, impossible, unloaded = why
    summary = f"{counted(passed + failed, 'scenario')}: {passed} passed, {failed} failed"
    if deselected:
        summary += f" ({deselected} deselected by -k)"
    if not_compiled := broken - unrunnable - impossible - unloaded:
        summary += f"; {counted(not_compiled, 'file')} did not compile"
    if unloaded:
        summary += f"; {counted(unloaded, 'file')} did not load"
    if impossible:
        summary += f"; {counted(impossible, 'file')} with scenarios no run can pass (E111)"
    if unrunnable:
        summary += f"; {counted(unrunnable, 'file')} lacked custom implementations"
    if stopped:
        summary += "; stopped at the first failure (-x)"
    return summary


def _report_coverage(args: argparse.Namespace, coverages: list[FlowCoverage]) -> bool:
    if args.coverage_json:
        write_output(coverage_json(coverages), args.coverage_json, "--coverage-json")
    if args.coverage_xml:
        write_output(coverage_cobertura(coverages), args.coverage_xml, "--coverage-xml")
    if args.coverage or args.fail_under is not None:
        print()
        sys.stdout.write(coverage_table(coverages, written_as(sys.stdout)))
    covered, live, pct = total(coverages)
    if args.fail_under is not None and not coverages:
        print(
            "coverage: no .flow file compiled, so nothing is covered: --fail-under "
            f"{args.fail_under:g}% fails"
        )
        return False
    if args.fail_under is not None and pct < args.fail_under:
        print(
            f"coverage {pct:.1f}% ({covered}/{counted(live, 'target')}) is under --fail-under {args.fail_under:g}%"
        )
        return False
    partial = partial_files(coverages)
    if args.fail_under is not None and partial and not args.allow_partial:
        # a percentage that leaves out what the exploration did not reach is no verdict
        print(
            f"coverage {pct:.1f}% is partial: the analysis of {', '.join(partial)} stopped at "
            "its state bound (I301), so the targets it did not reach are not counted; "
            "--fail-under fails on a partial file (raise --max-states, or pass "
            "--allow-partial to accept it)"
        )
        return False
    return True


# ── flowc scenarios ───────────────────────────────────────────────────────────


def cmd_scenarios(args: argparse.Namespace) -> int:
    from flowc.compiler.analysis.generate import GenerationError, generate_scenarios

    path = args.file
    if args.max_states < 1:
        raise UsageError("--max-states must be >= 1")
    if is_json_input(path):
        raise UsageError(
            f"{path}: scenarios are written in .flow files; decompile the graph first "
            "(flowc decompile)"
        )
    Config.for_inputs([path])  # (no setting is read, but a broken table is refused)
    options = CheckOptions(max_states=args.max_states)
    compiled = compile_file(path, options)
    if compiled is None:
        return EXIT_ERRORS
    if args.property is not None:
        return _property_scenario(args, compiled, options)
    source, target = _source_and_target(path, compiled)
    try:
        gen = generate_scenarios(compiled, options, _property_judge(compiled, source.text, target))
    except GenerationError as err:
        print(f"{path}: error: {err}", file=sys.stderr)
        return EXIT_ERRORS
    scenarios = list(gen.scenarios)
    if args.write:
        have = {sc.title.value for sc in compiled.scenarios}
        scenarios = [s for s in scenarios if s.title not in have]
    text = "\n".join(s.text() for s in scenarios)
    failures = _verify(compiled, source.text, text, target)
    if failures:  # a bug in flowc, not in the flow: never hand out a scenario that fails
        for title, failure in failures:
            print(
                f"flowc scenarios: internal error: {path}: generated scenario {title!r} "
                f"fails: {failure}; please report it with the command and the input",
                file=sys.stderr,
            )
        return EXIT_USAGE
    cov = gen.coverable
    dead = [t for t in cov.targets if not t.live]
    note = (
        f"{counted(len(gen.scenarios), 'scenario')} for "
        f"{counted(len(cov.live), 'live target')} (lower bound {gen.lower_bound}; "
        f"{len(dead)} not coverable)"
    )
    if gen.missed:
        note += f"; {counted(len(gen.missed), 'live target')} not reached: " + ", ".join(
            t.label
            + (
                f" (a run to it takes {counted(cap, 'turn', grouped=True)}: scenarios are"
                f" written for caps up to {MAX_CAP_RUN:,})"
                if t.key == ("end", CAP_REASON)
                and (cap := cov.system.max_turns) is not None
                and cap > MAX_CAP_RUN
                else ""
            )
            for t in gen.missed
        )
    if gen.withheld:
        # a generated scenario is a test that passes; the run that breaks a property is
        # what `--property NAME` writes
        note += (
            f"; {counted(len(gen.withheld), 'live target')} without a scenario, as the shortest "
            "runs tried to it break a property (`flowc test` would fail them; `flowc scenarios "
            "--property NAME` writes the run that breaks NAME): "
            + "; ".join(f"{t.label} ({why})" for t, why in gen.withheld)
        )
    if cov.truncated:
        # the scenarios are sound (each is run below) but not complete: say so
        note += (
            f"; partial: generated from a partial exploration (I301: the state space is "
            f"larger than the bound of {counted(args.max_states, 'state')}), so the targets it did "
            "not reach have no scenario and are not counted; raise --max-states"
        )
    if args.write:
        if scenarios:
            _append_scenarios(path, source.text, text)
        print(f"{path}: added {counted(len(scenarios), 'scenario')}; {note}", file=sys.stderr)
    else:
        sys.stdout.write(text)
        print(f"{path}: {note}", file=sys.stderr)
    return EXIT_OK


def _property_scenario(
    args: argparse.Namespace, compiled: CompiledFlow, options: CheckOptions
) -> int:
    """``flowc scenarios FILE --property NAME``: the scenario of the property's violation
    (the checker's shortest run that breaks it), checked to fail `flowc test` on it."""
    from flowc.compiler.analysis.generate import GenerationError, violation_scenario
    from flowc.compiler.pipeline import compile_source
    from flowc.dsl.formatter import format_name

    path, name = args.file, args.property
    try:
        sc = violation_scenario(compiled, name, options)
    except GenerationError as err:
        print(f"{path}: error: --property {name}: {err}", file=sys.stderr)
        return EXIT_ERRORS
    source, target = _source_and_target(path, compiled)
    text = sc.text()
    mine = f"property {format_name(name)} "
    had = [s for s in compiled.scenarios if s.title.value == sc.title]
    if args.write and had:
        # nothing is written: what `flowc test` says of the scenario the file has, at its
        # lines (not of a copy at the end of the file)
        failure = run_scenario(target, had[0], compiled.properties).failure
        note = "`flowc test` passes it" if failure is None else f"`flowc test` fails it: {failure}"
        print(
            f"{path}: has the scenario {sc.title!r} already (line {had[0].span.line}),"
            f" nothing written; {note}",
            file=sys.stderr,
        )
        return EXIT_OK
    with_new, _ = compile_source(SourceFile("<generated>", source.text + "\n" + text))
    result = (
        run_scenario(target, with_new.scenarios[-1], with_new.properties)
        if with_new is not None
        else None
    )
    if result is None or result.passed or result.failure is None:
        # a bug in flowc, not in the flow: never hand out a scenario that shows nothing
        print(
            f"flowc scenarios: internal error: {path}: the scenario of property {name!r} "
            f"{'does not compile' if result is None else 'passes'}; please report it with "
            "the command and the input",
            file=sys.stderr,
        )
        return EXIT_USAGE
    note = f"the scenario breaks property {name} on turn {sc.broken_at}: {sc.why}"
    if mine not in result.failure:  # another property breaks on an earlier turn of it
        note += f"; `flowc test` stops at another one first: {result.failure}"
    if args.write:
        _append_scenarios(path, source.text, text)
        print(f"{path}: added 1 scenario; {note}", file=sys.stderr)
    else:
        sys.stdout.write(text)
        print(f"{path}: {note}", file=sys.stderr)
    return EXIT_OK


def _source_and_target(path: str, compiled: CompiledFlow) -> tuple[SourceFile, RunTarget]:
    """The flow file at ``path``, which ``compiled`` was compiled from, and the run
    target that plays scenarios on ``compiled``."""
    source, _ = read_source(path)
    assert source is not None
    target = RunTarget.from_compiled(
        compiled, source_text=source.text, label=path, filename=source.name
    )
    return source, target


def _append_scenarios(path: str, source_text: str, text: str) -> None:
    """Write ``text`` (generated scenarios) after the flow's own text at ``path``, a
    blank line between, and format the whole file as `flowc fmt` does."""
    from flowc.dsl.formatter import format_source

    new_text = source_text.rstrip("\n") + "\n\n" + text
    Path(path).write_text(format_source(new_text, path), encoding="utf-8")


def _verify(
    compiled: CompiledFlow, source_text: str, text: str, target: RunTarget
) -> list[tuple[str, str | None]]:
    """Run the generated scenarios as ``flowc test`` will (the flow's property monitors
    watching); the ones that fail, with their first divergence."""
    from flowc.compiler.pipeline import compile_source

    if not text:
        return []
    with_new, _ = compile_source(SourceFile("<generated>", source_text + "\n" + text))
    if with_new is None:
        return [("(all)", "the generated text does not compile")]
    out = []
    for sc in with_new.scenarios[len(compiled.scenarios) :]:
        res, _ = _run(target, sc, with_new.properties)
        if not res.passed:
            out.append((res.title, res.failure))
    return out


def _property_judge(
    compiled: CompiledFlow, source_text: str, target: RunTarget
) -> Callable[[GeneratedScenario], str | None]:
    """Refuses a generated scenario whose run breaks one of the flow's properties (as
    ``flowc test`` watches them), saying which; one that fails even without them is
    left to :func:`_verify`, which reports it as the bug it is."""
    from flowc.compiler.pipeline import compile_source

    def judge(gen: GeneratedScenario) -> str | None:
        if not compiled.properties:
            return None
        with_new, _ = compile_source(SourceFile("<generated>", source_text + "\n" + gen.text()))
        if with_new is None:
            return None
        sc = with_new.scenarios[-1]
        watched, _ = _run(target, sc, with_new.properties)
        if watched.passed or not _run(target, sc)[0].passed:
            return None
        assert watched.failure is not None
        # the line is the generated text's, which the user never sees
        return re.sub(r"^turn (\d+) \(line \d+\): ", r"turn \1: ", watched.failure)

    return judge


# ── registration ──────────────────────────────────────────────────────────────


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = add_command(sub, "test")
    p.add_argument("files", nargs="+", metavar="FILE", help=".flow files or directories")
    p.add_argument(
        "-k",
        action="append",
        metavar="PATTERN",
        help="run only scenarios whose title (or FILE::title) matches: a substring "
        "or a glob, `not PATTERN` to exclude; repeat to combine",
    )
    p.add_argument("-x", "--exitfirst", action="store_true", help="stop at the first failure")
    p.add_argument("--junit-xml", metavar="FILE", help="write JUnit XML for CI servers")
    p.add_argument(
        "--coverage",
        action="store_true",
        help="print which rules, defaults, endings, tools and speakers the scenarios exercised",
    )
    p.add_argument("--coverage-json", metavar="FILE", help="write the coverage as JSON")
    p.add_argument(
        "--coverage-xml",
        metavar="FILE",
        help="write the coverage as Cobertura XML on the .flow lines",
    )
    p.add_argument(
        "--fail-under",
        type=float,
        metavar="PERCENT",
        help="exit 1 when coverage is under PERCENT, or partial (the analysis of a "
        "file stopped at its state bound, I301)",
    )
    p.add_argument(
        "--allow-partial",
        action="store_true",
        help="with --fail-under: accept a partial coverage (the percentage of what "
        "the bounded analysis reached)",
    )
    p.add_argument(
        "--max-states",
        type=int,
        metavar="N",
        help=f"the bound on abstract states of the analysis the coverage targets come "
        f"from, as in flowc check (default {DEFAULT_MAX_STATES})",
    )
    add_plugin_option(p)

    p = add_command(sub, "scenarios")
    p.add_argument("file", metavar="FILE", help="the .flow file")
    p.add_argument(
        "--write",
        action="store_true",
        help="append the scenarios the file does not have yet, formatted",
    )
    p.add_argument(
        "--max-states",
        type=int,
        default=DEFAULT_MAX_STATES,
        metavar="N",
        help=f"the exploration bound, as in flowc check (default {DEFAULT_MAX_STATES})",
    )
    p.add_argument(
        "--property",
        metavar="NAME",
        help="instead, write the scenario of the property's violation (the shortest run "
        "that breaks it, as flowc check finds it), which `flowc test` then fails on; "
        "refused (exit 1) when the property holds or is not decided, or when that run "
        "is longer than the 1,000 turns scenarios are written for",
    )


HANDLERS: dict[str, Callable[[argparse.Namespace], int]] = {
    "test": cmd_test,
    "scenarios": cmd_scenarios,
}
