"""The embedded nats-server's generated config: JetStream sync interval."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from agentcoord.daemon.natsd import NatsSupervisor
from agentcoord.errors import NatsStartError
from agentcoord.kernel.config import load_config
from agentcoord.kernel.natsbin import find_nats_server


def test_default_sync_interval_is_nats_servers_own(tmp_path: Path) -> None:
    """By default the embedded server fsyncs every 2 minutes, nats-server's own default."""
    conf = NatsSupervisor(tmp_path)._write_config().read_text()
    assert 'sync_interval: "2m"' in conf
    assert load_config(env={"HOME": str(tmp_path)}).nats_sync == "2m"


def test_sync_interval_is_configurable(tmp_path: Path) -> None:
    """AGENTCOORD_NATS_SYNC=always reaches nats.conf; a value that is not a duration is refused."""
    cfg = load_config(env={"AGENTCOORD_NATS_SYNC": "always", "HOME": str(tmp_path)})
    assert cfg.nats_sync == "always"
    conf = NatsSupervisor(tmp_path, sync=cfg.nats_sync)._write_config().read_text()
    assert 'sync_interval: "always"' in conf
    with pytest.raises(NatsStartError, match="duration"):
        NatsSupervisor(tmp_path, sync="2m }\nauthorization {")


@pytest.mark.parametrize("sync", ["2m", "always"])
def test_nats_server_takes_the_sync_interval_without_a_warning(tmp_path: Path, sync: str) -> None:
    """The real nats-server checks the generated config (-t) clean: no "should be converted to
    a duration" warning, which it gives (and -t fails on) for a bare 2m."""
    conf = NatsSupervisor(tmp_path, sync=sync)._write_config()
    out = subprocess.run(
        [str(find_nats_server()), "-c", str(conf), "-t"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    said = out.stdout + out.stderr
    assert out.returncode == 0, said
    assert "is valid" in said
    assert "duration" not in said


def test_nats_server_gets_a_soft_memory_limit_unless_one_is_set() -> None:
    """The embedded server runs with GOMEMLIMIT=40MiB; a GOMEMLIMIT in the environment wins."""
    from agentcoord.daemon.natsd import GO_MEMORY_LIMIT, _child_env

    assert _child_env({"PATH": "/bin"}) == {"PATH": "/bin", "GOMEMLIMIT": GO_MEMORY_LIMIT}
    assert _child_env({"GOMEMLIMIT": "1GiB"})["GOMEMLIMIT"] == "1GiB"
