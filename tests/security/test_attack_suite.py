"""The attack suite (docs/reliability.md "Attack suite"): a bounded, seeded fuzz and flood of
both MCP listeners, as agents and as the human, and of the kube API, against a real daemon.

Each phase runs on a fresh daemon and ends with the rig's check (tests/security/_attack_rig.py):
every listener answers, a new session connects, NATS is linked, the daemon's and nats-server's
peak RSS stay under 500 MiB, and nothing acknowledged (claims, sends, kube creates) is lost.
An input answered unclearly (an internal error, a bare 500, a dropped connection) is listed
with the phase, the input and the daemon's log. ``AGENTCOORD_ATTACK_SEED`` replays a run.
"""

from __future__ import annotations

import asyncio
import base64
import errno
import itertools
import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp.shared.exceptions import MCPError

from tests.conftest import Daemon
from tests.security._attack_inputs import (
    Case,
    encode,
    fuzz_cases,
    kube_bodies,
    malformed_frames,
    show,
)
from tests.security._attack_rig import (
    CALL_TIMEOUT,
    KUBE_BASE,
    SEED,
    Target,
    fd_count,
    open_target,
    rss_peak,
)
from tests.security._attack_wire import (
    Exchange,
    UnixLine,
    http_exchange,
    judge_reply,
    judge_tool_result,
    wants_reply,
)
from tests.security.conftest import Tally
from tests.tools.session_helpers import human_token

pytestmark = pytest.mark.timeout(600)

FLOOD = Path(__file__).with_name("_attack_flood.py")
SIMULTANEOUS_UNIX = 500  # connects at once on the unix socket
IDLE_HTTP = 1200  # idle and dribbling loopback connections: well past select()'s 1,024
FLOOD_STEP = 50  # opened at a time, well under the listener's accept backlog
PIPELINED_PINGS = 200_000  # on one unix connection, never read
PIPELINED_HTTP = 20_000  # on one keep-alive connection, never read
BATCH = 600  # list_agents calls in one batch: ~100 MiB of replies as the agents stand
REGISTERED = 20  # agents registered with 7 KB each before the batch, so replies are large
# kube: objects, bytes each (just under the 1.5 MiB object limit, docs/security.md "Limits"),
# parallel lists
BIG_OBJECTS, BIG_SIZE, LISTERS = 48, 1400 << 10, 8
KUBE_CONCURRENT = 40  # good creates racing hostile ones in the store's group commit


def _kind(phase: str) -> str:
    return f"attack {phase} (AGENTCOORD_ATTACK_SEED={SEED})"


@pytest.fixture
def attack_daemon(daemon_factory: Any) -> Daemon:
    """A daemon whose runners exit at once (``false``): a spawn the fuzz makes runs nothing."""
    return daemon_factory("attack", AGENTCOORD_RUNNER_COMMAND="false").start()  # type: ignore[no-any-return]


# -- (a) schema-driven fuzz of every tool's arguments --------------------------------------


async def _send_case(t: Target, case: Case, human_line: list[UnixLine]) -> tuple[str | None, Any]:
    """Send one case on its route: (what is wrong with the answer or None, structured result)."""
    d = t.daemon
    caller, listener, client = case.route.split("/")
    if client == "sdk":
        args = case.arguments
        if caller == "agent" and listener == "http":
            got = await t.worker({"op": "call", "name": case.tool, "arguments": args})
            if "rpc_error" in got:
                return judge_reply({"jsonrpc": "2.0", "id": 1, "error": got["rpc_error"]}), None
            if "exception" in got:
                raise t.fail(f"no answer: {got['exception']}", case.describe())
            result = {"isError": got["is_error"], "content": [{"text": got["text"]}]}
            return judge_tool_result(result), got.get("structured")
        sdk = t.fuzzer if caller == "agent" else t.human
        try:
            res = await asyncio.wait_for(sdk.call_tool(case.tool, args), CALL_TIMEOUT)
        except MCPError as exc:
            error = {"code": exc.code, "message": exc.message}
            return judge_reply({"jsonrpc": "2.0", "id": 1, "error": error}), None
        except TimeoutError:
            raise t.fail(f"no answer within {CALL_TIMEOUT:g} s", case.describe()) from None
        text = res.content[0].text if res.content else ""  # type: ignore[union-attr]
        return judge_tool_result({"isError": res.is_error, "content": [{"text": text}]}), (
            res.structured_content
        )
    frame = case.frame("fuzz")
    if listener == "unix":
        if caller == "agent":
            got = await t.worker({"op": "unix", "frames": [base64.b64encode(frame).decode()]})
            ex = Exchange(**got["exchanges"][0])
        else:
            if not human_line:
                human_line.append(t.human_line())
            ex = await asyncio.to_thread(human_line[0].exchange, frame)
            if ex.closed or ex.timeout:
                human_line.pop().close()
        return _judge_exchange(ex, frame), _structured(ex.replies)
    if caller == "agent":
        got = await t.worker({"op": "http", "bodies": [base64.b64encode(frame).decode()]})
        status, body, note = got["answers"][0]
        body = base64.b64decode(body)
    else:
        auth = {"authorization": f"Bearer {human_token(d)}"}
        status, body, note = await asyncio.to_thread(http_exchange, d.http_addr, frame, auth)
    return _judge_http(status, body, note, frame), None


def _structured(replies: list[Any]) -> Any:
    for r in replies:
        if isinstance(r, dict) and isinstance(r.get("result"), dict):
            return r["result"].get("structuredContent")
    return None


def _judge_exchange(ex: Exchange, frame: bytes) -> str | None:
    """What is wrong with the answer to one frame on the unix socket, or None."""
    owed = wants_reply(frame)
    if ex.closed:
        return "the daemon closed the connection" + ("" if ex.replies else " without a reply")
    if ex.timeout:
        return "no reply (or no answer to the ping after it) within 15 s"
    if ex.garbage:
        return f"a reply line that is not JSON: {ex.garbage[0]!r}"
    if owed is True and len(ex.replies) != 1:
        return f"{len(ex.replies)} replies to one frame"
    if owed is False and ex.replies:
        return f"a notification was answered: {show(ex.replies[0])}"
    for reply in ex.replies:
        if bad := judge_reply(reply):
            return bad
    return None if ex.pinged else "the ping after it was not answered"


def _judge_http(status: int, body: bytes, note: str, frame: bytes) -> str | None:
    """What is wrong with the HTTP answer to one body posted to /mcp, or None."""
    if status == 0:
        return f"no HTTP response: {note}"
    if status >= 500:
        return f"HTTP {status}: {body[:200]!r}"
    if status == 202 and wants_reply(frame) is not True:
        return None
    if "outgrew" in note:
        return f"HTTP {status}: {note}"
    try:
        reply = json.loads(body)
    except ValueError:
        return f"HTTP {status} with a body that is no JSON-RPC reply: {body[:200]!r}"
    return judge_reply(reply)


async def test_fuzzed_tool_arguments(attack_daemon: Daemon, claude_bin: Path, tally: Tally) -> None:
    """Every tool argument, fuzzed on both listeners as agent and human, is answered clearly."""
    async with open_target(attack_daemon, claude_bin, "fuzz") as t:
        tools = (await t.human_unix("tools/list"))["result"]["tools"]  # the human sees all
        cases = fuzz_cases(tools, t.rng)
        print(f"attack fuzz: seed {SEED}, {len(cases)} cases over {len(tools)} tools")
        await t.witness_round()
        http_agent = t.names["http"]  # the raw agent routes are its process's too
        names = {"agent/unix/sdk": t.names["fuzzer"], "agent/unix/raw": http_agent}
        names |= {"agent/http/sdk": http_agent, "agent/http/raw": http_agent}
        human_line: list[UnixLine] = []
        try:
            for tool, group in itertools.groupby(cases, key=lambda c: c.tool):
                for case in group:
                    bad, structured = await _send_case(t, case, human_line)
                    who = names.get(case.route, f"human:{_user()}")
                    t.record(tool, who, case.arguments, structured)
                    if not tally(_kind("fuzzed arguments"), bad is None, "answered clearly"):
                        t.note(str(bad), case.describe())
                    health = await asyncio.to_thread(attack_daemon.healthz)
                    if health != (200, "ok"):
                        raise t.fail(
                            f"/healthz answered {health} right after this input", case.describe()
                        )
                try:
                    await t.nats_round_trip()
                except Exception as exc:
                    raise t.fail(f"after fuzzing {tool}: a claim round trip failed: {exc}") from exc
                if len(t.ledger.claims) > 50:
                    await _release_fuzz_claims(t, names)
        finally:
            for line in human_line:
                line.close()
        await t.witness_round()
        await t.check("after the fuzz")
        t.raise_problems(len(cases))


def _user() -> str:
    import pwd

    return pwd.getpwuid(os.getuid()).pw_name


async def _release_fuzz_claims(t: Target, names: dict[str, str]) -> None:
    """Check the claims the fuzz was granted are live, then let them go (the ledger keeps
    the witness's)."""
    await t.check_claims("while fuzzing")
    for (agent, key), token in list(t.ledger.claims.items()):
        if agent == t.names["fuzzer"]:
            await t.call(t.fuzzer, "release", {"resource_key": key, "token": token})
            del t.ledger.claims[(agent, key)]


# -- (b) malformed JSON-RPC frames on both listeners ---------------------------------------


async def test_malformed_frames(attack_daemon: Daemon, claude_bin: Path, tally: Tally) -> None:
    """Malformed JSON-RPC frames on both listeners, as agent and human, each get a clear error."""
    d = attack_daemon
    async with open_target(d, claude_bin, "frames") as t:
        await t.witness_round()
        tools = [str(x["name"]) for x in (await t.human_unix("tools/list"))["result"]["tools"]]
        frames = malformed_frames(t.rng, tools, 80)
        print(f"attack frames: seed {SEED}, {len(frames)} frames per listener and caller")
        b64 = [base64.b64encode(f).decode() for f in frames]
        auth = {"authorization": f"Bearer {human_token(d)}"}

        def human_unix() -> list[Exchange]:
            out: list[Exchange] = []
            line: UnixLine | None = None
            try:
                for frame in frames:
                    line = line or t.human_line()
                    out.append(line.exchange(frame))
                    if out[-1].closed or out[-1].timeout:
                        line.close()
                        line = None
            finally:
                if line is not None:
                    line.close()
            return out

        results: dict[str, list[str | None]] = {}
        exchanges = await asyncio.to_thread(human_unix)
        results["human/unix"] = [
            _judge_exchange(e, f) for e, f in zip(exchanges, frames, strict=True)
        ]
        got = await t.worker({"op": "unix", "frames": b64}, timeout=600)
        agent_ex = [Exchange(**e) for e in got["exchanges"]]
        results["agent/unix"] = [
            _judge_exchange(e, f) for e, f in zip(agent_ex, frames, strict=True)
        ]
        human_http = [await asyncio.to_thread(http_exchange, d.http_addr, f, auth) for f in frames]
        results["human/http"] = [
            _judge_http(*a, f) for a, f in zip(human_http, frames, strict=True)
        ]
        got = await t.worker({"op": "http", "bodies": b64}, timeout=600)
        agent_http = [(s, base64.b64decode(b), n) for s, b, n in got["answers"]]
        results["agent/http"] = [
            _judge_http(*a, f) for a, f in zip(agent_http, frames, strict=True)
        ]
        for route, verdicts in results.items():
            for frame, bad in zip(frames, verdicts, strict=True):
                if not tally(_kind(f"malformed frames ({route})"), bad is None, "answered clearly"):
                    t.note(f"{route}: {bad}", show(frame))
        for raw in _bad_http(t):
            status, body, note = await asyncio.to_thread(
                http_exchange, d.http_addr, b"", raw=raw, timeout=20
            )
            ok = 400 <= status < 500 or (status == 0 and "closed" in note)
            if not tally(_kind("malformed HTTP framing"), ok, "refused with a 4xx or closed"):
                t.note(f"HTTP framing: {status} {note} {body[:100]!r}", show(raw))
        await t.witness_round()
        await t.check("after the malformed frames")
        t.raise_problems(4 * len(frames))


def _bad_http(t: Target) -> list[bytes]:
    """Seeded requests that break HTTP/1.1 framing (RFC 9112): each is a 4xx or a close."""
    rng = t.rng
    host = f"host: {t.daemon.http_addr}\r\n".encode()
    return [
        b"POST /mcp HTTP/1.1\r\n"
        + host
        + b"content-length: "
        + rng.choice([b"-1", b"x", b"1e9"])
        + b"\r\n\r\n",
        b"POST /mcp HTTP/1.1\r\n"
        + host
        + b"transfer-encoding: chunked\r\n\r\n"
        + rng.randbytes(40).replace(b"\r\n", b"")
        + b"\r\n",
        b"POST /mcp HTTP/1.1\r\n" + host + b"x: " + b"a" * (70 << 10) + b"\r\n\r\n",
        b"POST /mcp HTTP/1.1\r\n"
        + host
        + b"".join(b"x%d: %s\r\n" % (i, b"b" * 900) for i in range(120))
        + b"\r\n",
        b"POST /mcp HTTP/1.1\r\n" + host + b"x-nul: a\x00b\r\n\r\n",
        b"P\xffST /mcp HTTP/1.1\r\n" + host + b"\r\n",
        b"GET /" + b"%ed%a0%80" * 3000 + b" HTTP/1.1\r\n" + host + b"\r\n",
        rng.randbytes(300).replace(b"\r\n", b"  ") + b"\r\n\r\n",
    ]


# -- (c) floods ----------------------------------------------------------------------------


async def test_floods(attack_daemon: Daemon, claude_bin: Path, tally: Tally) -> None:
    """Connection, pipelining and batch floods leave every caller answered and memory bounded."""
    d = attack_daemon
    assert d.proc is not None
    async with open_target(d, claude_bin, "flood") as t:
        await t.witness_round()
        base_fds = fd_count(d.proc.pid)

        refused, unanswered = await asyncio.to_thread(_simultaneous_unix, d)
        tally(
            _kind("simultaneous unix connects"),
            refused == 0 and unanswered == 0,
            "accepted and answered",
        )
        if refused or unanswered:
            t.note(
                f"{SIMULTANEOUS_UNIX} simultaneous unix connects: {refused} refused, "
                f"{unanswered} accepted but not answered"
            )

        # The refused and answered connects closed: their descriptors must be free again
        # before the flood, or its connections leave holes below 1,024.
        await _settled(d.proc.pid, base_fds + 8)
        flood = _start_flood(d)
        try:
            opened, fds = 0, base_fds
            while opened < IDLE_HTTP:
                # In steps the accept queue (a backlog of ~100) takes, each accepted before
                # the next: what a patient attacker gets to, whatever the kernel drops.
                assert flood.stdin is not None
                flood.stdin.write(f"open {min(FLOOD_STEP, IDLE_HTTP - opened)}\n")
                flood.stdin.flush()
                answer = await asyncio.to_thread(_read_line, flood, 60)
                assert answer.startswith("open"), answer
                opened = int(answer.split()[1])
                fds = await _accepted(d.proc.pid, base_fds + opened - 8)
            print(f"attack flood: {opened} idle/slow HTTP connections, daemon fds {fds}")
            await t.witness_round()
            await t.check(f"with {opened} idle and dribbling HTTP connections open ({fds} fds)")
        finally:
            if flood.stdin is not None:
                flood.stdin.close()
            done = await asyncio.to_thread(_read_line, flood, 120)
            try:
                await asyncio.to_thread(flood.wait, 30)
            except subprocess.TimeoutExpired:
                flood.kill()
                flood.wait()
            if flood.stdout is not None:
                flood.stdout.close()
        tally(_kind("idle and slow HTTP connections"), True, "survived")
        print(f"attack flood: {done} (closed by the daemon)")

        ping = b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n'
        sent = await t.worker(
            {"op": "flood_unix", "frame": base64.b64encode(ping).decode(), "count": PIPELINED_PINGS}
        )
        body = encode({"jsonrpc": "2.0", "id": 1, "method": "ping"})
        sent_http = await t.worker(
            {"op": "flood_http", "body": base64.b64encode(body).decode(), "count": PIPELINED_HTTP}
        )
        print(f"attack flood: pipelined, unread: unix {sent}, http {sent_http}")
        await t.check("with 200k pipelined pings and 20k pipelined HTTP requests unread")
        await t.worker({"op": "drop_floods"})
        tally(_kind("pipelined requests never read"), True, "survived")

        for i in range(REGISTERED):
            meta = {"note": "m" * 5000, "n": i}
            args = {
                "agent_id": f"attack-reg-{i}",
                "endpoint": f"http://127.0.0.1:9/{i}",
                "metadata": meta,
                "capabilities": [f"c{i}" + "c" * 2000],
            }
            await t.call(t.fuzzer, "register_agent", args)
        call = {
            "jsonrpc": "2.0",
            "method": "tools/call",
            "params": {"name": "list_agents", "arguments": {}},
        }
        batch = encode([{**call, "id": i} for i in range(BATCH)])
        line = await asyncio.to_thread(t.human_line)
        try:
            ex = await asyncio.to_thread(line.exchange, batch, 120)
            bad = _judge_exchange(ex, batch)
        except ValueError as exc:  # the reply outgrew what a client can be asked to read
            bad = str(exc)
        finally:
            line.close()
        if bad:
            t.note(f"a batch of {BATCH} list_agents on the unix socket: {bad}", show(batch))
        auth = {"authorization": f"Bearer {human_token(d)}"}
        status, body_, note = await asyncio.to_thread(
            http_exchange, d.http_addr, batch, auth, timeout=120
        )
        if bad := _judge_http(status, body_, note, batch):
            t.note(f"a batch of {BATCH} list_agents over HTTP: {bad}", show(batch))
        tally(_kind("huge batches"), True, "survived")
        await t.check(f"after a batch of {BATCH} list_agents on each listener")

        held = await _settled(d.proc.pid, base_fds + 64)
        if held > base_fds + 64:
            raise t.fail(f"the daemon holds {held} fds 30 s after the floods ({base_fds} before)")
        t.raise_problems(6)


async def _settled(pid: int, most: int) -> int:
    """The daemon's descriptor count once it is ``most`` or fewer, or after 30 s."""
    loop = asyncio.get_running_loop()
    start = loop.time()
    while loop.time() - start < 30:
        if (now := fd_count(pid)) <= most:
            return now
        await asyncio.sleep(0.25)  # sampling /proc/<pid>/fd, a condition with no event
    return fd_count(pid)


async def _accepted(pid: int, want: int) -> int:
    """The daemon's descriptor count once it has accepted the flood: ``want`` reached, or no
    change for 3 s (a daemon that bounds its connections stops short), within 30 s."""
    loop = asyncio.get_running_loop()
    start = last_change = loop.time()
    last = fd_count(pid)
    while last < want and loop.time() - last_change < 3 and loop.time() - start < 30:
        await asyncio.sleep(0.25)  # sampling /proc/<pid>/fd, a condition with no event
        if (now := fd_count(pid)) != last:
            last, last_change = now, loop.time()
    return last


def _simultaneous_unix(d: Daemon) -> tuple[int, int]:
    """Connect :data:`SIMULTANEOUS_UNIX` sockets at once (non-blocking, as a client with a
    timeout does), then send each a ping: (refused connects, connections not answered)."""
    socks, refused = [], 0
    for _ in range(SIMULTANEOUS_UNIX):
        s = socket.socket(socket.AF_UNIX)
        s.setblocking(False)
        try:
            s.connect(str(d.socket))
        except BlockingIOError:
            refused += 1
            s.close()
            continue
        except OSError as exc:
            if exc.errno not in (errno.EAGAIN, errno.ECONNREFUSED):
                raise
            refused += 1
            s.close()
            continue
        socks.append(s)
    unanswered = 0
    for s in socks:
        s.settimeout(30)
        try:
            s.sendall(b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n')
            if not s.recv(4096):
                unanswered += 1
        except OSError:
            unanswered += 1
        finally:
            s.close()
    return refused, unanswered


def _start_flood(d: Daemon) -> subprocess.Popen[str]:
    """The idle/slow HTTP flood, as uid 65534 when this runs as root (another local user)."""
    other = os.getuid() == 0 and shutil.which("python3", path="/usr/bin:/bin") is not None
    python = shutil.which("python3", path="/usr/bin:/bin") if other else sys.executable
    # The script's text, not its path: uid 65534 may not read this checkout (a clone under a
    # 0700 temp dir), and needs only the system interpreter and the standard library.
    argv = [str(python), "-I", "-c", FLOOD.read_text(), d.http_addr, "120"]
    extra: dict[str, Any] = {"user": 65534, "group": 65534, "extra_groups": []} if other else {}
    return subprocess.Popen(
        argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd="/", **extra
    )


def _read_line(proc: subprocess.Popen[str], timeout: float) -> str:
    import select

    assert proc.stdout is not None
    if not select.select([proc.stdout], [], [], timeout)[0]:
        return "(nothing)"
    return proc.stdout.readline().strip()


# -- (d) the kube API ----------------------------------------------------------------------


async def test_kube_api(attack_daemon: Daemon, claude_bin: Path, tally: Tally) -> None:
    """Hostile kube bodies get a clear 4xx, good creates all land, large lists bound RSS."""
    d = attack_daemon
    async with open_target(d, claude_bin, "kube") as t:
        await t.witness_round()
        kube = t.kube
        for label, body in kube_bodies(t.rng, 40):
            status, raw = await asyncio.to_thread(kube.request, "POST", KUBE_BASE, body)
            if status == 201:
                t.ledger.created.add(json.loads(raw)["metadata"]["name"])
            ok = 400 <= status < 500 and _is_status(raw)
            if not tally(_kind("hostile kube bodies"), ok, "refused with a clear 4xx"):
                t.note(f"kube {label}: {status} {raw[:200]!r}", show(body))
        for path in _hostile_paths(t):
            status, raw = await asyncio.to_thread(kube.request, "GET", path)
            ok = 200 <= status < 500  # refused, or answered with nothing outside the store
            if not tally(_kind("hostile kube paths"), ok, "answered clearly"):
                t.note(f"kube GET: {status} {raw[:200]!r}", path)

        bad = [b for _, b in kube_bodies(t.rng, 200) if b"\\ud" in b or b"\\udf" in b][:4]
        jobs = [("good", _profile(f"race-{i}")) for i in range(KUBE_CONCURRENT)]
        jobs += [("bad", b) for b in bad]
        t.rng.shuffle(jobs)
        answers = await asyncio.gather(
            *(asyncio.to_thread(kube.request, "POST", KUBE_BASE, body) for _, body in jobs)
        )
        for (kind, body), (status, raw) in zip(jobs, answers, strict=True):
            if status == 201:
                t.ledger.created.add(json.loads(raw)["metadata"]["name"])
            ok = status == 201 if kind == "good" else 400 <= status < 500
            if not tally(_kind("kube creates racing hostile ones"), ok, "answered as they should"):
                t.note(f"kube {kind} create in a race answered {status}: {raw[:200]!r}", show(body))
        await t.check("after hostile kube bodies")

        big = [f"big-{i}" for i in range(BIG_OBJECTS)]
        for name in big:
            status, raw = await asyncio.to_thread(
                kube.request, "POST", KUBE_BASE, _profile(name, "p" * BIG_SIZE)
            )
            if status != 201:
                raise t.fail(
                    f"a {BIG_SIZE >> 10} KiB AgentProfile answered {status}: {raw[:200]!r}"
                )
        status, raw = await asyncio.to_thread(
            kube.request, "POST", KUBE_BASE, _profile("too-big", "p" * (5 << 20))
        )
        if not tally(_kind("oversize kube body"), status == 413, "refused with 413"):
            t.note(f"a 5 MB kube body answered {status}: {raw[:200]!r}")
        lists = await asyncio.gather(
            *(asyncio.to_thread(kube.read_size, KUBE_BASE) for _ in range(LISTERS))
        )
        for status, size in lists:
            ok = (
                (status == 200 and size > BIG_OBJECTS * BIG_SIZE)
                or 400 <= status < 500
                or status == 429
            )
            if not tally(_kind("parallel large kube lists"), ok, "answered or refused clearly"):
                what = f"a list of {BIG_OBJECTS} x {BIG_SIZE >> 10} KiB"
                t.note(f"{what} answered {status} ({size} bytes)")
        print(f"attack kube: daemon RSS now/peak {[x >> 20 for x in rss_peak(d.proc.pid)]} MiB")  # type: ignore[union-attr]
        await t.check(f"after {LISTERS} parallel lists of {BIG_OBJECTS} x {BIG_SIZE >> 10} KiB")
        for name in big:
            status, raw = await asyncio.to_thread(kube.request, "DELETE", f"{KUBE_BASE}/{name}")
            if status != 200:
                raise t.fail(f"deleting {name} answered {status}: {raw[:200]!r}")
        await t.witness_round()
        await t.check("at the end of the kube phase")
        t.raise_problems(1)


def _profile(name: str, prompt: str = "") -> bytes:
    spec: dict[str, Any] = {"backend": "claude-code"}
    if prompt:
        spec["systemPrompt"] = prompt
    doc = {
        "apiVersion": "fastverk.savvifi.com/v1",
        "kind": "AgentProfile",
        "metadata": {"name": name},
        "spec": spec,
    }
    return json.dumps(doc).encode()


def _is_status(raw: bytes) -> bool:
    try:
        doc = json.loads(raw)
    except ValueError:
        return False
    return isinstance(doc, dict) and doc.get("kind") == "Status" and bool(doc.get("message"))


def _hostile_paths(t: Target) -> list[str]:
    rng = t.rng
    return [
        f"{KUBE_BASE}/%ED%A0%80",
        f"{KUBE_BASE}/%00",
        f"{KUBE_BASE}/%FF%FE",
        f"{KUBE_BASE}/{'x' * rng.choice([300, 60_000])}",
        f"{KUBE_BASE}?labelSelector=" + "%28" * 5000,
        f"{KUBE_BASE}?labelSelector=a%ED%A0%80%3Db",
        f"{KUBE_BASE}?limit=-1&continue=%ff",
        "/apis/fastverk.savvifi.com/v1/namespaces/..%2f..%2fetc/agentprofiles",
    ]
