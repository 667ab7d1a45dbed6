"""Reduction (written for flowc) of group chats whose agents come from classes flowc does not
know: an agent wrapping a LlamaIndex agent, and a subclass of AssistantAgent defined in the
notebook (issue 12, class 7). Both take part as speakers; what their classes do is reported.
"""

import autogen
from autogen.agentchat.contrib.llamaindex_conversable_agent import LLamaIndexConversableAgent

config = {"config_list": [{"model": "gpt-4o-mini", "api_key": "sk-test"}]}


class CheckedAssistant(autogen.AssistantAgent):
    def generate_reply(self, messages=None, sender=None, **kwargs):
        return super().generate_reply(messages=messages, sender=sender, **kwargs)


location_specialist = LLamaIndexConversableAgent(
    "location_specialist",
    llama_index_agent=None,
    system_message="You help customers find the best places to stay.",
    description="Finds hotels and neighbourhoods.",
)
planner = CheckedAssistant(name="planner", llm_config=config, system_message="Plans the trip.")
user = autogen.UserProxyAgent(name="customer", code_execution_config=False, human_input_mode="NEVER")

groupchat = autogen.GroupChat(
    agents=[user, location_specialist, planner],
    messages=[],
    max_round=4,
    speaker_selection_method="round_robin",
)
manager = autogen.GroupChatManager(groupchat=groupchat, llm_config=config)
user.initiate_chat(manager, message="Plan three days in Lisbon.")
