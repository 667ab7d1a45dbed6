"""Reduction (written for flowc) of the AG2 group API's AutoPattern with a user agent (issue 12,
class 8). AG2's group chat holds the user agent beside the pattern's agents and its group
manager may pick it (checked on ag2 0.9.10: the selection prompt lists ['triage', 'billing',
'user']), so the selector speaker has a transfer tool for the user too.
"""

from autogen import ConversableAgent, LLMConfig
from autogen.agentchat import initiate_group_chat
from autogen.agentchat.group.patterns import AutoPattern

llm_config = LLMConfig(api_type="openai", model="gpt-4o-mini")

triage = ConversableAgent("triage", llm_config=llm_config, description="Sorts the request.")
billing = ConversableAgent("billing", llm_config=llm_config, description="Answers billing questions.")
user = ConversableAgent("user", human_input_mode="ALWAYS")

pattern = AutoPattern(
    initial_agent=triage,
    agents=[triage, billing],
    user_agent=user,
    group_manager_args={"llm_config": llm_config},
)
result, context, last_agent = initiate_group_chat(
    pattern=pattern, messages="My invoice is wrong.", max_rounds=10
)
