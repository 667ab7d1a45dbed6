"""A data-analysis group chat (classic GroupChat) with run-time settings that have no routing
meaning in a flow: eligibility policies, clear-history, admin takeover, a sequential chat
afterwards."""

import autogen
from autogen import AssistantAgent, GroupChat, GroupChatManager, UserProxyAgent

config_list = autogen.config_list_from_json("OAI_CONFIG_LIST")
llm_config = {"config_list": config_list, "cache_seed": 42}


class OnlyAfterData:
    """An `AgentEligibilityPolicy` (autogen 0.12+): the analyst may speak only once the loader
    has produced data."""

    def is_eligible(self, agent, ctx):
        return agent.name != "analyst" or any(m.get("name") == "loader" for m in ctx.messages)


admin = UserProxyAgent(
    name="Admin",
    system_message="A human admin who supervises the analysis.",
    human_input_mode="TERMINATE",
    code_execution_config=False,
)
loader = AssistantAgent(name="loader", system_message="You load the data set.", llm_config=llm_config)
analyst = AssistantAgent(name="analyst", system_message="You analyse the data.", llm_config=llm_config)
reporter = AssistantAgent(name="reporter", system_message="You write the findings.", llm_config=llm_config)

groupchat = GroupChat(
    agents=[admin, loader, analyst, reporter],
    messages=[],
    max_round=12,
    speaker_selection_method="round_robin",
    func_call_filter=True,
    enable_clear_history=True,
    admin_name="Admin",
    eligibility_policies=[OnlyAfterData()],
)
manager = GroupChatManager(groupchat=groupchat, llm_config=llm_config)

admin.initiate_chat(manager, message="Load sales.csv and report the monthly trend.")
admin.initiate_chats([
    {"recipient": reporter, "message": "Turn the findings into a one-page memo.", "max_turns": 1},
])
