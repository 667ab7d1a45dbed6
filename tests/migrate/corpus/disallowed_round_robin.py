"""Disallowed transitions with round-robin selection: classic picks the next eligible
agent in list order. The critic may not speak twice in a row nor hand back to the
writer directly; the publisher maps to an empty list, which in classic means "anyone"."""

import autogen

llm_config = {"config_list": [{"model": "gpt-4o", "api_key": "sk-test"}]}

writer = autogen.AssistantAgent("writer", system_message="Draft the article.", llm_config=llm_config)
critic = autogen.AssistantAgent("critic", system_message="Critique the draft.", llm_config=llm_config)
fact_checker = autogen.AssistantAgent(
    "fact_checker", system_message="Verify every claim.", llm_config=llm_config
)
publisher = autogen.AssistantAgent(
    "publisher", system_message="Publish the article. Say DONE when published.", llm_config=llm_config
)

disallowed = {
    critic: [critic, writer],
    fact_checker: [writer],
}

chat = autogen.GroupChat(
    agents=[writer, critic, fact_checker, publisher],
    messages=[],
    max_round=9,
    speaker_selection_method="round_robin",
    allowed_or_disallowed_speaker_transitions=disallowed,
    speaker_transitions_type="disallowed",
)


def is_done(message):
    return message["content"].strip() == "DONE"


manager = autogen.GroupChatManager(groupchat=chat, llm_config=llm_config, is_termination_msg=is_done)

writer.initiate_chat(manager, message="Write about the history of the transistor.")
