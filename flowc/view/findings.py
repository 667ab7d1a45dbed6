"""The checker's findings on a run's stored graph, for the run's page of ``flowc view``
(``/api/run/ID/findings``).

The graph is the one the run stored when it began (its knobs: the graph and the
context's starting values), checked as ``flowc check`` and ``flowc render --check``
check that graph written to a JSON file
(:func:`~flowc.compiler.render.rendering.run_checker`, the default state bound). The
properties the run stored are decided too, over the runs of that graph with the
declarations the run stored (the tools and what they do, the humans and the keys they
write): as ``flowc check`` decides them on the `.flow` file (E116 with the run that
breaks one, I306 for one that holds, I305 for one left undecided). The findings are
marked on the run's diagram by :func:`~flowc.compiler.render.diagram.mark_findings`, as
``render --check`` marks them.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

from flowc.view.feed import RunView

if TYPE_CHECKING:
    from flowc.compiler.analysis.system import Declarations
    from flowc.runtime.target import RunTarget

__all__ = ["declarations_of", "run_findings"]

_RULE_PATH = re.compile(r"(?:graph\.)?transitions\[([0-9]+)\]")


def run_findings(view: RunView, max_states: int | None = None) -> dict[str, Any]:
    """The answer of ``/api/run/ID/findings``: ``status`` (``complete``: every run of the
    graph was explored; ``partial``: not every one, so no finding is not "clean";
    ``stopped``: the checker stopped before exploring), ``clean`` (complete, and no error
    or warning), the findings of each severity (``counts``), the state bound, and each finding
    as ``flowc check --format json`` writes it, with the line of the flow it points at
    when the run stored it (``line``), the diagram's elements it marks (``nodes``,
    ``edges``) and how (``mark``); ``marks``, each marked element's mark. Raises
    :class:`~flowc.compiler.render.rendering.CheckerUnavailableError`, or what the checker
    raises."""
    from flowc.compiler.analysis import check_status
    from flowc.compiler.analysis.facts import DEFAULT_MAX_STATES, CheckOptions
    from flowc.compiler.pipeline import LoadedGraph
    from flowc.compiler.render.diagram import mark_findings
    from flowc.compiler.render.rendering import run_checker
    from flowc.diagnostics import diagnostic_to_json
    from flowc.source import SourceFile

    target = view.target
    bound = max_states or DEFAULT_MAX_STATES
    # the knobs as the run stored them, as `flowc check` reads them from a JSON file
    source = SourceFile(f"{view.run_id}.json", json.dumps(view.metadata.knobs, indent=2))
    # (run_checker reads the graph again from ``source``, as `flowc check` does; ``loaded``
    # says it is a JSON graph)
    loaded = LoadedGraph(target.graph, dict(target.context_vars), True)
    # the properties are decided with the flow's declarations (a run of a bare graph has
    # neither)
    declared = declarations_of(target) if target.properties else None
    found = run_checker(loaded, source, CheckOptions(max_states=bound), declared)
    marked = mark_findings(view.diagram, found)
    # properties the run stored without the declarations they are decided with (a run
    # written before runs stored them) were not decided: never "complete"
    undecided = bool(target.properties) and declared is None
    status = check_status(found)
    if status == "complete" and undecided:
        status = "partial"
    findings = []
    for f in marked.findings:
        item = diagnostic_to_json(f.diagnostic)
        item["line"] = _line(view, f.diagnostic)
        item["nodes"] = list(f.nodes)
        item["edges"] = list(f.edges)
        item["mark"] = f.mark
        findings.append(item)
    marks = {x.id: x.mark for x in marked.nodes if x.mark is not None}
    marks.update((x.id, x.mark) for x in marked.edges if x.mark is not None)
    counts = {"error": 0, "warning": 0, "info": 0}
    for d in found:
        counts[d.severity.value] = counts.get(d.severity.value, 0) + 1
    return {
        "run_id": view.run_id,
        "status": status,
        # nothing to fix, and every run was seen: only then does the page say "clean"
        "clean": status == "complete" and counts["error"] == 0 and counts["warning"] == 0,
        "properties_undecided": undecided,
        "counts": counts,
        "max_states": bound,
        "findings": findings,
        "marks": marks,
    }


def declarations_of(target: RunTarget) -> Declarations | None:
    """What a run stored of its flow's declarations, with its properties (``None`` for a
    run of a bare graph, which stored none)."""
    from flowc.compiler.analysis.system import Declarations

    if target.tools is None:
        return None
    return Declarations(
        speakers=target.speakers,
        ids=target.ids,
        humans=target.humans,
        start=target.start,
        initiator=target.creator,
        tools=target.tools,
        human_writes=target.human_writes or {},
        custom_results={name: results for name, (results, _) in target.custom_targets.items()},
        properties=target.properties,
    )


def _line(view: RunView, d: Any) -> int | None:
    """The line of the flow a finding points at: its rule's line, when the run stored
    the lines of its rules (a run of a `.flow` file)."""
    path = d.json_path
    if d.span is not None or not path:
        return None
    found = _RULE_PATH.match(path)
    if found is None:
        return None
    return view.target.rule_line(int(found.group(1)))
