"""A legacy swarm (pyautogen 0.8 spelling): not translated by this version."""

from autogen import AFTER_WORK, ON_CONDITION, AfterWorkOption, SwarmAgent, initiate_swarm_chat, register_hand_off

llm_config = {"config_list": [{"model": "gpt-4o", "api_key": "sk-test"}]}
agent_1 = SwarmAgent("agent_1", llm_config=llm_config)
agent_2 = SwarmAgent("agent_2", llm_config=llm_config)
register_hand_off(agent_1, [ON_CONDITION(agent_2, "Transfer to agent 2"), AFTER_WORK(AfterWorkOption.TERMINATE)])
chat_history, context_variables, last_agent = initiate_swarm_chat(
    initial_agent=agent_1, agents=[agent_1, agent_2], messages="Hello", max_rounds=5
)
