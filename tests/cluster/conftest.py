"""Fixtures for docs/one-host-to-many.md: a real three-node NATS cluster and two daemons as
two hosts.

The hosts share this machine but nothing else: each daemon has its own state and runtime
dirs, its own loopback HTTP port (the Host check accepts 127.0.0.1 names only) and its own
``host_id``; they meet only through the cluster. Host A passes its credentials in the URL,
host B in the config.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.cluster.natscluster import NatsCluster
from tests.conftest import Daemon

USER, PASSWORD = "agentcoord", "cluster-secret-pw"


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[NatsCluster]:
    """Three routed nats-servers with JetStream and one user."""
    c = NatsCluster(tmp_path / "nats", users={USER: PASSWORD})
    try:
        yield c.start()
    finally:
        c.stop()


def with_password(seeds: str) -> str:
    return ",".join(s.replace("nats://", f"nats://{USER}:{PASSWORD}@") for s in seeds.split(","))


@pytest.fixture
def hosts(cluster: NatsCluster, daemon_factory: Callable[..., Daemon]) -> tuple[Daemon, Daemon]:
    """Two running daemons (host-a, host-b) on the cluster with R3 buckets and streams."""
    common: dict[str, Any] = {"AGENTCOORD_NATS_REPLICAS": "3"}
    a = daemon_factory(
        "a",
        AGENTCOORD_NATS_URL=with_password(cluster.seeds),
        AGENTCOORD_HOST_ID="host-a",
        AGENTCOORD_HTTP_ADDR="127.0.0.1:0",
        **common,
    )
    b = daemon_factory(
        "b",
        AGENTCOORD_NATS_URL=cluster.seeds,
        AGENTCOORD_NATS_USER=USER,
        AGENTCOORD_NATS_PASSWORD=PASSWORD,
        AGENTCOORD_HOST_ID="host-b",
        AGENTCOORD_HTTP_ADDR="127.0.0.1:0",
        **common,
    )
    # A JetStream request on a cluster waits up to 15 s for an answer (lifecycle.js_timeout);
    # under load, one R3 stream creation at start sometimes takes that whole wait (then the
    # daemon carries on), so allow two of them before calling the start failed.
    return a.start(timeout=45), b.start(timeout=45)
