"""An AG2 Agent whose model calls a tool that returns AG2's ``Handoff``."""

from ag2 import Agent
from ag2.events import ToolCallEvent
from ag2.network import Handoff
from ag2.testing import TestConfig

triage = Agent("triage", config=TestConfig(
    ToolCallEvent(name="escalate", arguments='{"reason": "suspicious login"}'),
    "Escalating to security.",
))


@triage.tool
async def escalate(reason: str = "") -> Handoff:
    """Hand the conversation to the security team."""
    return Handoff(target="security", reason=f"security review ({reason})")


AGENTS = {
    "triage": triage,
    "security": Agent("security", config=TestConfig("Account locked; reset link sent.")),
}
