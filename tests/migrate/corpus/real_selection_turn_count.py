"""Reduction (written for flowc) of a pattern seen in a real app (issue 12, class 10): a
debate whose selection function counts turns through a local name,
`turn = len(groupchat.messages) - 1`, and picks the next speaker by that count. The name is
followed (it was "an assignment the lowering does not follow" and the whole function fell
back to an LLM selector); each `turn == k` is the message count k + 1.
"""

from autogen import AssistantAgent, GroupChat, GroupChatManager, UserProxyAgent

config = {"config_list": [{"model": "gpt-4o-mini", "api_key": "sk-test"}]}

architect = AssistantAgent(name="Architect", llm_config=config, system_message="Argue for option A.")
challenger = AssistantAgent(name="Challenger", llm_config=config, system_message="Argue for option B.")
judge = AssistantAgent(name="Judge", llm_config=config, system_message="Give the verdict.")
moderator = UserProxyAgent(name="moderator", human_input_mode="NEVER", code_execution_config=False)


def debate_flow(last_speaker, groupchat):
    # messages[0] is the moderator opener, agent turns start at index 1
    turn = len(groupchat.messages) - 1

    if turn == 0:
        return architect
    elif turn == 1:
        return challenger
    elif turn == 2:
        return architect
    elif turn == 3:
        return judge
    else:
        return moderator


groupchat = GroupChat(
    agents=[moderator, architect, challenger, judge],
    messages=[],
    max_round=6,
    speaker_selection_method=debate_flow,
)
manager = GroupChatManager(groupchat=groupchat, llm_config=config)
moderator.initiate_chat(manager, message="Debate: Postgres or MongoDB for an event store?")
