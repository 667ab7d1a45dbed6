"""A Microsoft AgentChat Swarm written in Python (the AgentChat swarm tutorial's shape)."""

import asyncio

from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.base import Handoff
from autogen_agentchat.conditions import HandoffTermination, MaxMessageTermination, TextMentionTermination
from autogen_agentchat.teams import Swarm
from autogen_ext.models.openai import OpenAIChatCompletionClient


def refund_flight(flight_id: str) -> str:
    """Refund a flight."""
    return f"Flight {flight_id} refunded"


model_client = OpenAIChatCompletionClient(model="gpt-4o", api_key="sk-test")

travel_agent = AssistantAgent(
    "travel_agent",
    model_client=model_client,
    handoffs=["flights_refunder", "user"],
    system_message="You are a travel agent. Use TERMINATE when the travel planning is complete.",
)
flights_refunder = AssistantAgent(
    "flights_refunder",
    model_client=model_client,
    handoffs=[Handoff(target="travel_agent", description="Back to planning.", name="back_to_planning"),
              "user"],
    tools=[refund_flight],
    system_message="You refund flights. Ask the user for the flight reference when you need it.",
)

termination = (
    HandoffTermination(target="user")
    | TextMentionTermination("TERMINATE", sources=["travel_agent"])
    | MaxMessageTermination(30)
)
team = Swarm([travel_agent, flights_refunder], termination_condition=termination)


async def main() -> None:
    await team.run(task="I need to refund my flight.")


asyncio.run(main())
