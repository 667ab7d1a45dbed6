"""A research swarm in the pyautogen 0.8 spelling: stay, swarm-manager and by-name after works,
a nested-chat handoff, callable conditions and availability, and a ContextStr condition."""

from autogen import (
    AFTER_WORK,
    ON_CONDITION,
    AfterWork,
    AfterWorkOption,
    SwarmAgent,
    initiate_swarm_chat,
    register_hand_off,
)
from autogen.agentchat.contrib.swarm_agent import ContextStr

llm_config = {"config_list": [{"model": "gpt-4o", "api_key": "sk-test"}]}

context_variables = {"topic": "battery recycling", "sources_found": 0}


def enough_sources(agent, messages):
    """Available once three sources were collected."""
    return agent.get_context("sources_found") >= 3


def pick_next(last_speaker, messages, groupchat):
    """Back to the researcher unless the writer asked for facts."""
    return "researcher"


researcher = SwarmAgent("researcher", system_message="You find sources on {topic}.", llm_config=llm_config)
writer = SwarmAgent("writer", system_message="You write the report.", llm_config=llm_config)
editor = SwarmAgent("editor", system_message="You edit the report.", llm_config=llm_config)
fact_checker = SwarmAgent("fact_checker", system_message="You check the facts.", llm_config=llm_config)

register_hand_off(researcher, [
    ON_CONDITION(writer, ContextStr(template="Enough is known about {topic} to write.")),
    ON_CONDITION(fact_checker, "A claim needs checking before writing.", available=enough_sources),
    ON_CONDITION(
        target={"chat_queue": [{"recipient": fact_checker, "message": "Check these sources.",
                                "summary_method": "last_msg"}]},
        condition="The sources contradict each other.",
    ),
    AFTER_WORK(AfterWorkOption.STAY),
])
register_hand_off(writer, [
    ON_CONDITION(editor, lambda agent, messages: "The draft is complete."),
    AFTER_WORK(editor),
])
register_hand_off(editor, AFTER_WORK(AfterWorkOption.SWARM_MANAGER))
register_hand_off(fact_checker, AfterWork(pick_next))

chat_history, context, last_agent = initiate_swarm_chat(
    initial_agent=researcher,
    agents=[researcher, writer, editor, fact_checker],
    messages="Write a short report on battery recycling in Europe.",
    context_variables=context_variables,
    after_work=AfterWorkOption.REVERT_TO_USER,
    max_rounds=30,
    swarm_manager_args={"llm_config": llm_config},
)
