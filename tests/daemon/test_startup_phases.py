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
