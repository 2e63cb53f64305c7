"""A simulated week of heavy use by ten sessions: does the state stay bounded?

    PYTHONPATH=src python bench/week.py [--quick] [--days N]

Ten processes named ``claude`` (so the daemon takes each for a Claude Code session) drive one
real daemon for a week's worth of work each, day by day: claim + release cycles, annotations,
messages to each other (read now and then, so inboxes fill), heartbeats of a registered agent
(object store writes), and checkpoints of a git worktree with a day's uncommitted work. The
counts per session per day are a heavy day's (see ``PER_DAY``); time is compressed by driving
them as fast as the daemon takes them, and the retention limits are set small enough through
the daemon's own config (``AGENTCOORD_*``) that the first day reaches every one of them.

Reported at the end, each against its configured limit: the audit and message streams (the
bytes JetStream keeps, and their size on disk against the limit plus one file-store block),
the object store's log, the checkpoint bundles; the whole state dir against the sum of those
byte bounds, the WAL's cap and a fresh state dir's size (measured in the same run: a daemon
started and stopped on an empty dir), with its size after each day; the daemon's RSS
against the same daemon's right after start. The notes say what the run wrote in all,
what the state dir would hold without retention. ``--quick`` runs two days.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from _common import Figure, figure_table

SESSIONS = 10
# One heavy day of one session: edits (each an automatic edit lease: claim + release), focus
# updates, messages to peers, heartbeats of a registered HTTP agent, and checkpoints.
PER_DAY = {"claims": 300, "annotates": 60, "sends": 60, "heartbeats": 40, "checkpoints": 2}
WIP_PER_DAY = 64 * 1024  # bytes of uncommitted work a session has at the end of a day
# Limits for the run, small enough that the first day reaches every one of them (the defaults
# are for months: docs/reliability.md "State retention"); the rest of the week must not grow.
LIMITS = {
    "AGENTCOORD_AUDIT_MAX_BYTES": 1 << 20,
    "AGENTCOORD_INBOX_MAX_BYTES": 128 << 10,
    "AGENTCOORD_INBOX_MAX_MSGS": 40,
    "AGENTCOORD_OBJECT_LOG_KEEP": 200,
    "AGENTCOORD_CHECKPOINT_KEEP": 3,
    "AGENTCOORD_CHECKPOINT_MAX_BYTES": 1 << 20,
}
_MIB = float(1 << 20)


# -- one session (runs as a process named ``claude``) ----------------------------------------


class _Rpc:
    """Blocking newline-delimited JSON-RPC over the daemon's unix socket."""

    def __init__(self, path: str) -> None:
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.connect(path)
        self.reader = self.sock.makefile("rb")
        self.n = 0

    def call(self, name: str, args: dict[str, Any]) -> dict[str, Any]:
        self.n += 1
        req = {"jsonrpc": "2.0", "id": self.n, "method": "tools/call"}
        req["params"] = {"name": name, "arguments": args}
        self.sock.sendall(json.dumps(req).encode() + b"\n")
        result: dict[str, Any] = json.loads(self.reader.readline())["result"]
        if result.get("isError"):
            raise RuntimeError(f"{name}: {result['content'][0]['text']}")
        return result.get("structuredContent") or {}


def _write_atomic(path: Path, text: str) -> None:
    """So a process waiting for ``path`` never reads it half written."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def _wait_file(path: Path) -> None:
    while not path.exists():  # a rendezvous between processes of the bench, not a test
        time.sleep(0.01)


def worker(argv: list[str]) -> int:
    """One session: ``SOCKET RUN_DIR INDEX DAYS``; writes its counters to RUN_DIR/<i>.done."""
    sock, run, index, days = argv[0], Path(argv[1]), int(argv[2]), int(argv[3])
    sid = f"00000000-0000-4000-8000-{index:012d}"
    claude = Path(os.environ["CLAUDE_CONFIG_DIR"])
    (claude / "sessions").mkdir(parents=True, exist_ok=True)
    record = {"pid": os.getpid(), "sessionId": sid, "cwd": os.getcwd()}
    # Written before the first call, as Claude Code does: the daemon reads it at first contact.
    (claude / "sessions" / f"{os.getpid()}.json").write_text(json.dumps(record))
    rpc = _Rpc(sock)
    me = str(rpc.call("whoami", {})["agent"])
    _write_atomic(run / f"{index}.name", me)
    _wait_file(run / "go")
    peers = json.loads((run / "go").read_text())
    peers = [p for p in peers if p != me] or [me]
    helper = f"bench-http-{index}"
    rpc.call("register_agent", {"agent_id": helper, "endpoint": "http://127.0.0.1:9/"})
    written = {"audit_events": 0, "messages": 0, "message_bytes": 0, "object_writes": 0}
    written["checkpoint_bytes"] = 0
    n = 0
    for day in range(days):
        for i in range(PER_DAY["claims"]):
            n += 1
            got = rpc.call("claim", {"resource_key": f"src/{me}/file{n % 97}.py", "ttl": "5m"})
            rpc.call(
                "release", {"resource_key": f"src/{me}/file{n % 97}.py", "token": got["token"]}
            )
            written["audit_events"] += 2
            if i % (PER_DAY["claims"] // PER_DAY["annotates"]) == 0:
                intent = f"day {day}: working on file{n % 97}.py, step {i}"
                rpc.call("annotate", {"intent": intent, "files": [f"file{n % 97}.py"]})
                written["audit_events"] += 1
            if i % (PER_DAY["claims"] // PER_DAY["sends"]) == 0:
                text = f"day {day} step {i}: " + "status update " * 12
                rpc.call("send", {"to": peers[n % len(peers)], "text": text})
                written["messages"] += 1
                written["message_bytes"] += len(text)
                written["audit_events"] += 1
            if i % (PER_DAY["claims"] // PER_DAY["heartbeats"]) == 0:
                rpc.call("heartbeat_agent", {"agent_id": helper, "metadata": {"step": n}})
                written["object_writes"] += 1
        if day % 3 == index % 3:
            rpc.call("inbox", {"limit": 1000})  # read now and then; the rest waits
        # A day's edits: 64 KiB of new uncommitted work (what a bundle carries).
        with Path("work.txt").open("w") as fh:
            for k in range(WIP_PER_DAY // 65):
                fh.write(hashlib.sha256(f"{me} {day} {k}".encode()).hexdigest() + " +\n")
        for c in range(PER_DAY["checkpoints"]):
            with Path("notes.txt").open("w") as fh:
                fh.write(f"day {day} checkpoint {c}\n")
            got = rpc.call("checkpoint", {"task": f"week-{index}", "summary": f"day {day}.{c}"})
            written["checkpoint_bytes"] += int(got["size"])
            written["object_writes"] += 1
            written["audit_events"] += 1
        (run / f"{index}.day{day}").touch()
    _write_atomic(run / f"{index}.done", json.dumps(written))
    return 0


# -- the coordinator ------------------------------------------------------------------------


def _du(path: Path) -> int:
    """Bytes the files under ``path`` take on disk (allocated blocks, as ``du`` counts)."""
    if not path.exists():
        return 0
    if path.is_file():
        return path.lstat().st_blocks * 512
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            with contextlib.suppress(FileNotFoundError):
                total += os.lstat(os.path.join(root, name)).st_blocks * 512
    return total


def _stream_dir(state: Path, stream: str) -> Path:
    hits = list((state / "nats" / "js").glob(f"**/streams/{stream}"))
    return hits[0] if hits else state / "missing"


def _git(cwd: Path, *args: str) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@b"}
    env.update(GIT_COMMITTER_NAME="b", GIT_COMMITTER_EMAIL="b@b")
    subprocess.run(["git", "-C", str(cwd), *args], env=env, check=True, capture_output=True)


def _env(root: Path, limits: dict[str, int]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTCOORD_", "CLAUDE"))}
    env.update(
        AGENTCOORD_STATE_DIR=str(root / "state"),
        AGENTCOORD_RUNTIME_DIR=str(root / "run"),
        AGENTCOORD_HTTP_ADDR="127.0.0.1:0",
        AGENTCOORD_LOG_LEVEL="WARNING",
        CLAUDE_CONFIG_DIR=str(root / "claude"),
        HOME=str(root / "home"),
        XDG_CONFIG_HOME=str(root / "xdg"),
    )
    env.update({k: str(v) for k, v in limits.items()})
    return env


def _start(root: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    from agentcoord.client.rpc import call_unix
    from agentcoord.errors import AgentCoordError, DaemonUnreachable

    (root / "home").mkdir(parents=True, exist_ok=True)
    with (root / "daemon.log").open("ab") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "agentcoord", "serve"],
            env=env,
            stdout=log,
            stderr=log,
            start_new_session=True,
        )
    deadline = time.monotonic() + 30
    while True:
        try:
            call_unix(root / "run" / "agentcoord.sock", "ping", {})
            return proc
        except DaemonUnreachable:
            if time.monotonic() > deadline or proc.poll() is not None:
                _stop(proc)
                log = (root / "daemon.log").read_text()
                raise SystemExit(f"daemon did not start:\n{log}") from None
            time.sleep(0.02)
        except AgentCoordError:  # it answers (and wants proof of who we are): it is ready
            return proc


def _stop(proc: subprocess.Popen[bytes]) -> None:
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _rss(pid: int) -> float:
    import psutil

    return float(psutil.Process(pid).memory_info().rss) / _MIB


def _nats_pid(root: Path) -> int | None:
    import psutil

    for child in psutil.Process().children(recursive=True):
        if child.name() == "nats-server" and str(root) in " ".join(child.cmdline()):
            return int(child.pid)
    return None


def _apply_tasks(root: Path, env: dict[str, str]) -> bool:
    """One AgentTask per session (checkpoints go to a task), with the real kubectl."""
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        return False
    config = root / "kubeconfig"
    out = subprocess.run(
        [sys.executable, "-m", "agentcoord", "kubeconfig"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    config.write_text(out.stdout)
    docs = [
        {
            "apiVersion": "fastverk.savvifi.com/v1",
            "kind": "AgentTask",
            "metadata": {"name": f"week-{i}"},
            "spec": {"objective": f"session {i}'s week"},
        }
        for i in range(SESSIONS)
    ]
    done = subprocess.run(
        [kubectl, "--kubeconfig", str(config), "apply", "-f", "-"],
        input="\n".join(json.dumps(doc) for doc in docs),  # a JSON stream
        env=env,
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise SystemExit(f"kubectl apply failed: {done.stderr}")
    return True


def measure(tmp: Path, days: int, limits: dict[str, int] | None = None) -> dict[str, Any]:
    """Run the week; every figure's value (bytes, MiB, seconds)."""
    limits = dict(LIMITS if limits is None else limits)
    # The baseline: a fresh state dir (a daemon started and stopped on an empty dir).
    fresh_root = tmp / "fresh"
    fresh = _start(fresh_root, _env(fresh_root, limits))
    try:
        fresh_rss = _rss(fresh.pid)
    finally:
        _stop(fresh)
    root = tmp / "week"
    env = _env(root, limits)
    proc = _start(root, env)
    workers: list[subprocess.Popen[bytes]] = []
    try:
        out = _week(root, env, proc, days, workers)
    finally:
        for w in workers:
            if w.poll() is None:
                w.kill()
                w.wait()
        _stop(proc)
    out.update(limits=limits, fresh_rss=fresh_rss, fresh_bytes=_du(fresh_root / "state"))
    return out


def _week(
    root: Path,
    env: dict[str, str],
    proc: subprocess.Popen[bytes],
    days: int,
    workers: list[subprocess.Popen[bytes]],
) -> dict[str, Any]:
    started_rss = _rss(proc.pid)
    if not _apply_tasks(root, env):
        raise SystemExit("kubectl is not on PATH (the week's checkpoints go to AgentTasks)")
    run = root / "sessions"
    run.mkdir()
    stand_in = root / "bin" / "claude"
    stand_in.parent.mkdir()
    stand_in.write_text(
        f"#!{sys.executable}\nimport sys\nsys.path.insert(0, {str(Path(__file__).parent)!r})\n"
        "import week\nsys.exit(week.worker(sys.argv[1:]))\n"
    )
    stand_in.chmod(0o755)
    for i in range(SESSIONS):
        work = root / "work" / f"s{i}"
        work.mkdir(parents=True)
        _git(work, "init", "-q")
        (work / "work.txt").write_text("start\n")
        _git(work, "add", "-A")
        _git(work, "commit", "-qm", "start")
        argv = [str(stand_in), str(root / "run" / "agentcoord.sock"), str(run), str(i), str(days)]
        workers.append(subprocess.Popen(argv, cwd=work, env=env))
    for i in range(SESSIONS):
        while not (run / f"{i}.name").exists():
            if workers[i].poll() is not None:
                raise SystemExit(f"session {i} exited {workers[i].returncode}")
            time.sleep(0.01)
    names = [(run / f"{i}.name").read_text() for i in range(SESSIONS)]
    t0 = time.perf_counter()
    _write_atomic(run / "go", json.dumps(names))
    # The state dir's size as every session finishes each day: bounded means it stops growing.
    by_day: list[int] = []
    while len(by_day) < days:
        for i, w in enumerate(workers):
            if w.poll() not in (None, 0):
                raise SystemExit(f"session {i} failed ({w.returncode}); see {root}/daemon.log")
        if all((run / f"{i}.day{len(by_day)}").exists() for i in range(SESSIONS)):
            by_day.append(_du(root / "state"))
        else:
            time.sleep(0.05)  # sampling the bench's own progress files
    for i, w in enumerate(workers):
        if w.wait() != 0:
            raise SystemExit(f"session {i} failed ({w.returncode}); see {root / 'daemon.log'}")
    took = time.perf_counter() - t0
    written: dict[str, int] = {}
    for i in range(SESSIONS):
        for k, v in json.loads((run / f"{i}.done").read_text()).items():
            written[k] = written.get(k, 0) + v
    nats_pid = _nats_pid(root)
    state = root / "state"
    db = state / "objects.db"
    return {
        "days": days,
        "took": took,
        "by_day": by_day,
        "written": written,
        "started_rss": started_rss,
        "rss": _rss(proc.pid),
        "nats_rss": _rss(nats_pid) if nats_pid else None,
        "streams": _stream_info(root),
        "audit_disk": _du(_stream_dir(state, "AGENT_EVENTS")),
        "messages_disk": _du(_stream_dir(state, "AGENT_MESSAGES")),
        "db_disk": _du(db) + _du(db.with_name("objects.db-wal")),
        "log_rows": _log_rows(db),
        # file sizes, as checkpoint_max_bytes counts them (not allocated blocks)
        "bundles_disk": sum(
            p.stat().st_size for p in (state / "checkpoints").rglob("*") if p.is_file()
        ),
        "bundles": len(list((state / "checkpoints" / "sha256").glob("*"))),
        "state_disk": _du(state),
    }


def _log_rows(db: Path) -> int:
    import sqlite3

    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
    try:
        return int(conn.execute("SELECT count(*) FROM events").fetchone()[0])
    finally:
        conn.close()


def _stream_info(root: Path) -> dict[str, dict[str, int]]:
    """Each stream's bytes and messages as JetStream counts them (the daemon's NATS login)."""
    import asyncio

    import nats

    from agentcoord.client.rpc import call_unix

    state = root / "state"
    token = (state / "human.token").read_text().strip()
    url = call_unix(root / "run" / "agentcoord.sock", "agentcoord/status", {}, token=token)
    conf = (state / "nats" / "nats.conf").read_text()
    pw = re.search(r'user: "agentcoord", password: "([^"]+)"', conf)
    assert pw is not None

    async def go() -> dict[str, dict[str, int]]:
        nc = await nats.connect(url["nats_url"], user="agentcoord", password=pw.group(1))
        try:
            js = nc.jetstream()
            out = {}
            for name in ("AGENT_EVENTS", "AGENT_MESSAGES"):
                info = await js.stream_info(name)
                out[name] = {
                    "bytes": info.state.bytes,
                    "messages": info.state.messages,
                    "last_seq": info.state.last_seq,
                }
            return out
        finally:
            await nc.close()

    return asyncio.run(go())


def _block(limit: int) -> int:
    """The size of nats-server's file-store blocks for a stream with this ``max_bytes``, as
    seen here (nats-server 2.15): 4 MiB blocks from about 128 KiB to 32 MiB, 8 MiB blocks at
    64 MiB, 32 kB below. A block is freed once every message in it is gone, so on disk a
    stream holds up to about one block more than it keeps."""
    if limit // 4 <= 32_000:
        return 32_000
    return 8 << 20 if limit // 4 >= 8 << 20 else 4 << 20


def figures(r: dict[str, Any]) -> tuple[list[Figure], list[str]]:
    """The report's rows and notes from :func:`measure`'s values."""
    lim, w, s = r["limits"], r["written"], r["streams"]
    mib = _MIB
    audit, inbox = lim["AGENTCOORD_AUDIT_MAX_BYTES"], lim["AGENTCOORD_INBOX_MAX_BYTES"]
    keep = lim["AGENTCOORD_OBJECT_LOG_KEEP"]
    by_day = r["by_day"]
    # What the state dir may hold: each stream's limit and one block, the bundles' cap, the
    # object store's WAL cap (stores/objects/_sqlite.py) and what a fresh state dir has.
    bounds = audit + _block(audit) + inbox + _block(inbox) + r["fresh_bytes"]
    bounds += lim["AGENTCOORD_CHECKPOINT_MAX_BYTES"] + (8 << 20)
    rows = [
        Figure(
            "audit stream, bytes kept",
            s["AGENT_EVENTS"]["bytes"] / mib,
            "audit_max_bytes",
            audit / mib,
            "MB",
            "<= 1x",
        ),
        Figure(
            "audit stream on disk",
            r["audit_disk"] / mib,
            "audit_max_bytes + 1 block",
            (audit + _block(audit)) / mib,
            "MB",
            "<= 1x",
        ),
        Figure(
            "message stream, bytes kept",
            s["AGENT_MESSAGES"]["bytes"] / mib,
            "inbox_max_bytes",
            inbox / mib,
            "MB",
            "<= 1x",
        ),
        Figure(
            "message stream on disk",
            r["messages_disk"] / mib,
            "inbox_max_bytes + 1 block",
            (inbox + _block(inbox)) / mib,
            "MB",
            "<= 1x",
        ),
        Figure(
            "object log rows",
            float(r["log_rows"]),
            "2 x object_log_keep",
            float(2 * keep),
            "rows",
            "<= 1x",
        ),
        Figure(
            "checkpoint bundles (file sizes)",
            r["bundles_disk"] / mib,
            "checkpoint_max_bytes",
            lim["AGENTCOORD_CHECKPOINT_MAX_BYTES"] / mib,
            "MB",
            "<= 1x",
        ),
        Figure(
            "state dir on disk",
            by_day[-1] / mib,
            "sum of the byte bounds",
            bounds / mib,
            "MB",
            "<= 1x",
        ),
        Figure(
            "daemon RSS at the end",
            r["rss"],
            "same daemon after start",
            r["started_rss"],
            "MB",
            "<= 80 MB",
        ),
    ]
    notes = [
        f"{SESSIONS} sessions x {r['days']} day(s) of {PER_DAY} each, in {r['took']:.0f} s; "
        "limits set through the daemon's config: "
        + ", ".join(f"{k.removeprefix('AGENTCOORD_').lower()}={v}" for k, v in lim.items())
        + ".",
        f"Written by the run (what the state would hold without retention): "
        f"{s['AGENT_EVENTS']['last_seq']:,} audit events (kept {s['AGENT_EVENTS']['messages']:,}"
        f"), {s['AGENT_MESSAGES']['last_seq']:,} messages (kept "
        f"{s['AGENT_MESSAGES']['messages']:,}), {w['object_writes']:,} object writes by the "
        f"sessions, {w['checkpoint_bytes'] / mib:.1f} MiB of checkpoint bundles "
        f"(kept {r['bundles']}).",
        "State dir after each day (MiB): "
        + ", ".join(f"{b / mib:.1f}" for b in by_day)
        + "; after the first day it moves up and down within the bounds as stream blocks "
        "fill and are freed.",
        f"objects.db + WAL: {r['db_disk'] / mib:.1f} MiB; a fresh state dir: "
        f"{r['fresh_bytes'] / mib:.2f} MiB; daemon RSS on the fresh dir {r['fresh_rss']:.1f} "
        f"MiB; nats-server RSS at the end "
        + (f"{r['nats_rss']:.1f} MiB." if r["nats_rss"] is not None else "not found."),
        "Sizes are allocated blocks on disk (as du counts), but bundles are file sizes (what "
        "checkpoint_max_bytes counts); '1 block' is one "
        "nats-server file-store block (4 MiB at these limits, 8 MiB at the 64 MiB default), "
        "freed once all its messages are gone.",
    ]
    return rows, notes


def report(ctx: Any) -> Any:
    """bench/run's area (``ctx.quick``: one day)."""
    from _areas import Area

    r = measure(ctx.tmp, 2 if ctx.quick else 7)
    rows, notes = figures(r)
    return Area("State retention (a week of ten sessions)", rows, notes=notes)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="two days instead of seven")
    ap.add_argument("--days", type=int, default=0, help="days to simulate (default 7)")
    ns = ap.parse_args()
    days = ns.days or (2 if ns.quick else 7)
    with tempfile.TemporaryDirectory(prefix="agentcoord-week-", dir="/var/tmp") as d:
        r = measure(Path(d), days)
    rows, notes = figures(r)
    print(f"state retention: {SESSIONS} sessions, {days} day(s)\n")
    print(figure_table(rows))
    print()
    for n in notes:
        print(f"- {n}")


if __name__ == "__main__":
    main()
