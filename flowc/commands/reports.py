"""What `flowc test` writes for people and CI: the coverage table, coverage JSON,
Cobertura XML mapped onto `.flow` lines, and JUnit XML.

Every writer is a pure function of its input, so the same run gives the same bytes
(Cobertura's timestamp comes from ``SOURCE_DATE_EPOCH`` when set, otherwise 0). The XML
writers put every text from the flows (paths, scenario titles, failures, errors) through
:func:`flowc.escaping.xml_chars`: a title's control character is no XML character.
"""

from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path

import attrs

from flowc.compiler.analysis.targets import Target
from flowc.diagnostics import Diagnostic, counted, display_width, pad_to, render_concise
from flowc.escaping import in_encoding, xml_chars
from flowc.runtime.coverage import FlowCoverage, percent

__all__ = [
    "KINDS",
    "NOTHING_COVERED",
    "SuiteResult",
    "compile_error",
    "coverage_cobertura",
    "coverage_json",
    "coverage_table",
    "junit_xml",
    "partial_files",
    "total",
]

#: the kinds of target, in table order, with their column titles
KINDS = (
    ("speaker", "Speakers"),
    ("rule", "Rules"),
    ("default", "Default"),
    ("end", "Endings"),
    ("tool", "Tools"),
)


#: the coverage of a run in which no .flow file compiled (never a percentage: 0/0 is none;
#: a JSON graph has no scenarios, so no coverage)
NOTHING_COVERED = "Coverage: no .flow file compiled, so nothing is covered"


def total(files: Sequence[FlowCoverage]) -> tuple[int, int, float]:
    """(covered, live, percent) over every file."""
    covered = sum(f.covered for f in files)
    live = sum(f.total for f in files)
    return covered, live, percent(covered, live)


def partial_files(files: Sequence[FlowCoverage]) -> list[str]:
    """The files whose targets come from a partial analysis (the exploration stopped at
    its bound, I301): their percentage leaves out what the exploration did not reach."""
    return [f.path for f in files if f.truncated]


def _fraction(covered: int, live: int) -> str:
    return f"{covered}/{live}" if live else "-"


def _at(f: FlowCoverage, t: Target) -> str:
    return f"{f.path}:{t.line}" if t.line is not None else f"{f.path} (implicit)"


def _by_line(targets: Sequence[Target]) -> list[Target]:
    return sorted(targets, key=lambda t: t.line or 0)


def coverage_table(files: Sequence[FlowCoverage], encoding: str | None = None) -> str:
    """The terminal report: one row per file, then what is missing and what is not coverable.

    >>> from flowc.compiler.analysis.targets import Target
    >>> t = Target(("rule", 0), "rule", "rule 1: when from a then b", 3)
    >>> print(coverage_table([FlowCoverage("a.flow", (t,), {})]), end="")
    File    Speakers  Rules  Default  Endings  Tools  Cover
    a.flow  -         0/1    -        -        -       0.0%
    TOTAL   -         0/1    -        -        -       0.0%
    <BLANKLINE>
    Missing:
      a.flow:3  rule 1: when from a then b

    A file whose analysis stopped at the state bound (I301) is marked partial, and so is
    the total it is part of:

    >>> print(coverage_table([FlowCoverage("a.flow", (t,), {}, truncated=True)]), end="")
    File    Speakers  Rules  Default  Endings  Tools           Cover
    a.flow  -         0/1    -        -        -      0.0% (partial)
    TOTAL   -         0/1    -        -        -      0.0% (partial)
    <BLANKLINE>
    Missing:
      a.flow:3  rule 1: when from a then b
    <BLANKLINE>
    Partial: the analysis of a.flow stopped at its state bound (I301): the targets it did not reach are left out

    With no file (none compiled) there is nothing covered, and no total to give:

    >>> print(coverage_table([]), end="")
    Coverage: no .flow file compiled, so nothing is covered
    """
    if not files:
        return f"{NOTHING_COVERED}\n"
    head = ["File", *(title for _, title in KINDS), "Cover"]
    rows = [head]
    for f in files:
        cells = [f.path, *(_fraction(*f.by_kind(kind)) for kind, _ in KINDS)]
        rows.append([*cells, f"{f.percent:.1f}%" + (" (partial)" if f.truncated else "")])
    sums = [
        [sum(x) for x in zip(*(f.by_kind(kind) for f in files), strict=True)] or [0, 0]
        for kind, _ in KINDS
    ]
    pct = total(files)[2]
    partial = partial_files(files)
    rows.append(
        [
            "TOTAL",
            *(_fraction(c, v) for c, v in sums),
            f"{pct:.1f}%" + (" (partial)" if partial else ""),
        ]
    )
    # in terminal columns, as an output in ``encoding`` writes each cell (a path may hold
    # wide characters, or ones the output writes as escapes: flowc.escaping.in_encoding)
    rows = [[in_encoding(c, encoding) for c in r] for r in rows]
    widths = [max(display_width(r[i]) for r in rows) for i in range(len(head))]
    lines = []
    for r in rows:
        cells = [pad_to(c, w) for c, w in zip(r[:-1], widths, strict=False)]
        lines.append("  ".join([*cells, pad_to(r[-1], widths[-1], right=True)]).rstrip())
    missing = [(f, t) for f in files for t in _by_line(f.missing)]
    if missing:
        lines += ["", "Missing:"]
        lines += [f"  {_at(f, t)}  {t.label}" for f, t in missing]
    dead = [(f, t) for f in files for t in _by_line(f.not_coverable)]
    if dead:
        lines += ["", "Not coverable (left out of the percentage):"]
        lines += [f"  {_at(f, t)}  {t.label}  ({t.dead})" for f, t in dead]
    if partial:
        lines += [
            "",
            f"Partial: the analysis of {', '.join(partial)} stopped at its state bound "
            "(I301): the targets it did not reach are left out",
        ]
    return "\n".join(lines) + "\n"


def coverage_json(files: Sequence[FlowCoverage]) -> str:
    """``{"covered", "total", "percent", "partial", "files": [...]}``, sorted keys, trailing
    newline; ``partial`` is true when any file's analysis stopped at the state bound.
    With no file (none compiled), ``percent`` is null: nothing was covered, and 0/0 is no
    percentage (the table says so in words).

    >>> json.loads(coverage_json([]))["percent"] is None
    True
    """
    covered, live, pct = total(files)
    data = {
        "covered": covered,
        "total": live,
        "percent": pct if files else None,
        "partial": bool(partial_files(files)),
        "files": [f.to_json() for f in files],
    }
    return json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def _rate(covered: int, valid: int) -> str:
    return f"{(covered / valid if valid else 1.0):.4f}"


def coverage_cobertura(files: Sequence[FlowCoverage], version: str = "0.1.0") -> str:
    """Cobertura XML (coverage-04.dtd): each `.flow` file a class, each line with a live
    target a line; a line with several targets (``from a, b``, a tool's alternatives)
    is a branch line whose condition coverage counts them.

    ``line-rate`` counts lines, ``branch-rate`` counts targets (the percentage that
    ``flowc test --coverage`` prints). With no file (none compiled) both are 0: nothing
    was covered (a report of 1.0 would pass a gate on it).

    >>> 'line-rate="0.0000" branch-rate="0.0000"' in coverage_cobertura([])
    True
    """
    root = ET.Element("coverage")
    sources = ET.SubElement(root, "sources")
    ET.SubElement(sources, "source").text = "."
    packages = ET.SubElement(root, "packages")
    lines_valid = lines_covered = 0
    by_dir: dict[str, list[FlowCoverage]] = {}
    for f in files:
        by_dir.setdefault(str(Path(f.path).parent).replace(os.sep, "/"), []).append(f)
    for directory, group in sorted(by_dir.items()):
        pkg = ET.SubElement(packages, "package", name=xml_chars(directory))
        classes = ET.SubElement(pkg, "classes")
        p_lines = p_covered = 0
        for f in group:
            per_line: dict[int, list[Target]] = {}
            for t in f.live:
                if t.line is not None:
                    per_line.setdefault(t.line, []).append(t)
            covered_lines = sum(
                1 for ts in per_line.values() if any(f.hits.get(t.key, 0) for t in ts)
            )
            cls = ET.SubElement(
                classes,
                "class",
                {
                    "name": xml_chars(Path(f.path).stem),
                    "filename": xml_chars(f.path.replace(os.sep, "/")),
                    "line-rate": _rate(covered_lines, len(per_line)),
                    "branch-rate": _rate(f.covered, f.total),
                    "complexity": "0",
                },
            )
            ET.SubElement(cls, "methods")
            lines_el = ET.SubElement(cls, "lines")
            for number, ts in sorted(per_line.items()):
                hits = sum(f.hits.get(t.key, 0) for t in ts)
                attrs_: dict[str, str] = {"number": str(number), "hits": str(hits)}
                if len(ts) > 1:
                    done = sum(1 for t in ts if f.hits.get(t.key, 0))
                    attrs_["branch"] = "true"
                    attrs_["condition-coverage"] = (
                        f"{round(100 * done / len(ts))}% ({done}/{len(ts)})"
                    )
                ET.SubElement(lines_el, "line", attrs_)
            p_lines += len(per_line)
            p_covered += covered_lines
        covered_t = sum(f.covered for f in group)
        live_t = sum(f.total for f in group)
        pkg.set("line-rate", _rate(p_covered, p_lines))
        pkg.set("branch-rate", _rate(covered_t, live_t))
        pkg.set("complexity", "0")
        lines_valid += p_lines
        lines_covered += p_covered
    covered, live, _ = total(files)
    nothing = "0.0000" if not files else None
    for key, value in (
        ("line-rate", nothing or _rate(lines_covered, lines_valid)),
        ("branch-rate", nothing or _rate(covered, live)),
        ("lines-covered", str(lines_covered)),
        ("lines-valid", str(lines_valid)),
        ("branches-covered", str(covered)),
        ("branches-valid", str(live)),
        ("complexity", "0"),
        ("version", version),
        ("timestamp", os.environ.get("SOURCE_DATE_EPOCH", "0")),
    ):
        root.set(key, value)
    ET.indent(root)
    body = ET.tostring(root, encoding="unicode")
    return (
        '<?xml version="1.0" ?>\n'
        '<!DOCTYPE coverage SYSTEM "http://cobertura.sourceforge.net/xml/coverage-04.dtd">\n'
        f"{body}\n"
    )


@attrs.frozen
class CaseResult:
    """One scenario as JUnit sees it."""

    name: str
    line: int
    seconds: float
    failure: str | None = None


@attrs.frozen
class SuiteResult:
    """One `.flow` file's scenarios (``error``: the file did not compile or load, holds a
    scenario no run can pass, or cannot run;
    ``error_text``: all of what stopped it, for the JUnit ``error`` element's text)."""

    path: str
    cases: tuple[CaseResult, ...]
    error: str | None = None
    error_text: str | None = None


def compile_error(
    errors: Sequence[Diagnostic], head: str = "the file does not compile"
) -> tuple[str, str]:
    """A JUnit error's message and text for a file that does not compile (or whose
    scenarios expect what no run does: ``head`` says which): the first error in the
    message (``file:line:col: CODE message``, and how many more), every error in the
    text, one a line.

    >>> from flowc.diagnostics import E101
    >>> from flowc.source import SourceFile
    >>> src = SourceFile("f.flow", "speaker a\\nspeaker b\\nwhen from a then c\\n")
    >>> d = Diagnostic(E101, "`c` is not a declared speaker", "f.flow", src.span(37, 38))
    >>> compile_error([d, d])[0]
    'the file does not compile: f.flow:3:18: E101 `c` is not a declared speaker (and 1 more error)'
    """
    if not errors:
        return head, head
    first = render_concise(errors[:1]).rstrip("\n")
    more = f" (and {counted(len(errors) - 1, 'more error')})" if len(errors) > 1 else ""
    return f"{head}: {first}{more}", f"{head}:\n{render_concise(errors)}"


def junit_xml(suites: Sequence[SuiteResult]) -> str:
    """JUnit XML as CI servers read it (Jenkins' junit-10 schema): a ``testsuite`` per
    file, a ``testcase`` per scenario, a ``failure`` with the first divergence, and an
    ``error`` case for a file that did not compile."""
    root = ET.Element("testsuites", name="flowc test")
    n_tests = n_fail = n_err = 0
    seconds = 0.0
    for s in suites:
        path = xml_chars(s.path)
        suite = ET.SubElement(root, "testsuite", name=path, file=path)
        classname = path.replace(os.sep, "/").removesuffix(".flow").replace("/", ".")
        fails = sum(1 for c in s.cases if c.failure is not None)
        errors = 1 if s.error is not None else 0
        time = sum(c.seconds for c in s.cases)
        for c in s.cases:
            case = ET.SubElement(
                suite,
                "testcase",
                name=xml_chars(c.name),
                classname=classname,
                time=f"{c.seconds:.3f}",
            )
            if c.failure is not None:
                failure = xml_chars(c.failure)
                ET.SubElement(
                    case, "failure", message=failure, type="ScenarioFailure"
                ).text = failure
        if s.error is not None:
            case = ET.SubElement(
                suite, "testcase", name="(compile)", classname=classname, time="0.000"
            )
            ET.SubElement(
                case, "error", message=xml_chars(s.error), type="CompileError"
            ).text = xml_chars(s.error_text or s.error)
        tests = len(s.cases) + errors
        suite.set("tests", str(tests))
        suite.set("failures", str(fails))
        suite.set("errors", str(errors))
        suite.set("skipped", "0")
        suite.set("time", f"{time:.3f}")
        n_tests += tests
        n_fail += fails
        n_err += errors
        seconds += time
    root.set("tests", str(n_tests))
    root.set("failures", str(n_fail))
    root.set("errors", str(n_err))
    root.set("time", f"{seconds:.3f}")
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
