"""The nats-py internals the stores rely on are where the pinned nats-py keeps them."""

from __future__ import annotations

import pytest
from nats.aio.client import Client

from agentcoord.stores._jsretry import connection_of

pytestmark = pytest.mark.unit


def test_connection_of_reads_the_jetstream_context() -> None:
    """connection_of gives back the connection and timeout that made a JetStream context
    (nats-py's private ``_nc``/``_timeout``): an upgrade that moves them fails here."""
    nc = Client()  # not connected: building the context needs no server
    conn, timeout = connection_of(nc.jetstream(timeout=3.5))
    assert conn is nc
    assert timeout == 3.5
