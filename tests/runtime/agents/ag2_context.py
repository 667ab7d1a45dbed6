"""AG2 Agents whose tools write channel context the AG2 way (``ChannelInject``)."""

from ag2 import Agent
from ag2.events import ToolCallEvent
from ag2.network import ChannelInject, ChannelStateInject
from ag2.network.workflow_helpers import delete_context, set_context
from ag2.testing import TestConfig

drafter = Agent("drafter", config=TestConfig(
    ToolCallEvent(name="count_round", arguments="{}"),
    "Draft.",
))


@drafter.tool
async def count_round(channel: ChannelInject, state: ChannelStateInject) -> str:
    """Count a drafting round in the channel's context."""
    rounds = state.context_vars.get("rounds", 0) + 1
    await set_context(channel, "rounds", rounds)
    await delete_context(channel, "scratch")
    return f"round {rounds}"


reviewer = Agent("reviewer", config=TestConfig(
    ToolCallEvent(name="approve", arguments='{"reason": "clear"}'),
    "Approved.",
))


@reviewer.tool
async def approve(reason: str, channel: ChannelInject) -> str:
    """Mark the draft approved; the graph terminates with reason 'approved'."""
    await set_context(channel, "done", True)
    return f"approved: {reason}"


AGENTS = {"drafter": drafter, "reviewer": reviewer}
