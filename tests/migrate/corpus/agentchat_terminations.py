"""A Microsoft AgentChat review loop in Python with the termination conditions that have no
exact flow equivalent: a text-message end, a stop message, and a budget that needs both a
token count and a timeout."""

import asyncio

from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.conditions import (
    MaxMessageTermination,
    StopMessageTermination,
    TextMessageTermination,
    TimeoutTermination,
    TokenUsageTermination,
)
from autogen_agentchat.teams import RoundRobinGroupChat
from autogen_ext.models.openai import OpenAIChatCompletionClient

model_client = OpenAIChatCompletionClient(model="gpt-4o-mini", api_key="sk-test")

writer = AssistantAgent("writer", model_client=model_client, system_message="You draft the release notes.")
critic = AssistantAgent("critic", model_client=model_client, system_message="You criticise the draft.")

termination = (
    TextMessageTermination("critic")
    | StopMessageTermination()
    | (TokenUsageTermination(max_total_token=20000) & TimeoutTermination(timeout_seconds=300))
    | MaxMessageTermination(12)
)
team = RoundRobinGroupChat([writer, critic], termination_condition=termination)


async def main() -> None:
    result = await team.run(task="Write the release notes for version 2.4.")
    print(result.stop_reason)


asyncio.run(main())
