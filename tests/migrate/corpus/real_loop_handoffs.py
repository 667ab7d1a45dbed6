"""Reduction (written for flowc) of a pattern seen in AG2's swarm notebook (issue 12): the
handoff back to triage is registered on every specialist in one `for` loop over a list of
agents. Python runs the call once per agent, so each specialist gets its own
`transfer_<agent>_to_Triage_Agent` tool and rule; before, the call was skipped with no
finding because its owner is the loop variable.
"""

from autogen import AfterWorkOption, ConversableAgent, OnCondition, UserProxyAgent, initiate_swarm_chat, register_hand_off

llm_config = {"config_list": [{"model": "gpt-4o-mini", "api_key": "sk-test"}]}

triage_agent = ConversableAgent(name="Triage_Agent", llm_config=llm_config,
                                system_message="Route the customer to the right desk.")
flight_cancel = ConversableAgent(name="Flight_Cancel_Traversal", llm_config=llm_config,
                                 system_message="Cancel flights.")
lost_baggage = ConversableAgent(name="Lost_Baggage_Traversal", llm_config=llm_config,
                                system_message="Find lost baggage.")

register_hand_off(
    agent=triage_agent,
    hand_to=[
        OnCondition(flight_cancel, "To cancel a flight"),
        OnCondition(lost_baggage, "To find lost baggage"),
    ],
)

transfer_to_triage_description = "Call this when the customer asks about something else."
for agent in [flight_cancel, lost_baggage]:
    register_hand_off(agent=agent, hand_to=OnCondition(triage_agent, transfer_to_triage_description))

user = UserProxyAgent(name="User", code_execution_config=False)

chat_history, context_variables, last_agent = initiate_swarm_chat(
    initial_agent=triage_agent,
    agents=[triage_agent, flight_cancel, lost_baggage],
    user_agent=user,
    messages="I want to cancel flight",
    after_work=AfterWorkOption.REVERT_TO_USER,
    max_rounds=20,
)
