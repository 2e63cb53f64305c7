"""Concurrent sessions hammering a few keys through MCP never hold one write key together."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import FAKES, Daemon

WORKER = FAKES / "claim_worker.py"


def check_shadow_log(records: list[dict[str, Any]]) -> None:
    """Assert the claim invariants on worker records (used by the test and the stress bench).

    Each grant's observed hold [got, release_sent] lies inside its true hold, so overlapping
    observed holds prove a violation: no write may overlap any other grant on its key. Grants
    on a key, ordered by fencing token, must be granted after the previous write was let go.
    """
    assert records
    for r in records:
        assert "error" not in r, r["error"]
        if r["acquired"]:
            assert r["released"] is True, r
        else:
            assert r["holder"]
            assert r["holder_token"] > 0
    by_key: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in records:
        if r["acquired"]:
            by_key[r["key"]].append(r)
    for grants in by_key.values():
        grants.sort(key=lambda r: r["token"])
        tokens = [g["token"] for g in grants]
        assert len(set(tokens)) == len(tokens), "a token was granted twice"
        writes = [g for g in grants if g["mode"] == "write"]
        for w in writes:
            for other in grants:
                if other is w:
                    continue
                overlap = other["got"] < w["release_sent"] and w["got"] < other["release_sent"]
                assert not overlap, f"write {w} overlapped {other}"
        for prev, nxt in itertools.pairwise(grants):
            if "write" in (prev["mode"], nxt["mode"]):
                # The later grant was only possible after the earlier one was released.
                assert nxt["got"] > prev["release_sent"], (prev, nxt)


def wait_ready(go: Path, seeds: list[int], procs: list[subprocess.Popen[bytes]]) -> None:
    """Wait until every claim worker has connected and identified itself (its
    ``GO.ready-SEED`` file exists), so that ``go`` starts them all at once however slow the
    machine; a worker that exits first fails the wait."""
    deadline = time.monotonic() + 120
    for seed, proc in zip(seeds, procs, strict=True):
        ready = go.parent / f"{go.name}.ready-{seed}"
        while not ready.exists():
            if proc.poll() is not None:
                raise AssertionError(f"claim worker {seed} exited {proc.returncode} before ready")
            if time.monotonic() > deadline:
                raise AssertionError(f"claim worker {seed} not ready in 120 s")
            time.sleep(0.02)


def run_stress(
    d: Daemon, claude: Path, clients: int, attempts: int, keys: int
) -> list[dict[str, Any]]:
    go = d.root / "go-stress"
    procs = [
        subprocess.Popen(
            [
                str(claude),
                "--",
                sys.executable,
                str(WORKER),
                str(d.socket),
                str(go),
                str(attempts),
                str(keys),
                str(i),
            ],
            env=d.env,
            cwd=d.root,
            stdout=subprocess.PIPE,
        )
        for i in range(clients)
    ]
    wait_ready(go, list(range(clients)), procs)
    go.touch()
    records: list[dict[str, Any]] = []
    for p in procs:
        out, _ = p.communicate(timeout=600)
        records.extend(json.loads(line) for line in out.splitlines())
    return records


def test_concurrent_sessions_never_share_a_write(daemon: Daemon, claude_bin: Path) -> None:
    """8 sessions x 150 attempts on 10 keys: no two write holders at once (tokens + shadow
    log), reads share, every attempt is acquired or names the holder."""
    records = run_stress(daemon, claude_bin, clients=8, attempts=150, keys=10)
    assert len(records) == 8 * 150
    check_shadow_log(records)
    assert len({r["agent"] for r in records}) == 8
    assert any(not r["acquired"] for r in records)  # there was real contention


def test_shadow_log_check_catches_overlap() -> None:
    """The invariant check itself fails on two overlapping write grants of one key."""
    base = {"key": "k", "mode": "write", "acquired": True, "released": True}
    bad = [
        {**base, "agent": "a", "token": 1, "sent": 0.0, "got": 1.0, "release_sent": 3.0},
        {**base, "agent": "b", "token": 2, "sent": 0.0, "got": 2.0, "release_sent": 4.0},
    ]
    with pytest.raises(AssertionError, match="overlapped"):
        check_shadow_log(bad)
