"""A Microsoft AgentChat team with a nested team: an inner writer/reviewer pair wrapped in a
SocietyOfMindAgent takes part in an outer round robin with a translator; the run stops on a
timeout or after ten messages."""

import asyncio

from autogen_agentchat.agents import AssistantAgent, SocietyOfMindAgent
from autogen_agentchat.conditions import MaxMessageTermination, TextMentionTermination, TimeoutTermination
from autogen_agentchat.teams import RoundRobinGroupChat
from autogen_ext.models.openai import OpenAIChatCompletionClient

model_client = OpenAIChatCompletionClient(model="gpt-4o", api_key="sk-test")

writer = AssistantAgent("writer", model_client=model_client, system_message="You write a short story.")
reviewer = AssistantAgent(
    "reviewer", model_client=model_client,
    system_message="You review the story. Say APPROVE when it is good.",
)
inner_team = RoundRobinGroupChat([writer, reviewer], termination_condition=TextMentionTermination("APPROVE"))
story_society = SocietyOfMindAgent("story_society", team=inner_team, model_client=model_client)
translator = AssistantAgent(
    "translator", model_client=model_client, system_message="You translate the story into Portuguese.")

team = RoundRobinGroupChat(
    [story_society, translator],
    termination_condition=TimeoutTermination(timeout_seconds=120) | MaxMessageTermination(10),
)


async def main() -> None:
    result = await team.run(task="A story about a lighthouse keeper's cat.")
    print(result.messages[-1].content)


asyncio.run(main())
