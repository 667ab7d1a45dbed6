"""The group API with agents named `user` and `task_user`: the person ag2 makes up to send
the task (its temporary `_User`) must get a third name, not replace either agent."""

from autogen import ConversableAgent, LLMConfig
from autogen.agentchat import initiate_group_chat
from autogen.agentchat.group.patterns import RoundRobinPattern

llm = LLMConfig(api_type="openai", model="gpt-4o-mini")
user = ConversableAgent(name="user", llm_config=llm, system_message="Writes drafts.")
task_user = ConversableAgent(name="task_user", llm_config=llm, system_message="Reviews drafts.")
pattern = RoundRobinPattern(initial_agent=user, agents=[user, task_user])
result, ctx, last = initiate_group_chat(pattern=pattern, messages="Hello", max_rounds=6)
