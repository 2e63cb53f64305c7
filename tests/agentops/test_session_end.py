"""Session agents end with their ``claude`` process (docs/localagents.md "Session lifetime"):
a real daemon, sessions as stand-in ``claude`` processes identified by their ancestry, the
Agent objects read from the daemon's SQLite file."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

import psutil
import pytest
from mcp import Client, StdioServerParameters

from agentcoord.localagents.session_end import same_process
from tests.agentops.conftest import stored, wait_for
from tests.conftest import FAKES, Daemon
from tests.tools.conftest import ToolFailed, cli, nats_login

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


class Session:
    """``claude -- python session_driver.py SOCKET``: one session's MCP connection and hooks."""

    def __init__(
        self, d: Daemon, claude_bin: Path, cwd: Path, session_id: str, identify: bool = True
    ) -> None:
        cwd.mkdir(parents=True, exist_ok=True)
        env = {**d.env, "CLAUDE_CODE_SESSION_ID": session_id}
        self.session_id = session_id
        self.proc = subprocess.Popen(
            [
                str(claude_bin),
                "--",
                sys.executable,
                str(FAKES / "session_driver.py"),
                str(d.socket),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
            cwd=cwd,
            text=True,
        )
        self.name: str = self.call("whoami")["agent"] if identify else ""

    def _ask(self, cmd: dict[str, Any]) -> dict[str, Any]:
        assert self.proc.stdin is not None
        assert self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(cmd) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        assert line, "the session driver exited"
        return json.loads(line)  # type: ignore[no-any-return]

    def call(self, tool: str, **args: Any) -> dict[str, Any]:
        result = self._ask({"call": tool, "args": args})
        if result.get("isError"):
            raise ToolFailed(result["content"][0]["text"])
        return result["structuredContent"]  # type: ignore[no-any-return]

    def hook(self, event: str, **payload: Any) -> dict[str, Any]:
        return self._ask({"hook": event, "payload": {"session_id": self.session_id, **payload}})

    def close(self) -> None:
        """End the session: the driver, then the ``claude`` above it, exit."""
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            self.proc.wait(10)
        if self.proc.stdout is not None:
            self.proc.stdout.close()


@pytest.fixture
def sessions(claude_bin: Path, tmp_path: Path) -> Any:
    """A factory of sessions (on a given daemon, in work/<dir>); all closed at the end."""
    made: list[Session] = []

    def make(
        d: Daemon, where: str = "proj", session_id: str | None = None, identify: bool = True
    ) -> Session:
        sid = session_id or f"sess-{len(made)}-{where}"
        s = Session(d, claude_bin, tmp_path / "work" / where, sid, identify)
        made.append(s)
        return s

    yield make
    for s in made:
        s.close()


def _status(d: Daemon, name: str) -> dict[str, Any]:
    obj = stored(d, "agents", name)
    assert obj is not None, f"no Agent {name}"
    return obj["status"]  # type: ignore[no-any-return]


def _ended(d: Daemon, name: str, timeout: float = 60.0) -> dict[str, Any]:
    """The Agent's status once it is Ended, waited for at most ``timeout`` s (generous: a
    busy machine is slow)."""
    return wait_for(  # type: ignore[no-any-return]
        lambda: (s := _status(d, name))["phase"] == "Ended" and s,
        timeout=timeout,
        what=f"{name} to end",
    )


def _session_agents(d: Daemon) -> list[str]:
    import sqlite3

    db = sqlite3.connect(f"file:{d.state_dir / 'objects.db'}?mode=ro", uri=True, timeout=5)
    try:
        rows = db.execute("SELECT object FROM objects WHERE resource = 'agents'").fetchall()
    finally:
        db.close()
    objs = [json.loads(raw) for (raw,) in rows]
    return [o["metadata"]["name"] for o in objs if o["spec"].get("agentType") == "session"]


def test_exit_of_the_claude_process_ends_the_agent(daemon: Daemon, sessions: Any) -> None:
    """When the session's claude process exits its Agent is Ended, with endedAt and the
    reason: the pidfd watch's "process exited" (nothing else ends it so)."""
    s = sessions(daemon)
    assert _status(daemon, s.name)["phase"] == "Running"
    s.close()
    status = _ended(daemon, s.name)
    assert status["reason"] == "process exited"
    assert status["endedAt"].endswith("Z")


def test_session_end_hook_ends_the_agent_at_once(daemon: Daemon, sessions: Any) -> None:
    """The SessionEnd hook ends the Agent before the process exits; /clear (the process goes
    on) does not; the exit afterwards changes nothing."""
    s = sessions(daemon)
    assert s.hook("session-end", hook_event_name="SessionEnd", reason="clear")["returncode"] == 0
    assert _status(daemon, s.name)["phase"] == "Running"
    done = s.hook("session-end", hook_event_name="SessionEnd", reason="prompt_input_exit")
    assert done == {"output": "", "returncode": 0}
    status = _status(daemon, s.name)  # read at once, no waiting
    assert status["phase"] == "Ended"
    assert status["reason"] == "SessionEnd hook (prompt_input_exit)"
    assert s.proc.poll() is None  # the claude process is still there
    s.close()
    with pytest.raises(AssertionError, match="timed out"):
        wait_for(lambda: _status(daemon, s.name) != status, timeout=1.0)


def test_session_end_of_a_session_that_never_took_part_removes_it(
    daemon: Daemon, sessions: Any
) -> None:
    """A session that only connected (no tool call, no other hook) is removed at SessionEnd,
    not kept as Ended."""
    s = sessions(daemon, identify=False)
    (name,) = wait_for(lambda: _session_agents(daemon), what="the connection's agent")
    assert _status(daemon, name)["phase"] == "Running"
    assert s.hook("session-end", hook_event_name="SessionEnd", reason="other")["returncode"] == 0
    assert _session_agents(daemon) == []


def test_resume_brings_the_same_agent_back(daemon: Daemon, sessions: Any) -> None:
    """`claude --resume` (a new process, same session id) is the same agent, Running again;
    it ends again when that process exits."""
    first = sessions(daemon, "app", session_id="resume-me")
    first.call("annotate", intent="porting the parser")
    first.close()
    _ended(daemon, first.name)
    again = sessions(daemon, "app", session_id="resume-me")
    assert again.name == first.name
    status = _status(daemon, again.name)
    assert status["phase"] == "Running"
    assert "endedAt" not in status
    assert "reason" not in status
    assert status["pid"] == again.proc.pid  # the new claude process
    assert again.call("get_agent", name=again.name)["agent"]["focus"]["intent"] == (
        "porting the parser"
    )
    again.close()
    assert _ended(daemon, again.name)["reason"] == "process exited"


def _console_agents(d: Daemon) -> list[dict[str, Any]]:
    token = (d.state_dir / "human.token").read_text().strip()
    req = urllib.request.Request(
        f"{d.url}/console/api/state", headers={"authorization": f"Bearer {token}"}
    )
    with urllib.request.urlopen(req, timeout=10) as resp:
        return json.loads(resp.read())["agents"]  # type: ignore[no-any-return]


def test_listings_show_live_agents_and_ended_ones_on_request(daemon: Daemon, sessions: Any) -> None:
    """list_agents, `agentcoord agents` and the console hide ended sessions by default and
    show them with status ended/all, --all, or the console's ended rows."""
    live, gone = sessions(daemon, "live"), sessions(daemon, "gone")
    gone.close()
    _ended(daemon, gone.name)

    def names(**args: Any) -> set[str]:
        return {a["name"] for a in live.call("list_agents", **args)["agents"]}

    assert live.name in names()
    assert gone.name not in names()
    assert names(status="ended") == {gone.name}
    assert {live.name, gone.name} <= names(status="all")
    row = next(a for a in live.call("list_agents", status="ended")["agents"])
    assert row["phase"] == "Ended"
    assert row["reason"] == "process exited"
    assert row["ended_at"]

    plain = cli(daemon, "agents", "--json")
    assert plain.returncode == 0, plain.stderr
    assert {a["name"] for a in json.loads(plain.stdout)["agents"]} & {live.name, gone.name} == {
        live.name
    }
    every = cli(daemon, "agents", "--all")
    assert every.returncode == 0, every.stderr
    line = next(x for x in every.stdout.splitlines() if x.startswith(gone.name))
    assert "Ended" in line
    assert "process exited" in line

    rows = {a["name"]: a for a in _console_agents(daemon)}
    assert rows[gone.name]["ended"] is True
    assert rows[gone.name]["reason"] == "process exited"
    assert rows[live.name]["ended"] is False


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (.ci/run installs it)")
def test_console_page_shows_ended_sessions_when_asked(daemon: Daemon, sessions: Any) -> None:
    """In Chromium the console lists the live session, and the ended one only once the
    "ended sessions" box is ticked."""
    from playwright.sync_api import sync_playwright

    live, gone = sessions(daemon, "shown"), sessions(daemon, "hidden")
    gone.close()
    _ended(daemon, gone.name)
    link = cli(daemon, "console").stdout.strip()
    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu", "--no-first-run"]
        )
        try:
            page = browser.new_page()
            page.goto(link)
            page.wait_for_selector(f"#agents >> text={live.name}", timeout=20_000)
            assert gone.name not in page.inner_text("#agents")
            page.check("#show-ended")
            page.wait_for_selector(f"#agents >> text={gone.name}", timeout=20_000)
            assert "process exited" in page.inner_text("#agents")
        finally:
            browser.close()


def test_daemon_restart_ends_sessions_whose_process_is_gone(daemon: Daemon, sessions: Any) -> None:
    """A session whose claude exited while the daemon was down is Ended at the next start
    ("gone at daemon start"); one still running stays Running and is watched again."""
    stays, leaves = sessions(daemon, "stays"), sessions(daemon, "leaves")
    daemon.stop()
    leaves.close()
    daemon.start()
    assert _ended(daemon, leaves.name)["reason"] == "gone at daemon start"
    assert _status(daemon, stays.name)["phase"] == "Running"
    stays.close()
    assert _ended(daemon, stays.name)["reason"] == "process exited"


def test_same_process_is_keyed_by_pid_and_start_time(claude_bin: Path) -> None:
    """A live pid with another start time (a reused pid) is not the session's process; a
    zombie or a missing pid is gone."""
    me = psutil.Process()
    assert same_process((me.pid, me.create_time()))
    assert not same_process((me.pid, me.create_time() - 5.0))
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    started = psutil.Process(child.pid).create_time()
    wait_for(lambda: psutil.Process(child.pid).status() == psutil.STATUS_ZOMBIE, what="zombie")
    assert not same_process((child.pid, started))
    child.wait()
    assert not same_process((child.pid, started))


def test_retention_removes_ended_agents_with_inbox_and_focus(
    daemon_factory: Any, sessions: Any
) -> None:
    """With session_retention 3 s an ended session's Agent, focus and inbox go; a new session
    in the same directory then gets the name with nothing of the old one's."""
    # 3 s, not 1: the Ended phase must still be there when it is read, on a loaded machine too.
    d = daemon_factory(AGENTCOORD_SESSION_RETENTION="3").start()
    old, peer = sessions(d, "work"), sessions(d, "peer")
    old.call("annotate", intent="tuning the retention sweep")
    assert peer.call("send", to=old.name, text="for later")["delivery"] == "queued"
    old.close()
    _ended(d, old.name)
    wait_for(lambda: stored(d, "agents", old.name) is None, what="removal")
    assert stored(d, "agents", peer.name) is not None  # live agents are not touched
    # The inbox, then the focus, go right after the Agent (daemon/run.py's order).
    wait_for(
        lambda: peer.call("find_agents", query="retention")["matches"] == [],
        what="the focus to go",
    )

    async def inbox_left() -> tuple[bool, int]:
        import nats
        from nats.js.errors import NotFoundError

        from agentcoord.stores.messagebus import STREAM, consumer_name, inbox_subject

        url, user, password = nats_login(d)
        nc = await nats.connect(url, user=user, password=password)
        try:
            js = nc.jetstream()
            try:
                await js.consumer_info(STREAM, consumer_name(old.name))
                consumer = True
            except NotFoundError:
                consumer = False
            info = await js.stream_info(STREAM, subjects_filter=inbox_subject(old.name))
            return consumer, (info.state.subjects or {}).get(inbox_subject(old.name), 0)
        finally:
            await nc.close()

    assert asyncio.run(inbox_left()) == (False, 0)
    again = sessions(d, "work", session_id="another-session")
    assert again.name == old.name
    assert again.call("inbox")["count"] == 0
    assert again.call("get_agent", name=again.name)["agent"]["focus"] is None


async def test_health_check_leaves_no_agent(
    daemon: Daemon, claude_bin: Path, tmp_path: Path
) -> None:
    """`claude mcp list`'s check (the shim under claude: initialize, tools/list, exit) leaves
    no Agent: one that never called a tool is removed when its process ends."""
    env = {
        "AGENTCOORD_RUNTIME_DIR": str(daemon.runtime_dir),
        "CLAUDE_CONFIG_DIR": daemon.env["CLAUDE_CONFIG_DIR"],
        "CLAUDE_CODE_SESSION_ID": "health-check",
        "PYTHONPATH": os.environ.get("PYTHONPATH", ""),
    }
    params = StdioServerParameters(
        command=str(claude_bin),
        args=["--", sys.executable, "-m", "agentcoord", "mcp"],
        env=env,
        cwd=str(tmp_path),
    )
    async with Client(params, mode="legacy") as client:
        assert (await client.list_tools()).tools
        during = _session_agents(daemon)
    assert len(during) == 1  # the connection was a session while it lasted
    wait_for(lambda: not _session_agents(daemon), what="the agent to go")
