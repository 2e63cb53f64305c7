"""File claims across git worktrees (docs/claims.md "Claiming files"): the real daemon, real
repositories with ``git worktree add``, sessions as stand-in ``claude`` processes whose hooks
run as their children with the JSON Claude Code sends."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any, cast

import nats
import pytest

from agentcoord.claude.hooks import HookDeps, Hooks
from agentcoord.daemon.natsd import NatsSupervisor
from agentcoord.kernel.caller import Caller
from agentcoord.kernel.config import load_config
from agentcoord.leases import EditLeases, FileKeys
from agentcoord.leases.leasing import Leases
from agentcoord.stores.kv import ClaimStore, FocusStore
from tests.conftest import FAKES, Daemon
from tests.tools.conftest import ToolFailed

_GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid"]


def _git(cwd: Path, *args: str) -> None:
    subprocess.run([*_GIT, *args], cwd=cwd, check=True, capture_output=True, timeout=30)


def _repo(path: Path) -> Path:
    """A repository with one commit on ``main`` and a ``src/`` and ``sub/`` directory."""
    (path / "src").mkdir(parents=True)
    (path / "sub").mkdir()
    _git(path, "init", "-q", "-b", "main")
    (path / "README").write_text("x\n")
    _git(path, "add", "README")
    _git(path, "commit", "-q", "-m", "init")
    return path


def _worktree(repo: Path, path: Path, branch: str) -> Path:
    _git(repo, "worktree", "add", "-q", "-b", branch, str(path))
    (path / "src").mkdir(exist_ok=True)
    (path / "sub").mkdir(exist_ok=True)
    return path


class Session:
    """One Claude Code session in ``cwd``: its MCP connection and its hooks, both under one
    stand-in ``claude`` (tests/fakes/session_driver.py)."""

    def __init__(self, d: Daemon, claude_bin: Path, cwd: Path, session_id: str) -> None:
        self.cwd = cwd
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
            env={**d.env, "CLAUDE_CODE_SESSION_ID": session_id},
            cwd=cwd,
            text=True,
        )
        self.name: str = self.call("whoami")["agent"]

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

    def text(self, tool: str, **args: Any) -> str:
        """The tool's text rendering (what the model reads)."""
        return str(self._ask({"call": tool, "args": args})["content"][0]["text"])

    def edit(self, path: str | Path, tool: str = "Edit") -> str | None:
        """A PreToolUse hook for ``tool`` on ``path`` as Claude Code sends it: None when
        allowed, else the deny reason."""
        field = "notebook_path" if tool == "NotebookEdit" else "file_path"
        payload = {
            "session_id": self.session_id,
            "hook_event_name": "PreToolUse",
            "tool_name": tool,
            "tool_input": {field: str(path), "old_string": "a", "new_string": "b"},
            "cwd": str(self.cwd),
        }
        out = self._ask({"hook": "pre-tool-use", "payload": payload})
        assert out["returncode"] == 0, out
        if not out["output"].strip():
            return None
        spec = json.loads(out["output"])["hookSpecificOutput"]
        assert spec["permissionDecision"] == "deny"
        return str(spec["permissionDecisionReason"])

    def end(self, reason: str = "other") -> None:
        """The SessionEnd hook, as Claude Code runs it when the conversation ends."""
        payload = {"session_id": self.session_id, "hook_event_name": "SessionEnd"}
        self._ask({"hook": "session-end", "payload": {**payload, "reason": reason}})

    def close(self) -> None:
        """The session's process exits (the driver, then the ``claude`` above it)."""
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            self.proc.wait(10)
        if self.proc.stdout is not None:
            self.proc.stdout.close()


@pytest.fixture
def sessions(daemon: Daemon, claude_bin: Path) -> Iterator[Callable[[Path], Session]]:
    """A factory of sessions on the test's daemon, one per cwd; all closed at the end."""
    made: list[Session] = []

    def make(cwd: Path) -> Session:
        s = Session(daemon, claude_bin, cwd, f"sess-{len(made)}-{cwd.name}")
        made.append(s)
        return s

    yield make
    for s in made:
        s.close()


@pytest.fixture
def wt(tmp_path: Path) -> tuple[Path, Path]:
    """A repository (worktree W1 on main) and its linked worktree W2 on branch feature."""
    w1 = _repo(tmp_path / "work" / "app")
    return w1, _worktree(w1, tmp_path / "work" / "app-feature", "feature")


def _wait_until(pred: Callable[[], bool], timeout: float = 15.0) -> None:
    """Poll ``pred`` (each poll is a hook round trip) until it holds, at most ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while not pred():
        assert time.monotonic() < deadline, "condition not reached in time"


def test_a_claim_in_one_worktree_denies_the_write_in_another(
    wt: tuple[Path, Path], sessions: Callable[[Path], Session]
) -> None:
    """A claims file:src/app.py in W1; B's Write of W2/src/app.py (absolute or relative) is
    denied, naming A, since when and how to ask; B's other files are not."""
    w1, w2 = wt
    a, b = sessions(w1), sessions(w2)
    got = a.call("claim", resource_key="file:src/app.py", ttl="5m")
    assert got["acquired"] is True
    reason = b.edit(w2 / "src" / "app.py", "Write")
    assert reason is not None
    assert a.name in reason
    assert f"send_message to {a.name}" in reason
    assert "since 20" in reason
    assert b.edit("src/app.py", "Write") is not None
    assert b.edit("src/other.py", "Write") is None


def test_the_same_path_in_another_repository_is_allowed(
    tmp_path: Path, sessions: Callable[[Path], Session]
) -> None:
    """The same relative path in a different repository is a different file."""
    one, two = _repo(tmp_path / "work" / "one"), _repo(tmp_path / "work" / "two")
    a, b = sessions(one), sessions(two)
    assert a.call("claim", resource_key="file:src/app.py")["acquired"] is True
    assert b.edit(two / "src" / "app.py", "Write") is None
    assert b.edit(one / "src" / "app.py", "Write") is not None


def test_a_claim_from_a_subdirectory_covers_the_file_it_names(
    wt: tuple[Path, Path], sessions: Callable[[Path], Session]
) -> None:
    """A in W1/sub claims file:../src/app.py: the repository's src/app.py, in every worktree;
    sub/src/app.py is another file."""
    w1, w2 = wt
    a, b = sessions(w1 / "sub"), sessions(w2)
    claimed = a.call("claim", resource_key="file:../src/app.py")
    assert claimed["claim"]["path"] == "src/app.py"
    assert b.edit("src/app.py") is not None
    assert b.edit(w1 / "src" / "app.py") is not None
    assert b.edit("sub/src/app.py") is None


def test_relative_claims_resolve_against_the_claimer(
    tmp_path: Path, sessions: Callable[[Path], Session]
) -> None:
    """Outside git: alpha's file:f.txt does not cover beta/f.txt, and does cover alpha/f.txt
    written from alpha/sub as ../f.txt."""
    alpha, beta = tmp_path / "work" / "alpha", tmp_path / "work" / "beta"
    (alpha / "sub").mkdir(parents=True)
    beta.mkdir()
    a, b, c = sessions(alpha), sessions(beta), sessions(alpha / "sub")
    assert a.call("claim", resource_key="file:f.txt")["acquired"] is True
    assert b.edit("f.txt", "Write") is None
    assert c.edit("../f.txt", "Write") is not None
    assert c.edit(alpha / "f.txt", "Write") is not None
    assert c.edit("f.txt", "Write") is None  # alpha/sub/f.txt


def test_check_claims_shows_the_repository_path_worktree_and_branch(
    wt: tuple[Path, Path], sessions: Callable[[Path], Session]
) -> None:
    """check_claims from W1 shows W2's claim by its repository-relative path, with the holder's
    worktree and branch; the holder releases it by the same relative key."""
    w1, w2 = wt
    holder, looker = sessions(w2), sessions(w1)
    token = holder.call("claim", resource_key="file:src/app.py", purpose="refactor")["token"]
    rows = looker.call("check_claims", prefix="file:src/")["claims"]
    assert len(rows) == 1
    row = rows[0]
    assert row["path"] == "src/app.py"
    assert row["repository"] == os.path.realpath(w1 / ".git")
    assert (row["worktree"], row["branch"]) == (os.path.realpath(w2), "feature")
    assert (row["agent"], row["mode"], row["token"], row["purpose"]) == (
        holder.name,
        "write",
        token,
        "refactor",
    )
    text = looker.text("check_claims", prefix="file:src/app.py")
    assert text.startswith("src/app.py (repo app, worktree ")
    assert "branch feature" in text
    assert looker.call("check_claims", prefix="file:sub/")["claims"] == []
    assert holder.call("release", resource_key="file:src/app.py", token=token)["released"]
    assert looker.edit("src/app.py") is None


def test_an_absolute_path_claim_is_the_same_claim(
    wt: tuple[Path, Path], tmp_path: Path, sessions: Callable[[Path], Session]
) -> None:
    """A claim by absolute path (file:/... or a bare /...), from any cwd, is the canonical key
    a relative claim in any worktree would take."""
    w1, w2 = wt
    elsewhere = tmp_path / "work" / "elsewhere"
    elsewhere.mkdir()
    a, b = sessions(elsewhere), sessions(w2)
    first = a.call("claim", resource_key=f"file:{w1 / 'src' / 'app.py'}")["claim"]
    assert first["path"] == "src/app.py"
    bare = a.call("claim", resource_key=str(w2 / "src" / "lib.py"))["claim"]
    contention = b.call("claim", resource_key="file:src/app.py")
    assert contention["acquired"] is False
    assert contention["holder"]["resource_key"] == first["resource_key"]
    assert b.edit("src/lib.py") is not None
    assert bare["resource_key"].endswith("//src/lib.py")


def test_an_edit_leases_the_file_until_the_session_ends(
    wt: tuple[Path, Path], sessions: Callable[[Path], Session]
) -> None:
    """A's first edit of f takes an automatic lease: B's edit of f is denied naming A and A's
    focus; once A's process exits, B may edit (and leases it in turn)."""
    w1, w2 = wt
    a, b = sessions(w1), sessions(w2)
    a.call("annotate", intent="splitting the parser")
    assert a.edit("src/app.py") is None
    assert a.edit(w1 / "src" / "app.py", "MultiEdit") is None  # its own lease: renewed
    (lease,) = b.call("check_claims", prefix="file:src/app.py")["claims"]
    assert (lease["agent"], lease["purpose"]) == (a.name, "automatic edit lease")
    assert (lease["worktree"], lease["branch"]) == (os.path.realpath(w1), "main")
    reason = b.edit("src/app.py", "Write")
    assert reason is not None
    assert a.name in reason
    assert "splitting the parser" in reason
    assert f"send_message to {a.name}" in reason
    a.close()
    _wait_until(lambda: b.edit("src/app.py") is None)
    (mine,) = b.call("check_claims", prefix="file:src/app.py")["claims"]
    assert mine["agent"] == b.name


def test_session_end_releases_edit_leases_at_once(
    wt: tuple[Path, Path], sessions: Callable[[Path], Session]
) -> None:
    """The SessionEnd hook drops the session's automatic leases (not its explicit claims)."""
    w1, w2 = wt
    a, b = sessions(w1), sessions(w2)
    assert a.edit("src/app.py") is None
    assert a.call("claim", resource_key="file:src/keep.py")["acquired"] is True
    a.end()
    assert b.edit("src/app.py") is None
    assert b.edit("src/keep.py") is not None


def test_an_explicit_claim_and_the_edit_lease_do_not_conflict(
    wt: tuple[Path, Path], sessions: Callable[[Path], Session]
) -> None:
    """A's own claim is not replaced by its edits (same token, purpose kept), an edit lease is
    replaced by A's later claim, and A's token still releases it."""
    w1, w2 = wt
    a, b = sessions(w1), sessions(w2)
    token = a.call("claim", resource_key="file:src/app.py", purpose="mine")["token"]
    assert a.edit("src/app.py") is None
    assert a.edit("src/app.py", "Write") is None
    (row,) = a.call("check_claims", prefix="file:src/app.py")["claims"]
    assert (row["token"], row["purpose"]) == (token, "mine")
    assert a.edit("src/lib.py") is None  # leased automatically
    again = a.call("claim", resource_key="file:src/lib.py", ttl="1h")
    assert again["acquired"] is True
    assert a.edit("src/lib.py") is None
    assert b.edit("src/lib.py") is not None
    assert a.call("release", resource_key="file:src/app.py", token=token)["released"] is True
    assert a.call("release", resource_key="file:src/lib.py", token=again["token"])["released"]
    assert b.edit("src/app.py") is None


def test_notebook_edits_are_guarded_and_reads_are_not(
    wt: tuple[Path, Path], sessions: Callable[[Path], Session]
) -> None:
    """NotebookEdit's notebook_path is guarded like a file_path; a Read is never denied."""
    w1, w2 = wt
    a, b = sessions(w1), sessions(w2)
    assert a.edit("nb.ipynb", "NotebookEdit") is None
    assert b.edit("nb.ipynb", "NotebookEdit") is not None
    assert b.edit("nb.ipynb", "Read") is None


def test_non_file_keys_are_kept_as_given(
    wt: tuple[Path, Path], sessions: Callable[[Path], Session]
) -> None:
    """symbol: and lock: keys, and bare names, are exact keys (docs/claims.md "Claiming files")."""
    w1, w2 = wt
    a, b = sessions(w1), sessions(w2)
    for key in ("symbol:parse", "lock:migrations", "src/app.py"):
        assert a.call("claim", resource_key=key)["claim"]["resource_key"] == key
        assert b.call("claim", resource_key=key)["acquired"] is False
    assert b.edit("src/app.py") is None  # a bare relative name is not a file claim


# ---- the write guard in-process, over a real nats-server's claim and focus stores ----------


class _Audit:
    """An audit sink that signals each expiry the claim store's reaper records."""

    def __init__(self) -> None:
        self.expired = asyncio.Event()

    def emit(self, type_: str, agent: str, **data: Any) -> None:
        if type_ == "CLAIM_RELEASED" and data.get("reason") == "expired":
            self.expired.set()


@contextlib.asynccontextmanager
async def _guard(
    tmp_path: Path, leases: EditLeases
) -> AsyncIterator[tuple[Hooks, ClaimStore, _Audit]]:
    """The daemon's hook handlers over a real claim store and focus store (the PreToolUse path
    reads nothing else)."""
    audit = _Audit()
    async with NatsSupervisor(tmp_path / "state") as sup:
        nc = await nats.connect(sup.url, user=sup.user, password=sup.password)
        try:
            js = nc.jetstream()
            async with ClaimStore(js, audit) as claims, FocusStore(js, audit) as focus:
                unused = cast(Any, None)  # messaging, directory, sessions: other events only
                deps = HookDeps(Leases(claims, focus, FileKeys(), leases), unused, unused, unused)
                yield Hooks(deps), claims, audit
        finally:
            await nc.close()


def _runner(agent: str, cwd: Path) -> Caller:
    # A runner's claims are bound to its pid: this test process, alive throughout.
    return Caller(kind="runner", agent=agent, via="internal", pid=os.getpid(), cwd=str(cwd))


async def _edit(hooks: Hooks, who: Caller, path: Path | str) -> str | None:
    payload = {
        "hook_event_name": "PreToolUse",
        "tool_name": "Edit",
        "tool_input": {"file_path": str(path), "old_string": "a", "new_string": "b"},
        "cwd": who.cwd,
    }
    out = await hooks.run(who, "pre-tool-use", payload)
    return None if out is None else str(out["hookSpecificOutput"]["permissionDecisionReason"])


async def test_an_edit_lease_lapses_after_the_configured_quiet_period(
    wt: tuple[Path, Path], tmp_path: Path
) -> None:
    """With edit_lease_quiet = 2s, A's lease (from W1) denies B (in W2) until it expires
    unrenewed; then B's edit is allowed and leases the file to B."""
    w1, w2 = wt
    cfg = load_config(env={"AGENTCOORD_EDIT_LEASE_QUIET": "2s", "HOME": str(tmp_path)})
    leases = EditLeases.from_config(cfg)
    assert leases == EditLeases(True, 2.0)
    a, b = _runner("a", w1), _runner("b", w2)
    async with _guard(tmp_path, leases) as (hooks, claims, audit):
        assert await _edit(hooks, a, w1 / "src" / "app.py") is None
        reason = await _edit(hooks, b, "src/app.py")
        assert reason is not None
        assert "by a since" in reason
        async with asyncio.timeout(15):
            await audit.expired.wait()
        assert await _edit(hooks, b, "src/app.py") is None
        assert [h.agent for _, h in claims.check("file:")] == ["b"]


async def test_the_guard_decides_in_well_under_a_millisecond_among_1000_claims(
    wt: tuple[Path, Path], tmp_path: Path
) -> None:
    """With 1,000 live claims, a denied edit and an edit under one's own lease each take well
    under 1 ms (median of 200), the path resolution cached and the lookup by key."""
    w1, w2 = wt
    a, b = _runner("a", w1), _runner("b", w2)
    async with _guard(tmp_path, EditLeases(True, 600.0)) as (hooks, claims, _):
        for i in range(1000):
            assert await _edit(hooks, a, f"src/f{i}.py") is None
        assert len(claims.check("")) == 1000

        async def median(who: Caller, path: str) -> float:
            times = []
            for _ in range(200):
                t0 = time.perf_counter()
                await _edit(hooks, who, path)
                times.append(time.perf_counter() - t0)
            return statistics.median(times)

        assert await _edit(hooks, b, "src/f500.py") is not None
        assert await median(b, "src/f500.py") < 0.001
        assert await median(a, "src/f999.py") < 0.001
