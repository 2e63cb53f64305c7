"""Local dispatch's two checks through the real daemon: the feature flag, the package path
re-derived from the live index (never from a record), safe ids, containment under the hub."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import kubectl_apply
from tests.localagents.conftest import listed, make_package

needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed")


def _forge(d: Any, records: dict[str, dict[str, Any]]) -> None:
    """Plant registered-agent records as Agent objects through the store's own API."""
    kubectl_apply(
        d,
        [
            {
                "apiVersion": "fastverk.savvifi.com/v1",
                "kind": "Agent",
                "metadata": {
                    "name": agent_id,
                    "labels": {"fastverk.savvifi.com/record-kind": "registered"},
                    "annotations": {
                        "fastverk.savvifi.com/record-key": agent_id,
                        "fastverk.savvifi.com/record": json.dumps(record),
                    },
                },
                "spec": {"agentType": "local"},
            }
            for agent_id, record in records.items()
        ],
    )


def test_flag_off_refuses_local_dispatch_even_with_a_persisted_record(
    daemon_factory: Any, local_daemon: Any
) -> None:
    """Flag off: a persisted transport=local record cannot dispatch; discovery is refused."""
    d, hub, call = local_daemon(enabled=False)
    make_package(hub, "alpha")
    _forge(
        d,
        {
            "alpha": {
                "agent_id": "alpha",
                "transport": "local",
                "metadata": {"package_path": str(hub / "agents/alpha/package")},
            }
        },
    )
    err, text = call("run_agent", {"agent_id": "alpha", "task": "whoami", "wait": True})
    assert err
    assert "disabled" in text
    assert json.loads(text)["retry"] is False
    err, text = call("run_agent", {"agent_id": "beta", "task": "whoami"})
    assert err
    assert "disabled" in text
    err, text = call("discover_local_agents", {})
    assert err
    assert "disabled" in text
    assert not (d.state_dir / "jobs").exists()  # nothing was ever started


@needs_bwrap
def test_forged_package_path_is_ignored(local_daemon: Any, visible_root: Path) -> None:
    """A record pointing at another directory runs in the indexed package, or not at all."""
    d, hub, call = local_daemon()
    alpha = make_package(hub, "alpha")
    victim = visible_root / "victim"
    victim.mkdir()
    _forge(
        d,
        {
            "alpha": {
                "agent_id": "alpha",
                "transport": "local",
                "metadata": {"package_path": str(victim)},
            },
            "ghost": {
                "agent_id": "ghost",
                "transport": "local",
                "metadata": {"package_path": str(victim)},
            },
        },
    )
    err, res = call("run_agent", {"agent_id": "alpha", "task": f"write {victim}/x", "wait": True})
    assert not err, res
    inner = json.loads(res["job"]["result"]["result"])
    assert inner["cwd"] == str(alpha.resolve())
    assert not (victim / "x").exists()
    err, text = call("run_agent", {"agent_id": "ghost", "task": "whoami", "wait": True})
    assert err
    assert "no local package 'ghost'" in text
    assert os.listdir(victim) == []


@pytest.mark.parametrize("bad", ["..", ".", "a/b", "../alpha", "a\\b", "/etc", ".hidden"])
def test_unsafe_ids_are_rejected(local_daemon: Any, bad: str) -> None:
    """Ids that are not one traversal-free path component are refused by every entry point."""
    _, hub, call = local_daemon()
    make_package(hub, "alpha")
    for tool, args in (
        ("run_agent", {"agent_id": bad, "task": "whoami"}),
        ("register_agent", {"agent_id": bad, "endpoint": "http://127.0.0.1:9"}),
        ("heartbeat_agent", {"agent_id": bad}),
    ):
        err, text = call(tool, args)
        assert err, (tool, text)
        assert "safe path component" in text, (tool, text)


def test_symlinked_package_escaping_the_hub_is_rejected(
    local_daemon: Any, visible_root: Path
) -> None:
    """A package dir that is a symlink out of the hub is neither listed nor dispatchable."""
    _, hub, call = local_daemon()
    outside = visible_root / "outside"
    outside.mkdir()
    (outside / "CLAUDE.md").write_text("# evil\n")
    (hub / "agents" / "evil").mkdir(parents=True)
    (hub / "agents" / "evil" / "package").symlink_to(outside)
    make_package(hub, "alpha")
    assert listed(call) == ["alpha"]
    err, text = call("run_agent", {"agent_id": "evil", "task": "write x", "wait": True})
    assert err
    assert "no local package 'evil'" in text
    assert not (outside / "x").exists()
