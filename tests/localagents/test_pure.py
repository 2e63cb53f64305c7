"""Pure parts of local agents: ids and paths, manifests and tags, status, merge and routing,
result JSON parsing and configuration names (the ancestry rule for runners is tests/identity's)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agentcoord.errors import ConfigError
from agentcoord.kernel.config import load_config
from agentcoord.localagents import (
    AgentRecord,
    effective_status,
    find_by_capability,
    is_safe_agent_id,
    merged_records,
    package_dir,
    pick_for_capability,
    resolve_agentihub_dir,
)
from agentcoord.localagents.index import Package
from agentcoord.localagents.manifest import Manifest, capability_tags, parse_manifest
from agentcoord.localagents.merge import iso, local_records
from agentcoord.localagents.runner import parse_result
from agentcoord.localagents.sessions import LiveSession, package_status, project_dir_name
from tests.localagents.conftest import make_package

pytestmark = pytest.mark.unit

NOW = 1_800_000_000.0


@pytest.mark.parametrize("bad", ["", ".", "..", "a/b", "a\\b", "/x", ".git", "a\x00b", "x" * 129])
def test_unsafe_ids(bad: str) -> None:
    """Traversal, separators, dot-names, NUL and over-long ids are not safe components."""
    assert not is_safe_agent_id(bad)


def test_safe_ids() -> None:
    """Ordinary package names are safe."""
    assert all(is_safe_agent_id(x) for x in ["video-editor", "a.b", "agent_1", "ü"])


def test_package_dir_checks(tmp_path: Path) -> None:
    """A package needs CLAUDE.md and must resolve inside the hub; escaping symlinks fail."""
    hub = tmp_path / "hub"
    pkg = make_package(hub, "ok")
    assert package_dir(hub, "ok") == pkg.resolve()
    (hub / "agents" / "empty" / "package").mkdir(parents=True)
    assert package_dir(hub, "empty") is None
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "CLAUDE.md").write_text("x")
    (hub / "agents" / "evil").mkdir()
    (hub / "agents" / "evil" / "package").symlink_to(outside)
    assert package_dir(hub, "evil") is None
    (hub / "agents" / "alias").symlink_to(hub / "agents" / "ok")  # stays inside: allowed
    assert package_dir(hub, "alias") == pkg.resolve()
    assert package_dir(hub, "..") is None


def test_sibling_directory_resolution(tmp_path: Path) -> None:
    """Unset AGENTIHUB_DIR: the nearest ancestor with agentihub/agents/ wins; none: None."""
    (tmp_path / "agentihub" / "agents").mkdir(parents=True)
    start = tmp_path / "src" / "agentcoord" / "localagents" / "paths.py"
    start.parent.mkdir(parents=True)
    start.touch()
    assert resolve_agentihub_dir(None, start) == tmp_path / "agentihub"
    assert resolve_agentihub_dir(Path("/x/hub"), start) == Path("/x/hub")
    assert resolve_agentihub_dir(None, Path("/")) is None


@pytest.mark.parametrize(
    ("text", "tags"),
    [
        (
            "name: v\ncapabilities: [video-editing, content-drafting, video-editing]\n",
            ["local", "agent:v", "video-editing", "content-drafting"],
        ),
        ("capabilities: [local, x]\n", ["local", "agent:v", "x"]),
        ("capabilities: a, b\n", ["local", "agent:v", "a", "b"]),
        ("name: [unclosed\n", ["local", "agent:v"]),
        ("- just\n- a list\n", ["local", "agent:v"]),
        ("capabilities: 7\n", ["local", "agent:v"]),
        ("", ["local", "agent:v"]),
    ],
)
def test_manifest_tags_degrade_to_base(text: str, tags: list[str]) -> None:
    """Declared tags follow the base tags, deduped in order; malformed manifests give base only."""
    assert capability_tags("v", parse_manifest(text)) == tags


def _rec(agent_id: str, **kw: Any) -> AgentRecord:
    kw.setdefault("last_heartbeat", iso(NOW - 10))
    return AgentRecord(agent_id=agent_id, endpoint="http://x", **kw)


def test_effective_status() -> None:
    """online/degraded within the heartbeat TTL; offline past it or never heard from."""
    assert effective_status(_rec("a"), NOW) == "online"
    assert effective_status(_rec("a", status="degraded"), NOW) == "degraded"
    assert effective_status(_rec("a", heartbeat_ttl=5), NOW) == "offline"
    assert effective_status(_rec("a", last_heartbeat=""), NOW) == "offline"
    assert effective_status(_rec("a", status="offline"), NOW) == "offline"


def test_package_status_online_idle_never_offline(tmp_path: Path) -> None:
    """A live session inside the package within the TTL is online; otherwise idle."""
    pkg = tmp_path / "p"
    inside = LiveSession(1, str(pkg / "sub"), NOW - 100, "s1")
    near = LiveSession(2, str(pkg) + "-other", NOW, "s2")
    assert package_status(pkg, [inside, near], 3600, NOW) == ("online", inside)
    assert package_status(pkg, [inside], 50, NOW) == ("idle", None)
    assert package_status(pkg, [near], 3600, NOW) == ("idle", None)
    assert project_dir_name("/home/u/my.proj") == "-home-u-my-proj"


def _local(tmp_path: Path, agent_id: str, caps: tuple[str, ...] = ()) -> Package:
    return Package(agent_id, tmp_path / agent_id, Manifest(capabilities=caps))


def test_local_records_shape(tmp_path: Path) -> None:
    """Local rows are AgentRecord-shaped, dispatchable, capacity 1, cold start when idle."""
    rows = local_records([_local(tmp_path, "a", ("x",))], [], 3600, NOW)
    row = rows[0]
    assert row["transport"] == "local"
    assert row["endpoint"] == ""
    assert row["status"] == "idle"
    assert row["effective_status"] == "idle"
    assert row["dispatchable"] is True
    assert row["available_capacity"] == 1
    assert row["metadata"]["cold_start_on_dispatch"] is True
    assert row["metadata"]["package_path"] == str(tmp_path / "a")
    assert row["capabilities"] == ["local", "agent:a", "x"]


def test_merged_records_shadowing_and_filters(tmp_path: Path) -> None:
    """Registered first; a local agent with a registered id is shadowed; filters and limit."""
    registered = [_rec("b", capabilities=["x"]), _rec("a", agent_type="exec", heartbeat_ttl=1)]
    local = local_records(
        [_local(tmp_path, "a"), _local(tmp_path, "c", ("x",))],
        [LiveSession(9, str(tmp_path / "c"), NOW, None)],
        3600,
        NOW,
    )
    rows = merged_records(registered, local, now=NOW)
    assert [(r["agent_id"], r["effective_status"]) for r in rows] == [
        ("a", "offline"),
        ("b", "online"),
        ("c", "online"),
    ]
    assert [r["agent_id"] for r in merged_records(registered, local, now=NOW, capability="x")] == [
        "b",
        "c",
    ]
    assert [
        r["agent_id"] for r in merged_records(registered, local, now=NOW, status="offline")
    ] == ["a"]
    assert [
        r["agent_id"] for r in merged_records(registered, local, now=NOW, agent_type="local")
    ] == ["c"]
    assert len(merged_records(registered, local, now=NOW, limit=2)) == 2


def test_routing_by_capability(tmp_path: Path) -> None:
    """Warm before idle, then free capacity; offline/full HTTP agents are never picked."""
    registered = [
        _rec("full", capabilities=["x"], metadata={"available_capacity": 0}),
        _rec("one", capabilities=["x"], metadata={"available_capacity": 1}),
        _rec("two", capabilities=["x"], metadata={"available_capacity": 2}),
        _rec("dead", capabilities=["x"], heartbeat_ttl=1, metadata={"available_capacity": 9}),
    ]
    idle = local_records([_local(tmp_path, "loc", ("x",))], [], 3600, NOW)
    rows = merged_records(registered, idle, now=NOW)
    assert [r["agent_id"] for r in find_by_capability(rows, "x")][:3] == ["two", "one", "full"]
    assert pick_for_capability(rows, "x")["agent_id"] == "two"  # type: ignore[index]
    only_bad = merged_records(registered[::3], idle, now=NOW)
    assert pick_for_capability(only_bad, "x")["agent_id"] == "loc"  # type: ignore[index]
    assert pick_for_capability(merged_records(registered[::3], [], now=NOW), "x") is None


def test_result_json_parsing() -> None:
    """The result object is found in whole or last-line output; junk gives None."""
    line = '{"type":"result","subtype":"success","is_error":false,"result":"hi"}'
    assert parse_result(line)["result"] == "hi"  # type: ignore[index]
    assert parse_result('noise\n{"type":"system"}\n' + line + "\n")["is_error"] is False  # type: ignore[index]
    assert parse_result("not json") is None
    assert parse_result('{"type":"system"}') is None


def test_config_accepts_the_seed_names() -> None:
    """AGENTIBRIDGE_* and AGENTIHUB_DIR are read; agentcoord's own names win; empty is unset."""
    env = {
        "HOME": "/h",
        "AGENTIBRIDGE_LOCAL_AGENTS_ENABLED": "true",
        "AGENTIHUB_DIR": "/hub",
        "AGENTIBRIDGE_LOCAL_SESSION_TTL": "60",
    }
    cfg = load_config({}, env, uid=1)
    assert cfg.local_agents_enabled is True
    assert cfg.agentihub_dir == Path("/hub")
    assert cfg.local_session_ttl == 60
    env |= {"AGENTCOORD_LOCAL_AGENTS_ENABLED": "off", "AGENTIHUB_DIR": ""}
    cfg = load_config({}, env, uid=1)
    assert cfg.local_agents_enabled is False
    assert cfg.agentihub_dir is None
    assert load_config({}, {"HOME": "/h"}, uid=1).local_agents_enabled is False
    with pytest.raises(ConfigError):
        load_config({}, {"HOME": "/h", "AGENTIBRIDGE_LOCAL_AGENTS_ENABLED": "maybe"}, uid=1)


async def test_service_views_for_the_discovery_tools(tmp_path: Path) -> None:
    """merged/get/find: registered shadows local, get falls back to local, find ranks warm first."""
    from agentcoord.localagents import LocalAgents
    from agentcoord.localagents.launch import Launcher
    from agentcoord.localagents.runner import RunnerSpec
    from agentcoord.localagents.sandbox import Sandbox
    from agentcoord.stores.objects import ObjectStore
    from agentcoord.stores.objects.repository import StoreAgentRecords, StoreJobRecords

    hub = tmp_path / "hub"
    make_package(hub, "loc", "capabilities: [x]\n")
    make_package(hub, "both")

    class NoSessions:
        def sessions(self) -> list[LiveSession]:
            return []

    async with ObjectStore(tmp_path / "objects.db") as store:
        svc = LocalAgents(
            enabled=True,
            hub=hub,
            session_ttl=3600,
            state_dir=tmp_path,
            runtime_dir=tmp_path,
            claude_dir=tmp_path / "c",
            spec=RunnerSpec(),
            sandbox=Sandbox(None),
            base_env={},
            records=StoreAgentRecords(store),
            tasks=StoreJobRecords(store),
            launcher=Launcher.for_spec(RunnerSpec(), store, base_env={}, runtime_dir=tmp_path),
            probe=NoSessions(),
        )
        await _service_views(svc)


async def _service_views(svc: Any) -> None:
    from agentcoord.kernel.caller import Caller

    async with svc:
        me = Caller("human", "human:me", "internal")
        await svc.register({"agent_id": "both", "endpoint": "http://h", "capabilities": ["x"]}, me)
        await svc.register(
            {
                "agent_id": "full",
                "endpoint": "http://h",
                "capabilities": ["x"],
                "metadata": {"available_capacity": 0},
            },
            me,
        )
        rows = svc.merged()
        assert [(r["agent_id"], r["transport"]) for r in rows] == [
            ("both", "http"),
            ("full", "http"),
            ("loc", "local"),
        ]
        assert svc.get("loc")["transport"] == "local"
        assert svc.get("both")["transport"] == "http"
        assert svc.get("nope") is None
        assert svc.get("..") is None
        assert [r["agent_id"] for r in svc.find("x")] == ["both", "full", "loc"]
