"""The budgets report as the human reads it (``agentcoord/budgets`` over the unix socket)."""

from __future__ import annotations

from typing import Any

from tests.conftest import Daemon


def budgets(d: Daemon) -> Any:
    from agentcoord.client.rpc import call_unix

    token = (d.state_dir / "human.token").read_text().strip()
    return call_unix(d.socket, "agentcoord/budgets", {}, token=token)
