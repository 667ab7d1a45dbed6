"""Reduction (written for flowc) of AgentChat teams with participants flowc does not model:
a web surfer from autogen-ext and an agent class written in the notebook (issue 12,
class 7). Before, the whole team was refused (exit 2); now each is a plain speaker and
its unmodelled behaviour is reported (M002).
"""

from autogen_agentchat.agents import AssistantAgent, BaseChatAgent
from autogen_agentchat.conditions import MaxMessageTermination
from autogen_agentchat.teams import RoundRobinGroupChat
from autogen_ext.agents.web_surfer import MultimodalWebSurfer
from autogen_ext.models.openai import OpenAIChatCompletionClient

model_client = OpenAIChatCompletionClient(model="gpt-4o")


class CountDownAgent(BaseChatAgent):
    async def on_messages(self, messages, cancellation_token):
        raise NotImplementedError


surfer = MultimodalWebSurfer("web_surfer", model_client=model_client)
counter = CountDownAgent("counter", description="Counts down from ten.")
writer = AssistantAgent("writer", model_client=model_client, system_message="Summarise the findings.")

team = RoundRobinGroupChat([surfer, counter, writer], termination_condition=MaxMessageTermination(5))
