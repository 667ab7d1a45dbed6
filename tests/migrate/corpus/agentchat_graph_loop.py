"""A GraphFlow loop with an exit, as the DiGraphBuilder documentation writes it: callable
conditions that test the last message for a keyword."""

import asyncio

from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.conditions import MaxMessageTermination
from autogen_agentchat.teams import DiGraphBuilder, GraphFlow
from autogen_ext.models.replay import ReplayChatCompletionClient

client = ReplayChatCompletionClient(["ok"])

coder = AssistantAgent("coder", model_client=client, description="Writes the patch.")
tester = AssistantAgent(
    "tester",
    model_client=client,
    system_message="Run the tests. Say 'loop' when the patch needs more work.",
)
reporter = AssistantAgent("reporter", model_client=client, description="Reports the result.")

builder = DiGraphBuilder()
builder.add_node(coder).add_node(tester).add_node(reporter)
builder.add_edge(coder, tester)
builder.add_edge(tester, coder, condition=lambda msg: "loop" in msg.to_model_text())
builder.add_edge(tester, reporter, condition=lambda msg: "loop" not in msg.to_model_text())
builder.set_entry_point(coder)

team = GraphFlow(
    participants=builder.get_participants(),
    graph=builder.build(),
    termination_condition=MaxMessageTermination(20),
)


async def main() -> None:
    await team.run(task="Fix the failing date parser test.")


asyncio.run(main())
