"""Reduction (written for flowc) of a pattern seen in real notebooks and docs (issue 12,
class 10): a custom speaker-selection function of which one branch cannot be lowered. After
the admin, the next speaker depends on who spoke before the admin (`messages[-2]`), which no
rule condition can read; every other branch is a test on the last speaker, the message count
or the last message's text. Only that branch may fall back to a selector speaker, among the
agents it can return (or nobody: falling off the function returns None and ends the chat),
with one M001 at its line; the other branches must become rules.
"""

import autogen
from autogen import Agent

config = {"config_list": [{"model": "gpt-4o-mini", "api_key": "sk-test"}]}

planner = autogen.AssistantAgent(name="Planner", llm_config=config, system_message="Suggest a plan.")
user_proxy = autogen.UserProxyAgent(name="Admin", code_execution_config=False)
engineer = autogen.AssistantAgent(name="Engineer", llm_config=config, system_message="Write the code.")
scientist = autogen.AssistantAgent(name="Scientist", llm_config=config, system_message="Sort the papers.")
executor = autogen.UserProxyAgent(name="Executor", human_input_mode="NEVER",
                                  code_execution_config={"work_dir": "paper", "use_docker": False})


def custom_speaker_selection_func(last_speaker: Agent, groupchat: autogen.GroupChat):
    """Return an agent, or a method name."""
    messages = groupchat.messages

    if len(messages) <= 1:
        return planner

    if last_speaker is user_proxy:
        if "Approve" in messages[-1]["content"]:
            return engineer
        elif messages[-2]["name"] == "Planner":
            return planner
        elif messages[-2]["name"] == "Scientist":
            return scientist

    elif last_speaker is planner:
        return user_proxy

    elif last_speaker is engineer:
        if "```python" in messages[-1]["content"]:
            return executor
        else:
            return engineer

    elif last_speaker is executor:
        if "exitcode: 1" in messages[-1]["content"]:
            return engineer
        else:
            return scientist

    elif last_speaker is scientist:
        return user_proxy

    else:
        return "random"


groupchat = autogen.GroupChat(
    agents=[user_proxy, engineer, scientist, planner, executor],
    messages=[],
    max_round=20,
    speaker_selection_method=custom_speaker_selection_func,
)
manager = autogen.GroupChatManager(groupchat=groupchat, llm_config=config)
user_proxy.initiate_chat(manager, message="Find a latest paper about gpt-4 on arxiv.")
