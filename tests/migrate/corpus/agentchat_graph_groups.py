"""A GraphFlow with two loops back into the entry node: the person's loop edge gets its own
`activation_group`, so `drafter` runs after either parent (the GraphFlow guide's pattern)."""

import asyncio

from autogen_agentchat.agents import AssistantAgent, UserProxyAgent
from autogen_agentchat.conditions import MaxMessageTermination, TextMentionTermination
from autogen_agentchat.teams import DiGraphBuilder, GraphFlow
from autogen_ext.models.replay import ReplayChatCompletionClient

model_client = ReplayChatCompletionClient(["ok"])

drafter = AssistantAgent("drafter", model_client=model_client, description="Drafts the reply.")
checker = AssistantAgent(
    "checker",
    model_client=model_client,
    system_message="Check the reply. Say APPROVE or REVISE.",
)
polisher = AssistantAgent("polisher", model_client=model_client, description="Polishes the wording.")
sender = AssistantAgent("sender", model_client=model_client, description="Sends the reply.")
approver = UserProxyAgent("approver", description="A person who signs the reply off.")

graph = DiGraphBuilder()
graph.add_node(drafter)
graph.add_node(checker)
graph.add_node(polisher)
graph.add_node(approver)
graph.add_node(sender)
graph.add_edge(drafter, checker)
graph.add_conditional_edges(checker, {"REVISE": drafter, "APPROVE": polisher})
graph.add_edge(polisher, "approver")
# the loop back gets its own group: drafter runs after checker OR approver, not after both
graph.add_edge("approver", "drafter", condition=lambda m: "redo" in m.to_model_text(),
               activation_group="redo", activation_condition="any")
graph.add_edge(approver, sender, condition="SEND")
graph.set_entry_point(drafter)

participants = [drafter, checker, polisher, approver, sender]
team = GraphFlow(
    participants,
    graph=graph.build(),
    termination_condition=TextMentionTermination("SHIP IT", sources=["approver"])
    | MaxMessageTermination(24),
)


async def main() -> None:
    await team.run(task="Answer the customer's complaint about a late delivery.")


asyncio.run(main())
