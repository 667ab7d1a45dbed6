"""The hub runtime: run compiled flows with AG2's observable behaviour, on a WAL.

>>> from flowc.runtime import Hub, MemoryStore
>>> Hub(MemoryStore()).store.channel_ids()
[]
"""

from flowc.runtime import vocabulary as _vocabulary  # noqa: F401  (registers migrate's vocabulary)
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
    register_condition,
    register_target,
)
from flowc.runtime.wal import MemoryStore, SqliteStore, WalStore

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
