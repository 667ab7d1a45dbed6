"""A custom speaker selection function and an unrecognised termination test."""

import autogen

llm_config = {"config_list": [{"model": "gpt-4o", "api_key": "sk-test"}]}

initializer = autogen.UserProxyAgent(name="Init", code_execution_config=False)
coder = autogen.AssistantAgent(name="Retrieve_Action_1", llm_config=llm_config,
                               system_message="You are the Coder.")
executor = autogen.UserProxyAgent(name="Retrieve_Action_2", human_input_mode="NEVER",
                                  code_execution_config={"work_dir": "paper", "use_docker": False})
scientist = autogen.AssistantAgent(name="Research_Action_1", llm_config=llm_config,
                                   system_message="You are the Scientist.")


def state_transition(last_speaker, groupchat):
    messages = groupchat.messages
    if last_speaker is initializer:
        return coder
    elif last_speaker is coder:
        return executor
    elif last_speaker is executor:
        if messages[-1]["content"] == "exitcode: 1":
            return coder
        return scientist
    elif last_speaker == scientist:
        return None


groupchat = autogen.GroupChat(
    agents=[initializer, coder, executor, scientist],
    messages=[],
    max_round=20,
    speaker_selection_method=state_transition,
)
manager = autogen.GroupChatManager(
    groupchat=groupchat,
    llm_config=llm_config,
    is_termination_msg=lambda m: len(m.get("content", "")) > 5000,
)
coder.register_nested_chats([{"recipient": scientist, "message": "Summarise", "max_turns": 1}],
                            trigger=executor)
initializer.initiate_chat(manager, message="Topic: LLM applications papers from last week.")
