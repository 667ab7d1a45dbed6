"""Reduction (written for flowc) of the human-in-the-loop tutorials: an agent with
`handoffs=["user"]` in a RoundRobinGroupChat, stopped by `HandoffTermination(target="user")`
(issue 12, class 9). Outside a Swarm a handoff does not pick the next speaker, but the handoff
message is what ends the run: the tool stays, and calling it ends the flow.
"""

from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.base import Handoff
from autogen_agentchat.conditions import HandoffTermination, TextMentionTermination
from autogen_agentchat.teams import RoundRobinGroupChat
from autogen_ext.models.openai import OpenAIChatCompletionClient

model_client = OpenAIChatCompletionClient(model="gpt-4o")

lazy_agent = AssistantAgent(
    "lazy_assistant",
    model_client=model_client,
    handoffs=[Handoff(target="user", message="Transfer to user.")],
    system_message="If you cannot complete the task, transfer to user. Otherwise, when finished, "
    "respond with 'TERMINATE'.",
)
checker = AssistantAgent("checker", model_client=model_client, system_message="Checks the answer.")

termination = HandoffTermination(target="user") | TextMentionTermination("TERMINATE")
team = RoundRobinGroupChat([lazy_agent, checker], termination_condition=termination)
