"""The self-approval attacks from inside a real sandboxed runner
(docs/security.md "What is enforced for sandboxed runners"): a local agent cold-started by
``run_agent`` (the stand-in ``claude -p`` of tests/fakes/claude_runner.py, in real bubblewrap)
raises ``request_approval`` and then tries to answer it itself: with a detached ``agentcoord
answer``, a detached tokenless ``curl`` to ``/mcp``, and ``answer_prompt`` through its own MCP
server. That it cannot read ``human.token`` or the NATS credentials is
tests/localagents/test_sandbox_paths.py
``test_a_runner_cannot_read_the_daemons_secrets_but_reaches_its_socket``."""

from __future__ import annotations

import json
import shlex
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Daemon
from tests.localagents.conftest import (  # noqa: F401  (fixtures)
    local_daemon,
    make_package,
    runner_bin,
    visible_root,
)
from tests.security.conftest import Tally
from tests.tools.conftest import human_call

needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed")
ONLY_THE_HUMAN = "only the human answers prompts"


def _run(task: str, call: Any) -> dict[str, Any]:
    """One cold-started turn of the package agent ``alpha``; what its script reported."""
    err, res = call("run_agent", {"agent_id": "alpha", "task": task, "wait": True})
    assert not err, res
    job = res["job"]
    assert job["status"] == "succeeded", job
    assert job["sandbox"] == "bwrap", job  # the real sandbox, not the weaker mode
    return json.loads(job["result"]["result"])  # type: ignore[no-any-return]


def _detached(argv: list[str]) -> str:
    """A ``run`` line of the runner's script: ``argv`` through ``setsid -f`` (its own session,
    reparented away from the runner), its output and exit code on the pipe it inherits."""
    inner = f"( {shlex.join(argv)} ) 2>&1; echo rc=$?"
    return "run " + shlex.join(["setsid", "-f", "sh", "-c", inner])


def _answer_body(prompt: str) -> str:
    arguments = {"prompt": prompt, "answer": "yes"}
    call = {"name": "answer_prompt", "arguments": arguments}
    return json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call})


def _still_open(d: Daemon, prompt: str) -> bool:
    prompts = {p["id"]: p for p in human_call(d, "list_prompts", all=True)["prompts"]}
    return prompts[prompt]["phase"] == "Open" and prompts[prompt].get("answer") is None


@needs_bwrap
def test_a_sandboxed_runner_cannot_answer_its_own_prompt(
    local_daemon: Any,  # noqa: F811
    visible_root: Path,  # noqa: F811
    tally: Tally,
) -> None:
    """A real runner in bubblewrap raises request_approval, then answers it with a detached
    `agentcoord answer`, a detached tokenless curl to /mcp and its own answer_prompt call:
    each is refused with a clear error the runner sees, the prompt stays open, and each leaves
    one HUMAN_REFUSED event naming the runner's agent and the process that tried."""
    state, run = visible_root / "state", visible_root / "run"
    d, hub, call = local_daemon(AGENTCOORD_STATE_DIR=str(state), AGENTCOORD_RUNTIME_DIR=str(run))
    make_package(hub, "alpha")
    raised = _run('call request_approval {"question": "rm -rf prod?", "timeout_secs": 0}', call)
    (asked,) = raised["calls"]
    assert asked["answered"] is False, asked
    prompt = asked["prompt"]

    cli = [sys.executable, "-m", "agentcoord", "answer", prompt, "yes"]
    curl = ["curl", "-s", "-w", " http=%{http_code}", "-H", "content-type: application/json"]
    curl += ["-d", _answer_body(prompt), f"{d.url}/mcp"]
    script = [
        _detached(cli),
        _detached(curl),
        "call answer_prompt " + json.dumps({"prompt": prompt, "answer": "yes"}),
    ]
    seen = _run("\n".join(script), call)
    by_cli, by_curl = (r["out"] for r in seen["run"])
    (by_mcp,) = seen["calls"]

    refused = "rc=1" in by_cli and ONLY_THE_HUMAN in by_cli
    assert tally("self-approval from a sandboxed runner: detached CLI", refused), by_cli
    assert len(by_cli.strip().splitlines()) == 2, by_cli  # one clear line (and the rc= line)
    # The tokenless loopback peer maps to its process: the runner, by ancestry (the sandbox
    # shares the network namespace, and setsid cannot leave bwrap's pid namespace).
    body, _, status = by_curl.partition(" http=")
    result = json.loads(body)["result"]
    refused = status.startswith("200") and result["isError"] and ONLY_THE_HUMAN in body
    assert tally("self-approval from a sandboxed runner: detached curl", refused), by_curl
    refused = ONLY_THE_HUMAN in by_mcp.get("error", "")
    assert tally("self-approval from a sandboxed runner: its own MCP", refused), by_mcp
    assert _still_open(d, prompt)

    events = _refusals(d, want=3)
    assert sorted(e["how"] for e in events) == ["http", "unix", "unix"], events
    for e in events:
        want = {"what": "answer_prompt", "prompt": prompt, "reason": "human-only"}
        assert {k: e[k] for k in want} == want, e
        assert (e["agent"], e["kind"]) == ("alpha", "runner"), e
        assert e["exe"], e
    assert len({e["pid"] for e in events}) == 3, events  # the CLI, curl, its MCP server


def _refusals(d: Daemon, want: int) -> list[dict[str, Any]]:
    """The HUMAN_REFUSED events, read as the human once ``want`` are there (or after 10 s)."""
    deadline = time.monotonic() + 60
    while True:
        events = human_call(d, "audit", type="HUMAN_REFUSED")["events"]
        if len(events) >= want or time.monotonic() > deadline:
            return events  # type: ignore[no-any-return]
