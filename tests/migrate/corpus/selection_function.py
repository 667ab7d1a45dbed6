"""A custom speaker selection function (the shape of AG2's "customized speaker selection"
example): a research pipeline that retries the coder when the code fails."""

import autogen

config_list = [{"model": "gpt-4o", "api_key": "sk-test"}]
gpt4_config = {"cache_seed": 42, "temperature": 0, "config_list": config_list, "timeout": 120}

initializer = autogen.UserProxyAgent(name="Init", code_execution_config=False)
coder = autogen.AssistantAgent(
    name="Retrieve_Action_1",
    llm_config=gpt4_config,
    system_message="""You are the Coder. Given a topic, write code to retrieve related papers from the arXiv API,
print their title, authors, abstract, and link.""",
)
executor = autogen.UserProxyAgent(
    name="Retrieve_Action_2",
    system_message="Executor. Execute the code written by the Coder and report the result.",
    human_input_mode="NEVER",
    code_execution_config={"last_n_messages": 3, "work_dir": "paper", "use_docker": False},
)
scientist = autogen.AssistantAgent(
    name="Research_Action_1",
    llm_config=gpt4_config,
    system_message="You are the Scientist. Read the papers and write a summary.",
)


def state_transition(last_speaker, groupchat):
    """Route: Init -> coder -> executor -> (coder again on failure | scientist) -> end."""
    messages = groupchat.messages

    if last_speaker is initializer:
        return coder
    elif last_speaker is coder:
        return executor
    elif last_speaker is executor:
        if "exitcode: 1" in messages[-1]["content"]:
            return coder
        else:
            return scientist
    elif last_speaker == scientist:
        return None


groupchat = autogen.GroupChat(
    agents=[initializer, coder, executor, scientist],
    messages=[],
    max_round=20,
    speaker_selection_method=state_transition,
)
manager = autogen.GroupChatManager(groupchat=groupchat, llm_config=gpt4_config)

initializer.initiate_chat(manager, message="Topic: LLM applications papers from last week.")
