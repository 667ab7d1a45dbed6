"""Reduction (written for flowc) of the same pattern in the group-chat API (issue 12): the
specialists' handoffs are set in `for` loops. A loop over a tuple of (agent, target) pairs is
unrolled as Python runs it; a loop over a list built at run time cannot be, and the call in it
is reported (M001 naming the loop) instead of being skipped with no finding.
"""

from autogen import ConversableAgent, LLMConfig
from autogen.agentchat import initiate_group_chat
from autogen.agentchat.group import AgentTarget, OnCondition, RevertToUserTarget, StringLLMCondition
from autogen.agentchat.group.patterns import DefaultPattern

llm_config = LLMConfig(api_type="openai", model="gpt-4o-mini", api_key="sk-test")

triage = ConversableAgent(name="triage", llm_config=llm_config, system_message="Route the request.")
billing = ConversableAgent(name="billing", llm_config=llm_config, system_message="Billing questions.")
tech = ConversableAgent(name="tech", llm_config=llm_config, system_message="Technical questions.")

for desk, topic in ((billing, "a bill"), (tech, "a technical problem")):
    triage.handoffs.add_llm_condition(
        OnCondition(target=AgentTarget(desk), condition=StringLLMCondition(prompt=f"The request is about {topic}.")))

for agent in [billing, tech]:
    agent.handoffs.set_after_work(AgentTarget(triage))

for agent in sorted([billing, tech], key=lambda a: a.name):
    agent.handoffs.add_llm_condition(
        OnCondition(target=RevertToUserTarget(), condition=StringLLMCondition(prompt="The user must answer.")))

pattern = DefaultPattern(initial_agent=triage, agents=[triage, billing, tech], user_agent=None,
                         group_after_work=RevertToUserTarget())
result, context, last_agent = initiate_group_chat(pattern=pattern, messages="My invoice is wrong.",
                                                  max_rounds=12)
