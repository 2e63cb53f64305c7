"""A clean stop logs no false alarm: neither a reconnect after "stopped" nor nats-server's
config warnings (its output is in the daemon's log at DEBUG)."""

from __future__ import annotations

from tests.conftest import Daemon


def test_stop_logs_no_reconnect_and_nats_server_no_warning(daemon_factory: object) -> None:
    """Start and stop at DEBUG: nats-server's lines are logged, none is a config warning, and
    closing the NATS client on the way out is not reported as a lost connection."""
    d: Daemon = daemon_factory(AGENTCOORD_LOG_LEVEL="DEBUG").start()  # type: ignore[operator]
    assert d.stop() == 0
    log = d.log()
    assert "nats-server: " in log  # its output reaches the log, so a warning would show
    assert "Server is ready" in log
    assert "should be converted" not in log
    assert "invalid use of field" not in log
    assert "stopping" in log
    assert "reconnecting" not in log
    assert "disconnected" not in log
    last = [line for line in log.splitlines() if " INFO " in line][-1]
    assert last.endswith("agentcoord.daemon.run: stopped"), last  # once all has closed
