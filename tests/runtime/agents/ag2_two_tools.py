"""An AG2 Agent that calls two declared tools in one turn, each writing its own key
(the flow: `tool note sets noted = true` and `tool approve sets approved = true`)."""

from ag2 import Agent
from ag2.events import ToolCallEvent
from ag2.network import ChannelInject
from ag2.network.workflow_helpers import set_context
from ag2.testing import TestConfig

reviewer = Agent("reviewer", config=TestConfig(
    ToolCallEvent(name="note", arguments="{}"),
    ToolCallEvent(name="approve", arguments='{"note": "ok"}'),
    "Noted and approved.",
))


@reviewer.tool
async def note(channel: ChannelInject) -> str:
    """Note the draft."""
    await set_context(channel, "noted", True)
    return "noted"


@reviewer.tool
async def approve(note: str, channel: ChannelInject) -> str:
    """Mark the draft approved."""
    await set_context(channel, "approved", True)
    return f"approved: {note}"


AGENTS = {"reviewer": reviewer}
