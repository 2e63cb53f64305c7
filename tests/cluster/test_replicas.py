"""Replica counts of the buckets and streams on a cluster: R3 (docs/one-host-to-many.md)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import nats

from tests.cluster.conftest import PASSWORD, USER
from tests.cluster.natscluster import NatsCluster
from tests.conftest import Daemon
from tests.tools.session_helpers import own_call

ASSETS = ["KV_agent-claims", "KV_agent-focus", "AGENT_EVENTS", "AGENT_MESSAGES"]


def replicas(cluster: NatsCluster) -> dict[str, int | None]:
    async def ask() -> dict[str, int | None]:
        nc = await nats.connect(cluster.seeds.split(","), user=USER, password=PASSWORD)
        try:
            js = nc.jetstream()
            return {s: (await js.stream_info(s)).config.num_replicas for s in ASSETS}
        finally:
            await nc.close()

    return asyncio.run(ask())


def test_replica_count_is_applied_and_raised(
    cluster: NatsCluster, daemon_factory: Callable[..., Daemon]
) -> None:
    """nats_replicas=1 makes R1 assets; a restart with 3 makes them R3, claims kept."""
    env = {
        "AGENTCOORD_NATS_URL": cluster.seeds,
        "AGENTCOORD_NATS_USER": USER,
        "AGENTCOORD_NATS_PASSWORD": PASSWORD,
    }
    d = daemon_factory("r", AGENTCOORD_NATS_REPLICAS="1", **env).start()
    assert replicas(cluster) == dict.fromkeys(ASSETS, 1)
    held = own_call(d, "claim", {"resource_key": "keep", "ttl": "5m"})["structuredContent"]
    assert held["acquired"]
    d.stop()
    d.env["AGENTCOORD_NATS_REPLICAS"] = "3"
    d.start()
    assert replicas(cluster) == dict.fromkeys(ASSETS, 3)
    seen = own_call(d, "check_claims", {"prefix": "keep"})["structuredContent"]["claims"]
    assert [c["token"] for c in seen] == [held["token"]]
