"""A newsletter desk with the AG2 group API (RoundRobinPattern, no user agent): the research
notes are handed in as a message from the researcher, so the researcher sends the kickoff and
the writer, the initial agent, speaks first."""

from autogen import ConversableAgent, LLMConfig
from autogen.agentchat import initiate_group_chat
from autogen.agentchat.group.patterns import RoundRobinPattern

llm_config = LLMConfig(api_type="openai", model="gpt-4o-mini", api_key="sk-test")

with llm_config:
    writer = ConversableAgent(name="writer", system_message="You write the weekly newsletter.")
    researcher = ConversableAgent(name="researcher", system_message="You collect facts and links.")
    editor = ConversableAgent(name="editor", system_message="You cut the newsletter to 300 words.")

pattern = RoundRobinPattern(initial_agent=writer, agents=[writer, researcher, editor])

result, context, last_agent = initiate_group_chat(
    pattern=pattern,
    messages=[{
        "role": "user",
        "name": "researcher",
        "content": "Notes for this week: the tram line opens Monday; the library extends its hours.",
    }],
    max_rounds=8,
)
