"""Local agents (docs/localagents.md): the AgentiHub package index, the Claude session probe,
registered HTTP agents, and dispatch (HTTP jobs, sandboxed cold starts).

The discovery tools owned elsewhere call the pure functions re-exported here:
:func:`merged_records` (``list_agents``), :func:`effective_status`, :func:`find_by_capability`
(``find_agents(capability=...)``), and :meth:`LocalAgents.get` (``get_agent``).
"""

from __future__ import annotations

from agentcoord.localagents._failures import DispatchFailed
from agentcoord.localagents.index import Package, PackageIndex
from agentcoord.localagents.local_agents import LocalAgents
from agentcoord.localagents.manifest import Manifest, capability_tags, read_package_manifest
from agentcoord.localagents.merge import (
    effective_status,
    find_by_capability,
    local_records,
    merged_records,
    pick_for_capability,
    registered_view,
)
from agentcoord.localagents.paths import is_safe_agent_id, package_dir, resolve_agentihub_dir
from agentcoord.stores.agentrecords import (
    AgentRecord,
    AgentRecords,
    AgentTaskRecord,
    TaskRecords,
)

__all__ = [
    "AgentRecord",
    "AgentRecords",
    "AgentTaskRecord",
    "DispatchFailed",
    "LocalAgents",
    "Manifest",
    "Package",
    "PackageIndex",
    "TaskRecords",
    "capability_tags",
    "effective_status",
    "find_by_capability",
    "is_safe_agent_id",
    "local_records",
    "merged_records",
    "package_dir",
    "pick_for_capability",
    "read_package_manifest",
    "registered_view",
    "resolve_agentihub_dir",
]
