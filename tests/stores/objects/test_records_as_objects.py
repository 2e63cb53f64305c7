"""Channels, prompts, handoff tasks, registered agents and jobs are objects in the store:
kubectl sees them, and they survive a daemon restart."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import Daemon, stored_records
from tests.stores.objects.conftest import kubeconfig_text
from tests.tools.session_helpers import own_call, session_call


def _kubectl_json(d: Daemon, *args: str) -> dict[str, object]:
    config = d.root / "kubeconfig"
    config.write_text(kubeconfig_text(d))
    out = subprocess.run(
        ["kubectl", "--kubeconfig", str(config), *args, "-o", "json"],
        env=d.env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)  # type: ignore[no-any-return]


def test_channel_and_prompt_are_objects_and_survive_restart(
    daemon: Daemon, claude_bin: Path
) -> None:
    """open_channel -> AgentChannel; escalate -> HumanPrompt; both are still there after a
    restart, and the prompt can be answered then."""
    results = session_call(
        daemon,
        claude_bin,
        [
            (
                "open_channel",
                # qa-1 joins later: queue_unknown (docs/messaging.md "Recipients")
                {
                    "name": "release",
                    "participants": ["qa-1"],
                    "topic": "1.4",
                    "queue_unknown": True,
                },
            ),
            ("escalate", {"question": "Tag 1.4?", "timeout_secs": 1}),
        ],
    )
    assert results[1]["structuredContent"]["answered"] is False
    prompt_id = results[1]["structuredContent"]["prompt"]
    channel = _kubectl_json(daemon, "get", "agentchannel", "release")
    assert "qa-1" in channel["spec"]["participants"]  # type: ignore[index]
    assert channel["status"]["phase"] == "Open"  # type: ignore[index]
    prompt = _kubectl_json(daemon, "get", "humanprompt", prompt_id)
    assert prompt["spec"]["message"] == "Tag 1.4?"  # type: ignore[index]
    assert prompt["status"]["phase"] == "Pending"  # type: ignore[index]

    daemon.stop()
    daemon.start()
    prompts = stored_records(daemon, "humanprompts", "prompt", "id")
    assert prompts[prompt_id]["phase"] == "Open"
    answered = subprocess.run(
        [sys.executable, "-m", "agentcoord", "answer", prompt_id, "yes"],
        env=daemon.env,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert answered.returncode == 0, answered.stderr
    prompt = _kubectl_json(daemon, "get", "humanprompt", prompt_id)
    assert prompt["status"]["phase"] == "Answered"  # type: ignore[index]
    assert prompt["status"]["answer"] == {"value": "yes"}  # type: ignore[index]
    channels = own_call(daemon, "list_channels", {})["structuredContent"]["channels"]
    assert [c["name"] for c in channels] == ["release"]


def test_registered_agent_is_an_agent_object_listed_once(daemon: Daemon) -> None:
    """register_agent writes an Agent object; list_agents shows it once, with its status."""
    out = own_call(
        daemon,
        "register_agent",
        {"agent_id": "pricing-api", "endpoint": "http://127.0.0.1:9", "capabilities": "cost"},
    )
    assert out["isError"] is False, out
    obj = _kubectl_json(daemon, "get", "agent", "pricing-api")
    assert obj["spec"]["endpoint"] == "http://127.0.0.1:9"  # type: ignore[index]
    assert obj["spec"]["capabilities"] == ["cost"]  # type: ignore[index]
    rows = own_call(daemon, "list_agents", {})["structuredContent"]["agents"]
    assert [r["name"] for r in rows].count("pricing-api") == 1
    own_call(daemon, "deregister_agent", {"agent_id": "pricing-api"})
    assert stored_records(daemon, "agents", "registered", "agent_id") == {}
