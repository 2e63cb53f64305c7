"""The daemon's services, handed to every tool call (the one place that holds them)."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agentcoord import __version__
from agentcoord.config import Config
from agentcoord.daemon.identity import IdentityResolver

if TYPE_CHECKING:
    from nats.aio.client import Client as NatsClient

    from agentcoord.daemon.http import HttpServer
    from agentcoord.daemon.natsd import NatsSupervisor
    from agentcoord.stores.objects import ObjectStore

__all__ = ["App"]


@dataclass
class App:
    """Long-lived services of one daemon; built by :mod:`agentcoord.daemon.lifecycle`."""

    config: Config
    identity: IdentityResolver
    nats: NatsSupervisor | None = None
    nc: NatsClient | None = None
    nats_url: str = ""
    http_server: HttpServer | None = None
    store: ObjectStore | None = None  # the object store (issue 3)
    started_monotonic: float = field(default_factory=time.monotonic)
    started_wall: float = field(default_factory=time.time)
    unix_connections: int = 0

    def healthy(self) -> tuple[bool, str]:
        """Readiness for ``/healthz``: NATS is up and our client is connected."""
        if self.nats is not None and not self.nats.alive:
            return False, "nats-server is down"
        if self.nc is None or not self.nc.is_connected:
            return False, "not connected to NATS"
        return True, "ok"

    def status(self) -> dict[str, Any]:
        ok, why = self.healthy()
        return {
            "version": __version__,
            "pid": os.getpid(),
            "uptime_s": round(time.monotonic() - self.started_monotonic, 3),
            "healthy": ok,
            "health": why,
            "nats_url": self.nats_url,
            "nats_pid": self.nats.pid if self.nats else None,
            "nats_restarts": self.nats.restarts if self.nats else 0,
            "state_dir": str(self.config.state_dir),
            "store_path": str(self.config.state_dir / "objects.db"),
            "socket": str(self.config.socket_path),
            "http_addr": self.config.http_addr,
            "connections": {
                "unix": self.unix_connections,
                "http": self.http_server.open_connections if self.http_server else 0,
            },
        }
