"""Random speaker selection without repeats: a brainstorming circle."""

import autogen

llm_config = {"config_list": [{"model": "gpt-4o-mini", "api_key": "sk-test"}]}

host = autogen.UserProxyAgent("host", human_input_mode="NEVER", code_execution_config=False)
optimist = autogen.AssistantAgent("optimist", system_message="See the upside.", llm_config=llm_config)
skeptic = autogen.AssistantAgent("skeptic", system_message="Find the risks.", llm_config=llm_config)
pragmatist = autogen.AssistantAgent("pragmatist", system_message="Propose next steps.", llm_config=llm_config)

circle = autogen.GroupChat(
    agents=[host, optimist, skeptic, pragmatist],
    messages=[],
    max_round=10,
    speaker_selection_method="random",
    allow_repeat_speaker=False,
)
manager = autogen.GroupChatManager(
    groupchat=circle,
    llm_config=llm_config,
    is_termination_msg=lambda x: x.get("content", "").lower().endswith("that settles it"),
)
host.initiate_chat(manager, message="Should we open a second office?")
