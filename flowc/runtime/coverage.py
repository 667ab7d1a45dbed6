"""Coverage of a flow by its scenarios: which targets the runs exercised.

The targets (rules, default, terminal reasons and ``max_turns``, tool alternatives,
speakers) and which of them are coverable come from the checker's analysis
(:mod:`flowc.compiler.analysis.targets`); this module counts what the scenario runs
on the hub actually did: who spoke, which tool alternative each call took, which
rule (or the default) decided each turn, and how the run closed.

>>> import flowc
>>> from flowc.runtime.scenarios import run_scenario
>>> from flowc.runtime.target import RunTarget
>>> flow = flowc.compile_flow('''
... speaker user: human
... speaker bot
... speaker critic
... sequence user -> bot -> critic
... scenario "hello" {
...   user: "hi"
...   bot: "hello"
... }
... ''')
>>> result = run_scenario(RunTarget.from_compiled(flow), flow.scenarios[0])
>>> cov = measure(coverage_targets(flow), [result])
>>> (cov.covered, cov.total, cov.percent)
(4, 7, 57.1)
>>> [t.label for t in cov.missing]
['speaker critic', 'otherwise terminate "sequence_complete"', 'terminate "sequence_complete"']
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import attrs

from flowc.compiler.analysis.targets import Coverable, Target, TargetKey, coverage_targets
from flowc.runtime.adapters.workflow import DEFAULT
from flowc.runtime.scenarios import ScenarioResult

__all__ = ["FlowCoverage", "coverage_targets", "hits_of", "measure"]


def hits_of(result: ScenarioResult) -> set[TargetKey]:
    """Every target one scenario run exercised (up to its first divergence)."""
    out: set[TargetKey] = set()
    for step in result.steps:
        out.add(("speaker", step.speaker))
        if step.tool is not None and step.alternative is not None:
            out.add(("tool", step.speaker, step.tool, step.alternative))
        if isinstance(step.decided_by, int):
            out.add(("rule", step.decided_by))
        elif step.decided_by == DEFAULT:
            out.add(("default",))
    if result.close_reason is not None:
        out.add(("end", result.close_reason))
    return out


@attrs.frozen
class FlowCoverage:
    """One flow's targets and how many scenarios exercised each."""

    path: str
    targets: tuple[Target, ...]
    #: target key -> the number of scenario runs that exercised it
    hits: dict[TargetKey, int]
    truncated: bool = False

    @property
    def live(self) -> tuple[Target, ...]:
        return tuple(t for t in self.targets if t.live)

    @property
    def covered(self) -> int:
        return sum(1 for t in self.live if self.hits.get(t.key, 0) > 0)

    @property
    def total(self) -> int:
        return len(self.live)

    @property
    def percent(self) -> float:
        return percent(self.covered, self.total)

    @property
    def missing(self) -> tuple[Target, ...]:
        return tuple(t for t in self.live if self.hits.get(t.key, 0) == 0)

    @property
    def not_coverable(self) -> tuple[Target, ...]:
        return tuple(t for t in self.targets if not t.live)

    def by_kind(self, kind: str) -> tuple[int, int]:
        """(covered, live) for one kind of target."""
        live = [t for t in self.live if t.kind == kind]
        return sum(1 for t in live if self.hits.get(t.key, 0) > 0), len(live)

    def to_json(self) -> dict[str, Any]:
        return {
            "file": self.path,
            "covered": self.covered,
            "total": self.total,
            "percent": self.percent,
            "partial": self.truncated,
            "targets": [
                {
                    "id": t.name,
                    "kind": t.kind,
                    "label": t.label,
                    "line": t.line,
                    "hits": self.hits.get(t.key, 0),
                    "coverable": t.live,
                    **({"reason": t.dead, "code": t.code} if not t.live else {}),
                }
                for t in self.targets
            ],
        }


def percent(covered: int, total: int) -> float:
    """A percentage with one decimal; nothing to cover is 100%."""
    return 100.0 if total == 0 else round(100.0 * covered / total, 1)


def measure(
    cov: Coverable, results: Iterable[ScenarioResult], path: str = "<input>"
) -> FlowCoverage:
    """Count, for every target of ``cov``, how many of the scenario runs exercised it."""
    hits: dict[TargetKey, int] = {}
    known = {t.key for t in cov.targets}
    for result in results:
        for key in hits_of(result):
            if key in known:
                hits[key] = hits.get(key, 0) + 1
    return FlowCoverage(path, cov.targets, hits, cov.truncated)
