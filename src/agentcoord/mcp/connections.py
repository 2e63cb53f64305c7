"""What the listeners count and what they ask of the daemon's status (the composition root
supplies :class:`agentcoord.daemon.status.DaemonStatus`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

__all__ = ["Connections", "StatusSource"]


@dataclass
class Connections:
    """The listeners' side: open connections (the unix listener counts its own; HTTP asks its
    server) and the HTTP address bound, known once the listener is up."""

    http_addr: str
    unix: int = 0
    http: Callable[[], int] = field(default=lambda: 0)


class StatusSource(Protocol):
    """The daemon's health (``/healthz``) and its status (``agentcoord status``)."""

    def healthy(self) -> tuple[bool, str]: ...

    def status(self) -> dict[str, Any]: ...
