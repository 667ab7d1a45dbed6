"""An AG2 Agent (tool returning ``Handoff``) next to a plain async callable."""

from ag2 import Agent
from ag2.events import ToolCallEvent
from ag2.network import Handoff
from ag2.testing import TestConfig

from flowc.runtime import Turn

triage = Agent("triage", config=TestConfig(
    ToolCallEvent(name="escalate", arguments='{"reason": "hacked"}'),
    "Escalating.",
))


@triage.tool
async def escalate(reason: str = "") -> Handoff:
    return Handoff(target="security", reason=reason)


async def security(turn: Turn) -> str:
    return f"Locked after: {turn.text}"


AGENTS = {"triage": triage, "security": security}
