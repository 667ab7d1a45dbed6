"""A mapping whose value is neither a callable nor an AG2 Agent."""

AGENTS = {"triage": "please answer politely"}
