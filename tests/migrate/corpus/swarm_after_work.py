"""A legacy swarm whose agents hand over only after their work (ag2 0.9 contrib spelling):
intake passes the request to the drafter, drafts and reviews alternate until max_rounds."""

from autogen import ConversableAgent
from autogen.agentchat.contrib.swarm_agent import AfterWork, initiate_swarm_chat, register_hand_off

llm_config = {"config_list": [{"model": "gpt-4o-mini", "api_key": "sk-test"}]}

intake = ConversableAgent("intake", system_message="You restate the request.", llm_config=llm_config)
drafter = ConversableAgent("drafter", system_message="You draft the reply.", llm_config=llm_config)
reviewer = ConversableAgent("reviewer", system_message="You review the draft.", llm_config=llm_config)

register_hand_off(intake, AfterWork(drafter))
register_hand_off(drafter, AfterWork(reviewer))
register_hand_off(reviewer, AfterWork(drafter))

chat_result, context_variables, last_agent = initiate_swarm_chat(
    initial_agent=intake,
    agents=[intake, drafter, reviewer],
    messages="Answer the customer's question about delivery times.",
    max_rounds=6,
)
