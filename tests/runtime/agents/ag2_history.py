"""An AG2 Agent whose model replies with what it was shown: the conversation so far.

Its ``TestConfig`` subclass creates a model double that lists the messages it got
(another speaker's text as the workflow view labels it, ``<mine>`` for its own), so
the transcript shows what the view put in front of the agent.
"""

from collections.abc import Sequence
from typing import Any

from ag2 import Agent, Context
from ag2.config import LLMClient
from ag2.events import BaseEvent, ModelMessage, ModelRequest, ModelResponse, TextInput
from ag2.testing import TestConfig


class EchoHistory(LLMClient):
    async def __call__(self, messages: Sequence[BaseEvent], context: Context,
                       **kwargs: Any) -> ModelResponse:
        seen = []
        for m in messages:
            if isinstance(m, ModelRequest):
                seen.append(" / ".join(p.content for p in m.parts if isinstance(p, TextInput)))
            elif isinstance(m, ModelMessage):
                seen.append("<mine>")
        message = ModelMessage("saw: " + ", ".join(seen))
        await context.send(message)
        return ModelResponse(message)


class EchoHistoryConfig(TestConfig):
    def create(self) -> EchoHistory:  # type: ignore[override]
        return EchoHistory()


AGENTS = {"triage": Agent("triage", config=EchoHistoryConfig())}
