"""Reduction (written for flowc) of the `is_termination_msg` idioms of real notebooks and docs
(issue 12, class 6): a guarded `rstrip().endswith`, `.find(...) >= 0`, an upper-cased tail
compared with `==`, and a two-statement `def`. Each is lowered to a text condition.
"""

import autogen

config = {"config_list": [{"model": "gpt-4o-mini", "api_key": "sk-test"}]}


def termination_msg(x):
    have_content = x.get("content", None) is not None
    if have_content and "TERMINATE" in x["content"]:
        return True
    return False


boss = autogen.UserProxyAgent(
    name="Boss",
    code_execution_config=False,
    human_input_mode="NEVER",
    is_termination_msg=termination_msg,
)
coder = autogen.AssistantAgent(
    name="Coder",
    llm_config=config,
    is_termination_msg=lambda x: x.get("content", "").find("TERMINATE") >= 0,
)
reviewer = autogen.AssistantAgent(
    name="Reviewer",
    llm_config=config,
    is_termination_msg=lambda x: isinstance(x, dict)
    and str(x.get("content", ""))[-9:].upper() == "TERMINATE",
)

groupchat = autogen.GroupChat(
    agents=[boss, coder, reviewer], messages=[], max_round=6, speaker_selection_method="round_robin"
)
manager = autogen.GroupChatManager(
    groupchat=groupchat,
    llm_config=config,
    is_termination_msg=lambda x: x.get("content", "")
    and x.get("content", "").rstrip().endswith("TERMINATE"),
)
boss.initiate_chat(manager, message="Write a function that reverses a string.")
