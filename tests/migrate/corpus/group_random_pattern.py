"""A brainstorming panel with the AG2 group API: RandomPattern picks a random other panellist
after every turn."""

from autogen import ConversableAgent, LLMConfig
from autogen.agentchat import run_group_chat
from autogen.agentchat.group.patterns import RandomPattern

llm_config = LLMConfig(api_type="openai", model="gpt-4o-mini", api_key="sk-test")

with llm_config:
    optimist = ConversableAgent(name="optimist", system_message="You see the upside of every idea.")
    skeptic = ConversableAgent(name="skeptic", system_message="You find the weak spots of every idea.")
    engineer = ConversableAgent(name="engineer", system_message="You judge what can be built.")

pattern = RandomPattern(initial_agent=optimist, agents=[optimist, skeptic, engineer])

response = run_group_chat(
    pattern=pattern,
    messages="Ideas for a city bike-sharing scheme that pays for itself.",
    max_rounds=9,
)
