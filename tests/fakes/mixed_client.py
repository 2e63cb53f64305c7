"""One client of the reliability suite's mixed load: claims and messages over the
daemon's unix socket, riding out daemon and NATS faults, with a shadow log of what was
acknowledged.

Run under the stand-in ``claude`` from a directory of its own (so its agent name, ``<dir>-1``,
is the same after a daemon restart):

    claude -- python mixed_client.py SOCKET CTL_DIR INDEX SEED OPS

OPS is a comma-separated list of workloads (``claims,messages,store,asks``); each is a method
named in ``WORKLOADS`` below. ``asks`` asks the local agent ``ASK_AGENT`` (the stand-in
``claude -p`` runs each turn in a sandbox) to answer with a nonce of this question: an answer
is checked against its own question, so cross-talk shows.

Control files in CTL_DIR (written by the suite): ``peers.json`` (every client's agent name;
start), ``stop`` (finish the current operation, stop sending), ``drain`` (read the inbox until
it stays empty), ``exit`` (release nothing, just exit: the daemon drops the claims when the
process ends). The client writes ``name-INDEX`` (its agent name), ``ops-INDEX.jsonl`` (the
shadow log, one flushed line per acknowledged operation), ``stopped-INDEX`` and
``final-INDEX.json`` (the claims it holds and what it received).

A call whose connection breaks, or that fails with an error result, is retried with the same
arguments until it is answered (sends carry an idempotency key; a repeated claim replaces the
caller's own earlier grant), so every operation ends acknowledged or the client gives up loudly.
An ask is not retried (a second turn would be a second question): it ends answered, with an
error result, a transport error, or (a hang) no reply within its socket timeout, and the shadow
log says which.
"""

import json
import os
import random
import socket
import sys
import time
from typing import Any

RETRY_FOR_S = 60.0
CALL_TIMEOUT_S = 20.0
KEYS = 16
ASK_AGENT = "echo"
ASK_TIMEOUT_S = 30.0  # the ask's own timeout_secs
ASK_HANG_S = ASK_TIMEOUT_S + 30.0  # no reply by then: the daemon hangs the call


class Client:
    def __init__(self, sock_path, ctl, index, seed):
        self.sock_path, self.ctl, self.index = sock_path, ctl, index
        self.rng = random.Random(seed)
        # Any: set by _connect, None between connections (call() reconnects first).
        self.sock: Any = None
        self.reader: Any = None
        self.n = 0
        self.me = None
        self.peers = []
        self.held = {}  # key -> token
        self.got = {}  # key -> monotonic time the grant was acknowledged
        self.received = []  # message texts, in order, with repeats
        self.seq = 0
        self.last_seq = 0  # highest inbox seq received
        self.regs = {}  # registered agent id -> last acknowledged version
        self.asked = 0
        self.counts = {"ops": 0, "retries": 0, "reconnects": 0, "error_results": 0}
        # Line-buffered for the life of the process: every record is on disk when written.
        self.log = open(os.path.join(ctl, f"ops-{index}.jsonl"), "a", buffering=1)  # noqa: SIM115

    # -- transport ---------------------------------------------------------------------------

    def _connect(self):
        self._close()
        s = socket.socket(socket.AF_UNIX)
        s.settimeout(CALL_TIMEOUT_S)
        s.connect(self.sock_path)
        self.sock, self.reader = s, s.makefile("rb")

    def _close(self):
        if self.sock is not None:
            try:
                self.reader.close()
                self.sock.close()
            except OSError:
                pass
        self.sock = self.reader = None

    def call(self, name, arguments, final=()):
        """The tools/call result, retried across broken connections and error results (but
        an error result whose text contains one of ``final`` is returned)."""
        deadline = time.monotonic() + RETRY_FOR_S
        first = True
        self.attempts = 0
        while True:
            self.attempts += 1
            if not first:
                self.counts["retries"] += 1
                if time.monotonic() > deadline:
                    raise SystemExit(f"client {self.index}: {name} unanswered for {RETRY_FOR_S}s")
                time.sleep(0.1)
            first = False
            try:
                if self.sock is None:
                    self._connect()
                    self.counts["reconnects"] += 1
                self.n += 1
                req = {"jsonrpc": "2.0", "id": self.n, "method": "tools/call"}
                req["params"] = {"name": name, "arguments": arguments}
                self.sock.sendall(json.dumps(req).encode() + b"\n")
                line = self.reader.readline()
                if not line:
                    raise ConnectionError("daemon closed the connection")
                reply = json.loads(line)
            except (OSError, ValueError):
                self._close()
                continue
            if reply.get("id") != self.n or "result" not in reply:
                raise SystemExit(f"client {self.index}: bad reply {reply!r} to {req!r}")
            result = reply["result"]
            if result.get("isError"):
                self.counts["error_results"] += 1
                text = result["content"][0]["text"]
                if not any(f in text for f in final):
                    continue
            self.counts["ops"] += 1
            return result

    def record(self, **rec):
        self.log.write(json.dumps(rec) + "\n")

    # -- workloads ---------------------------------------------------------------------------

    def claims(self):
        """Claim a random key (write), or release one held; shadow-log grants and releases."""
        if self.held and self.rng.random() < 0.5:
            key = self.rng.choice(sorted(self.held))
            token = self.held.pop(key)
            release_sent = time.monotonic()
            out = self.call(
                "release",
                {"resource_key": key, "token": token},
                final=("held by", "not your current grant", "you hold no claim"),
            )
            if out.get("isError"):  # the daemon no longer has our grant: a lost claim
                text = out["content"][0]["text"]
                self.record(
                    op="lost",
                    agent=self.me,
                    key=key,
                    token=token,
                    got=self.got.pop(key),
                    release_sent=release_sent,
                    text=text,
                    attempts=self.attempts,  # a retried release may find its first attempt done
                )
                return
            self.record(
                op="grant",
                agent=self.me,
                key=key,
                token=token,
                got=self.got.pop(key),
                release_sent=release_sent,
                released=out["structuredContent"]["released"],
                attempts=self.attempts,  # a retried release may find its first attempt done
            )
            return
        key = f"k{self.rng.randrange(KEYS)}"
        if key in self.held:
            return
        out = self.call("claim", {"resource_key": key, "ttl": "10m", "mode": "write"})
        got = time.monotonic()
        sc = out["structuredContent"]
        if sc["acquired"]:
            self.held[key] = sc["token"]
            self.got[key] = got

    def messages(self):
        """Send to a random peer (idempotency key = message id), or read the inbox."""
        if self.rng.random() < 0.6:
            self.seq += 1
            mid = f"{self.me}/{self.seq}"
            to = self.rng.choice(self.peers)
            self.record(op="send-try", id=mid, to=to)
            out = self.call("send", {"to": to, "text": mid, "idempotency_key": mid})
            sc = out["structuredContent"]
            self.record(op="sent", id=mid, to=to, seq=sc["seq"], dup=bool(sc.get("duplicate")))
        else:
            self.read_inbox()

    def store(self):
        """Register an agent of ours or re-point one (an Agent object in the store): a store
        write whose last acknowledged version must be the one the store holds."""
        if self.regs and self.rng.random() < 0.5:
            rid = self.rng.choice(sorted(self.regs))
            version = self.regs[rid] + 1
        else:
            rid, version = f"reg-{self.me}-{len(self.regs)}", 1
        self.record(op="store-try", id=rid, version=version)
        endpoint = f"http://127.0.0.1:9/{rid}/v{version}"
        self.call("register_agent", {"agent_id": rid, "endpoint": endpoint})
        self.regs[rid] = version
        self.record(op="stored", id=rid, version=version)

    def asks(self):
        """Ask the local agent for a nonce of this question; log how the ask ended."""
        self.asked += 1
        nonce = f"{self.me}/ask{self.asked}/{self.rng.getrandbits(48):012x}"
        if self.rng.random() < 0.2:
            self.abandon_ask(nonce)
            return
        self.record(op="ask-try", id=nonce)
        t0 = time.monotonic()
        outcome, detail, sent = self.ask_once(nonce)
        took = time.monotonic() - t0
        self.record(op="ask", id=nonce, outcome=outcome, detail=detail, sent=sent, t0=t0, took=took)
        if outcome in ("transport", "hang"):
            time.sleep(0.1)  # the daemon is away: do not spin on connect

    def abandon_ask(self, nonce):
        """Ask for a long turn, then go away: cancel it (notifications/cancelled) and hang up,
        or just hang up. Nobody reads its answer, so the daemon must stop its runner."""
        cancel = self.rng.random() < 0.5
        self.record(op="ask-abandoned", id=nonce, cancel=cancel)
        args = {"agent": ASK_AGENT, "text": f"sleep 300\nanswer {nonce}"}
        req = {"jsonrpc": "2.0", "id": 1, "method": "tools/call"}
        req["params"] = {"name": "ask", "arguments": args}
        try:
            with socket.socket(socket.AF_UNIX) as s:
                s.settimeout(CALL_TIMEOUT_S)
                s.connect(self.sock_path)
                s.sendall(json.dumps(req).encode() + b"\n")
                time.sleep(0.5)
                if cancel:
                    note: dict[str, object] = {
                        "jsonrpc": "2.0",
                        "method": "notifications/cancelled",
                    }
                    note["params"] = {"requestId": 1, "reason": "the asker gives up"}
                    s.sendall(json.dumps(note).encode() + b"\n")
        except OSError:
            time.sleep(0.1)

    def ask_once(self, nonce):
        """One ask on its own connection: (outcome, answer or error text, request sent)."""
        args: dict[str, object] = {"agent": ASK_AGENT, "text": f"sleep 0.2\nanswer {nonce}"}
        args["timeout_secs"] = ASK_TIMEOUT_S
        req = {"jsonrpc": "2.0", "id": 1, "method": "tools/call"}
        req["params"] = {"name": "ask", "arguments": args}
        sent = False
        try:
            with socket.socket(socket.AF_UNIX) as s:
                s.settimeout(ASK_HANG_S)
                s.connect(self.sock_path)
                s.sendall(json.dumps(req).encode() + b"\n")
                sent = True
                line = s.makefile("rb").readline()
        except TimeoutError:
            return "hang", f"no reply in {ASK_HANG_S:g}s", sent
        except OSError as exc:
            return "transport", repr(exc), sent
        if not line:
            return "transport", "daemon closed the connection", sent
        reply = json.loads(line)
        if reply.get("id") != 1 or "result" not in reply:
            return "protocol", repr(reply), sent
        self.counts["ops"] += 1
        result = reply["result"]
        if result.get("isError"):
            self.counts["error_results"] += 1
            return "error", result["content"][0]["text"], sent
        sc = result["structuredContent"]
        if not sc.get("answered"):
            return "unanswered", sc.get("note", ""), sent
        return "answered", sc["answer"], sent

    def read_inbox(self):
        """Read with ``after`` (exactly-once mode): confirms what we have, gets the rest."""
        out = self.call("inbox", {"limit": 200, "after": self.last_seq})
        msgs = out["structuredContent"]["messages"]
        for m in msgs:
            if m["seq"] <= self.last_seq:
                raise SystemExit(f"client {self.index}: seq {m['seq']} again after {self.last_seq}")
            self.last_seq = m["seq"]
            self.received.append([m["text"], m["seq"]])
        return len(msgs)

    # -- phases ------------------------------------------------------------------------------

    def wait_for(self, name):
        path = os.path.join(self.ctl, name)
        while not os.path.exists(path):
            time.sleep(0.02)

    def run(self, ops):
        workloads = [getattr(self, op) for op in ops]
        self.me = self.call("whoami", {})["structuredContent"]["agent"]
        self.call("inbox", {"limit": 1})  # create the durable inbox before anyone sends
        with open(os.path.join(self.ctl, f"name-{self.index}"), "w") as fh:
            fh.write(self.me)
        self.wait_for("peers.json")
        with open(os.path.join(self.ctl, "peers.json")) as fh:
            self.peers = json.load(fh)
        stop = os.path.join(self.ctl, "stop")
        while not os.path.exists(stop):
            self.rng.choice(workloads)()
            time.sleep(0.005)
        open(os.path.join(self.ctl, f"stopped-{self.index}"), "w").close()
        self.wait_for("drain")
        quiet = 0
        while quiet < 3:  # three empty reads in a row: nothing is on its way
            quiet = quiet + 1 if self.read_inbox() == 0 else 0
            time.sleep(0.05)
        final = {
            "agent": self.me,
            "held": self.held,
            "got": self.got,
            "received": self.received,
            "regs": self.regs,
            "counts": self.counts,
        }
        tmp = os.path.join(self.ctl, f"final-{self.index}.tmp")
        with open(tmp, "w") as fh:
            json.dump(final, fh)
        os.replace(tmp, os.path.join(self.ctl, f"final-{self.index}.json"))
        self.wait_for("exit")
        return 0


WORKLOADS = {"claims", "messages", "store", "asks"}


def main():
    sock_path, ctl, index, seed, ops = sys.argv[1:6]
    chosen = [op for op in ops.split(",") if op]
    unknown = set(chosen) - WORKLOADS
    if unknown:
        raise SystemExit(f"unknown workloads: {sorted(unknown)}")
    return Client(sock_path, ctl, int(index), int(seed)).run(chosen)


if __name__ == "__main__":
    sys.exit(main())
