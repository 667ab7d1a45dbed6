"""The AG2 0.9+ group API: not translated by this version of flowc migrate."""

from autogen import ConversableAgent, LLMConfig
from autogen.agentchat import initiate_group_chat
from autogen.agentchat.group.patterns import AutoPattern

llm_config = LLMConfig(api_type="openai", model="gpt-4o-mini")
with llm_config:
    triage = ConversableAgent(name="triage_agent", system_message="Triage requests.")
    tech = ConversableAgent(name="tech_agent", system_message="Solve technical issues.")
user = ConversableAgent(name="user", human_input_mode="ALWAYS")

pattern = AutoPattern(initial_agent=triage, agents=[triage, tech], user_agent=user,
                      group_manager_args={"llm_config": llm_config})
result, context, last_agent = initiate_group_chat(pattern=pattern, messages="My laptop is hot.", max_rounds=10)
