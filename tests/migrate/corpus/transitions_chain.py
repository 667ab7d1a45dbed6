"""A planner -> coder -> executor -> reviewer pipeline with allowed speaker transitions.

Every agent has exactly one allowed successor, so classic never asks the LLM ("auto"
with a single candidate), and the reviewer has no entry: after it speaks the chat ends.
"""

import autogen
from autogen import register_function

llm_config = {"config_list": [{"model": "gpt-4o-mini", "api_key": "sk-test"}]}

admin = autogen.UserProxyAgent(
    name="Admin",
    system_message="A human admin who gives the task.",
    code_execution_config=False,
    human_input_mode="NEVER",
)
planner = autogen.AssistantAgent(
    name="Planner",
    system_message="""Planner. Suggest a plan in numbered steps.
Revise the plan when the reviewer asks.""",
    llm_config=llm_config,
)
coder = autogen.AssistantAgent(
    name="Coder",
    system_message="Coder. Write Python code that follows the plan.",
    llm_config=llm_config,
)
executor = autogen.UserProxyAgent(
    name="Executor",
    system_message="Executor. Run the code and report the result.",
    human_input_mode="NEVER",
    code_execution_config={"work_dir": "coding", "use_docker": False},
)
reviewer = autogen.AssistantAgent(
    name="Reviewer",
    system_message="Reviewer. Check the result and finish with 'TERMINATE'.",
    llm_config=llm_config,
)


def search_docs(query: str) -> str:
    """Search the library documentation for a query."""
    return "no results"


register_function(search_docs, caller=planner, executor=executor, description="Search the docs.")

allowed = {
    admin: [planner],
    planner: [coder],
    coder: [executor],
    executor: [reviewer],
}

groupchat = autogen.GroupChat(
    agents=[admin, planner, coder, executor, reviewer],
    messages=[],
    max_round=12,
    allowed_or_disallowed_speaker_transitions=allowed,
    speaker_transitions_type="allowed",
)
manager = autogen.GroupChatManager(
    groupchat=groupchat,
    llm_config=llm_config,
    is_termination_msg=lambda x: x.get("content", "").rstrip().endswith("TERMINATE"),
)

admin.initiate_chat(manager, message="Plot the NVDA stock price for 2024.")
