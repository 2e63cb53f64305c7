"""What ``agentcoord status``, ``/healthz`` and the console say about the running daemon."""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING, Any

from agentcoord import __version__
from agentcoord.daemon.natsd import ROOM_BYTES, has_room
from agentcoord.mcp.connections import Connections

if TYPE_CHECKING:
    from agentcoord.daemon.services import Services

__all__ = ["DaemonStatus"]


class DaemonStatus:
    """Health and status of one daemon, read from its services when asked."""

    def __init__(self, services: Services, connections: Connections) -> None:
        self._s = services
        self._connections = connections
        self._started_monotonic = time.monotonic()

    def healthy(self) -> tuple[bool, str]:
        """Ready when NATS is linked and the state disk has room for writes (docs/reliability.md
        "A full disk")."""
        ok, why = self._s.nats.healthy()
        state_dir = self._s.config.state_dir
        if ok and not has_room(state_dir):
            return False, f"the state disk is full ({state_dir}: under {ROOM_BYTES >> 20} MiB free)"
        return ok, why

    def status(self) -> dict[str, Any]:
        s, cfg = self._s, self._s.config
        ok, why = self.healthy()
        sup = s.nats.supervisor
        return {
            "version": __version__,
            "pid": os.getpid(),
            "uptime_s": round(time.monotonic() - self._started_monotonic, 3),
            "healthy": ok,
            "health": why,
            "nats_url": s.nats.url,
            "nats_pid": sup.pid if sup else None,
            "nats_restarts": sup.restarts if sup else 0,
            "nats_reconnects": s.nats.reconnects,
            "state_dir": str(cfg.state_dir),
            "store_path": (
                str(cfg.state_dir / "objects.db")
                if cfg.store == "sqlite"
                else f"kubernetes {cfg.kubeconfig} ns={cfg.kube_namespace}"
            ),
            "socket": str(cfg.socket_path),
            "http_addr": self._connections.http_addr,
            "connections": {"unix": self._connections.unix, "http": self._connections.http()},
            "local_agents": s.local_agents.describe(),
        }
