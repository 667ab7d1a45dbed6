"""Travel desk with the AG2 group API (DefaultPattern): context-string and gated LLM handoffs,
context expressions with `or`, `and`/`not`/`!=` and `len()`, a list of conditional after works,
stay / random / ask-user / group-manager targets, a tool that returns a bare target, and a
system message templated from the context."""

from autogen import ConversableAgent, LLMConfig, UpdateSystemMessage, UserProxyAgent
from autogen.agentchat import initiate_group_chat
from autogen.agentchat.group import (
    AgentTarget,
    AskUserTarget,
    ContextExpression,
    ContextStr,
    ContextStrLLMCondition,
    ContextVariables,
    ExpressionAvailableCondition,
    ExpressionContextCondition,
    OnCondition,
    OnContextCondition,
    StayTarget,
    StringLLMCondition,
    TerminateTarget,
)
from autogen.agentchat.group.patterns import DefaultPattern
from autogen.agentchat.group.targets.group_manager_target import GroupManagerTarget
from autogen.agentchat.group.targets.transition_target import RandomAgentTarget

llm_config = LLMConfig(api_type="openai", model="gpt-4o-mini", api_key="sk-test")

context = ContextVariables(data={
    "stage": "planning",
    "budget": 0,
    "bookings": [],
    "confirmed": False,
})


def finish_trip() -> TerminateTarget:
    """End the conversation once every booking is confirmed."""
    return TerminateTarget()


with llm_config:
    planner = ConversableAgent(
        name="planner",
        system_message="You plan trips. The traveller's stage is {stage}.",
        update_agent_state_before_reply=[UpdateSystemMessage(
            "You plan trips. The traveller is at stage {stage} with a budget of {budget}.")],
    )
    flights = ConversableAgent(name="flights", system_message="You book flights.")
    hotels = ConversableAgent(name="hotels", system_message="You book hotels.")
    closer = ConversableAgent(
        name="closer",
        system_message="You confirm the bookings and wrap up.",
        functions=[finish_trip],
    )

traveller = UserProxyAgent(name="traveller", code_execution_config=False)

planner.handoffs.add_llm_conditions([
    OnCondition(
        target=AgentTarget(flights),
        condition=ContextStrLLMCondition(context_str=ContextStr(
            template="The traveller at stage {stage} needs a flight.")),
    ),
    OnCondition(
        target=AgentTarget(hotels),
        condition=StringLLMCondition(prompt="The traveller needs a hotel."),
        available=ExpressionAvailableCondition(expression=ContextExpression("${budget} > 100")),
    ),
])
planner.handoffs.add_context_conditions([
    OnContextCondition(
        target=AgentTarget(closer),
        condition=ExpressionContextCondition(
            expression=ContextExpression("${stage} == 'booked' or ${stage} == 'paid'")),
    ),
    OnContextCondition(
        target=AgentTarget(hotels),
        condition=ExpressionContextCondition(
            expression=ContextExpression("${stage} != 'planning' and not ${confirmed}")),
    ),
])
flights.handoffs.add_after_works([
    OnContextCondition(
        target=AgentTarget(closer),
        condition=ExpressionContextCondition(expression=ContextExpression("len(${bookings}) >= 2")),
    ),
    OnContextCondition(target=RandomAgentTarget(agents=[planner, hotels]), condition=None),
])
hotels.handoffs.add_context_condition(OnContextCondition(target=AgentTarget(planner), condition=None))
planner.handoffs.set_after_work(StayTarget())
closer.handoffs.set_after_work(AskUserTarget())
traveller.handoffs.set_after_work(GroupManagerTarget())

pattern = DefaultPattern(
    initial_agent=planner,
    agents=[planner, flights, hotels, closer],
    user_agent=traveller,
    context_variables=context,
    group_after_work=TerminateTarget(),
    group_manager_args={"llm_config": llm_config},
)

result, final_context, last_agent = initiate_group_chat(
    pattern=pattern,
    messages="Plan a week in Lisbon in May for two people.",
    max_rounds=40,
    exclude_transit_message=True,
)
