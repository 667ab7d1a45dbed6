"""A RoundRobinPattern review cycle (AG2 group API) with a user agent in the ring."""

from autogen import ConversableAgent, LLMConfig
from autogen.agentchat import run_group_chat
from autogen.agentchat.group.patterns import RoundRobinPattern

llm_config = LLMConfig(api_type="openai", model="gpt-4o-mini", api_key="sk-test")

with llm_config:
    drafter = ConversableAgent(name="drafter", system_message="Draft the release notes.")
    checker = ConversableAgent(name="checker", system_message="Check every claim against the changelog.")
    stylist = ConversableAgent(name="stylist", system_message="Fix tone and formatting.")

reader = ConversableAgent(name="reader", human_input_mode="NEVER", llm_config=False,
                          description="A reader who comments on each round.")

pattern = RoundRobinPattern(
    initial_agent=checker,
    agents=[drafter, checker, stylist],
    user_agent=reader,
)

response = run_group_chat(pattern=pattern, messages="Release notes for v2.3, please.", max_rounds=9)
response.process()
