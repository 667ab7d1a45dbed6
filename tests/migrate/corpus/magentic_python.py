"""A Microsoft AgentChat MagenticOne team in Python: recognised, not translated."""

import asyncio

from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.teams import MagenticOneGroupChat
from autogen_ext.models.openai import OpenAIChatCompletionClient


async def main() -> None:
    client = OpenAIChatCompletionClient(model="gpt-4o")
    coder = AssistantAgent("coder", model_client=client)
    team = MagenticOneGroupChat([coder], model_client=client)
    await team.run(task="Write a script that counts words.")


asyncio.run(main())
