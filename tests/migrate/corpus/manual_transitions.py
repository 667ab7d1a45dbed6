"""Manual speaker selection within allowed transitions: after each agent a person picks one
of the two agents that may follow it, so classic numbers a different list each time."""

from autogen import ConversableAgent, GroupChat, GroupChatManager

llm_config = {"config_list": [{"model": "gpt-4o-mini", "api_key": "sk-test"}]}

planner = ConversableAgent("planner", system_message="You split the work.", llm_config=llm_config)
coder = ConversableAgent("coder", system_message="You write the code.", llm_config=llm_config)
tester = ConversableAgent("tester", system_message="You test the code.", llm_config=llm_config)

gc = GroupChat(
    agents=[planner, coder, tester],
    messages=[],
    max_round=7,
    speaker_selection_method="manual",
    allowed_or_disallowed_speaker_transitions={
        planner: [coder, tester],
        coder: [planner, tester],
        tester: [planner, coder],
    },
    speaker_transitions_type="allowed",
)
manager = GroupChatManager(groupchat=gc, llm_config=llm_config)
planner.initiate_chat(manager, message="Add a retry to the upload.")
