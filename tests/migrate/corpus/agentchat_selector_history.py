"""A SelectorGroupChat whose `selector_func` sends the critic's verdict back to whoever the critic
reviewed: `messages[-2]` needs the speaker before the last one, which a flow's state does not keep."""

import asyncio

from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.conditions import MaxMessageTermination
from autogen_agentchat.teams import SelectorGroupChat
from autogen_ext.models.openai import OpenAIChatCompletionClient

model_client = OpenAIChatCompletionClient(model="gpt-4o-mini")

writer = AssistantAgent("writer", model_client=model_client, description="Writes the article.")
illustrator = AssistantAgent("illustrator", model_client=model_client, description="Draws the figures.")
critic = AssistantAgent("critic", model_client=model_client, description="Critiques the last piece of work.")


def back_to_author(messages):
    if messages[-1].source == "user":
        return writer.name
    if messages[-1].source == critic.name:
        return messages[-2].source  # whoever the critic just reviewed
    return critic.name


team = SelectorGroupChat(
    [writer, illustrator, critic],
    model_client=model_client,
    selector_func=back_to_author,
    termination_condition=MaxMessageTermination(15),
)


async def main() -> None:
    await team.run(task="An illustrated explainer on tides.")


asyncio.run(main())
