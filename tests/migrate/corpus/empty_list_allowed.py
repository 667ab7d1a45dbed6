"""Allowed transitions with the two classic traps: an agent mapped to [] may hand over to
anyone (the method decides), and an agent missing from the dict ends the chat."""

import autogen

llm_config = {"config_list": [{"model": "gpt-4o", "api_key": "sk-test"}]}

user = autogen.UserProxyAgent("user", human_input_mode="NEVER", code_execution_config=False)
triage = autogen.AssistantAgent("triage", system_message="Route the request.", llm_config=llm_config)
billing = autogen.AssistantAgent("billing", system_message="Billing questions.", llm_config=llm_config)
tech = autogen.AssistantAgent("tech", system_message="Technical questions.", llm_config=llm_config)

gc = autogen.GroupChat(
    agents=[user, triage, billing, tech],
    messages=[],
    max_round=10,
    speaker_selection_method="round_robin",
    allowed_or_disallowed_speaker_transitions={
        user: [triage],
        triage: [],
        billing: [tech],
    },
    speaker_transitions_type="allowed",
)
manager = autogen.GroupChatManager(groupchat=gc, llm_config=llm_config)
user.initiate_chat(manager, message="My invoice is wrong and the app crashes.")
