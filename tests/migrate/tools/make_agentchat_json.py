"""Write the AgentChat component-JSON corpus files with the REAL autogen-agentchat.

Run by hand (not by the test suite)::

    python3 -m venv /tmp/agentchat && /tmp/agentchat/bin/pip install "autogen-agentchat==0.7.5" "autogen-ext[openai]==0.7.5"
    /tmp/agentchat/bin/python tests/migrate/tools/make_agentchat_json.py tests/migrate/corpus

Each team is built with the public API and saved with ``team.dump_component()``, exactly
what AutoGen Studio stores.
"""

from __future__ import annotations

import sys
from pathlib import Path

from autogen_agentchat.agents import AssistantAgent, UserProxyAgent
from autogen_agentchat.conditions import (
    ExternalTermination,
    FunctionCallTermination,
    HandoffTermination,
    MaxMessageTermination,
    SourceMatchTermination,
    TextMentionTermination,
)
from autogen_agentchat.teams import (
    DiGraphBuilder,
    GraphFlow,
    RoundRobinGroupChat,
    SelectorGroupChat,
    Swarm,
)
from autogen_ext.models.replay import ReplayChatCompletionClient


def client() -> ReplayChatCompletionClient:
    return ReplayChatCompletionClient(
        ["ok"],
        model_info={
            "vision": False,
            "function_calling": True,
            "json_output": False,
            "family": "unknown",
            "structured_output": False,
        },
    )


def lookup_flight(city: str) -> str:
    """Find the next flight to a city."""
    return f"flight to {city}"


def refund(booking: str) -> str:
    """Refund a booking."""
    return "refunded"


def teams() -> dict[str, object]:
    primary = AssistantAgent(
        "primary",
        model_client=client(),
        system_message="You are a helpful writer.",
        description="Writes drafts.",
    )
    critic = AssistantAgent(
        "critic",
        model_client=client(),
        system_message="Review drafts. Respond with 'APPROVE' when ready.",
        description="Reviews drafts.",
    )
    round_robin = RoundRobinGroupChat(
        [primary, critic],
        termination_condition=TextMentionTermination("APPROVE") | MaxMessageTermination(10),
        max_turns=12,
    )

    planner = AssistantAgent(
        "PlanningAgent",
        model_client=client(),
        description="Plans the work and delegates tasks.",
        system_message="You plan. End with TERMINATE when done.",
    )
    searcher = AssistantAgent(
        "WebSearchAgent",
        model_client=client(),
        description="Searches the web.",
        tools=[lookup_flight],
    )
    analyst = AssistantAgent(
        "DataAnalystAgent", model_client=client(), description="Computes numbers."
    )
    selector = SelectorGroupChat(
        [planner, searcher, analyst],
        model_client=client(),
        termination_condition=TextMentionTermination("TERMINATE") | MaxMessageTermination(25),
        allow_repeated_speaker=False,
    )

    travel = AssistantAgent(
        "travel_agent",
        model_client=client(),
        handoffs=["flights_refunder", "user"],
        system_message="You are a travel agent.",
        tools=[lookup_flight],
    )
    refunder = AssistantAgent(
        "flights_refunder",
        model_client=client(),
        handoffs=["travel_agent", "user"],
        system_message="You refund flights.",
        tools=[refund],
    )
    swarm = Swarm(
        [travel, refunder],
        termination_condition=HandoffTermination(target="user")
        | TextMentionTermination("TERMINATE"),
    )

    user = UserProxyAgent("approver", description="A person who approves the plan.")
    writer = AssistantAgent("writer", model_client=client(), description="Writes the plan.")
    with_human = RoundRobinGroupChat(
        [writer, user],
        termination_condition=SourceMatchTermination(["approver"])
        | FunctionCallTermination("publish")
        | ExternalTermination(),
    )

    a = AssistantAgent("A", model_client=client())
    b = AssistantAgent("B", model_client=client())
    builder = DiGraphBuilder()
    builder.add_node(a).add_node(b).add_edge(a, b)
    graph = GraphFlow([a, b], graph=builder.build())
    drafter = AssistantAgent("drafter", model_client=client(), description="Drafts the answer.")
    checker = AssistantAgent(
        "checker", model_client=client(), system_message="Reply APPROVE or REVISE with reasons."
    )
    publisher = AssistantAgent("publisher", model_client=client(), description="Publishes it.")
    review = DiGraphBuilder()
    review.add_node(drafter).add_node(checker).add_node(publisher)
    review.add_edge(drafter, checker)
    review.add_edge(checker, drafter, condition="REVISE")
    review.add_edge(checker, publisher, condition="APPROVE")
    review.set_entry_point(drafter)
    review_flow = GraphFlow(
        [drafter, checker, publisher],
        graph=review.build(),
        termination_condition=MaxMessageTermination(12),
    )
    # written for the differential harness: teams whose translation is exact (no `sources`
    # lost, no callable condition dropped), so their JSON must run as the flow does
    booker = AssistantAgent(
        "booker",
        model_client=client(),
        handoffs=["payer", "user"],
        system_message="You book the trip.",
        tools=[lookup_flight],
    )
    payer = AssistantAgent(
        "payer",
        model_client=client(),
        handoffs=["booker"],
        system_message="You take the payment.",
        tools=[refund],
    )
    json_swarm = Swarm(
        [booker, payer],
        termination_condition=HandoffTermination(target="user") | MaxMessageTermination(9),
    )
    author = AssistantAgent("author", model_client=client(), description="Writes the text.")
    editor = AssistantAgent("editor", model_client=client(), description="Edits the text.")
    proofreader = AssistantAgent(
        "proofreader", model_client=client(), description="Checks the spelling."
    )
    json_round_robin = RoundRobinGroupChat(
        [author, editor, proofreader],
        termination_condition=MaxMessageTermination(7),
        max_turns=5,  # (the smaller cap: 5 turns after the task)
    )
    return {
        "agentchat_json_swarm": json_swarm,
        "agentchat_json_round_robin": json_round_robin,
        "agentchat_graph_review": review_flow,
        "agentchat_round_robin": round_robin,
        "agentchat_selector": selector,
        "agentchat_swarm": swarm,
        "agentchat_human_round_robin": with_human,
        "agentchat_graphflow": graph,
    }


def main() -> None:
    out = Path(sys.argv[1])
    for name, team in teams().items():
        text = team.dump_component().model_dump_json(indent=2)  # type: ignore[attr-defined]
        (out / f"{name}.json").write_text(text + "\n", encoding="utf-8")
        print("wrote", name)


if __name__ == "__main__":
    main()
