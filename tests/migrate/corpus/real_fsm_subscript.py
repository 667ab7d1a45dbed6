"""Reduction (written for flowc) of a pattern seen in real notebooks and blog posts: the
allowed-transitions graph of a finite-state-machine group chat is built by subscript
assignment and `.append`, not as a dict literal (issue 12, class 1). Every entry must reach
the flow; before, the dict read as `{}` and the chat ended after the kickoff.
"""

from autogen import AssistantAgent, GroupChat, GroupChatManager, UserProxyAgent

config = {"config_list": [{"model": "gpt-4o-mini", "api_key": "sk-test"}]}

user = UserProxyAgent(name="User", code_execution_config=False, human_input_mode="NEVER")
planner = AssistantAgent(name="Planner", llm_config=config, system_message="Plans the steps.")
engineer = AssistantAgent(name="Engineer", llm_config=config, system_message="Writes the code.")
critic = AssistantAgent(name="Critic", llm_config=config, system_message="Reviews the code.")

graph = {}
graph[user] = [planner]
graph[planner] = [engineer]
graph[engineer] = [critic]
graph[critic] = [engineer]
graph[critic].append(planner)

chat = GroupChat(
    agents=[user, planner, engineer, critic],
    messages=[],
    max_round=10,
    allowed_or_disallowed_speaker_transitions=graph,
    speaker_transitions_type="allowed",
)
manager = GroupChatManager(groupchat=chat, llm_config=config)
user.initiate_chat(manager, message="Count from 1 to 5 in Python.")
