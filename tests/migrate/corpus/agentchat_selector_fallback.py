"""The AgentChat SelectorGroupChat tutorial's team: the planner speaks after every other agent
(a `selector_func` lambda that returns None after the planner, letting the model choose), and a
`candidate_func` that offers the model only the two workers."""

import asyncio
from collections.abc import Sequence

from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.conditions import MaxMessageTermination, TextMentionTermination
from autogen_agentchat.messages import BaseAgentEvent, BaseChatMessage
from autogen_agentchat.teams import SelectorGroupChat
from autogen_ext.models.openai import OpenAIChatCompletionClient

model_client = OpenAIChatCompletionClient(model="gpt-4o")

planning_agent = AssistantAgent(
    "PlanningAgent",
    description="An agent for planning tasks, this agent should be the first to engage when given a new task.",
    model_client=model_client,
    system_message="You are a planning agent. Break down complex tasks into smaller subtasks and "
                   "delegate them. When all tasks are complete, summarize the findings and end with TERMINATE.",
)
web_search_agent = AssistantAgent(
    "WebSearchAgent",
    description="An agent for searching information on the web.",
    model_client=model_client,
    system_message="You are a web search agent. Your only tool is search_tool.",
)
data_analyst_agent = AssistantAgent(
    "DataAnalystAgent",
    description="An agent for performing calculations.",
    model_client=model_client,
    system_message="You are a data analyst. Use the tools provided to compute results.",
)


def candidate_func(messages: Sequence[BaseAgentEvent | BaseChatMessage]) -> list[str]:
    """After the planner, only the workers may be chosen."""
    return [web_search_agent.name, data_analyst_agent.name]


selector_prompt = """Select an agent to perform task.

{roles}

Current conversation context:
{history}

Read the above conversation, then select an agent from {participants} to perform the next task.
Only select one agent.
"""

team = SelectorGroupChat(
    [planning_agent, web_search_agent, data_analyst_agent],
    model_client=model_client,
    termination_condition=TextMentionTermination("TERMINATE") | MaxMessageTermination(max_messages=25),
    selector_prompt=selector_prompt,
    allow_repeated_speaker=True,
    selector_func=lambda messages: planning_agent.name if messages[-1].source != planning_agent.name else None,
    candidate_func=candidate_func,
)


async def main() -> None:
    await team.run(task="Who was the Miami Heat player with the highest points in the 2006-2007 season?")


asyncio.run(main())
