"""Randomized restarts: claim / release / renew / expiry / annotate / send / store writes, with
the daemon stopped by SIGTERM or killed (-9) between calls and in the middle of one, many
times over. After every restart the daemon is ready again and every acknowledged write
is there: held claims held with their tokens, released and expired ones gone, the last focus,
each channel; at the end every acknowledged message is in its recipient's inbox.

A call the daemon did not answer (it died first) may or may not have taken effect: its key or
message is "uncertain" and judged by neither rule. The seed is in the test id; a failure
prints the history.
"""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import FAKES, Daemon
from tests.tools.session_helpers import own_call

DRIVER = FAKES / "reconnecting_session.py"
ROUNDS = 10


class Session:
    """A stand-in ``claude`` session whose calls survive daemon restarts."""

    def __init__(self, d: Daemon, claude: Path, cwd: Path) -> None:
        cwd.mkdir(exist_ok=True)
        self.proc = subprocess.Popen(
            [str(claude), "--", sys.executable, str(DRIVER), str(d.socket)],
            env=d.env,
            cwd=cwd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def send(self, tool: str, **args: Any) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"call": tool, "args": args}) + "\n")
        self.proc.stdin.flush()

    def answer(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        return json.loads(self.proc.stdout.readline())  # type: ignore[no-any-return]

    def call(self, tool: str, **args: Any) -> dict[str, Any]:
        self.send(tool, **args)
        return self.answer()

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(10)
        assert self.proc.stdout is not None
        self.proc.stdout.close()


@dataclass
class Model:
    """What the daemon acknowledged, and what it may or may not have done."""

    held: dict[str, int] = field(default_factory=dict)  # key -> token
    gone: set[str] = field(default_factory=set)  # released
    expiring: dict[str, float] = field(default_factory=dict)  # key -> expiry (wall clock)
    uncertain: set[str] = field(default_factory=set)
    focus: set[str] = field(default_factory=set)  # acceptable current intents
    channels: set[str] = field(default_factory=set)
    messages: set[str] = field(default_factory=set)
    maybe_messages: set[str] = field(default_factory=set)
    history: list[str] = field(default_factory=list)


def _structured(result: dict[str, Any]) -> dict[str, Any] | None:
    """The result of an answered, successful call; None when the daemon did not answer."""
    if "unreachable" in result:
        return None
    assert not result.get("isError"), result
    return result["structuredContent"]  # type: ignore[no-any-return]


class Workload:
    def __init__(self, rng: random.Random, alice: Session, bob_name: str, model: Model) -> None:
        self.rng, self.alice, self.bob, self.m = rng, alice, bob_name, model
        self.n = 0

    def pick(self) -> tuple[str, dict[str, Any], Any]:
        """One random operation: (tool, arguments, what to record once it is answered)."""
        self.n += 1
        m, rng = self.m, self.rng
        choices = ["claim", "claim", "annotate", "send", "channel", "expiring"]
        if m.held:
            choices += ["release", "renew"]
        op = rng.choice(choices)
        if op == "claim":
            key = f"k/{self.n}"
            return "claim", {"resource_key": key, "ttl": "2m"}, ("held", key)
        if op == "expiring":
            key = f"x/{self.n}"
            return "claim", {"resource_key": key, "ttl": "1s"}, ("expiring", key)
        if op == "release":
            key = rng.choice(sorted(m.held))
            return "release", {"resource_key": key, "token": m.held[key]}, ("gone", key)
        if op == "renew":
            key = rng.choice(sorted(m.held))
            return "renew", {"resource_key": key, "token": m.held[key], "ttl": "2m"}, ("renew", key)
        if op == "annotate":
            intent = f"focus {self.n}"
            return "annotate", {"intent": intent, "files": [f"f{self.n}.py"]}, ("focus", intent)
        if op == "send":
            text = f"message {self.n}"
            return "send", {"to": self.bob, "text": text}, ("message", text)
        name = f"ch-{self.n}"
        return "open_channel", {"name": name, "participants": [self.bob]}, ("channel", name)

    def record(self, what: tuple[str, str], res: dict[str, Any] | None, sent_at: float) -> None:
        kind, value = what
        m = self.m
        m.history.append(f"{kind} {value}: {'answered' if res is not None else 'UNANSWERED'}")
        if res is None:  # the daemon died first: maybe applied, maybe not
            if kind == "focus":
                m.focus.add(value)
            elif kind == "message":
                m.maybe_messages.add(value)
            elif kind != "channel":
                m.uncertain.add(value)
                m.held.pop(value, None)
            return
        if kind == "held":
            assert res["acquired"], res
            m.held[value] = res["token"]
        elif kind == "expiring":
            assert res["acquired"], res
            m.expiring[value] = sent_at + 1.0
        elif kind == "gone":
            assert res["released"], res
            del m.held[value]
            m.gone.add(value)
        elif kind == "renew":
            assert res["renewed"], res
            assert res["claim"]["token"] == m.held[value], res
        elif kind == "focus":
            m.focus = {value}
        elif kind == "message":
            m.messages.add(value)
        else:
            m.channels.add(value)

    def step(self) -> None:
        tool, args, what = self.pick()
        sent = time.time()
        self.record(what, _structured(self.alice.call(tool, **args)), sent)


def _restart(d: Daemon, rng: random.Random, work: Workload) -> str:
    """Stop the daemon (SIGTERM or -9, between calls or during one) and start it again;
    returns what was done. How fast it is ready is bench/startup.py's figure, not a test's."""
    assert d.proc is not None
    how = rng.choice(["term", "kill", "term-mid-call", "kill-mid-call"])
    sig = signal.SIGKILL if how.startswith("kill") else signal.SIGTERM
    if how.endswith("mid-call"):
        tool, args, what = work.pick()
        sent = time.time()
        work.alice.send(tool, **args)
        time.sleep(rng.uniform(0, 0.01))  # the fault lands at a random point of the call
        d.proc.send_signal(sig)
        d.proc.wait(10)
        work.record(what, _structured(work.alice.answer()), sent)
    else:
        d.proc.send_signal(sig)
        d.proc.wait(10)
    d.start()
    return how


def _verify(d: Daemon, m: Model, alice: str) -> None:
    res = own_call(d, "check_claims", {"limit": 1000})
    assert not res["isError"], res
    live = {c["resource_key"]: c for c in res["structuredContent"]["claims"]}
    for key, token in m.held.items():
        assert key in live, f"acknowledged claim {key} lost"
        assert live[key]["token"] == token
        assert live[key]["agent"] == alice
    for key in m.gone - m.uncertain:
        if key not in m.held:
            assert key not in live, f"released claim {key} is held again"
    now = time.time()
    for key, expiry in m.expiring.items():
        if key not in m.uncertain and now > expiry + 1.0:  # the server's TTL, plus its tick
            assert key not in live, f"claim {key} outlived its TTL"
    agent = own_call(d, "get_agent", {"name": alice})["structuredContent"]["agent"]
    if m.focus:
        assert (agent.get("focus") or {}).get("intent") in m.focus, agent
    channels = json.dumps(own_call(d, "list_channels", {})["structuredContent"])
    for name in m.channels:
        assert f'"{name}"' in channels, f"acknowledged channel {name} lost"


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_acknowledged_state_survives_random_restarts(
    daemon: Daemon, claude_bin: Path, seed: int
) -> None:
    """Ten random restarts (SIGTERM or -9, between or during calls) amid random writes: after
    each, ready again and every acknowledged claim, release, expiry, focus and channel
    holds; at the end every acknowledged message is in the inbox."""
    rng = random.Random(seed)
    alice = Session(daemon, claude_bin, daemon.root / "alice")
    bob = Session(daemon, claude_bin, daemon.root / "bob")
    m = Model()
    try:
        alice_name = _structured(alice.call("whoami"))["agent"]  # type: ignore[index]
        bob_name = _structured(bob.call("whoami"))["agent"]  # type: ignore[index]
        work = Workload(rng, alice, bob_name, m)
        for _ in range(ROUNDS):
            for _ in range(rng.randint(2, 8)):
                work.step()
            m.history.append(_restart(daemon, rng, work))
            _verify(daemon, m, alice_name)
        inbox = _structured(bob.call("inbox", limit=1000))
        assert inbox is not None
        texts = [msg["text"] for msg in inbox["messages"]]
        assert m.messages <= set(texts), (sorted(m.messages - set(texts)), m.history)
        assert set(texts) <= m.messages | m.maybe_messages
        assert len(texts) == len(set(texts)), "a message was delivered twice"
    except AssertionError as exc:
        raise AssertionError(f"seed {seed}: {exc}\nhistory: {m.history}") from exc
    finally:
        alice.close()
        bob.close()
