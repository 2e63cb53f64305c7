"""Generated protobuf code for the agent.v1 wire format (see proto/).

``agent_pb2`` runs on first use, not on import (:mod:`agentcoord.kernel.lazy`): protobuf and the
descriptors cost ~12 ms that the daemon's start-up does not need.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentcoord.kernel.lazy import on_first_use

__all__ = ["agent_pb2"]

if TYPE_CHECKING:
    from agentcoord.proto.agent.v1 import agent_pb2  # the generated stubs (agent_pb2.pyi)
else:
    agent_pb2 = on_first_use(f"{__name__}.agent_pb2")
