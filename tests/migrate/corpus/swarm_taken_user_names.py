"""A legacy swarm with agents named `user` and `task_user`: the person ag2 makes up to send
the task (its temporary `_User`) must get a third name, not replace either agent."""

from autogen import ConversableAgent, AfterWorkOption
from autogen.agentchat.contrib.swarm_agent import initiate_swarm_chat, AfterWork, register_hand_off

user = ConversableAgent(name="user", llm_config={"model": "x"}, system_message="Writes.")
task_user = ConversableAgent(name="task_user", llm_config={"model": "x"}, system_message="Reviews.")
register_hand_off(user, [AfterWork(task_user)])
register_hand_off(task_user, [AfterWork(user)])
result, ctx, last = initiate_swarm_chat(
    initial_agent=user, agents=[user, task_user], messages="Hello", max_rounds=6
)
