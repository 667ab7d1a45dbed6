"""A writer / critic / editor round robin, as in the AG2 GroupChat tutorials."""

import os

import autogen

llm_config = {"config_list": [{"model": "gpt-4o-mini", "api_key": os.environ.get("OPENAI_API_KEY", "sk-test")}]}

user_proxy = autogen.UserProxyAgent(
    name="user_proxy",
    human_input_mode="NEVER",
    code_execution_config=False,
    description="The person who asked for the blog post.",
)
writer = autogen.AssistantAgent(
    name="writer",
    system_message="You write engaging technical blog posts. Revise when the critic asks.",
    llm_config=llm_config,
)
critic = autogen.AssistantAgent(
    name="critic",
    system_message="You review drafts and list concrete improvements.",
    llm_config=llm_config,
)
editor = autogen.AssistantAgent(
    name="editor",
    system_message="You polish the final text. Say TERMINATE when it is ready.",
    llm_config=llm_config,
)

groupchat = autogen.GroupChat(
    agents=[user_proxy, writer, critic, editor],
    messages=[],
    max_round=7,
    speaker_selection_method="round_robin",
)
manager = autogen.GroupChatManager(groupchat=groupchat, llm_config=llm_config)

user_proxy.initiate_chat(manager, message="Write a short post about HTTP/3.")
