"""Session agents become Agent objects on first contact and are found again after a restart."""

from __future__ import annotations

from pathlib import Path

import psutil

from agentcoord.stores.objects import ObjectBackend, ObjectStore
from agentcoord.stores.objects.agentdirectory import (
    DIR_LABEL,
    PROC_LABEL,
    SESSION_LABEL,
    StoreDirectory,
)

SID = "0b7e9a52-5d43-4d5a-9a55-5c1d1f7b0c11"


async def test_first_contact_creates_running_agent(store: ObjectBackend) -> None:
    """A new session gets `<dir>-<n>`, phase Running, and session/dir/process labels (both
    stores)."""
    # A live process (this one): the Kubernetes store's API server is a daemon, which ends a
    # session agent whose process is gone (docs/localagents.md "Session lifetime").
    me = psutil.Process()
    key = (me.pid, me.create_time())
    d = StoreDirectory(store)
    name = await d.session_agent(key, SID, "/home/u/My Project", "My Project")
    assert name == "my-project-1"
    obj = await store.get("agents", "default", name)
    assert obj["status"]["phase"] == "Running"
    labels = obj["metadata"]["labels"]
    proc = f"{me.pid}-{round(key[1] * 1000)}"
    assert labels == {SESSION_LABEL: SID, DIR_LABEL: "my-project", PROC_LABEL: proc}
    assert obj["spec"]["cwd"] == "/home/u/My Project"
    assert await d.session_agent(key, SID, "/home/u/My Project", "My Project") == name
    other = await d.session_agent((200, 2.5), None, "/home/u/my-project", "my-project")
    assert other == "my-project-2"


async def test_same_session_found_after_restart(tmp_path: Path) -> None:
    """A fresh directory (daemon restart) maps a known session id back to its Agent."""
    async with ObjectStore(tmp_path / "o.db") as store:
        first = await StoreDirectory(store).session_agent((1, 1.0), SID, "/w/app", "app")
    async with ObjectStore(tmp_path / "o.db") as store:
        again = await StoreDirectory(store).session_agent((2, 2.0), SID, "/w/app", "app")
        assert again == first
        assert len((await store.list("agents"))[0]) == 1


async def test_session_without_id_found_after_restart_by_its_process(tmp_path: Path) -> None:
    """Without a session id a restart finds the Agent by its claude process (pid + start)."""
    async with ObjectStore(tmp_path / "o.db") as store:
        first = await StoreDirectory(store).session_agent((7, 70.25), None, "/w/app", "app")
    async with ObjectStore(tmp_path / "o.db") as store:
        d = StoreDirectory(store)
        assert await d.session_agent((7, 70.25), None, "/w/app", "app") == first
        assert await d.session_agent((7, 99.0), None, "/w/app", "app") != first  # pid reused


async def test_a_session_named_by_its_cli_keeps_that_name_after_restart(tmp_path: Path) -> None:
    """A session created with its CLI's name ``app-7f`` is that Agent; after a restart it is
    found again under that name, and a native name read later renames no existing agent."""
    async with ObjectStore(tmp_path / "o.db") as store:
        d = StoreDirectory(store)
        assert await d.session_agent((1, 1.0), SID, "/w/app", "app", "app-7f") == "app-7f"
        assert await d.session_agent((2, 2.0), None, "/w/app", "app") == "app-1"
        assert await d.session_agent((2, 2.0), None, "/w/app", "app", "app-c4") == "app-1"
    async with ObjectStore(tmp_path / "o.db") as store:
        d = StoreDirectory(store)
        assert await d.session_agent((3, 3.0), SID, "/w/app", "app", "app-9e") == "app-7f"
        assert await d.session_agent((2, 2.0), None, "/w/app", "app", "app-c4") == "app-1"
        assert await d.session_agent((4, 4.0), "other", "/w/app", "app", "app-7f") == "app-2"
