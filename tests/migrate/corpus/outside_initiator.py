"""Round robin where the person who starts the chat is not one of the group's agents."""

from autogen import AssistantAgent, GroupChat, GroupChatManager, UserProxyAgent

config_list = [{"model": "gpt-4o", "api_key": "sk-test"}]
llm_config = {"config_list": config_list, "temperature": 0}

customer = UserProxyAgent(
    "customer",
    human_input_mode="NEVER",
    code_execution_config=False,
    max_consecutive_auto_reply=5,
)
researcher = AssistantAgent(
    "researcher",
    system_message="Find the facts the customer needs.",
    llm_config=llm_config,
)
analyst = AssistantAgent(
    "analyst",
    system_message="Turn the facts into a recommendation.",
    llm_config=llm_config,
)
reviewer = AssistantAgent(
    "reviewer",
    system_message="Check the recommendation. Reply APPROVED when it is sound.",
    llm_config=llm_config,
)

group = GroupChat(
    agents=[researcher, analyst, reviewer],
    messages=[],
    max_round=8,
    speaker_selection_method="round_robin",
    allow_repeat_speaker=False,
)
manager = GroupChatManager(
    groupchat=group,
    name="coordinator",
    llm_config=llm_config,
    is_termination_msg=lambda msg: "APPROVED" in msg.get("content", ""),
    max_consecutive_auto_reply=3,
)

if __name__ == "__main__":
    customer.initiate_chat(manager, message="Should we move our API to gRPC?")
