"""A GraphFlow whose edges test the message with Python callables (the GraphFlow guide's loop)."""

import asyncio

from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.conditions import MaxMessageTermination, TextMentionTermination
from autogen_agentchat.messages import BaseChatMessage
from autogen_agentchat.teams import DiGraphBuilder, GraphFlow
from autogen_ext.models.replay import ReplayChatCompletionClient

model_client = ReplayChatCompletionClient(["ok"])

generator = AssistantAgent("generator", model_client=model_client,
                           description="Generates a list of ideas.")
reviewer = AssistantAgent("reviewer", model_client=model_client,
                          system_message="Review the ideas. Say 'loop' to ask for more, else summarize.")
summarizer = AssistantAgent("summarizer", model_client=model_client,
                            description="Summarizes the approved ideas.")


def is_long(message: BaseChatMessage) -> bool:
    """The reviewer wrote a long review."""
    return len(message.to_model_text()) > 500


builder = (
    DiGraphBuilder()
    .add_node(generator)
    .add_node(reviewer)
    .add_node(summarizer)
    .add_edge(generator, reviewer)
    .add_edge(reviewer, generator, condition=lambda msg: "loop" in msg.to_model_text())
    .add_edge(reviewer, summarizer, condition=is_long)
    .set_entry_point(generator)
)

flow = GraphFlow(
    [generator, reviewer, summarizer],
    graph=builder.build(),
    termination_condition=TextMentionTermination("DONE") | MaxMessageTermination(20),
)


async def main() -> None:
    await flow.run(task="Ideas for a science fair.")


asyncio.run(main())
