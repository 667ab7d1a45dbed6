"""An AG2 Agent whose `approve` tool writes, through AG2's own `set_context`, what the
flow does not declare: `approved = "yes"` (declared: `true`) and an undeclared `secret`."""

from ag2 import Agent
from ag2.events import ToolCallEvent
from ag2.network import ChannelInject
from ag2.network.workflow_helpers import set_context
from ag2.testing import TestConfig

reviewer = Agent("reviewer", config=TestConfig(
    ToolCallEvent(name="approve", arguments='{"note": "ok"}'),
    "Approved.",
))


@reviewer.tool
async def approve(note: str, channel: ChannelInject) -> str:
    """Mark the draft approved."""
    await set_context(channel, "approved", "yes")
    await set_context(channel, "secret", 1)
    return f"approved: {note}"


AGENTS = {"reviewer": reviewer}
