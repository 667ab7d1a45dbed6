"""The hub runtime: run compiled flows with AG2's observable behaviour, on a WAL.

>>> from flowc.runtime import Hub, MemoryStore
>>> Hub(MemoryStore()).store.channel_ids()
[]
"""

from flowc.runtime.adapters.base import (
    AdapterResult,
    ChannelManifest,
    ChannelMetadata,
    ChannelState,
    Expectation,
    ProtocolError,
)
from flowc.runtime.adapters.workflow import GraphError, WorkflowAdapter, WorkflowState
from flowc.runtime.clients import AgentClient, ChannelHandle, HumanClient, Turn
from flowc.runtime.envelope import (
    EV_CHANNEL_CLOSED,
    EV_CHANNEL_OPENED,
    EV_CONTEXT_SET,
    EV_EXPECTATION_VIOLATED,
    EV_PACKET,
    EV_TEXT,
    Envelope,
)
from flowc.runtime.hub import Channel, Hub
from flowc.runtime.replies import Finish, Handoff, Reply, ToolCall
from flowc.runtime.transitions import (
    TransitionDecision,
    TransitionRegistry,
    default_registry,
    register_condition,
    register_target,
)
from flowc.runtime.wal import MemoryStore, SqliteStore, WalStore


def _register_vocabulary(registry: TransitionRegistry) -> None:
    from flowc.runtime.vocabulary import register_vocabulary

    register_vocabulary(registry)


# migrate's vocabulary (flowc.runtime.vocabulary) is registered on the default registry
# here, made when the registry is first read: a run whose rules use none of it (or no
# custom name at all) does not load it
default_registry().defer(_register_vocabulary)

__all__ = [
    "EV_CHANNEL_CLOSED",
    "EV_CHANNEL_OPENED",
    "EV_CONTEXT_SET",
    "EV_EXPECTATION_VIOLATED",
    "EV_PACKET",
    "EV_TEXT",
    "AdapterResult",
    "AgentClient",
    "Channel",
    "ChannelHandle",
    "ChannelManifest",
    "ChannelMetadata",
    "ChannelState",
    "Envelope",
    "Expectation",
    "Finish",
    "GraphError",
    "Handoff",
    "Hub",
    "HumanClient",
    "MemoryStore",
    "ProtocolError",
    "Reply",
    "SqliteStore",
    "ToolCall",
    "TransitionDecision",
    "TransitionRegistry",
    "Turn",
    "WalStore",
    "WorkflowAdapter",
    "WorkflowState",
    "register_condition",
    "register_target",
]
