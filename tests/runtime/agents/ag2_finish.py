"""An AG2 Agent whose model calls a tool that returns AG2's ``Finish``."""

from ag2 import Agent
from ag2.events import ToolCallEvent
from ag2.network import Finish
from ag2.testing import TestConfig

triage = Agent("triage", config=TestConfig(
    ToolCallEvent(name="resolve", arguments='{"reason": "user confirmed"}'),
    "Glad it is sorted.",
))


@triage.tool
async def resolve(reason: str = "") -> Finish:
    """End the conversation."""
    return Finish(summary="password reset by the user", reason="resolved")


AGENTS = {"triage": triage}
