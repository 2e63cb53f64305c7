"""The embedded nats-server's generated config: JetStream sync interval (issue 9)."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentcoord.config import load_config
from agentcoord.daemon.natsd import NatsSupervisor
from agentcoord.errors import NatsStartError


def test_default_sync_interval_is_nats_servers_own(tmp_path: Path) -> None:
    """By default the embedded server fsyncs every 2 minutes, nats-server's own default."""
    conf = NatsSupervisor(tmp_path)._write_config().read_text()
    assert "sync_interval: 2m" in conf
    assert load_config(env={"HOME": str(tmp_path)}).nats_sync == "2m"


def test_sync_interval_is_configurable(tmp_path: Path) -> None:
    """AGENTCOORD_NATS_SYNC=always reaches nats.conf; a value that is not a duration is refused."""
    cfg = load_config(env={"AGENTCOORD_NATS_SYNC": "always", "HOME": str(tmp_path)})
    assert cfg.nats_sync == "always"
    conf = NatsSupervisor(tmp_path, sync=cfg.nats_sync)._write_config().read_text()
    assert "sync_interval: always" in conf
    with pytest.raises(NatsStartError, match="duration"):
        NatsSupervisor(tmp_path, sync="2m }\nauthorization {")


def test_nats_server_gets_a_soft_memory_limit_unless_one_is_set() -> None:
    """The embedded server runs with GOMEMLIMIT=40MiB; a GOMEMLIMIT in the environment wins."""
    from agentcoord.daemon.natsd import GO_MEMORY_LIMIT, _child_env

    assert _child_env({"PATH": "/bin"}) == {"PATH": "/bin", "GOMEMLIMIT": GO_MEMORY_LIMIT}
    assert _child_env({"GOMEMLIMIT": "1GiB"})["GOMEMLIMIT"] == "1GiB"
