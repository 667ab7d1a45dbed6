"""A Microsoft AgentChat GraphFlow written in Python (the GraphFlow guide's review loop)."""

import asyncio

from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.conditions import MaxMessageTermination
from autogen_agentchat.teams import DiGraphBuilder, GraphFlow
from autogen_ext.models.replay import ReplayChatCompletionClient

model_client = ReplayChatCompletionClient(["ok"])

writer = AssistantAgent(
    "writer",
    model_client=model_client,
    description="Writes and revises the essay.",
    system_message="Write a short essay on the topic; revise it when asked.",
)
reviewer = AssistantAgent(
    "reviewer",
    model_client=model_client,
    system_message="Review the essay. Reply APPROVE when it is ready, or REVISE with your reasons.",
)
editor = AssistantAgent(
    "editor",
    model_client=model_client,
    description="Polishes the approved essay.",
)

builder = DiGraphBuilder()
builder.add_node(writer).add_node(reviewer).add_node(editor)
builder.add_edge(writer, reviewer)
builder.add_edge(reviewer, writer, condition="REVISE", activation_group="revision")
builder.add_edge(reviewer, "editor", condition="APPROVE")
builder.set_entry_point(writer)

team = GraphFlow(
    participants=builder.get_participants(),
    graph=builder.build(),
    termination_condition=MaxMessageTermination(15),
    max_turns=10,
)


async def main() -> None:
    await team.run(task="Write an essay on the history of the printing press.")


asyncio.run(main())
