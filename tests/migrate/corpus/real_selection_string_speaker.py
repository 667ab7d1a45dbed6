"""Reduction (written for flowc) of a pattern seen in real docs and notebooks (issue 12,
class 10): a state-machine selection function whose last branch compares the last speaker
with a string. `last_speaker` is an agent object and agents define no `__eq__`, so Python
never takes that branch and the function falls off its end (None: the chat ends) — the same
outcome the branch meant. The function is fully lowerable as Python runs it; the always-false
test is reported (M003), not the whole function (it fell back to an LLM selector before).
"""

import autogen

config = {"config_list": [{"model": "gpt-4o-mini", "api_key": "sk-test"}]}

initializer = autogen.UserProxyAgent(name="Init")
coder = autogen.AssistantAgent(name="Retrieve_Action_1", llm_config=config,
                               system_message="Write code that retrieves the papers.")
executor = autogen.UserProxyAgent(name="Retrieve_Action_2", human_input_mode="NEVER",
                                  code_execution_config={"work_dir": "paper", "use_docker": False})
scientist = autogen.AssistantAgent(name="Research_Action_1", llm_config=config,
                                   system_message="Categorize the papers in a table.")


def state_transition(last_speaker, groupchat):
    messages = groupchat.messages

    if last_speaker is initializer:
        return coder
    elif last_speaker is coder:
        return executor
    elif last_speaker is executor:
        if messages[-1]["content"] == "exitcode: 1":
            return coder
        else:
            return scientist
    elif last_speaker == "Scientist":
        return None


groupchat = autogen.GroupChat(
    agents=[initializer, coder, executor, scientist],
    messages=[],
    max_round=20,
    speaker_selection_method=state_transition,
)
manager = autogen.GroupChatManager(groupchat=groupchat, llm_config=config)
initializer.initiate_chat(manager, message="Topic: LLM applications papers from last week.")
