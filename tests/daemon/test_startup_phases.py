"""A failed start-up phase is one line that names the part and the failure's own words."""

from __future__ import annotations

import asyncio

import nats.js.errors
import pytest

from agentcoord.daemon.startup import Phases
from agentcoord.errors import StartupError


def test_a_jetstream_refusal_keeps_its_code_and_description() -> None:
    """nats-py's API error (whose repr is only its class) reaches the line with its codes."""
    phases = Phases()

    async def start() -> None:
        async with phases.bounded():
            phases.begin("the audit stream", 5, "is the NATS server up?")
            raise nats.js.errors.BadRequestError(
                code=400, err_code=10005, description="insufficient resources"
            )

    with pytest.raises(StartupError) as caught:
        asyncio.run(start())
    line = str(caught.value)
    assert line.startswith("start-up: the audit stream failed (")
    assert "err_code=10005" in line
    assert "insufficient resources" in line
    assert line.endswith("; is the NATS server up?")
    assert "\n" not in line


def test_each_phase_gets_its_stretched_bound_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """On a machine 3x contended, a phase of 2 s is given 6 s, the first one and a later one
    alike (not the idle bound, not stretched twice)."""
    monkeypatch.setattr("agentcoord.daemon.startup.slack_now", lambda: 3.0)
    phases = Phases()
    given: list[float] = []

    async def start() -> None:
        phases.begin("first", 2, "hint")
        async with phases.bounded():
            loop = asyncio.get_running_loop()
            assert phases._timeout is not None
            given.append(phases._timeout.when() - loop.time())  # type: ignore[operator]
            phases.begin("second", 2, "hint")
            given.append(phases._timeout.when() - loop.time())  # type: ignore[operator]

    asyncio.run(start())
    assert [round(g) for g in given] == [6, 6]
