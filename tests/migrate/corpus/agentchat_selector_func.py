"""A SelectorGroupChat whose `selector_func` decides every turn (plan, code, review; the coder
retries after a failing test run). The model client is never asked who speaks next."""

import asyncio
from collections.abc import Sequence

from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.conditions import MaxMessageTermination, TextMentionTermination
from autogen_agentchat.messages import BaseAgentEvent, BaseChatMessage
from autogen_agentchat.teams import SelectorGroupChat
from autogen_ext.models.replay import ReplayChatCompletionClient

model_client = ReplayChatCompletionClient(["ok"])

planner = AssistantAgent(
    "planner",
    model_client=model_client,
    description="Breaks the task into steps.",
    system_message="Plan the next step of the task.",
)
coder = AssistantAgent(
    "coder",
    model_client=model_client,
    description="Writes and runs the code.",
    system_message="Write the code for the current step and run its tests. Say TESTS FAILED if they fail.",
)
reviewer = AssistantAgent(
    "reviewer",
    model_client=model_client,
    description="Reviews the code.",
    system_message="Review the code. Say REVISE to send it back, or APPROVE when the task is done.",
)


def selector_func(messages: Sequence[BaseAgentEvent | BaseChatMessage]) -> str | None:
    """Plan, code, review; a failing test run goes back to the coder."""
    last = messages[-1]
    if last.source == "user":
        return planner.name
    if last.source == planner.name:
        return coder.name
    elif last.source == coder.name:
        if "TESTS FAILED" in last.to_model_text():
            return coder.name  # the previous speaker again: selector_func picks are not filtered
        return reviewer.name
    if messages[-1].source == reviewer.name and "REVISE" in messages[-1].content:
        return coder.name
    return planner.name


team = SelectorGroupChat(
    [planner, coder, reviewer],
    model_client=model_client,
    termination_condition=TextMentionTermination("APPROVE") | MaxMessageTermination(12),
    allow_repeated_speaker=False,
    selector_func=selector_func,
)


async def main() -> None:
    await team.run(task="Add a --json flag to the report command.")


asyncio.run(main())
