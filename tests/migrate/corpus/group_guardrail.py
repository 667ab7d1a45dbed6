"""Banking support with the AG2 group API: a regex output guardrail sends any reply that
leaks a card number to the compliance officer; a handoff by name."""

from autogen import ConversableAgent, LLMConfig, UserProxyAgent
from autogen.agentchat import run_group_chat
from autogen.agentchat.group import (
    AgentNameTarget,
    AgentTarget,
    ContextVariables,
    RevertToUserTarget,
    TerminateTarget,
)
from autogen.agentchat.group.guardrails import RegexGuardrail
from autogen.agentchat.group.patterns import DefaultPattern

llm_config = LLMConfig(api_type="openai", model="gpt-4o-mini", api_key="sk-test")

with llm_config:
    support = ConversableAgent(
        name="support_agent",
        system_message="You answer questions about the customer's bank account.",
    )
    compliance = ConversableAgent(
        name="compliance_officer",
        system_message="You redact sensitive data and explain the bank's data policy.",
    )
    archivist = ConversableAgent(
        name="archivist",
        system_message="You file a summary of the conversation and say DONE.",
    )

customer = UserProxyAgent(name="customer", code_execution_config=False)

card_numbers = RegexGuardrail(
    name="card_number_leak",
    condition=r"\b(?:\d[ -]?){13,16}\b",
    target=AgentTarget(compliance),
    activation_message="A card number was about to be shared; compliance takes over.",
)
support.register_output_guardrail(card_numbers)

support.handoffs.set_after_work(RevertToUserTarget())
compliance.handoffs.set_after_work(AgentNameTarget("archivist"))
archivist.handoffs.set_after_work(TerminateTarget())

pattern = DefaultPattern(
    initial_agent=support,
    agents=[support, compliance, archivist],
    user_agent=customer,
    context_variables=ContextVariables(data={"region": "EU"}),
)

response = run_group_chat(
    pattern=pattern,
    messages="What is the card number on my account? I lost the card.",
    max_rounds=12,
)
