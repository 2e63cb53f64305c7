"""A real nats-server (the daemon's own supervisor) and a JetStream context per test."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import nats
import pytest

from agentcoord.daemon.natsd import NatsSupervisor


class Recorder:
    """An audit sink that keeps what it was told, for assertions."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str, dict[str, Any]]] = []

    def emit(self, type_: str, agent: str, **data: Any) -> None:
        self.events.append((type_, agent, data))

    def reasons(self) -> list[str]:
        return [d["reason"] for t, _, d in self.events if t == "CLAIM_RELEASED"]


@pytest.fixture
async def natsd(tmp_path: Path) -> AsyncIterator[NatsSupervisor]:
    """An embedded nats-server with JetStream on a temp dir."""
    async with NatsSupervisor(tmp_path) as sup:
        yield sup


@pytest.fixture
async def js(natsd: NatsSupervisor) -> AsyncIterator[Any]:
    """A JetStream context on a fresh connection to ``natsd``."""
    nc = await nats.connect(natsd.url, user=natsd.user, password=natsd.password)
    try:
        yield nc.jetstream()
    finally:
        await nc.close()


@pytest.fixture
def audit() -> Recorder:
    return Recorder()
