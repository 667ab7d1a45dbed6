"""Customer-service triage with the AG2 group API (DefaultPattern): LLM handoffs, context
conditions, after works and tools that route with ReplyResult."""

from typing import Annotated

from autogen import ConversableAgent, LLMConfig, UserProxyAgent
from autogen.agentchat import initiate_group_chat
from autogen.agentchat.group import (
    AgentTarget,
    ContextExpression,
    ContextVariables,
    ExpressionContextCondition,
    OnCondition,
    OnContextCondition,
    ReplyResult,
    RevertToUserTarget,
    StringAvailableCondition,
    StringContextCondition,
    StringLLMCondition,
    TerminateTarget,
)
from autogen.agentchat.group.patterns import DefaultPattern

llm_config = LLMConfig(api_type="openai", model="gpt-4o-mini", api_key="sk-test")

context = ContextVariables(data={
    "verified": False,
    "issue_count": 0,
    "priority": "normal",
})


def verify_customer(account_id: str, context_variables: ContextVariables) -> ReplyResult:
    """Verify the customer's account before anything else."""
    context_variables["verified"] = True
    return ReplyResult(message="Customer verified.", context_variables=context_variables)


def escalate(reason: Annotated[str, "why"], context_variables: ContextVariables) -> ReplyResult:
    """Escalate the issue to a human supervisor."""
    context_variables["priority"] = "high"
    return ReplyResult(message=f"Escalated: {reason}", target=AgentTarget(supervisor),
                       context_variables=context_variables)


def close_ticket(context_variables: ContextVariables) -> ReplyResult:
    """Close the ticket when the customer is satisfied, or hand back to the user."""
    if context_variables["verified"]:
        return ReplyResult(message="Ticket closed.", target=TerminateTarget())
    return ReplyResult(message="Please verify first.", target=RevertToUserTarget())


with llm_config:
    triage = ConversableAgent(
        name="triage_agent",
        system_message="You triage customer requests and route them to the right specialist.",
        functions=[verify_customer],
    )
    tech = ConversableAgent(
        name="tech_agent",
        system_message="You solve technical problems with devices and software.",
        functions=[escalate, close_ticket],
    )
    billing = ConversableAgent(
        name="billing_agent",
        system_message="You handle invoices, refunds and payments.",
        functions=[close_ticket],
    )
    supervisor = ConversableAgent(
        name="supervisor",
        system_message="You handle escalated, high-priority cases.",
    )

user = UserProxyAgent(name="customer", code_execution_config=False)

triage.handoffs.add_llm_conditions([
    OnCondition(
        target=AgentTarget(tech),
        condition=StringLLMCondition(prompt="The request is about a technical problem."),
        available=StringAvailableCondition(context_variable="verified"),
    ),
    OnCondition(
        target=AgentTarget(billing),
        condition=StringLLMCondition(prompt="The request is about billing or payments."),
    ),
])
triage.handoffs.add_context_condition(
    OnContextCondition(
        target=AgentTarget(supervisor),
        condition=ExpressionContextCondition(expression=ContextExpression("${priority} == 'high'")),
    )
)
tech.handoffs.add_context_condition(
    OnContextCondition(
        target=AgentTarget(supervisor),
        condition=ExpressionContextCondition(expression=ContextExpression("${issue_count} >= 3")),
    )
)
tech.handoffs.add_after_work(
    OnContextCondition(target=AgentTarget(billing), condition=StringContextCondition(variable_name="verified"))
)
tech.handoffs.set_after_work(RevertToUserTarget())
billing.handoffs.set_after_work(RevertToUserTarget())
supervisor.handoffs.set_after_work(TerminateTarget())

pattern = DefaultPattern(
    initial_agent=triage,
    agents=[triage, tech, billing, supervisor],
    user_agent=user,
    context_variables=context,
    group_after_work=RevertToUserTarget(),
)

result, final_context, last_agent = initiate_group_chat(
    pattern=pattern,
    messages="My laptop will not boot after the update.",
    max_rounds=30,
)
