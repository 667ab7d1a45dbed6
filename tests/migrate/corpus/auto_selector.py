"""The classic "auto" group chat: an LLM manager picks who speaks next."""

import autogen

llm_config = {"config_list": [{"model": "gpt-4o", "api_key": "sk-test"}], "cache_seed": 42}

user_proxy = autogen.UserProxyAgent(
    name="User_proxy",
    system_message="A human admin.",
    code_execution_config={"last_n_messages": 2, "work_dir": "groupchat", "use_docker": False},
    human_input_mode="TERMINATE",
)
coder = autogen.AssistantAgent(name="Coder", llm_config=llm_config)
pm = autogen.AssistantAgent(
    name="Product_manager",
    system_message="Creative in software product ideas.",
    llm_config=llm_config,
)

groupchat = autogen.GroupChat(
    agents=[user_proxy, coder, pm],
    messages=[],
    max_round=12,
    send_introductions=True,
    select_speaker_auto_verbose=True,
)
manager = autogen.GroupChatManager(groupchat=groupchat, name="boss", llm_config=llm_config)


@pm.register_for_llm(description="Look up market data for a product idea.")
@user_proxy.register_for_execution()
def market_data(product: str) -> str:
    return "growing"


user_proxy.initiate_chat(
    manager, message="Find a latest paper about gpt-4 on arxiv and find its potential applications in software."
)
