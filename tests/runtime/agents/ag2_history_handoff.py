"""triage hands off (AG2 ``Handoff``); security shows what it was shown.

Imports its siblings: the folder of an ``--agents`` file is importable while it loads.
"""

from ag2 import Agent
from ag2_handoff import triage
from ag2_history import EchoHistoryConfig

AGENTS = {"triage": triage, "security": Agent("security", config=EchoHistoryConfig())}
