"""A mapping that names a speaker the flow does not declare."""

from ag2 import Agent
from ag2.testing import TestConfig

AGENTS = {
    "triage": Agent("triage", config=TestConfig("Hi.")),
    "billing": Agent("billing", config=TestConfig("Paid.")),
}
