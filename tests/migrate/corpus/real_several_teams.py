"""Reduction (written for flowc) of a tutorial notebook that builds a team, runs it, then
builds another one in a later cell (issue 12, class 5). The last team is translated; the
first is reported (M001) with the way to translate it instead (`--pick`).
"""

import asyncio

from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.conditions import MaxMessageTermination, TextMentionTermination
from autogen_agentchat.teams import RoundRobinGroupChat, SelectorGroupChat
from autogen_ext.models.openai import OpenAIChatCompletionClient

model_client = OpenAIChatCompletionClient(model="gpt-4o")

primary = AssistantAgent("primary", model_client=model_client, system_message="You are a helpful assistant.")
critic = AssistantAgent("critic", model_client=model_client, system_message="Reply APPROVE when satisfied.")

team = RoundRobinGroupChat([primary, critic], termination_condition=TextMentionTermination("APPROVE"))


async def first() -> None:
    await team.run(task="Write a short poem about the fall season.")


asyncio.run(first())

# a later cell: the same agents, chosen by a model this time
selector_team = SelectorGroupChat(
    [primary, critic],
    model_client=model_client,
    termination_condition=MaxMessageTermination(6),
)
asyncio.run(selector_team.run(task="Write a haiku."))
