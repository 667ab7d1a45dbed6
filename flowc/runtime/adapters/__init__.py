"""Channel adapters: the protocol (:mod:`.base`) and the ``workflow`` adapter."""

from flowc.runtime.adapters.base import (
    Adapter,
    AdapterResult,
    ChannelManifest,
    ChannelMetadata,
    ChannelState,
    Expectation,
    ExpectedTurn,
    Participant,
    ParticipantSchema,
    ProtocolError,
)
from flowc.runtime.adapters.workflow import (
    WORKFLOW_TYPE,
    GraphError,
    WorkflowAdapter,
    WorkflowState,
    compile_graph,
)

__all__ = [
    "WORKFLOW_TYPE",
    "Adapter",
    "AdapterResult",
    "ChannelManifest",
    "ChannelMetadata",
    "ChannelState",
    "Expectation",
    "ExpectedTurn",
    "GraphError",
    "Participant",
    "ParticipantSchema",
    "ProtocolError",
    "WorkflowAdapter",
    "WorkflowState",
    "compile_graph",
]
