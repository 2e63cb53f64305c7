"""A session agent's end and return in the directory (docs/localagents.md "Session lifetime"),
on both stores.

The sessions' keys are live processes (this one and a child): on the Kubernetes store the API
server is a real daemon, which ends session agents whose process is gone."""

from __future__ import annotations

import subprocess
import sys
import uuid
from collections.abc import Iterator

import psutil
import pytest

from agentcoord.kernel.directory import SessionKey
from agentcoord.stores.objects import ObjectBackend
from agentcoord.stores.objects.agentdirectory import (
    PROC_LABEL,
    USED_ANNOTATION,
    StoreDirectory,
    parse_proc,
)


@pytest.fixture
def keys() -> Iterator[tuple[SessionKey, SessionKey]]:
    """Two live processes' (pid, create_time): this one, and a child sleeping meanwhile."""
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    me, other = psutil.Process(), psutil.Process(child.pid)
    yield (me.pid, me.create_time()), (other.pid, other.create_time())
    child.kill()
    child.wait()


@pytest.fixture
def sid() -> str:
    return str(uuid.uuid4())


@pytest.fixture
def cwd() -> str:
    """A directory name no other test uses (the API server's store outlives a test)."""
    return f"/w/app{uuid.uuid4().hex[:8]}"


def _base(cwd: str) -> str:
    """What a Claude Code session in ``cwd`` is named after (identity/kinds/claudecode.py)."""
    return cwd.rsplit("/", 1)[1]


async def _status(store: ObjectBackend, name: str) -> dict[str, object]:
    return dict((await store.get("agents", "default", name))["status"])


async def test_used_session_ends_and_comes_back_on_resume(
    store: ObjectBackend, keys: tuple[SessionKey, SessionKey], sid: str, cwd: str
) -> None:
    """A session that took part is Ended with endedAt and reason; a new process of the same
    session id gets the same Agent back, Running on that process, end fields cleared."""
    d = StoreDirectory(store)
    first, second = keys
    name = await d.session_agent(first, sid, cwd, _base(cwd))
    await d.mark_used(name)
    obj = await store.get("agents", "default", name)
    assert obj["metadata"]["annotations"][USED_ANNOTATION] == "true"
    assert await d.end_session(name, "process exited", first) == "ended"
    status = await _status(store, name)
    assert status["phase"] == "Ended"
    assert status["reason"] == "process exited"
    assert str(status["endedAt"]).endswith("Z")
    assert await d.end_session(name, "again", first) is None  # nothing left to end
    assert await d.session_agent(second, sid, cwd, _base(cwd)) == name
    back = await store.get("agents", "default", name)
    assert back["status"]["phase"] == "Running"
    assert back["status"]["pid"] == second[0]
    assert "endedAt" not in back["status"]
    assert "reason" not in back["status"]
    got = parse_proc(back["metadata"]["labels"][PROC_LABEL])
    assert got is not None
    assert got[0] == second[0]
    assert abs(got[1] - second[1]) < 0.001


async def test_end_from_an_older_process_is_ignored(
    store: ObjectBackend, keys: tuple[SessionKey, SessionKey], sid: str, cwd: str
) -> None:
    """The exit of a process the session has moved away from (resumed elsewhere) ends nothing."""
    d = StoreDirectory(store)
    first, second = keys
    name = await d.session_agent(first, sid, cwd, _base(cwd))
    await d.mark_used(name)
    await d.session_agent(second, sid, cwd, _base(cwd))
    assert await d.end_session(name, "process exited", first) is None
    assert (await _status(store, name))["phase"] == "Running"


async def test_session_that_never_took_part_is_removed(
    store: ObjectBackend, keys: tuple[SessionKey, SessionKey], cwd: str
) -> None:
    """Ending a session with no tool call or hook removes its Agent (a health check's)."""
    d = StoreDirectory(store)
    first = keys[0]
    name = await d.session_agent(first, None, cwd, _base(cwd))
    assert await d.end_session(name, "process exited", first) == "removed"
    assert await d.remove_ended(name) is False  # gone already
    assert name not in {o["metadata"]["name"] for o in (await store.list("agents"))[0]}


async def test_remove_ended_only_takes_ended_agents(
    store: ObjectBackend, keys: tuple[SessionKey, SessionKey], sid: str, cwd: str
) -> None:
    """The retention removes an Ended session agent, never a Running one."""
    d = StoreDirectory(store)
    first = keys[0]
    name = await d.session_agent(first, sid, cwd, _base(cwd))
    await d.mark_used(name)
    assert await d.remove_ended(name) is False
    await d.end_session(name, "SessionEnd hook")
    assert await d.remove_ended(name) is True
    assert await d.remove_ended(name) is False  # gone already
    assert name not in {o["metadata"]["name"] for o in (await store.list("agents"))[0]}
    assert await d.session_agent(first, sid, cwd, _base(cwd)) == name  # the name is free again


def test_parse_proc_refuses_other_labels() -> None:
    """Only `<pid>-<ms>` is a session-proc label."""
    assert parse_proc("123-4567") == (123, 4.567)
    assert parse_proc("abc-1") is None
    assert parse_proc("") is None
    assert parse_proc(None) is None
