"""kill -9 during a 16-writer load loses no acknowledged write; rvs and watches carry on."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from agentcoord.stores.objects import ObjectStore

WRITER = Path(__file__).with_name("_load_writer.py")
ROOT = Path(__file__).parents[3]


def _load_then_kill(db: Path, tag: str, acks: int) -> list[tuple[str, int]]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
    proc = subprocess.Popen(
        [sys.executable, str(WRITER), str(db), tag], stdout=subprocess.PIPE, text=True, env=env
    )
    assert proc.stdout is not None
    seen: list[tuple[str, int]] = []
    for line in proc.stdout:
        name, rv = line.split()
        seen.append((name, int(rv)))
        if len(seen) >= acks:
            proc.send_signal(signal.SIGKILL)
            break
    proc.wait()
    proc.stdout.close()
    assert proc.returncode == -signal.SIGKILL
    return seen


async def test_kill9_keeps_acknowledged_writes(tmp_path: Path) -> None:
    """Every write acknowledged before SIGKILL is there after restart; rvs keep increasing."""
    db = tmp_path / "objects.db"
    first = _load_then_kill(db, "one", 400)
    async with ObjectStore(db) as store:
        items, rv = await store.list("agents")
        names = {o["metadata"]["name"] for o in items}
        assert {n for n, _ in first} <= names
        assert rv >= max(r for _, r in first)
        last_seen = max(r for _, r in first)
        # a watch resumes from the last resourceVersion the client saw
        watch = await store.watch("agents", since=last_seen)
        after = await store.create("agents", "default", {"metadata": {"name": "after"}, "spec": {}})
        assert int(after["metadata"]["resourceVersion"]) == rv + 1
        got = []
        while True:
            event = await watch.next(timeout=5)
            assert event is not None
            got.append(event.rv)
            if event.object["metadata"]["name"] == "after":
                break
        assert got == list(range(last_seen + 1, rv + 2)), "committed-but-unacked writes replay"
        watch.end()
    second = _load_then_kill(db, "two", 200)
    assert min(r for _, r in second) > rv + 1, "resourceVersions never go back"
