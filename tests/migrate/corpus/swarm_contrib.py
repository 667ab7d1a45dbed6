"""An airline-support swarm in the ag2 0.9-0.13 spelling (autogen.agentchat.contrib.swarm_agent)."""

from autogen import ConversableAgent, UserProxyAgent
from autogen.agentchat.contrib.swarm_agent import (
    AfterWork,
    AfterWorkOption,
    OnCondition,
    OnContextCondition,
    SwarmResult,
    initiate_swarm_chat,
    register_hand_off,
)
from autogen.agentchat.group import ContextExpression

llm_config = {"config_list": [{"model": "gpt-4o", "api_key": "sk-test"}]}

context_variables = {"booking_found": False, "refund_approved": False, "attempts": 0}


def lookup_booking(reference: str, context_variables: dict) -> SwarmResult:
    """Find the booking by its reference."""
    context_variables["booking_found"] = True
    return SwarmResult(values="Booking found.", context_variables=context_variables)


def approve_refund(context_variables: dict) -> SwarmResult:
    """Approve the refund and hand over to the payments agent."""
    context_variables["refund_approved"] = True
    return SwarmResult(values="Refund approved.", agent="payments_agent", context_variables=context_variables)


def give_up(context_variables: dict) -> SwarmResult:
    """Stop when the customer cannot be helped."""
    return SwarmResult(values="Sorry, we cannot help.", agent=AfterWorkOption.TERMINATE)


triage_agent = ConversableAgent(
    name="triage_agent",
    system_message="You greet the customer and find their booking.",
    llm_config=llm_config,
    functions=[lookup_booking, give_up],
)
refund_agent = ConversableAgent(
    name="refund_agent",
    system_message="You decide whether a refund is allowed.",
    llm_config=llm_config,
    functions=[approve_refund],
)
payments_agent = ConversableAgent(
    name="payments_agent",
    system_message="You pay out approved refunds.",
    llm_config=llm_config,
)
customer = UserProxyAgent(name="customer", code_execution_config=False)

register_hand_off(
    triage_agent,
    [
        OnCondition(target=refund_agent, condition="The customer wants a refund.", available="booking_found"),
        OnCondition(refund_agent, "The customer asks about refund rules."),
        AfterWork(AfterWorkOption.REVERT_TO_USER),
    ],
)
register_hand_off(
    refund_agent,
    [
        OnContextCondition(target=payments_agent, condition=ContextExpression("${refund_approved} == True")),
        AfterWork(triage_agent),
    ],
)
register_hand_off(payments_agent, AfterWork(AfterWorkOption.TERMINATE))

chat_result, final_context, last_agent = initiate_swarm_chat(
    initial_agent=triage_agent,
    agents=[triage_agent, refund_agent, payments_agent],
    messages="I want a refund for booking XK-42.",
    user_agent=customer,
    context_variables=context_variables,
    after_work=AfterWorkOption.REVERT_TO_USER,
    max_rounds=25,
)
