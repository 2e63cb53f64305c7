"""The reliability rig (docs/reliability.md "tests/reliability"): mixed load from many client
processes against one real daemon, a fault injected mid-load, then the invariants checked on
the shadow log.

A phase: start ``clients`` processes (``tests/fakes/mixed_client.py``, each under its own
stand-in ``claude`` session), run load, inject one fault, wait until the daemon answers, stop
the senders, let every inbox drain, then compare what the clients were told (acknowledged
claims and sends) with what the daemon holds and what the recipients got:

- every claim a client holds is live in ``check_claims`` exactly once, with its token;
- every acknowledged send was received exactly once, by its addressee;
- no two write grants on one key ever overlapped (fencing tokens + observed hold intervals);
- every agent a client registered (an Agent object in the store) is there, at the last
  version the client had acknowledged;
- every ask that was answered got the answer to its own question, and its turn ran once; an
  ask that failed ended with an error result or a transport error within its timeout, while a
  fault was on, saying why; no runner is left once the asks are over (abandoned asks
  included: cancelled, or hung up on); a fresh ask is answered.

Extension point: a new workload is a method in the client's ``WORKLOADS`` plus a checker here
in ``CHECKERS`` that reads the same shadow logs.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import re
import secrets
import signal
import subprocess
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

from tests.conftest import FAKES, Daemon
from tests.tools.session_helpers import unix_request

CLIENT = FAKES / "mixed_client.py"
ASK_AGENT = "echo"  # the local package agent the clients ask (mixed_client.ASK_AGENT)
ASK_HANG_S = 60.0  # an ask's timeout (30 s) plus slack (mixed_client.ASK_HANG_S)


@dataclass
class Tally:
    """Counts across phases; ``lost``/``duplicated``/``overlaps``/``phantoms`` must stay 0."""

    phases: int = 0
    operations: int = 0
    retries: int = 0
    reconnects: int = 0
    error_results: int = 0
    faults: Counter[str] = field(default_factory=Counter)
    claims_held: int = 0
    grants: int = 0
    messages_acked: int = 0
    messages_received: int = 0
    lost_claims: int = 0
    uncertain_releases: int = 0  # a release retried across a fault, refused: see check
    phantom_claims: int = 0
    lost_messages: int = 0
    duplicated_messages: int = 0
    misrouted_messages: int = 0
    store_writes: int = 0
    lost_store_writes: int = 0
    overlaps: int = 0
    asks: int = 0
    asks_answered: int = 0
    asks_failed: int = 0  # error result, transport error or no answer, while a fault was on
    asks_failed_in_flight: int = 0  # of those, the question had reached the daemon
    fresh_asks: int = 0
    wrong_answers: int = 0  # another question's answer, or a turn run twice
    hung_asks: int = 0  # no reply within the ask's timeout (plus slack)
    failed_asks_unfaulted: int = 0  # failed with no fault on, or a fresh ask failed
    unclear_errors: int = 0  # an error result that does not say what happened
    asks_abandoned: int = 0  # cancelled or hung up on by the asker: runners to stop
    runners_left: int = 0  # runner processes alive once every ask had returned
    problems: list[str] = field(default_factory=list)

    def line(self) -> str:
        faults = ", ".join(f"{k} {v}" for k, v in sorted(self.faults.items()))
        return (
            f"phases {self.phases}; operations {self.operations} (retries {self.retries}, "
            f"reconnects {self.reconnects}, error results {self.error_results}); "
            f"faults injected {sum(self.faults.values())} ({faults}); "
            f"claims held at checks {self.claims_held}, write grants checked {self.grants}; "
            f"messages acknowledged {self.messages_acked}, received {self.messages_received}; "
            f"lost claims {self.lost_claims} (releases retried across a fault "
            f"{self.uncertain_releases}), phantom claims {self.phantom_claims}, "
            f"lost messages {self.lost_messages}, duplicated {self.duplicated_messages}, "
            f"misrouted {self.misrouted_messages}, overlapping writes {self.overlaps}; "
            f"store writes checked {self.store_writes}, lost {self.lost_store_writes}; "
            f"asks {self.asks}: answered {self.asks_answered}, failed by a fault "
            f"{self.asks_failed} ({self.asks_failed_in_flight} in flight), fresh asks after "
            f"recovery {self.fresh_asks}, abandoned {self.asks_abandoned}, wrong answers "
            f"{self.wrong_answers}, hung {self.hung_asks}, failed without a fault "
            f"{self.failed_asks_unfaulted}, unclear errors {self.unclear_errors}, runners left "
            f"{self.runners_left}"
        )

    def merge(self, other: Tally) -> None:
        for name, value in vars(other).items():
            if isinstance(value, int):
                setattr(self, name, getattr(self, name) + value)
        self.faults.update(other.faults)
        self.problems.extend(other.problems)

    @property
    def clean(self) -> bool:
        return not (
            self.lost_claims
            or self.phantom_claims
            or self.lost_messages
            or self.duplicated_messages
            or self.misrouted_messages
            or self.overlaps
            or self.lost_store_writes
            or self.wrong_answers
            or self.hung_asks
            or self.failed_asks_unfaulted
            or self.unclear_errors
            or self.runners_left
        )


def call(d: Daemon, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """A tools/call from this process (the human); the structured result or an AssertionError."""
    req = {"jsonrpc": "2.0", "id": 1, "method": "tools/call"}
    req["params"] = {"name": name, "arguments": arguments}
    result = unix_request(d, req)["result"]
    assert not result.get("isError"), result
    return result["structuredContent"]  # type: ignore[no-any-return]


def answers(d: Daemon) -> bool:
    """The daemon answers ping, a claim and its release over the socket, and /healthz."""
    try:
        if unix_request(d, {"jsonrpc": "2.0", "id": 1, "method": "ping"}).get("result") != {}:
            return False
        out = call(d, "claim", {"resource_key": "rig/probe", "ttl": "1m"})
        call(d, "release", {"resource_key": "rig/probe", "token": out["token"]})
    except (OSError, ValueError, AssertionError, KeyError):
        return False
    return d.healthz() == (200, "ok")


def wait_answers(d: Daemon, timeout: float = 30.0) -> float:
    """Seconds until the daemon answers again; fails the test after ``timeout``."""
    t0 = time.monotonic()
    while not answers(d):
        if time.monotonic() - t0 > timeout:
            raise AssertionError(f"daemon did not answer within {timeout}s:\n{d.log()[-4000:]}")
        time.sleep(0.05)
    return time.monotonic() - t0


def nats_pid(d: Daemon) -> int:
    from agentcoord.client.rpc import call_unix

    token = (d.state_dir / "human.token").read_text().strip()  # the human asks
    return int(call_unix(d.socket, "agentcoord/status", {}, token=token)["nats_pid"])


def wait_gone(pid: int, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return
        except psutil.NoSuchProcess:
            return
        time.sleep(0.02)
    raise AssertionError(f"pid {pid} still alive after {timeout}s")


def runner_pids(d: Daemon) -> list[int]:
    """The daemon's descendants other than nats-server: its sandboxed runners."""
    assert d.proc is not None
    try:
        kids = psutil.Process(d.proc.pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []
    out = []
    for kid in kids:
        with contextlib.suppress(psutil.Error):
            if kid.status() != psutil.STATUS_ZOMBIE and kid.name() != "nats-server":
                out.append(kid.pid)
    return out


@dataclass
class Rig:
    """One daemon under mixed load; ``phase`` runs load + one fault + the checks.

    The first ``askers`` clients also ask (each ask cold-starts or resumes a sandboxed
    runner, so a few are enough)."""

    daemon: Daemon
    claude: Path
    root: Path
    clients: int = 32
    workloads: tuple[str, ...] = ("claims", "messages", "store", "asks")
    askers: int = 4
    tally: Tally = field(default_factory=Tally)
    window: tuple[float, float] = (0.0, 0.0)  # monotonic start and end of the last fault
    _n: itertools.count[int] = field(default_factory=itertools.count)

    def phase(self, fault: Callable[[Rig], None], load_s: float = 4.0) -> None:
        n = next(self._n)
        ctl = self.root / f"phase-{n}"
        ctl.mkdir(parents=True)
        procs = [self._spawn(ctl, n, i) for i in range(self.clients)]
        try:
            names = self._names(ctl, procs)
            (ctl / "peers.tmp").write_text(json.dumps(names))
            (ctl / "peers.tmp").rename(ctl / "peers.json")  # never seen half-written
            time.sleep(load_s / 2)
            began = time.monotonic()
            fault(self)
            wait_answers(self.daemon)
            self.window = (began, time.monotonic())
            time.sleep(load_s / 2)  # load goes on against the recovered daemon
            (ctl / "stop").touch()
            self._wait_files(ctl, "stopped-{}", procs)
            (ctl / "drain").touch()
            finals = [
                json.loads(p.read_text()) for p in self._wait_files(ctl, "final-{}.json", procs)
            ]
            live = call(self.daemon, "check_claims", {"prefix": "k", "limit": 1000})["claims"]
            exit_time = time.monotonic()
            self._check(ctl, finals, live, exit_time)
            if not self.tally.clean:
                self._explain(ctl)
            (ctl / "exit").touch()
        finally:
            for p in procs:
                with contextlib.suppress(ProcessLookupError):
                    if p.poll() is None and not (ctl / "exit").exists():
                        os.killpg(p.pid, signal.SIGKILL)
            for p in procs:
                try:
                    p.wait(20)
                except subprocess.TimeoutExpired:
                    os.killpg(p.pid, signal.SIGKILL)
                    p.wait()
        self.tally.phases += 1
        assert self.tally.clean, self.tally.problems[:20]

    # -- load --------------------------------------------------------------------------------

    def _spawn(self, ctl: Path, n: int, i: int) -> subprocess.Popen[bytes]:
        cwd = ctl / f"p{n}c{i:02d}"  # a directory of its own: a name stable across restarts
        cwd.mkdir()
        argv = [str(self.claude), "--", sys.executable, str(CLIENT)]
        argv += [str(self.daemon.socket), str(ctl), str(i), str(n * 1000 + i)]
        argv.append(",".join(w for w in self.workloads if w != "asks" or i < self.askers))
        log = (ctl / f"client-{i}.log").open("wb")
        try:
            return subprocess.Popen(
                argv,
                env=self.daemon.env,
                cwd=cwd,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        finally:
            log.close()

    def _wait_files(
        self, ctl: Path, pattern: str, procs: list[subprocess.Popen[bytes]], timeout: float = 90
    ) -> list[Path]:
        paths = [ctl / pattern.format(i) for i in range(len(procs))]
        deadline = time.monotonic() + timeout
        while not all(p.exists() for p in paths):
            for i, proc in enumerate(procs):
                if proc.poll() is not None and not paths[i].exists():
                    out = (ctl / f"client-{i}.log").read_text(errors="replace")
                    raise AssertionError(f"client {i} exited {proc.returncode}: {out[-2000:]}")
            if time.monotonic() > deadline:
                missing = [p.name for p in paths if not p.exists()]
                raise AssertionError(f"clients did not write {missing[:5]} in {timeout}s")
            time.sleep(0.05)
        return paths

    def _names(self, ctl: Path, procs: list[subprocess.Popen[bytes]]) -> list[str]:
        paths = self._wait_files(ctl, "name-{}", procs)
        names = [p.read_text() for p in paths]
        assert len(set(names)) == len(names), f"two clients share a name: {names}"
        return names

    def _explain(self, ctl: Path) -> None:
        """Keep the audit trail of the run beside the shadow logs, for a failing check."""
        with contextlib.suppress(Exception):
            events = call(self.daemon, "audit", {"limit": 1000})
            (ctl / "audit.json").write_text(json.dumps(events, indent=1))
            self.tally.problems.append(f"audit trail in {ctl / 'audit.json'}")

    # -- checks ------------------------------------------------------------------------------

    def _check(
        self, ctl: Path, finals: list[dict[str, Any]], live: list[dict[str, Any]], exit_time: float
    ) -> None:
        t = self.tally
        logs = [
            [json.loads(line) for line in (ctl / f"ops-{i}.jsonl").read_text().splitlines()]
            for i in range(len(finals))
        ]
        for f in finals:
            t.operations += f["counts"]["ops"]
            for k in ("retries", "reconnects", "error_results"):
                setattr(t, k, getattr(t, k) + f["counts"][k])
        for checker in CHECKERS:
            if checker.workload in self.workloads:
                checker.check(t, finals, logs, live, exit_time, self)


def check_claims_plane(
    t: Tally,
    finals: list[dict[str, Any]],
    logs: list[list[dict[str, Any]]],
    live: list[dict[str, Any]],
    exit_time: float,
    rig: Rig,
) -> None:
    """Held claims are live exactly once; write grants never overlapped (shadow log)."""
    agents = {f["agent"] for f in finals}
    held = Counter((f["agent"], k, tok) for f in finals for k, tok in f["held"].items())
    rows = Counter(
        (r["agent"], r["resource_key"], r["token"]) for r in live if r["agent"] in agents
    )
    t.claims_held += sum(held.values())
    for item in held:
        if rows[item] != 1:
            t.lost_claims += 1
            t.problems.append(f"held claim {item} is live {rows[item]} times")
    for item in rows:
        if item not in held:
            t.phantom_claims += 1
            t.problems.append(f"live claim {item} is held by no client")
    for r in (r for log in logs for r in log if r["op"] == "lost"):
        if r.get("attempts", 1) > 1:
            # The first attempt was cut off by the fault and may have been applied before the
            # daemon died (released, then granted to another agent); the hold still ends at
            # release_sent for the overlap check below, so this is not evidence of a loss.
            t.uncertain_releases += 1
            continue
        t.lost_claims += 1
        t.problems.append(f"release of a held claim was refused: {r}")
    for r in (r for log in logs for r in log if r["op"] == "grant"):
        if not r["released"] and r["attempts"] == 1:
            t.lost_claims += 1
            t.problems.append(f"a held claim was gone when its holder released it: {r}")
    grants = [r for log in logs for r in log if r["op"] in ("grant", "lost")]
    for f in finals:  # still held: the true hold lasts at least until the exit signal
        for key, token in f["held"].items():
            grants.append(
                {
                    "agent": f["agent"],
                    "key": key,
                    "token": token,
                    "got": f["got"][key],
                    "release_sent": exit_time,
                }
            )
    t.grants += len(grants)
    by_key: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for g in grants:
        by_key[g["key"]].append(g)
    for key, gs in by_key.items():
        gs.sort(key=lambda g: g["got"])
        tokens = [g["token"] for g in gs]
        if len(set(tokens)) != len(tokens):
            t.overlaps += 1
            t.problems.append(f"a token on {key} was granted twice: {tokens}")
        for a, b in itertools.pairwise(gs):
            # Observed holds [got, release_sent] lie inside the true holds: if they overlap,
            # two writers held the key at once.
            if b["got"] < a["release_sent"]:
                t.overlaps += 1
                t.problems.append(f"write grants overlapped on {key}: {a} and {b}")
            if b["token"] <= a["token"]:
                t.overlaps += 1
                t.problems.append(f"fencing token went backwards on {key}: {a} then {b}")


def check_messages_plane(
    t: Tally,
    finals: list[dict[str, Any]],
    logs: list[list[dict[str, Any]]],
    live: list[dict[str, Any]],
    exit_time: float,
    rig: Rig,
) -> None:
    """Every acknowledged send was received exactly once, by its addressee."""
    acked = {r["id"]: r["to"] for log in logs for r in log if r["op"] == "sent"}
    tried = {r["id"] for log in logs for r in log if r["op"] == "send-try"}
    got: Counter[str] = Counter()
    where: dict[str, set[str]] = defaultdict(set)
    seqs: dict[str, list[int]] = defaultdict(list)
    for f in finals:
        for text, seq in f["received"]:
            got[text] += 1
            where[text].add(f["agent"])
            seqs[text].append(seq)
    t.messages_acked += len(acked)
    t.messages_received += sum(got.values())
    for mid, to in acked.items():
        if got[mid] == 0:
            t.lost_messages += 1
            t.problems.append(f"acknowledged message {mid} to {to} never arrived")
        elif got[mid] > 1:
            t.duplicated_messages += 1
            t.problems.append(f"message {mid} arrived {got[mid]} times (seqs {seqs[mid]})")
        if where[mid] - {to}:
            t.misrouted_messages += 1
            t.problems.append(f"message {mid} for {to} reached {sorted(where[mid])}")
    for mid in got:
        if mid not in tried:
            t.misrouted_messages += 1
            t.problems.append(f"received {mid!r}, which no client sent")
        elif mid not in acked and got[mid] > 1:
            t.duplicated_messages += 1
            t.problems.append(f"unacknowledged message {mid} arrived {got[mid]} times")


def check_store_plane(
    t: Tally,
    finals: list[dict[str, Any]],
    logs: list[list[dict[str, Any]]],
    live: list[dict[str, Any]],
    exit_time: float,
    rig: Rig,
) -> None:
    """Every agent a client registered is in the store (one object per name: the store's key)
    at the last version the client had acknowledged, registered by that client."""
    for f in finals:
        for rid, version in f["regs"].items():
            t.store_writes += 1
            got = call(rig.daemon, "get_agent", {"agent_id": rid})
            agent = got.get("agent", {})
            want = f"/{rid}/v{version}"
            ok = (
                got.get("found")
                and str(agent.get("endpoint", "")).endswith(want)
                and agent.get("registered_by") == f["agent"]
            )
            if not ok:
                t.lost_store_writes += 1
                t.problems.append(f"store: {rid} should be v{version} by {f['agent']}: {got}")


ASKED = re.compile(r"^answer (\S+)$", re.MULTILINE)


def turns_run(d: Daemon) -> Counter[str]:
    """How many times each asked nonce ran as a turn: the prompts in the runners' transcripts
    (the stand-in appends each turn's prompt to its session's transcript)."""
    ran: Counter[str] = Counter()
    for path in (Path(d.env["CLAUDE_CONFIG_DIR"]) / "projects").glob("*/*.jsonl"):
        for line in path.read_text(errors="replace").splitlines():
            with contextlib.suppress(ValueError, KeyError, TypeError):
                rec = json.loads(line)
                if rec["type"] == "user":
                    ran.update(ASKED.findall(rec["message"]["content"]))
    return ran


def check_asks_plane(
    t: Tally,
    finals: list[dict[str, Any]],
    logs: list[list[dict[str, Any]]],
    live: list[dict[str, Any]],
    exit_time: float,
    rig: Rig,
) -> None:
    """Answers belong to their own question and ran once; a failed ask failed cleanly while a
    fault was on; no runner outlives the asks (nor its abandoned ask); a fresh ask after
    recovery is answered."""
    d = rig.daemon
    nonce = f"fresh/{secrets.token_hex(6)}"
    try:
        got = call(d, "ask", {"agent": ASK_AGENT, "text": f"answer {nonce}", "timeout_secs": 60})
    except AssertionError as exc:
        got = {"error": str(exc)}
    t.fresh_asks += 1
    if got.get("answer") != nonce:
        t.failed_asks_unfaulted += 1
        t.problems.append(f"a fresh ask after recovery got {got}")
    deadline = time.monotonic() + 30
    while (left := runner_pids(d)) and time.monotonic() < deadline:
        time.sleep(0.1)
    if left:
        t.runners_left += len(left)
        t.problems.append(f"runners still alive after every ask returned: {left}")
    ran = turns_run(d)
    start, end = rig.window
    tried = {r["id"] for log in logs for r in log if r["op"] == "ask-try"}
    ended = [r for log in logs for r in log if r["op"] == "ask"]
    t.asks += len(tried)
    if len(ended) != len(tried):
        t.hung_asks += len(tried) - len(ended)
        t.problems.append(f"{len(tried) - len(ended)} asks never ended")
    for r in (r for log in logs for r in log if r["op"] == "ask-abandoned"):
        t.asks_abandoned += 1
        if ran[r["id"]] > 1:
            t.wrong_answers += 1
            t.problems.append(f"abandoned ask {r['id']} ran as {ran[r['id']]} turns")
    for r in ended:
        if r["outcome"] == "error" and r["detail"].startswith("internal error"):
            t.unclear_errors += 1
            t.problems.append(f"ask {r['id']} failed without saying why: {r['detail']}")
        if ran[r["id"]] > 1:
            t.wrong_answers += 1
            t.problems.append(f"ask {r['id']} ran as {ran[r['id']]} turns")
        if r["outcome"] == "answered":
            t.asks_answered += 1
            if r["detail"] != r["id"] or ran[r["id"]] != 1:
                t.wrong_answers += 1
                t.problems.append(f"ask {r['id']} got {r['detail']!r} ({ran[r['id']]} turns)")
            continue
        if r["outcome"] in ("hang", "protocol") or r["took"] > ASK_HANG_S:
            t.hung_asks += 1
            t.problems.append(f"ask {r['id']} did not end cleanly: {r}")
        elif r["t0"] <= end and r["t0"] + r["took"] >= start:
            t.asks_failed += 1
            t.asks_failed_in_flight += r["sent"]
        else:
            t.failed_asks_unfaulted += 1
            t.problems.append(f"ask {r['id']} failed with no fault on: {r}")


@dataclass(frozen=True)
class Checker:
    workload: str
    check: Callable[..., None]


CHECKERS = [
    Checker("claims", check_claims_plane),
    Checker("messages", check_messages_plane),
    Checker("store", check_store_plane),
    Checker("asks", check_asks_plane),
]
