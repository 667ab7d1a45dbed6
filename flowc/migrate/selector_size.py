"""How large the selector speakers of a `SelectorGroupChat` without repeats would be.

Translated exactly, such a team gets one selector speaker after each participant, each
listing every other participant: what is written grows with the square of the team.
:func:`selectors_size` estimates it from the names and the prompt, before anything is
written, and :mod:`flowc.migrate.agentchat` writes one selector instead past
:data:`MAX_SELECTOR_BYTES`.
"""

from __future__ import annotations

import flowc.migrate.model as mm

__all__ = ["MAX_SELECTOR_BYTES", "selector_role", "selectors_size"]

#: the most bytes of selector speakers (:func:`selectors_size`) a SelectorGroupChat without
#: repeats gets one selector speaker per previous speaker for: each lists the others, so
#: what is written grows with the square of the team; past it, one selector speaker
MAX_SELECTOR_BYTES = 1 << 20
#: the bytes a selector speaker writes for each candidate besides its name (twice:
#: ``  # C speaks next.``, ``  tool transfer_to_C``) and for itself besides its comment
_CANDIDATE_BYTES, _SELECTOR_BYTES, _OWN_NAME_BYTES = 38, 32, 24


def selector_role(after: str | None, prompt: str | None) -> str:
    """The role (the comment) of the selector speaker after ``after`` (None: after the task)."""
    return (
        (f"After {after}: " if after else "")
        + "Chooses the next speaker (AgentChat SelectorGroupChat): calls the transfer "
        "tool of the participant who should speak next."
        + (f" Prompt: {prompt}" if prompt is not None else "")
    )


def selectors_size(participants: list[str], prompt: str | None) -> int:
    """About how many bytes the selector speakers after each previous speaker write: one
    per participant, each naming every other one twice (a tool, its comment) and repeating
    the ``selector_prompt`` in its comment (a few lines, unless a word of it is longer).

    >>> selectors_size(["ab", "cd", "ef"], None)
    996
    """
    n, longest = len(participants), max((len(p.encode()) for p in participants), default=0)
    names = sum(len(p.encode()) for p in participants)
    comment = sum(len(line.encode()) + 1 for line in mm.comment_lines(selector_role("", prompt)))
    each = _SELECTOR_BYTES + comment + _CANDIDATE_BYTES * (n - 1) + 3 * _OWN_NAME_BYTES + longest
    # each's own name (`selector_after_P`: its speaker, its rule, the closing rule), its
    # `after P` comment and rule, and that rule padded to the longest
    return n * each + (n - 1) * 2 * names + 2 * names + 6 * names
