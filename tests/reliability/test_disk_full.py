"""A full state disk heals by itself (docs/reliability.md "A full disk"): while it is full
/healthz says so; once space is back, claims, messages and the object store take writes again,
without a restart of the daemon and without anyone killing nats-server."""

from __future__ import annotations

import itertools
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.conftest import Daemon
from tests.reliability._rig import answers
from tests.tools.session_helpers import own_call


def fill(directory: Path) -> Path:
    """Fill the filesystem holding ``directory``; the file that holds the space."""
    filler = directory / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        for chunk in (1 << 20, 4096, 1):
            try:
                while True:
                    os.write(fd, b"\0" * chunk)  # unbuffered: each write meets the disk
            except OSError:
                pass
    finally:
        os.close(fd)
    return filler


def writes(d: Daemon, n: int) -> list[str]:
    """One round of writes of each kind; the errors they got."""
    calls = [
        ("claim", {"resource_key": f"disk/{n}", "ttl": "10m", "purpose": "p" * 1000}),
        ("broadcast", {"text": f"{n} " + "m" * 60_000}),
        ("register_agent", {"agent_id": f"disk-{n}", "endpoint": "http://127.0.0.1:9/"}),
    ]
    errors = []
    for name, args in calls:
        result = own_call(d, name, args)
        if result.get("isError"):
            errors.append(f"{name}: {result['content'][0]['text']}")
    return errors


def wait_for(what: str, check: Callable[[], bool], d: Daemon, timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"no {what} in {timeout}s:\n{d.log()[-4000:]}"
        time.sleep(0.1)


def test_a_full_state_disk_heals_once_space_returns(
    make_tmpfs: Callable[[str], Path], daemon_factory: Any
) -> None:
    """Writes against a full state disk fail and /healthz is 503; with space back claims,
    messages and agent registrations work again and /healthz is ok."""
    mnt = make_tmpfs("48m")
    d = daemon_factory("disk", AGENTCOORD_STATE_DIR=str(mnt / "state")).start()
    assert answers(d), d.log()[-4000:]
    assert writes(d, 0) == [], d.log()[-4000:]
    filler = fill(d.state_dir)
    failed: list[str] = []
    rounds = itertools.count(1)
    while not any(e.startswith("claim") for e in failed):  # the claims' KV store refused
        failed += writes(d, next(rounds))
        assert len(failed) < 150, f"no claim failed on a full disk: {failed}\n{d.log()[-4000:]}"
    code, why = d.healthz()
    assert code == 503, (code, why, failed)
    filler.unlink()
    wait_for("claim, release and /healthz", lambda: answers(d), d)
    wait_for("writes of every kind", lambda: writes(d, next(rounds)) == [], d)
    assert d.healthz() == (200, "ok")
