"""A two-agent chat: there is no group chat to migrate."""

from autogen import AssistantAgent, UserProxyAgent

assistant = AssistantAgent("assistant", llm_config={"config_list": [{"model": "gpt-4o", "api_key": "sk-test"}]})
user = UserProxyAgent("user", code_execution_config=False)
user.initiate_chat(assistant, message="Tell me a joke.")
