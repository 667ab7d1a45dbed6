"""Manual speaker selection: a person picks every next speaker at the console."""

from autogen import ConversableAgent, GroupChat, GroupChatManager

llm_config = {"config_list": [{"model": "gpt-4o-mini", "api_key": "sk-test"}]}

teacher = ConversableAgent("teacher", system_message="You explain concepts.", llm_config=llm_config)
student = ConversableAgent("student", system_message="You ask questions.", llm_config=llm_config)
examiner = ConversableAgent(
    "examiner",
    system_message="You quiz the student.",
    llm_config=llm_config,
    is_termination_msg=lambda m: "QUIZ OVER" in (m.get("content") or ""),
)

gc = GroupChat(
    agents=[teacher, student, examiner],
    messages=[],
    max_round=6,
    speaker_selection_method="manual",
    select_speaker_message_template="Pick the next speaker",
)
manager = GroupChatManager(groupchat=gc, llm_config=llm_config)
teacher.initiate_chat(manager, message="Today: photosynthesis.")
