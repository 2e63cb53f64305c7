"""ask and send_message end to end: a real daemon runs each turn as the stand-in ``claude -p``
in real bubblewrap; runners call back through the shim, and the daemon computes depth."""

from __future__ import annotations

import json
import socket
import threading
from pathlib import Path
from typing import Any

from tests.agentops.conftest import fails, needs_bwrap, ok, stored, wait_for
from tests.reliability._rig import runner_pids
from tests.tools.session_helpers import human_token

pytestmark = needs_bwrap


def _spawn_all(call: Any, *names: str) -> None:
    for name in names:
        ok(call, "spawn_subagent", name=name)


def test_ask_returns_the_final_answer_in_a_linked_session(local_daemon: Any) -> None:
    """ask wakes a sleeping agent (cold start), returns its final answer, and says which
    linked session ran it; the target's audit records the attributed message."""
    d, _, call = local_daemon()
    _spawn_all(call, "bee")
    wait_for(lambda: (stored(d, "agents", "bee") or {}).get("status", {}).get("phase") == "Idle")
    res = ok(call, "ask", agent="bee", text="answer forty-two")
    assert res["answered"] is True
    assert res["answer"] == "forty-two"
    assert res["via"] == "runner"
    assert res["depth"] == 1
    assert res["resumed"] is False
    assert res["session"].startswith("From human:")
    user = res["session"].removeprefix("From human:")
    agent = stored(d, "agents", "bee")
    assert agent is not None
    assert agent["status"]["phase"] == "Succeeded"
    sessions = json.loads(agent["metadata"]["annotations"]["fastverk.savvifi.com/linked-sessions"])
    assert [s["name"] for s in sessions] == [res["session"]]
    assert sessions[0]["sessionId"] == res["session_id"]
    events = wait_for(
        lambda: ok(call, "audit", actor="bee", type="MESSAGE_RECEIVED")["events"],
        what="the message in the target's audit",
    )
    assert events[-1]["attributed"] == user
    assert events[-1]["text"] == "answer forty-two"


def test_idle_linked_session_is_resumed(local_daemon: Any) -> None:
    """A second ask from the same caller reuses the idle "From" session with --resume: the
    stand-in sees the first prompt in that session's transcript."""
    _, _, call = local_daemon()
    _spawn_all(call, "bee")
    first = ok(call, "ask", agent="bee", text="answer one")
    second = ok(call, "ask", agent="bee", text="history")
    assert second["session_id"] == first["session_id"]
    assert second["resumed"] is True
    report = json.loads(second["answer"])
    assert report["flags"]["--resume"] == first["session_id"]
    assert report["history"] == 1


def test_two_concurrent_asks_use_two_linked_sessions(local_daemon: Any) -> None:
    """While "From X" is busy, a second ask from X opens "From X (2)"; both then go idle and
    the next ask reuses the first."""
    _, _, call = local_daemon()
    _spawn_all(call, "bee")
    results: list[dict[str, Any]] = []

    def ask(text: str) -> None:
        results.append(ok(call, "ask", agent="bee", text=text))

    threads = [threading.Thread(target=ask, args=("sleep 1\nanswer done",)) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert len(results) == 2
    names = sorted(r["session"] for r in results)
    assert names[1] == names[0] + " (2)"
    assert len({r["session_id"] for r in results}) == 2
    third = ok(call, "ask", agent="bee", text="answer again")
    assert third["session"] == names[0]
    assert third["resumed"] is True


def test_send_message_returns_at_once_and_wakes_the_agent(
    local_daemon: Any, visible_root: Path
) -> None:
    """send_message returns while the target still works (its turn waits for a file only the
    test creates, after the call returned); the turn then runs to the end."""
    d, _, call = local_daemon()
    _spawn_all(call, "bee")
    gate = visible_root / "go"
    res = ok(call, "send_message", agent="bee", text=f"wait_file {gate}\nanswer later")
    assert res["sent"] is True
    agent = wait_for(
        lambda: (
            (stored(d, "agents", "bee") or {}).get("status", {}).get("phase") == "Running"
            and stored(d, "agents", "bee")
        ),
        what="bee running",
    )
    assert agent["status"]["pid"] > 0
    gate.touch()
    wait_for(
        lambda: (stored(d, "agents", "bee") or {}).get("status", {}).get("phase") == "Succeeded",
        what="bee done",
    )
    assert stored(d, "agents", "bee")["status"]["message"] == "later"  # type: ignore[index]


def test_fifth_hop_fails_with_the_exact_message(local_daemon: Any) -> None:
    """human -> a1 -> a2 -> a3 -> a4 works (depth 4); a4 -> a5 would be depth 5 and fails
    with "too many agents in a row", which comes back up the chain as a4's answer."""
    _, _, call = local_daemon()
    _spawn_all(call, "a1", "a2", "a3", "a4", "a5")
    four = ok(call, "ask", agent="a1", text="ask a2 ask a3 ask a4 answer bottom")
    assert four["answer"] == "bottom"
    five = ok(call, "ask", agent="a1", text="ask a2 ask a3 ask a4 ask a5 answer never")
    assert five["answer"] == "error: too many agents in a row"


def test_cycle_is_refused_below_the_depth_limit(local_daemon: Any) -> None:
    """human -> a -> b -> a is refused as a cycle at depth 3, with a clear error."""
    _, _, call = local_daemon()
    _spawn_all(call, "a", "b")
    res = ok(call, "ask", agent="a", text="ask b ask a answer loop")
    assert res["answer"].startswith("error: refused: a -> b -> a is a cycle"), res["answer"]


def test_unknown_agent_and_self_are_errors(local_daemon: Any) -> None:
    """Asking a name nobody has is NotFound; the caller can not claim to be someone else."""
    _, _, call = local_daemon()
    assert "no agent named nobody" in fails(call, "ask", agent="nobody", text="hi")
    _spawn_all(call, "bee")
    assert "identity mismatch" in fails(call, "ask", agent="bee", text="hi", **{"from": "x"})


def test_depth_is_not_an_argument(local_daemon: Any) -> None:
    """The caller cannot say how deep it is: depth is not part of ask's arguments."""
    _, _, call = local_daemon()
    ok(call, "spawn_subagent", name="bee")
    assert "unknown argument `depth`" in fails(call, "ask", agent="bee", text="hi", depth=0)


def test_workspaces_split_by_profile(local_daemon: Any) -> None:
    """Agents whose profiles are in different workspaces cannot message each other; the same
    workspace can (profiles written with the real kubectl)."""
    import subprocess
    import sys

    d, _, call = local_daemon()
    kc = d.root / "kubeconfig"
    kc.write_text(
        subprocess.run(
            [sys.executable, "-m", "agentcoord", "kubeconfig"],
            env=d.env,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )
    docs = []
    for name, ws in (("red-p", "red"), ("blue-p", "blue")):
        docs.append(
            "apiVersion: fastverk.savvifi.com/v1\nkind: AgentProfile\n"
            f"metadata:\n  name: {name}\n  labels:\n    fastverk.savvifi.com/workspace: {ws}\n"
            "spec:\n  backend: claude-code\n"
        )
    subprocess.run(
        ["kubectl", "--kubeconfig", str(kc), "apply", "-f", "-"],
        input="---\n".join(docs),
        text=True,
        check=True,
        capture_output=True,
    )
    ok(call, "spawn_subagent", name="red1", profile="red-p")
    ok(call, "spawn_subagent", name="red2", profile="red-p")
    ok(call, "spawn_subagent", name="blue1", profile="blue-p")
    across = ok(call, "ask", agent="red1", text="ask blue1 answer hi")
    assert across["answer"] == "error: blue1 is in workspace 'blue', not yours ('red')"
    assert ok(call, "ask", agent="red1", text="ask red2 answer hi")["answer"] == "hi"


def test_local_package_agent_is_woken_in_its_package(local_daemon: Any) -> None:
    """A local AgentiHub package agent gets a managed Agent on first message and runs in its
    package directory; the package is not turned into a git repository."""
    from tests.localagents.conftest import make_package

    d, hub, call = local_daemon()
    pkg = make_package(hub, "pkg-a")
    res = ok(call, "ask", agent="pkg-a", text="whoami")
    report = json.loads(res["answer"])
    assert report["cwd"] == str(pkg.resolve())
    assert report["whoami"]["agent"] == "pkg-a"
    assert report["whoami"]["depth"] == 1
    assert not (pkg / ".git").exists()
    assert stored(d, "agents", "pkg-a")["spec"]["agentType"] == "local"  # type: ignore[index]


def test_ask_timeout_and_failed_turns_say_so(local_daemon: Any) -> None:
    """An ask that outlives timeout_secs says the agent is still working; a turn that crashes
    makes ask an error that carries the reason."""
    d, _, call = local_daemon()
    ok(call, "spawn_subagent", name="bee")
    slow = ok(call, "ask", agent="bee", text="sleep 2\nanswer late", timeout_secs=0.3)
    assert slow["answered"] is False
    assert slow["note"] == "bee is still working after 0.3 s"
    wait_for(
        lambda: (stored(d, "agents", "bee") or {}).get("status", {}).get("phase") == "Succeeded"
    )
    err = fails(call, "ask", agent="bee", text="crash")
    assert err.startswith("bee's turn failed: the runner exited 3 without a result")
    assert stored(d, "agents", "bee")["status"]["phase"] == "Failed"  # type: ignore[index]


def _ask_in_flight(d: Any, text: str) -> socket.socket:
    """An ask sent on a connection of its own, once its runner runs; the socket is returned.
    The connection logs in as the human first, as the CLI does (docs/security.md "Who a caller
    is"), and that reply is read off, so the next line on it is the ask's."""
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(60)
    s.connect(str(d.socket))
    login = {"jsonrpc": "2.0", "id": 4, "method": "agentcoord/login"}
    s.sendall(json.dumps({**login, "params": {"token": human_token(d)}}).encode() + b"\n")
    buf = b""
    while not buf.endswith(b"\n"):
        chunk = s.recv(65536)
        assert chunk, "the daemon closed the connection at login"
        buf += chunk
    assert "result" in json.loads(buf), buf
    req = {"jsonrpc": "2.0", "id": 5, "method": "tools/call"}
    req["params"] = {"name": "ask", "arguments": {"agent": "bee", "text": text}}
    s.sendall(json.dumps(req).encode() + b"\n")
    wait_for(lambda: runner_pids(d), what="the ask's runner")
    return s


def test_a_cancelled_ask_stops_its_runner(local_daemon: Any) -> None:
    """notifications/cancelled for an ask stops the turn's runner (it would sleep 60 s) and
    the Agent says the turn was cancelled; the next ask is answered."""
    d, _, call = local_daemon()
    _spawn_all(call, "bee")
    with _ask_in_flight(d, "sleep 60\nanswer late") as s:
        cancel: dict[str, Any] = {"jsonrpc": "2.0", "method": "notifications/cancelled"}
        cancel["params"] = {"requestId": 5, "reason": "user pressed escape"}
        s.sendall(json.dumps(cancel).encode() + b"\n")
        wait_for(lambda: not runner_pids(d), what="the runner stopped")
        agent = wait_for(
            lambda: (
                (a := stored(d, "agents", "bee"))
                and a["status"].get("message") == "cancelled: the asker went away"
                and a
            ),
            what="the cancelled turn on the Agent",
        )
        assert agent["status"]["phase"] == "Failed"
        assert ok(call, "ask", agent="bee", text="answer again")["answer"] == "again"


def test_an_asker_that_hangs_up_stops_the_runner(local_daemon: Any) -> None:
    """An asker that closes its connection mid-ask takes no answer: the runner is stopped."""
    d, _, call = local_daemon()
    _spawn_all(call, "bee")
    _ask_in_flight(d, "sleep 60\nanswer late").close()
    wait_for(lambda: not runner_pids(d), what="the runner stopped")


def test_a_half_closed_asker_still_gets_its_answer(local_daemon: Any) -> None:
    """A client that only shuts down its sending side (as the stdio shim does at the end of
    its input) still reads the answer: EOF is not a hang-up."""
    d, _, call = local_daemon()
    _spawn_all(call, "bee")
    with _ask_in_flight(d, "sleep 1\nanswer kept") as s:
        s.shutdown(socket.SHUT_WR)
        reply = json.loads(s.makefile("rb").readline())
    assert reply["result"]["structuredContent"]["answer"] == "kept"
