"""Two AG2 Agents whose scripted model replies are plain text (no tools)."""

from ag2 import Agent
from ag2.testing import TestConfig

AGENTS = {
    "triage": Agent("triage", config=TestConfig("Have you tried a password reset?")),
    "security": Agent("security", config=TestConfig("Nothing to lock.")),
}
