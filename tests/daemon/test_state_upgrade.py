"""A state dir made by release 0.1.0 (``fixtures/state-0.1.0.tar.gz``, made by
``make_state_fixture.py`` with that release's code) opens with this version, and keeps what it
held: objects, the open prompt, the queued message, the channel, the checkpoint bundle; its
records, kept whole in an annotation then, move into spec and status (docs/store.md "Older
objects")."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tarfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentcoord.daemon.statefmt import FORMAT, FORMAT_FILE, ensure_format, read_format
from agentcoord.errors import StateFormatError
from tests.conftest import Daemon, make_env, write_kubeconfig
from tests.tools.session_helpers import CALLS, own_call

FIXTURE = Path(__file__).parent / "fixtures" / "state-0.1.0.tar.gz"


@pytest.fixture
def old_state(tmp_path: Path) -> Iterator[tuple[Daemon, dict[str, Any]]]:
    """A daemon (not started) on a fresh copy of the 0.1.0 state dir, and the fixture's notes."""
    root = tmp_path / "d"
    root.mkdir()
    # The "data" filter (PEP 706) came with Python 3.11.4 (Debian 12 has 3.11.2); the fixture is
    # this repository's own, so an older 3.11 extracts it without one.
    safe: dict[str, Any] = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}
    with tarfile.open(FIXTURE) as tar:
        tar.extractall(root, **safe)
    notes = json.loads((root / "state" / "fixture.json").read_text())
    d = Daemon(root, make_env(root))
    yield d, notes
    d.stop()


def _ok(d: Daemon, tool: str, **args: Any) -> dict[str, Any]:
    result = own_call(d, tool, args)
    assert not result["isError"], result
    return result["structuredContent"]  # type: ignore[no-any-return]


def _as_session(d: Daemon, claude: Path, session_id: str, calls: list[Any]) -> list[Any]:
    """Calls from a new process of an old session (``claude --resume``: same session id)."""
    out = subprocess.run(
        [str(claude), "--", sys.executable, str(CALLS), str(d.socket), json.dumps(calls)],
        env={**d.env, "CLAUDE_CODE_SESSION_ID": session_id},
        cwd=d.root,
        capture_output=True,
        timeout=30,
        check=True,
    )
    return json.loads(out.stdout)  # type: ignore[no-any-return]


def test_fixture_is_an_unversioned_0_1_0_dir(old_state: tuple[Daemon, dict[str, Any]]) -> None:
    """The fixture is what 0.1.0 left: no format record, so it reads as format 0."""
    d, notes = old_state
    assert notes["version"] == "0.1.0"
    assert not (d.state_dir / FORMAT_FILE).exists()
    assert read_format(d.state_dir) == (0, "0.1.0")


def test_0_1_0_state_opens_and_keeps_what_it_held(
    old_state: tuple[Daemon, dict[str, Any]], claude_bin: Path
) -> None:
    """0.1.0's state opens (twice), is stamped with today's format, and still has its
    objects, open prompt, queued message, channel, focus and checkpoint bundle."""
    d, notes = old_state
    d.start()
    assert json.loads((d.state_dir / FORMAT_FILE).read_text())["format"] == FORMAT
    assert d.stop() == 0
    d.start()

    prompts = _ok(d, "list_prompts")["prompts"]
    assert [p["question"] for p in prompts] == [notes["prompt_question"]]
    assert [p["id"] for p in prompts] == notes["prompt_ids"]

    claims = _ok(d, "check_claims")
    held = {c["resource_key"] for c in claims.get("claims", [])}
    assert notes["released"] not in held

    channels = _ok(d, "list_channels")
    assert notes["channel"] in json.dumps(channels)

    task = _ok(d, "get_agent", name=notes["agent"])
    assert task["found"]
    bundle = notes["checkpoint"]["ref"].removeprefix("sha256:")
    assert (d.state_dir / "checkpoints" / "sha256" / bundle).is_file()

    # Bob's session comes back (same session id): same agent, and its queued message.
    got = _as_session(d, claude_bin, notes["bob"]["session_id"], [("whoami", {}), ("inbox", {})])
    assert got[0]["structuredContent"]["agent"] == notes["bob"]["agent"]
    texts = [m["text"] for m in got[1]["structuredContent"]["messages"]]
    assert notes["queued_text"] in texts

    found = _ok(d, "find_agents", query="fixture focus")
    assert notes["alice"]["agent"] in json.dumps(found)


def test_0_1_0_objects_are_read_by_kubectl(old_state: tuple[Daemon, dict[str, Any]]) -> None:
    """The real kubectl reads 0.1.0's objects: the AgentTask still lists its checkpoint."""
    if shutil.which("kubectl") is None:
        pytest.skip("kubectl is not installed")
    d, notes = old_state
    d.start()
    config = write_kubeconfig(d)
    base = ["kubectl", "--kubeconfig", str(config), "--cache-dir", str(d.root / "kc")]
    got = subprocess.run(
        [*base, "get", "agenttasks", notes["checkpoint"]["task"], "-o", "json"],
        env=d.env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert got.returncode == 0, got.stderr
    refs = [c["ref"] for c in json.loads(got.stdout)["status"]["checkpoints"]]
    assert notes["checkpoint"]["ref"] in refs
    profile = subprocess.run(
        [*base, "get", "agentprofiles", notes["profile"], "-o", "name"],
        env=d.env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert profile.returncode == 0, profile.stderr


def test_format_1_moves_to_this_format_and_a_newer_one_is_refused(tmp_path: Path) -> None:
    """A format-1 dir is stamped with this format; a dir of a newer format is refused."""
    (tmp_path / FORMAT_FILE).write_text(json.dumps({"format": 1, "written_by": "0.1.1"}))
    assert FORMAT == 2
    assert ensure_format(tmp_path) == 1
    assert read_format(tmp_path)[0] == FORMAT
    (tmp_path / FORMAT_FILE).write_text(json.dumps({"format": FORMAT + 1, "written_by": "9"}))
    with pytest.raises(StateFormatError, match="holds state format"):
        ensure_format(tmp_path)


def test_0_1_0_records_move_into_spec_and_status(old_state: tuple[Daemon, dict[str, Any]]) -> None:
    """0.1.0's annotation records: a kubectl edit of the old channel's spec takes effect, and
    answering the old prompt rewrites it with the answer in status and no record annotation."""
    if shutil.which("kubectl") is None:
        pytest.skip("kubectl is not installed")
    d, notes = old_state
    d.start()
    config = write_kubeconfig(d)
    base = ["kubectl", "--kubeconfig", str(config), "--cache-dir", str(d.root / "kc")]

    def kubectl(*args: str) -> str:
        done = subprocess.run([*base, *args], env=d.env, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        return done.stdout

    patch = {"spec": {"participants": ["v010-1", "v010-2", "v010-3"]}}
    kubectl("patch", "agentchannel", notes["channel"], "--type", "merge", "-p", json.dumps(patch))
    [chan] = [c for c in _ok(d, "list_channels")["channels"] if c["name"] == notes["channel"]]
    assert sorted(chan["participants"]) == ["v010-1", "v010-2", "v010-3"]
    assert chan["created_by"]  # from the 0.1.0 record: spec has no slot for it

    [prompt_id] = notes["prompt_ids"]
    answered = subprocess.run(
        [sys.executable, "-m", "agentcoord", "answer", prompt_id, "seen"],
        env=d.env,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert answered.returncode == 0, answered.stderr
    obj = json.loads(kubectl("get", "humanprompt", prompt_id, "-o", "json"))
    assert obj["status"]["phase"] == "Answered"
    assert obj["status"]["answer"] == {"value": "seen"}
    annotations = obj["metadata"]["annotations"]
    assert "fastverk.savvifi.com/record" not in annotations
    assert "record.fastverk.savvifi.com/created-at" in annotations


def _objects(d: Daemon) -> dict[str, dict[str, Any]]:
    """Every object in the daemon's SQLite file, by resource/name (read-only, WAL-safe)."""
    import sqlite3

    db = sqlite3.connect(f"file:{d.state_dir / 'objects.db'}?mode=ro", uri=True)
    try:
        rows = db.execute("SELECT resource, name, object FROM objects").fetchall()
    finally:
        db.close()
    return {f"{r}/{n}": json.loads(o) for r, n, o in rows}


def test_0_1_0_annotations_move_once_at_start(old_state: tuple[Daemon, dict[str, Any]]) -> None:
    """The first start moves every 0.1.0 record annotation into spec, status and notes (the
    channel's creator among them) before anything asks for it; the next start rewrites none."""
    d, notes = old_state
    legacy = "fastverk.savvifi.com/record"
    before = [k for k, o in _objects(d).items() if legacy in o["metadata"].get("annotations", {})]
    assert before  # the fixture holds records the 0.1.0 way
    d.start()
    assert d.stop() == 0
    moved = _objects(d)
    assert [k for k in before if legacy in moved[k]["metadata"].get("annotations", {})] == []
    channel = moved[f"agentchannels/{notes['channel']}"]["metadata"]["annotations"]
    assert channel["record.fastverk.savvifi.com/created-by"]
    d.start()
    assert d.stop() == 0
    again = _objects(d)
    assert {k: again[k]["metadata"]["resourceVersion"] for k in before} == {
        k: moved[k]["metadata"]["resourceVersion"] for k in before
    }
