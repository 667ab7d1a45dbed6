"""Reduction (written for flowc) of group-API apps whose tools live in another module, and of
agents given one callable as `functions=f` instead of a list (issue 12, classes 3 and 4).
`escalate` is read from real_tools/handoff_tools.py beside this file (statically, never
imported): its handoff and context write become declared effects. `lookup_order` comes from a
package that is not beside the input: it is reported (M002) instead of silently declared.
"""

from autogen import ConversableAgent, LLMConfig
from autogen.agentchat import initiate_group_chat
from autogen.agentchat.group import ContextVariables, ReplyResult
from autogen.agentchat.group.patterns import DefaultPattern
from shop.backend import lookup_order

from real_tools.handoff_tools import escalate

llm_config = LLMConfig(api_type="openai", model="gpt-4o-mini")


def close_ticket(context_variables: ContextVariables) -> ReplyResult:
    """Close the ticket."""
    context_variables["closed"] = True
    return ReplyResult(message="Closed.", context_variables=context_variables)


support = ConversableAgent("support", llm_config=llm_config, functions=[escalate, lookup_order])
specialist = ConversableAgent("specialist", llm_config=llm_config, functions=close_ticket)

pattern = DefaultPattern(
    initial_agent=support,
    agents=[support, specialist],
    context_variables=ContextVariables(data={"escalated": False, "closed": False}),
)
initiate_group_chat(pattern=pattern, messages="My parcel never arrived.", max_rounds=8)
