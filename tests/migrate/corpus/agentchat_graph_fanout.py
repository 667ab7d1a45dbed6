"""A Microsoft AgentChat GraphFlow with a parallel fan-out and a join: the planner's output
goes to two researchers at once, and the writer waits for both (activation "all")."""

import asyncio

from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.conditions import MaxMessageTermination
from autogen_agentchat.teams import DiGraphBuilder, GraphFlow
from autogen_ext.models.openai import OpenAIChatCompletionClient

model_client = OpenAIChatCompletionClient(model="gpt-4o-mini", api_key="sk-test")

planner = AssistantAgent("planner", model_client=model_client, system_message="You split the question.")
market = AssistantAgent("market_research", model_client=model_client, system_message="You study the market.")
tech = AssistantAgent("tech_research", model_client=model_client, system_message="You study the technology.")
writer = AssistantAgent("writer", model_client=model_client, system_message="You merge both studies.")

builder = DiGraphBuilder()
builder.add_node(planner).add_node(market).add_node(tech).add_node(writer)
builder.add_edge(planner, market)
builder.add_edge(planner, tech)
builder.add_edge(market, writer)
builder.add_edge(tech, writer)

flow = GraphFlow(
    participants=builder.get_participants(),
    graph=builder.build(),
    termination_condition=MaxMessageTermination(10),
)


async def main() -> None:
    await flow.run(task="Should we build a solid-state battery start-up?")


asyncio.run(main())
