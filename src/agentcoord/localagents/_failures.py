"""Dispatch failures: an ``isError`` result whose text is seed 001's JSON (with ``retry``)."""

from __future__ import annotations

import json
from typing import Any

from agentcoord.errors import OperationFailed

__all__ = ["DispatchFailed"]


class DispatchFailed(OperationFailed):
    """Routing or delivery failed; ``data`` is ``{success: false, error, retry, ...}``."""

    def __init__(self, error: str, *, retry: bool, **extra: Any) -> None:
        self.data: dict[str, Any] = {"success": False, "error": error, "retry": retry, **extra}
        super().__init__(error)

    def __str__(self) -> str:  # rendered late: handlers add ``agent_id``/``job_id`` on the way up
        return json.dumps(self.data, separators=(",", ":"))
