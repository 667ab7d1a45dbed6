"""Tools of real_imported_tools.py, in a module beside it (written for flowc, issue 12, class 3)."""

from autogen.agentchat.group import AgentNameTarget, ContextVariables, ReplyResult


def escalate(reason: str, context_variables: ContextVariables) -> ReplyResult:
    """Escalate the ticket to a human specialist."""
    context_variables["escalated"] = True
    return ReplyResult(message=f"Escalated: {reason}", target=AgentNameTarget("specialist"),
                       context_variables=context_variables)
