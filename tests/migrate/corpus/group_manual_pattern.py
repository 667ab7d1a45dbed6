"""An editorial desk with the AG2 group API: ManualPattern lets the editor-in-chief pick who
speaks next after every turn."""

from autogen import ConversableAgent, LLMConfig, UserProxyAgent
from autogen.agentchat import initiate_group_chat
from autogen.agentchat.group.patterns import ManualPattern

llm_config = LLMConfig(api_type="openai", model="gpt-4o-mini", api_key="sk-test")

with llm_config:
    reporter = ConversableAgent(name="reporter", system_message="You write news copy.")
    fact_checker = ConversableAgent(name="fact_checker", system_message="You verify every claim.")
    copy_editor = ConversableAgent(name="copy_editor", system_message="You fix style and length.")

editor_in_chief = UserProxyAgent(name="editor_in_chief", code_execution_config=False)

pattern = ManualPattern(
    initial_agent=reporter,
    agents=[reporter, fact_checker, copy_editor],
    user_agent=editor_in_chief,
)

result, context, last_agent = initiate_group_chat(
    pattern=pattern,
    messages="Write 200 words on the new tram line opening on Monday.",
    max_rounds=15,
)
