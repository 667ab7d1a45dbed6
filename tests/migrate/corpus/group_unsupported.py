"""Claims processing with the AG2 group API (0.10+): a FunctionTarget router, a nested chat,
a nested group chat, an LLM guardrail, an input guardrail and a safeguard policy; none of
them has an equivalent in one workflow channel."""

from autogen import ConversableAgent, LLMConfig
from autogen.agentchat import initiate_group_chat
from autogen.agentchat.group import (
    AgentTarget,
    FunctionTarget,
    FunctionTargetResult,
    GroupChatConfig,
    GroupChatTarget,
    NestedChatTarget,
    OnCondition,
    StringLLMCondition,
    TerminateTarget,
)
from autogen.agentchat.group.guardrails import LLMGuardrail, RegexGuardrail
from autogen.agentchat.group.patterns import DefaultPattern

llm_config = LLMConfig(api_type="openai", model="gpt-4o-mini", api_key="sk-test")

with llm_config:
    intake = ConversableAgent(name="intake", system_message="You collect the claim details.")
    assessor = ConversableAgent(name="assessor", system_message="You assess the claim.")
    fraud = ConversableAgent(name="fraud_check", system_message="You look for signs of fraud.")
    payer = ConversableAgent(name="payer", system_message="You pay approved claims.")


def route_by_amount(output: str, context_variables, amount_limit: int) -> FunctionTargetResult:
    """Large claims go to the fraud check, small ones straight to the payer."""
    if "amount" in output and int(output.split("amount")[-1].split()[0]) > amount_limit:
        return FunctionTargetResult(target=AgentTarget(fraud))
    return FunctionTargetResult(target=AgentTarget(payer))


second_opinion = {
    "chat_queue": [
        {"recipient": assessor, "message": "Give a second opinion on this claim.", "max_turns": 1,
         "summary_method": "last_msg"},
    ],
}
appeal_pattern = DefaultPattern(initial_agent=assessor, agents=[assessor], group_after_work=TerminateTarget())

intake.handoffs.set_after_work(FunctionTarget(route_by_amount, extra_args={"amount_limit": 5000}))
assessor.handoffs.add_llm_conditions([
    OnCondition(
        target=NestedChatTarget(nested_chat_config=second_opinion),
        condition=StringLLMCondition(prompt="The claim is ambiguous and needs a second opinion."),
    ),
    OnCondition(
        target=GroupChatTarget(group_chat_config=GroupChatConfig(
            pattern=appeal_pattern, messages="Review the appeal.", max_rounds=5)),
        condition=StringLLMCondition(prompt="The customer appeals a rejected claim."),
    ),
])
assessor.handoffs.set_after_work(AgentTarget(payer))
fraud.register_output_guardrail(LLMGuardrail(
    name="no_accusations",
    condition="The reply accuses the customer of fraud without evidence.",
    target=AgentTarget(assessor),
    llm_config=llm_config,
))
payer.register_input_guardrail(RegexGuardrail(
    name="no_iban_in_requests",
    condition=r"[A-Z]{2}\d{2}[A-Z0-9]{11,30}",
    target=TerminateTarget(),
))
payer.handoffs.set_after_work(TerminateTarget())

pattern = DefaultPattern(initial_agent=intake, agents=[intake, assessor, fraud, payer])

result, final_context, last_agent = initiate_group_chat(
    pattern=pattern,
    messages="Claim 4471: water damage in the kitchen, amount 7200 EUR.",
    max_rounds=25,
    safeguard_policy={"inter_agent_safeguards": {"agent_transitions": [
        {"message_source": "intake", "message_destination": "payer", "check_method": "regex",
         "pattern": r"\d{16}", "action": "block"}]}},
)
