"""The words of the `.flow` language that both parsers share (:mod:`flowc.dsl.descent`
for valid files, :mod:`flowc.dsl.lalr` for the others)."""

from __future__ import annotations

#: deepest condition nesting accepted (parentheses that only group do not count)
MAX_NESTING = 100

KEYWORDS = frozenset(
    [
        "flow",
        "speaker",
        "speakers",
        "human",
        "tool",
        "sets",
        "clears",
        "hands",
        "off",
        "to",
        "finishes",
        "start",
        "initiator",
        "max_turns",
        "context",
        "when",
        "then",
        "priority",
        "otherwise",
        "sequence",
        "round_robin",
        "condition",
        "target",
        "terminate",
        "or",
        "and",
        "not",
        "always",
        "from",
        "next",
        "stay",
        "scenario",
        "calls",
        "with",
        "expect",
        "turns",
        "true",
        "false",
        "null",
        # properties (`property NAME: PATTERN [SCOPE]`)
        "property",
        "never",
        "eventually",
        "within",
        "turn",
        "time",
        "times",
        "at",
        "most",
        "only",
        "after",
        "before",
        "until",
        "ends",
        "previous",
    ]
)
