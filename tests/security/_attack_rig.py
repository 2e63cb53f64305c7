"""The attack suite's rig (docs/reliability.md "Attack suite"): one real daemon per phase,
the callers that attack it and watch it, what it acknowledged, and the check run after each
phase.

Callers: the fuzzing agent and two witness agents are Claude sessions through the stdio shim
(``claude -- agentcoord mcp``, the official SDK client over the unix socket); the human is the
SDK client on ``/mcp`` with the human token, and a bare socket logged in with it; one more agent
(``_attack_agent.py`` under its own ``claude``) holds the SDK client over HTTP and sends raw
frames from its own process. The kube API is reached with the client certificate from
``agentcoord kubeconfig``.

The check (:meth:`Target.check`): each listener answers ping and tools/list for the agent and
the human, a new session connects, ``/healthz`` is ok; NATS is linked (a claim and its release
round trip, ``agentcoord/status`` healthy, listings work); the daemon's and nats-server's peak
RSS (VmHWM) stay under :data:`RSS_BOUND`; and nothing acknowledged is lost: every claim
granted is live with its token, every acknowledged send is read once from the inbox, every
kube create that answered 201 is listed.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import http.client
import json
import os
import random
import secrets
import ssl
import subprocess
import sys
import warnings
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError

from tests.conftest import Daemon, write_kubeconfig
from tests.security._attack_wire import UnixLine
from tests.tools.session_helpers import human_sdk_client, human_token

__all__ = [
    "CALL_TIMEOUT",
    "KUBE_BASE",
    "RSS_BOUND",
    "SEED",
    "AttackFailure",
    "Kube",
    "Ledger",
    "Target",
    "fd_count",
    "open_target",
    "quiet_ping",
    "rss_peak",
]

# One seed per run, printed in every failure and in the run's counts; set it to replay.
SEED = int(os.environ.get("AGENTCOORD_ATTACK_SEED") or secrets.randbits(32))
RSS_BOUND = 500 << 20  # bytes, the daemon's and nats-server's each (docs/reliability.md)
CALL_TIMEOUT = 30.0  # a call not answered in this long is a finding, not a slow machine
AGENT = Path(__file__).with_name("_attack_agent.py")
REPO = Path(__file__).resolve().parents[2]
KUBE_BASE = "/apis/fastverk.savvifi.com/v1/namespaces/default/agentprofiles"


class AttackFailure(AssertionError):
    """A broken invariant, said with the phase, the input and the daemon's log."""


def rss_peak(pid: int) -> tuple[int, int]:
    """(VmRSS, VmHWM) of ``pid`` in bytes, from /proc/<pid>/status; (0, 0) once it is gone."""
    got = {"VmRSS": 0, "VmHWM": 0}
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            key, _, value = line.partition(":")
            if key in got:
                got[key] = int(value.split()[0]) * 1024
    return got["VmRSS"], got["VmHWM"]


def fd_count(pid: int) -> int:
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return 0


@dataclass
class Ledger:
    """What the daemon acknowledged during a phase."""

    claims: dict[tuple[str, str], int] = field(default_factory=dict)  # (agent, key) -> token
    sent: dict[str, str] = field(default_factory=dict)  # text -> to
    received: Counter[str] = field(default_factory=Counter)
    created: set[str] = field(default_factory=set)  # kube object names answered 201
    after: int = 0  # the reader's highest inbox seq


@dataclass
class Kube:
    """The kube API over mutual TLS with the client certificate ``agentcoord kubeconfig``
    prints."""

    host: str
    port: int
    context: ssl.SSLContext

    @classmethod
    def of(cls, d: Daemon) -> Kube:
        doc = yaml.safe_load(write_kubeconfig(d).read_text())
        server = doc["clusters"][0]["cluster"]["server"].removeprefix("https://")
        user = doc["users"][0]["user"]
        files = d.root / "attack-kube"
        files.mkdir(mode=0o700, exist_ok=True)
        for name, key in [("ca", "certificate-authority-data"), ("crt", "client-certificate-data")]:
            src = doc["clusters"][0]["cluster"] if name == "ca" else user
            (files / name).write_bytes(base64.b64decode(src[key]))
        (files / "key").write_bytes(base64.b64decode(user["client-key-data"]))
        ctx = ssl.create_default_context(cafile=str(files / "ca"))
        ctx.load_cert_chain(str(files / "crt"), str(files / "key"))
        host, port = server.rsplit(":", 1)
        assert host == "127.0.0.1", server  # loopback only
        return cls(host, int(port), ctx)

    def request(
        self, method: str, path: str, body: bytes | None = None, timeout: float = 60
    ) -> tuple[int, bytes]:
        """One request on a fresh connection: (status, body); status 0 when none came."""
        conn = http.client.HTTPSConnection(
            self.host, self.port, context=self.context, timeout=timeout
        )
        try:
            headers = {"content-type": "application/json"} if body is not None else {}
            conn.request(method, path, body=body, headers=headers)
            resp = conn.getresponse()
            return resp.status, resp.read()
        except (OSError, http.client.HTTPException) as exc:
            return 0, f"{type(exc).__name__}: {exc}".encode()
        finally:
            conn.close()

    def read_size(self, path: str, timeout: float = 120) -> tuple[int, int]:
        """GET ``path`` reading the body in chunks: (status, bytes), nothing kept."""
        conn = http.client.HTTPSConnection(
            self.host, self.port, context=self.context, timeout=timeout
        )
        try:
            conn.request("GET", path)
            resp = conn.getresponse()
            size = 0
            while chunk := resp.read(1 << 20):
                size += len(chunk)
            return resp.status, size
        except (OSError, http.client.HTTPException):
            return 0, 0
        finally:
            conn.close()


class Worker:
    """The HTTP agent: ``_attack_agent.py`` under its own stand-in ``claude``."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.lock = asyncio.Lock()

    async def __call__(self, cmd: dict[str, Any], timeout: float = 120) -> dict[str, Any]:
        assert self.proc.stdin is not None
        assert self.proc.stdout is not None
        async with self.lock:
            self.proc.stdin.write(json.dumps(cmd).encode() + b"\n")
            await self.proc.stdin.drain()
            line = await asyncio.wait_for(self.proc.stdout.readline(), timeout)
        if not line:
            raise ConnectionError(f"the HTTP agent exited {self.proc.returncode}")
        return json.loads(line)  # type: ignore[no-any-return]


def _shim(d: Daemon, claude: Path, cwd: Path) -> StdioServerParameters:
    cwd.mkdir(parents=True, exist_ok=True)
    env = {
        "AGENTCOORD_RUNTIME_DIR": str(d.runtime_dir),
        "CLAUDE_CONFIG_DIR": d.env["CLAUDE_CONFIG_DIR"],
        "PATH": d.env["PATH"],
        "AGENTCOORD_NO_AUTOSTART": "1",
        "PYTHONPATH": os.environ.get("PYTHONPATH", ""),
    }
    argv = ["--", sys.executable, "-m", "agentcoord", "mcp"]
    return StdioServerParameters(command=str(claude), args=argv, env=env, cwd=str(cwd))


@contextlib.contextmanager
def quiet_ping() -> Iterator[None]:
    """Ping through the SDK: it warns that a future protocol drops ping, which every protocol
    version the daemon speaks has (MCP 2025-11-25 "Ping")."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        yield


@dataclass
class Target:
    """One daemon under attack in one phase, and everyone who talks to it."""

    daemon: Daemon
    claude: Path
    phase: str
    rng: random.Random
    fuzzer: Client
    witness: Client
    reader: Client
    human: Client
    worker: Worker
    kube: Kube
    names: dict[str, str]  # role -> agent name
    ledger: Ledger = field(default_factory=Ledger)
    problems: list[tuple[str, str]] = field(default_factory=list)
    _n: int = 0

    # -- reporting ---------------------------------------------------------------------------

    def fail(self, what: str, given: str = "") -> AttackFailure:
        """The failure to raise: phase, seed, the input (cut), the findings noted before it,
        the daemon's log tail."""
        log = self.daemon.log()[-3000:]
        lines = [
            f"[attack phase {self.phase}, AGENTCOORD_ATTACK_SEED={SEED}] {what}",
            f"input: {given[:600]}" if given else "",
            f"noted before: {self._grouped()}" if self.problems else "",
            f"daemon log (tail):\n{log}",
        ]
        return AttackFailure("\n".join(x for x in lines if x))

    def note(self, what: str, given: str = "") -> None:
        """A finding that does not stop the phase (an unclear error reply), kept for its end."""
        self.problems.append((what, given[:300]))

    def raise_problems(self, attempts: int) -> None:
        """Fail with every finding of the phase, alike ones together with two of their inputs."""
        if not self.problems:
            return
        head = f"{len(self.problems)} of {attempts} inputs were not answered as they should be"
        problems, self.problems = self._grouped(), []
        raise self.fail(f"{head}: {problems}")

    def _grouped(self) -> str:
        """The findings, alike ones together, each with two of its inputs."""
        groups: dict[str, list[str]] = {}
        for what, given in self.problems:
            groups.setdefault(what[:300], []).append(given)
        lines = [
            f"{len(inputs)} x {what}" + "".join(f"\n    input: {g}" for g in inputs[:2] if g)
            for what, inputs in sorted(groups.items(), key=lambda kv: -len(kv[1]))
        ]
        return "\n- " + "\n- ".join(lines[:60])

    # -- the callers -------------------------------------------------------------------------

    async def call(self, client: Client, name: str, args: dict[str, Any]) -> dict[str, Any]:
        """A well-formed call that must succeed; its structured result."""
        result = await asyncio.wait_for(client.call_tool(name, args), CALL_TIMEOUT)
        text = result.content[0].text if result.content else ""  # type: ignore[union-attr]
        if result.is_error or result.structured_content is None:
            raise self.fail(f"{name} failed: {text[:500]}", json.dumps(args)[:300])
        return dict(result.structured_content)

    def human_line(self) -> UnixLine:
        return UnixLine(str(self.daemon.socket), human_token(self.daemon), CALL_TIMEOUT)

    async def human_unix(self, method: str, params: dict[str, Any] | None = None) -> Any:
        def go() -> Any:
            line = self.human_line()
            try:
                return line.call(method, params, CALL_TIMEOUT)
            finally:
                line.close()

        return await asyncio.to_thread(go)

    # -- witness load: what is acknowledged must never be lost ------------------------------

    async def witness_round(self, k: int = 2) -> None:
        """``k`` claims held by the witness, ``k`` sends to the reader, ``k`` kube creates."""
        for _ in range(k):
            self._n += 1
            key = f"witness/{self.phase}/{self._n}"
            got = await self.call(self.witness, "claim", {"resource_key": key, "ttl": "30m"})
            if not got.get("acquired"):
                raise self.fail(f"a fresh witness claim was not granted: {got}", key)
            self.ledger.claims[(self.names["witness"], key)] = int(got["token"])
            text = f"witness {SEED} {self.phase} {self._n}"
            sent = await self.call(self.witness, "send", {"to": self.names["reader"], "text": text})
            if sent.get("sent"):
                self.ledger.sent[text] = self.names["reader"]
            name = f"witness-{self.phase}-{self._n}"
            body = {
                "apiVersion": "fastverk.savvifi.com/v1",
                "kind": "AgentProfile",
                "metadata": {"name": name},
                "spec": {"backend": "claude-code"},
            }
            status, raw = await asyncio.to_thread(
                self.kube.request, "POST", KUBE_BASE, json.dumps(body).encode()
            )
            if status == 201:
                self.ledger.created.add(name)
            elif status >= 500 or status == 0:
                raise self.fail(f"a well-formed kube create answered {status}: {raw[:300]!r}")

    def record(self, tool: str, caller: str, args: Any, structured: Any) -> None:
        """Claims the fuzz was granted join the ledger (so must stay live until released)."""
        if not isinstance(structured, dict) or not isinstance(args, dict):
            return
        if tool == "claim" and structured.get("acquired"):
            key = structured.get("claim", {}).get("resource_key", args.get("resource_key"))
            self.ledger.claims[(caller, key)] = int(structured["token"])
        if tool == "release" and structured.get("released"):
            self.ledger.claims.pop((caller, str(args.get("resource_key"))), None)

    # -- the check ---------------------------------------------------------------------------

    async def check(self, when: str) -> None:
        """Raise unless the daemon answers everyone, NATS is linked, RSS is bounded and
        nothing acknowledged is lost."""
        d = self.daemon
        assert d.proc is not None
        if d.proc.poll() is not None:
            raise self.fail(f"{when}: the daemon exited {d.proc.returncode}")
        steps = [
            ("ping and tools/list, agent over the unix socket", self._agent_unix),
            ("ping and tools/list, human over the unix socket", self._human_unix),
            ("ping and tools/list, human over HTTP", self._human_http),
            ("ping and tools/list, agent over HTTP", self._agent_http),
            ("a new session connects through the shim", self._new_session),
            ("NATS linked: claim and release", self._nats),
            ("listings: list_agents, list_channels, get_agent", self._listings),
        ]
        for what, step in steps:
            try:
                await asyncio.wait_for(step(), CALL_TIMEOUT * 2)
            except AttackFailure:
                raise
            except Exception as exc:
                detail = f"{exc.code} {exc.message}" if isinstance(exc, MCPError) else str(exc)
                raise self.fail(f"{when}: {what}: {type(exc).__name__}: {detail}") from exc
        health = await asyncio.to_thread(d.healthz)
        if health != (200, "ok"):
            raise self.fail(f"{when}: /healthz answered {health}")
        status = (await self.human_unix("agentcoord/status"))["result"]
        if not status.get("healthy") or status.get("health") != "ok":
            raise self.fail(f"{when}: agentcoord status says {status.get('health')!r}")
        for who, pid in (("the daemon", d.proc.pid), ("nats-server", int(status["nats_pid"]))):
            rss, peak = rss_peak(pid)
            if peak >= RSS_BOUND:
                raise self.fail(
                    f"{when}: {who}'s peak RSS {peak >> 20} MiB (now {rss >> 20} MiB) reached "
                    f"the {RSS_BOUND >> 20} MiB bound"
                )
        await self._nothing_lost(when)

    async def _agent_unix(self) -> None:
        with quiet_ping():
            await self.fuzzer.send_ping()
        assert (await self.fuzzer.list_tools(cache_mode="bypass")).tools

    async def _human_unix(self) -> None:
        ping = await self.human_unix("ping")
        listed = await self.human_unix("tools/list")
        assert ping.get("result") == {}, ping
        assert listed["result"]["tools"], str(listed)[:300]

    async def _human_http(self) -> None:
        with quiet_ping():
            await self.human.send_ping()
        assert (await self.human.list_tools(cache_mode="bypass")).tools

    async def _agent_http(self) -> None:
        pong, tools = await self.worker({"op": "ping"}), await self.worker({"op": "tools"})
        assert pong.get("ok"), pong
        assert tools.get("tools"), tools

    async def _new_session(self) -> None:
        self._n += 1
        params = _shim(self.daemon, self.claude, self.daemon.root / f"late-{self._n}")
        async with Client(params, mode="legacy") as late:
            assert (await late.list_tools(cache_mode="bypass")).tools

    async def nats_round_trip(self) -> None:
        """A claim and its release by the witness (both go through NATS)."""
        await self._nats()

    async def _nats(self) -> None:
        self._n += 1
        key = f"probe/{self.phase}/{self._n}"
        got = await self.call(self.witness, "claim", {"resource_key": key, "ttl": "1m"})
        args = {"resource_key": key, "token": got["token"]}
        released = await self.call(self.witness, "release", args)
        assert released.get("released"), released

    async def _listings(self) -> None:
        await self.call(self.human, "list_agents", {})
        await self.call(self.human, "list_channels", {})
        got = await self.call(self.reader, "get_agent", {"name": self.names["witness"]})
        assert got.get("found"), got

    async def _nothing_lost(self, when: str) -> None:
        await self.check_claims(when)
        await self._drain_inbox()
        for text in self.ledger.sent:
            if self.ledger.received[text] != 1:
                n = self.ledger.received[text]
                raise self.fail(f"{when}: acknowledged send {text!r} was read {n} times")
        status, raw = await asyncio.to_thread(self.kube.request, "GET", KUBE_BASE)
        if status != 200:
            raise self.fail(f"{when}: the kube list answered {status}: {raw[:300]!r}")
        listed = {o["metadata"]["name"] for o in json.loads(raw)["items"]}
        missing = sorted(self.ledger.created - listed)
        if missing:
            raise self.fail(f"{when}: kube creates answered 201 but not listed: {missing[:10]}")

    async def check_claims(self, when: str) -> None:
        """Every claim in the ledger is live exactly once, with its token."""
        rows = (await self.call(self.human, "check_claims", {"limit": 1000}))["claims"]
        live = Counter((r["agent"], r["resource_key"], r["token"]) for r in rows)
        for (agent, key), token in self.ledger.claims.items():
            if live[(agent, key, token)] != 1:
                raise self.fail(
                    f"{when}: the claim on {key[:80]!r} granted to {agent} (token {token}) is "
                    f"live {live[(agent, key, token)]} times"
                )

    async def _drain_inbox(self) -> None:
        """Read the reader's inbox (with ``after``) until every acknowledged send is in, or a
        read waits 5 s for nothing (each read waits for a message, not a clock)."""
        while any(self.ledger.received[t] == 0 for t in self.ledger.sent):
            args = {"after": self.ledger.after, "limit": 100, "wait_secs": 5}
            got = await self.call(self.reader, "inbox", args)
            if not got["messages"]:
                return
            for msg in got["messages"]:
                self.ledger.after = max(self.ledger.after, int(msg["seq"]))
                if msg.get("text") in self.ledger.sent:
                    self.ledger.received[msg["text"]] += 1


@contextlib.asynccontextmanager
async def open_target(daemon: Daemon, claude: Path, phase: str) -> AsyncIterator[Target]:
    """The callers on ``daemon`` for ``phase`` (its seeded rng: the run's seed and the phase),
    closed at the end."""
    root = daemon.root
    async with contextlib.AsyncExitStack() as stack:
        fuzzer = await stack.enter_async_context(
            Client(_shim(daemon, claude, root / "fuzzer"), mode="legacy")
        )
        witness = await stack.enter_async_context(
            Client(_shim(daemon, claude, root / "witness"), mode="legacy")
        )
        reader = await stack.enter_async_context(
            Client(_shim(daemon, claude, root / "reader"), mode="legacy")
        )
        human = await stack.enter_async_context(human_sdk_client(daemon))
        env = {**daemon.env, "PYTHONPATH": str(REPO)}
        (root / "http-agent").mkdir(exist_ok=True)
        proc = await asyncio.create_subprocess_exec(
            str(claude),
            "--",
            sys.executable,
            str(AGENT),
            str(daemon.socket),
            daemon.http_addr,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
            cwd=root / "http-agent",
            limit=256 << 20,
            start_new_session=True,
        )
        stack.push_async_callback(_end, proc)
        names = {}
        for role, client in (("fuzzer", fuzzer), ("witness", witness), ("reader", reader)):
            who = await client.call_tool("whoami", {})
            assert who.structured_content, who
            names[role] = who.structured_content["agent"]
        kube = await asyncio.to_thread(Kube.of, daemon)
        rng = random.Random(f"{SEED}:{phase}")
        target = Target(
            daemon, claude, phase, rng, fuzzer, witness, reader, human, Worker(proc), kube, names
        )
        me = await target.worker({"op": "call", "name": "whoami", "arguments": {}})
        if me.get("is_error") is not False:
            raise target.fail(f"the HTTP agent is not an agent: {me}")
        names["http"] = str((me.get("structured") or {}).get("agent", ""))
        yield target


async def _end(proc: asyncio.subprocess.Process) -> None:
    if proc.stdin is not None:
        proc.stdin.close()
    try:
        await asyncio.wait_for(proc.wait(), 10)
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, 9)
        await proc.wait()
