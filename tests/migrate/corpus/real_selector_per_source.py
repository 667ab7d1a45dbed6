"""Reduction (written for flowc) of `auto` selection under a transitions graph and under
`allow_repeat_speaker=False` (issue 12, class 8). Classic offers the model only the speakers
allowed after the last one; one merged selector would let a forbidden transition run
(researcher -> selector -> user). Each distinct candidate set gets its own selector speaker.
"""

import autogen

config = {"config_list": [{"model": "gpt-4o-mini", "api_key": "sk-test"}]}

user = autogen.UserProxyAgent(name="user", code_execution_config=False, human_input_mode="NEVER")
researcher = autogen.AssistantAgent(name="researcher", llm_config=config, description="Finds sources.")
writer = autogen.AssistantAgent(name="writer", llm_config=config, description="Writes the report.")
critic = autogen.AssistantAgent(name="critic", llm_config=config, description="Reviews the report.")

transitions = {
    user: [researcher, writer],
    researcher: [writer, critic],
    writer: [critic, user],
    critic: [writer, researcher],
}
groupchat = autogen.GroupChat(
    agents=[user, researcher, writer, critic],
    messages=[],
    max_round=12,
    allowed_or_disallowed_speaker_transitions=transitions,
    speaker_transitions_type="allowed",
    allow_repeat_speaker=False,
)
manager = autogen.GroupChatManager(groupchat=groupchat, llm_config=config)
user.initiate_chat(manager, message="A one-page report on solar storms.")
