"""Agent profiles end to end (docs/profiles.md): a real daemon, real kubectl, real bubblewrap
and the stand-in ``claude -p``. Profiles decide the runner's flags, environment and MCP config;
messages reach a running runner between turns; CONTROL drains or stops it; its Agent says how
it went."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import Daemon, stored_records, write_kubeconfig
from tests.localagents.conftest import make_package
from tests.stores.objects.conftest import Kubectl

pytestmark = [
    pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed"),
    pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl not installed"),
]


def kubectl_for(d: Daemon) -> Kubectl:
    """kubectl wired to this daemon (its kubeconfig from ``agentcoord kubeconfig``)."""
    return Kubectl(d, write_kubeconfig(d), d.root / "kube-cache")


def apply_profile(kubectl: Kubectl, name: str, spec: dict[str, Any]) -> str:
    doc = {
        "apiVersion": "fastverk.savvifi.com/v1",
        "kind": "AgentProfile",
        "metadata": {"name": name, "namespace": "default"},
        "spec": spec,
    }
    return kubectl("apply", "-f", "-", stdin=yaml.safe_dump(doc)).stdout


def inner(job: dict[str, Any]) -> dict[str, Any]:
    """The stand-in's report of its last turn (the result JSON's ``result`` string)."""
    return json.loads(job["result"]["result"])  # type: ignore[no-any-return]


def agent_obj(kubectl: Kubectl, name: str) -> dict[str, Any]:
    return json.loads(kubectl("get", "agent", name, "-o", "json").stdout)  # type: ignore[no-any-return]


def wait_for(pred: Any, timeout: float = 60.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = pred()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"condition not met in {timeout}s")


def job_done(d: Daemon, job_id: str) -> dict[str, Any] | None:
    """The job record once it has finished (read from the daemon's store file)."""
    job = stored_records(d, "agenttasks", "job", "job_id").get(job_id)
    return job if job and job["status"] not in ("pending", "running") else None


def test_default_profile_is_created_and_listed(local_daemon: Any) -> None:
    """The default profile is made on first start, listed everywhere, and kept across restarts."""
    d, _, call = local_daemon()
    kubectl = kubectl_for(d)
    table = kubectl("get", "agentprofiles").stdout.splitlines()
    assert table[0].split()[:4] == ["NAME", "BACKEND", "MODEL", "MCP"]
    assert table[1].split()[:2] == ["default", "claude-code"]
    got = agent_profile = json.loads(kubectl("get", "ap", "default", "-o", "json").stdout)
    assert agent_profile["spec"]["mcpServers"] == ["agent-coord"]
    assert got["spec"]["permissionMode"] == "acceptEdits"
    out = subprocess.run(
        [sys.executable, "-m", "agentcoord", "profiles"],
        env=d.env,
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    ).stdout.splitlines()
    assert out[0].split()[:3] == ["PROFILE", "BACKEND", "MODEL"]
    assert out[1].split()[:2] == ["default", "claude-code"]
    err, res = call("list_profiles", {})
    assert not err, res
    assert [p["name"] for p in res["profiles"]] == ["default"]
    # a later start keeps the user's edits to the default profile
    apply_profile(kubectl, "default", {"backend": "claude-code", "model": "mine"})
    d.stop()
    d.start()
    kubectl = kubectl_for(d)
    again = json.loads(kubectl("get", "ap", "default", "-o", "json").stdout)
    assert again["spec"]["model"] == "mine"


def test_synthesized_mcp_config_lists_exactly_the_profile_servers(
    local_daemon: Any, visible_root: Path
) -> None:
    """The runner gets exactly the profile's servers, resolved, plus the runner env and flags."""
    d, hub, call = local_daemon(MCP_MERIDIAN_MCP_URL="http://127.0.0.1:9/mcp")
    shared = visible_root / "shared-lib"
    kubectl = kubectl_for(d)
    apply_profile(
        kubectl,
        "migrator",
        {
            "backend": "claude-code",
            "mcpServers": ["agent-coord", "meridian-mcp", "docs"],
            "model": "claude-sonnet-4-5",
            "permissionMode": "plan",
            "allowedTools": ["Read", "Grep"],
            "disallowedTools": ["Bash"],
            "maxTurns": 7,
            "maxBudgetUsd": 0.5,
            "systemPrompt": "Be brief.",
            "env": {"MCP_DOCS_URL": "https://docs.example/sse"},
            "writablePaths": [str(shared)],
        },
    )
    make_package(hub, "alpha")
    task = f"mcp_config\nenv\nwrite {shared}/out.txt\nwrite {visible_root}/elsewhere.txt"
    err, res = call(
        "run_agent", {"agent_id": "alpha", "task": task, "profile": "migrator", "wait": True}
    )
    assert not err, res
    job = res["job"]
    assert job["status"] == "succeeded", job
    assert job["profile"] == "migrator"
    report = inner(job)
    servers = report["mcp_config"]["mcpServers"]
    assert list(servers) == ["agent-coord", "meridian-mcp", "docs"]
    assert servers["meridian-mcp"] == {"type": "http", "url": "http://127.0.0.1:9/mcp"}
    assert servers["docs"] == {"type": "sse", "url": "https://docs.example/sse"}
    shim = servers["agent-coord"]
    assert shim["type"] == "stdio"
    assert shim["args"] == ["-m", "agentcoord", "mcp"]
    assert shim["env"] == {"AGENTCOORD_RUNTIME_DIR": str(d.runtime_dir)}
    assert report["env"] == {
        "AGENT_ID": "alpha",
        "AGENT_INBOX_SUBJECT": "agents.alpha.inbox",
        "AGENT_STATUS_SUBJECT": "agents.alpha.status",
        "MCP_SERVERS": "agent-coord meridian-mcp docs",
    }
    flags = report["flags"]
    assert flags["--strict-mcp-config"] is True
    assert flags["--mcp-config"].endswith(f"{job['job_id']}/mcp.json")
    assert flags["--model"] == "claude-sonnet-4-5"
    assert flags["--permission-mode"] == "plan"
    assert flags["--allowedTools"] == "Read,Grep,mcp__agent-coord,mcp__meridian-mcp,mcp__docs"
    assert flags["--disallowedTools"] == "Bash"
    assert flags["--max-turns"] == "7"
    assert flags["--max-budget-usd"] == "0.5"
    assert flags["--append-system-prompt"] == "Be brief."
    assert flags["--add-dir"] == [str(shared)]
    assert report["write"] == {
        f"{shared}/out.txt": "ok",  # writablePaths are bound writable
        f"{visible_root}/elsewhere.txt": "Read-only file system",
    }
    assert flags["--input-format"] == flags["--output-format"] == "stream-json"
    assert agent_obj(kubectl, "alpha")["status"]["phase"] == "Succeeded"


def test_mcp_config_file_bypasses_synthesis(local_daemon: Any, visible_root: Path) -> None:
    """MCP_CONFIG pointing at a file is passed as is, even with servers that resolve nowhere."""
    d, hub, call = local_daemon()
    custom = visible_root / "custom-mcp.json"
    config = {"mcpServers": {"tool-x": {"type": "stdio", "command": "tool-x", "args": []}}}
    custom.write_text(json.dumps(config))
    kubectl = kubectl_for(d)
    apply_profile(
        kubectl,
        "bespoke",
        {
            "backend": "claude-code",
            "mcpServers": ["tool-x"],
            "env": {"MCP_CONFIG": str(custom)},
        },
    )
    make_package(hub, "alpha")
    err, res = call(
        "run_agent", {"agent_id": "alpha", "task": "mcp_config", "profile": "bespoke", "wait": True}
    )
    assert not err, res
    report = inner(res["job"])
    assert report["flags"]["--mcp-config"] == str(custom)
    assert report["flags"]["--strict-mcp-config"] is True
    assert report["mcp_config"] == config
    assert not (Path(res["job"]["log_dir"]) / "mcp.json").exists()


def test_unresolvable_server_fails_the_agent_with_a_reason(local_daemon: Any) -> None:
    """A server that resolves nowhere fails the start: job failed, Agent Failed, no runner."""
    d, hub, call = local_daemon()
    kubectl = kubectl_for(d)
    apply_profile(
        kubectl, "broken", {"backend": "claude-code", "mcpServers": ["agent-coord", "nope-srv"]}
    )
    make_package(hub, "alpha")
    err, res = call(
        "run_agent", {"agent_id": "alpha", "task": "env", "profile": "broken", "wait": True}
    )
    assert not err, res
    assert res["success"] is False
    job = res["job"]
    assert job["status"] == "failed"
    assert "nope-srv resolves nowhere: set MCP_NOPE_SRV_URL" in job["error"]
    assert not (Path(job["log_dir"]) / "stdout").exists()  # nothing was started
    status = agent_obj(kubectl, "alpha")["status"]
    assert status["phase"] == "Failed"
    assert "MCP_NOPE_SRV_URL" in status["message"]
    row = kubectl("get", "agent", "alpha").stdout.splitlines()[1].split()
    assert row[:2] == ["alpha", "Failed"]
    doctor = subprocess.run(
        [sys.executable, "-m", "agentcoord", "doctor", "--json"],
        env=d.env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    checks = {c["name"]: c for c in json.loads(doctor.stdout)}
    assert checks["profile broken"]["ok"] is False
    assert "MCP_NOPE_SRV_URL" in checks["profile broken"]["detail"]
    assert "set MCP_<NAME>_URL" in checks["profile broken"]["fix"]
    assert "[backends]" not in checks["profile broken"]["fix"]
    assert checks["profile default"]["ok"] is True


def test_doctor_names_a_backend_that_is_not_there(local_daemon: Any) -> None:
    """A profile whose backend is not configured, or whose command is missing, is reported."""
    d, hub, call = local_daemon()
    kubectl = kubectl_for(d)
    apply_profile(kubectl, "other", {"backend": "codex", "mcpServers": ["agent-coord"]})
    err, res = call("list_profiles", {})
    assert not err
    other = next(p for p in res["profiles"] if p["name"] == "other")
    assert other["problems"] == ["backend 'codex' is not configured"]
    make_package(hub, "alpha")
    err, res = call("run_agent", {"agent_id": "alpha", "task": "env", "profile": "other"})
    assert not err
    assert "backend 'codex' is not configured (known: claude-code)" in res["job"]["error"]
    assert agent_obj(kubectl, "alpha")["status"]["phase"] == "Failed"


def test_whoami_through_the_mcp_config_ignores_claimed_ids(local_daemon: Any) -> None:
    """A runner claiming to be mallory (AGENT_ID, agent argument) is still identified as alpha."""
    _, hub, call = local_daemon()
    make_package(hub, "alpha")
    script = "\n".join(
        [
            "setenv AGENT_ID mallory",
            "call whoami {}",
            'call whoami {"agent": "mallory"}',
            'call inbox {"agent": "mallory"}',
            'call annotate {"agent": "mallory", "intent": "x"}',
        ]
    )
    err, res = call("run_agent", {"agent_id": "alpha", "task": script, "wait": True})
    assert not err, res
    who, who_claimed, inbox, annotate = inner(res["job"])["calls"]
    assert who["agent"] == "alpha"
    assert who["kind"] == "runner"
    assert who_claimed == {"error": "unknown argument `agent` (this tool takes: none)"}
    assert inbox == {"error": "identity mismatch: you are alpha, not mallory"}
    assert "identity mismatch" in annotate["error"]


async def _status_messages(
    d: Daemon, agent: str, into: list[dict[str, Any]], ended: asyncio.Event
) -> Any:
    import nats

    from agentcoord.kernel import wire
    from tests.tools.conftest import nats_login

    url, user, password = nats_login(d)
    nc = await nats.connect(url, user=user, password=password)

    async def on_msg(msg: Any) -> None:
        into.append(json.loads(wire.decode(msg.data).body))
        if into[-1].get("phase") in ("Succeeded", "Failed"):
            ended.set()

    await nc.subscribe(f"agents.{agent}.status", cb=on_msg)
    await nc.flush()
    return nc


async def test_message_reaches_the_running_runner_before_its_next_turn(
    local_daemon: Any,
) -> None:
    """Direct, channel and broadcast messages sent during turn 1 are turn 2; status says so."""
    d, hub, call = await asyncio.to_thread(local_daemon)
    pkg = make_package(hub, "alpha")
    updates: list[dict[str, Any]] = []
    ended = asyncio.Event()
    nc = await _status_messages(d, "alpha", updates, ended)
    try:
        task = f"touch {pkg}/ready\nwait_file {pkg}/go"
        err, res = await asyncio.to_thread(call, "run_agent", {"agent_id": "alpha", "task": task})
        assert not err, res
        job_id = res["job"]["job_id"]
        await asyncio.to_thread(wait_for, lambda: (pkg / "ready").exists())
        err, sent = await asyncio.to_thread(
            call, "send", {"to": "alpha", "text": "please also check the README"}
        )
        assert not err, sent
        err, opened = await asyncio.to_thread(
            call, "open_channel", {"name": "ops", "participants": ["alpha"]}
        )
        assert not err, opened
        err, posted = await asyncio.to_thread(
            call, "send", {"channel": "ops", "text": "ops: deploy at noon"}
        )
        assert not err, posted
        err, cast = await asyncio.to_thread(call, "broadcast", {"text": "all: freeze"})
        assert not err, cast
        (pkg / "go").touch()
        job = await asyncio.to_thread(wait_for, lambda: job_done(d, job_id))
        async with asyncio.timeout(60):  # published before the job record; may still be in flight
            await ended.wait()
    finally:
        await nc.close()
    assert job["status"] == "succeeded", job
    assert job["result"]["turns"] == 2
    assert job["result"]["delivered"] == [sent["seq"], posted["seq"], cast["seq"]]
    last = inner(job)
    assert last["turn"] == 2
    lines = last["prompt"].splitlines()
    assert lines[0] == "3 new message(s) for you, delivered by agentcoord:"
    assert lines[1].startswith(f"[{sent['seq']}] from ")
    assert lines[1].endswith("(text): please also check the README")
    assert " on #ops (text): ops: deploy at noon" in lines[2]
    assert lines[3].endswith("(text): all: freeze")
    log = (Path(job["log_dir"]) / "stdout").read_text().splitlines()
    assert [json.loads(line)["type"] for line in log] == ["system", "result", "result"]
    running = [u for u in updates if u.get("phase") == "Running"]
    assert running[0]["focus"] == f"touch {pkg}/ready"
    assert running[-1]["focus"].startswith("reading 3 message(s) from ")
    assert updates[-1]["phase"] == "Succeeded"


def test_control_drain_ends_the_run_cleanly(local_daemon: Any) -> None:
    """CONTROL drain lets the turn finish, takes no more turns; the Agent shows Succeeded."""
    d, hub, call = local_daemon()
    kubectl = kubectl_for(d)
    pkg = make_package(hub, "alpha")
    err, res = call(
        "run_agent", {"agent_id": "alpha", "task": f"touch {pkg}/ready\nwait_file {pkg}/go"}
    )
    assert not err, res
    wait_for(lambda: (pkg / "ready").exists())
    assert agent_obj(kubectl, "alpha")["status"]["phase"] == "Running"
    err, _ = call("send", {"to": "alpha", "kind": "control", "text": "drain"})
    assert not err
    err, later = call("send", {"to": "alpha", "text": "one more thing"})
    assert not err
    (pkg / "go").touch()
    job = wait_for(lambda: job_done(d, res["job"]["job_id"]))
    assert job["status"] == "succeeded", job
    assert job["result"]["turns"] == 1
    assert job["result"]["control"] == "drain"
    status = agent_obj(kubectl, "alpha")["status"]
    assert status["phase"] == "Succeeded"
    assert status["message"].startswith("drained by ")
    # the text message the drained runner did not take waits for the next start
    err, again = call("run_agent", {"agent_id": "alpha", "task": "sleep 1", "wait": True})
    assert not err
    assert again["job"]["result"]["turns"] == 2
    assert "one more thing" in inner(again["job"])["prompt"]
    assert later["seq"] not in again["job"]["result"]["delivered"]  # put back: a new seq


def test_drain_after_a_failed_turn_fails_the_agent(local_daemon: Any) -> None:
    """A drained runner whose last turn failed ends Failed, saying both."""
    d, hub, call = local_daemon()
    kubectl = kubectl_for(d)
    pkg = make_package(hub, "alpha")
    task = f"touch {pkg}/ready\nwait_file {pkg}/go\nis_error"
    err, res = call("run_agent", {"agent_id": "alpha", "task": task})
    assert not err, res
    wait_for(lambda: (pkg / "ready").exists())
    err, _ = call("send", {"to": "alpha", "kind": "control", "text": "drain"})
    assert not err
    (pkg / "go").touch()
    job = wait_for(lambda: job_done(d, res["job"]["job_id"]))
    assert job["status"] == "failed"
    assert job["result"]["control"] == "drain"
    status = agent_obj(kubectl, "alpha")["status"]
    assert status["phase"] == "Failed"
    assert status["message"].startswith("drained by ")
    assert "the runner reported an error (error_during_execution)" in status["message"]


def test_control_stop_kills_the_run_and_fails_the_agent(local_daemon: Any) -> None:
    """CONTROL stop ends a turn in progress at once; job and Agent say Failed and why."""
    d, hub, call = local_daemon()
    kubectl = kubectl_for(d)
    pkg = make_package(hub, "alpha")
    # The turn would run 10 minutes: only the stop can end it within the wait.
    err, res = call("run_agent", {"agent_id": "alpha", "task": f"touch {pkg}/ready\nsleep 600"})
    assert not err, res
    wait_for(lambda: (pkg / "ready").exists())
    err, _ = call("send", {"to": "alpha", "kind": "control", "text": "stop"})
    assert not err
    job = wait_for(lambda: job_done(d, res["job"]["job_id"]))
    assert job["status"] == "failed"
    assert job["error"].startswith("stopped by a control message from ")
    status = agent_obj(kubectl, "alpha")["status"]
    assert status["phase"] == "Failed"
    assert status["message"].startswith("stopped by a control message from ")


def test_profile_changes_apply_to_the_next_start_only(local_daemon: Any) -> None:
    """kubectl apply of a profile is used by the next start, not by a run already going."""
    d, hub, call = local_daemon()
    kubectl = kubectl_for(d)
    apply_profile(kubectl, "coder", {"backend": "claude-code", "model": "model-one"})
    first = make_package(hub, "alpha")
    make_package(hub, "beta")
    err, res = call(
        "run_agent",
        {
            "agent_id": "alpha",
            "task": f"touch {first}/ready\nwait_file {first}/go",
            "profile": "coder",
        },
    )
    assert not err, res
    wait_for(lambda: (first / "ready").exists())
    out = apply_profile(
        kubectl, "coder", {"backend": "claude-code", "model": "model-two", "network": False}
    )
    assert "configured" in out
    err, second = call(
        "run_agent", {"agent_id": "beta", "task": "net", "profile": "coder", "wait": True}
    )
    assert not err, second
    assert inner(second["job"])["flags"]["--model"] == "model-two"
    assert inner(second["job"])["net"] == ["lo"]  # network: false
    (first / "go").touch()
    job = wait_for(lambda: job_done(d, res["job"]["job_id"]))
    assert job["status"] == "succeeded", job
    assert inner(job)["flags"]["--model"] == "model-one"
    assert agent_obj(kubectl, "beta")["spec"]["profile"] == "coder"
