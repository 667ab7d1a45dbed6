"""Reduction (written for flowc) of notebooks whose names are rebound: another function has a
local variable with the agent's name, and a later cell rebinds the names used by the chat
(issue 12, class 2). Names resolve as Python resolves them where the chat is built: the
speakers are Admin, Writer and Editor, in this order.
"""

import autogen

config = {"config_list": [{"model": "gpt-4o-mini", "api_key": "sk-test"}]}


def make_proxy():
    user_proxy = autogen.UserProxyAgent(name="proxy", code_execution_config=False)
    return user_proxy


user_proxy = autogen.UserProxyAgent(
    name="Admin", code_execution_config=False, human_input_mode="NEVER"
)
writer = autogen.AssistantAgent(name="Writer", llm_config=config, system_message="Writes.")
editor = autogen.AssistantAgent(name="Editor", llm_config=config, system_message="Edits.")

groupchat = autogen.GroupChat(
    agents=[user_proxy, writer, editor],
    messages=[],
    max_round=5,
    speaker_selection_method="round_robin",
)
manager = autogen.GroupChatManager(groupchat=groupchat, llm_config=config)
user_proxy.initiate_chat(manager, message="Write a limerick about compilers.")

# a later cell: a two-agent chat reuses the names
user_proxy = autogen.UserProxyAgent(name="tester", code_execution_config=False)
writer = autogen.AssistantAgent(name="Poet", llm_config=config)
user_proxy.initiate_chat(writer, message="Another one.")
