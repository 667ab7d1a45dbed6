"""Manual speaker selection with an agent named like a number: classic's console reads the
answer as the agent's number in its list, never as a name, so "3" picks the third agent
(`writer`), not the agent named "3"."""

from autogen import ConversableAgent, GroupChat, GroupChatManager

llm_config = {"config_list": [{"model": "gpt-4o-mini", "api_key": "sk-test"}]}

planner = ConversableAgent("planner", system_message="You plan.", llm_config=llm_config)
three = ConversableAgent("3", system_message="You research.", llm_config=llm_config)
writer = ConversableAgent("writer", system_message="You write.", llm_config=llm_config)

gc = GroupChat(
    agents=[planner, three, writer],
    messages=[],
    max_round=6,
    speaker_selection_method="manual",
)
manager = GroupChatManager(groupchat=gc, llm_config=llm_config)
planner.initiate_chat(manager, message="Plan a post.")
