"""What a session's receipts make of a message the daemon wrote to its native inbox
(docs/claude-code.md "Receipts"): the sender is told the truth, and a message the session did
not take is put back once for the hooks or the channel, never lost and never twice.

A real daemon; the session is a stand-in process named ``claude`` with its own registry record
and inbox socket (tests/fakes/inbox_peer.py) that answers each receipt kind on command.
"""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import FAKES, Daemon, cli_json
from tests.tools.conftest import human_call

WAIT = 60.0  # generous: a loaded 2-CPU machine


class Peer:
    """The stand-in session: its stdout read on a thread, commands written to its stdin."""

    def __init__(self, d: Daemon, binary: Path) -> None:
        self.proc = subprocess.Popen(
            [str(binary), str(d.socket)],
            env=d.env,
            cwd=d.root,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self.lines: queue.Queue[dict[str, Any]] = queue.Queue()
        self.frames: list[dict[str, Any]] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self.agent = str(self.next(lambda m: "agent" in m)["agent"])

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(json.loads(line))

    def next(self, pred: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        """The next line ``pred`` takes (frames are kept as they pass)."""
        deadline = time.monotonic() + WAIT
        while (left := deadline - time.monotonic()) > 0:
            try:
                got = self.lines.get(timeout=left)
            except queue.Empty:
                break
            if "frame" in got:
                self.frames.append(got["frame"])
            if pred(got):
                return got
        raise AssertionError(f"the stand-in session said nothing matching in {WAIT} s")

    def frame(self) -> dict[str, Any]:
        """The next frame written to the session."""
        got: dict[str, Any] = self.next(lambda m: "frame" in m)["frame"]
        return got

    def command(self, cmd: dict[str, Any], answer: str) -> dict[str, Any]:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(cmd) + "\n")
        self.proc.stdin.flush()
        return self.next(lambda m: answer in m)

    def receipt(self, status: str, frame: dict[str, Any]) -> None:
        self.command({"receipt": status, "orig": frame["msg_id"], "to": frame["from"]}, "receipted")

    def inbox(self) -> list[str]:
        """The texts this session's agent reads with the inbox tool (as the hooks would)."""
        got = self.command({"call": "inbox", "args": {}}, "result")["result"]
        return [m.get("text", "") for m in got["structuredContent"]["messages"]]

    def close(self) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.write(json.dumps({"exit": True}) + "\n")
            self.proc.stdin.close()
            self.proc.wait(timeout=WAIT)
        self._reader.join(timeout=WAIT)  # it ends at the closed stdout's end
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            self.proc.stdin.close()


@pytest.fixture
def peer(daemon: Daemon, tmp_path: Path) -> Iterator[Peer]:
    binary = tmp_path / "peerbin" / "claude"
    binary.parent.mkdir()
    binary.write_text(f"#!{sys.executable}\n" + (FAKES / "inbox_peer.py").read_text())
    binary.chmod(0o755)
    p = Peer(daemon, binary)
    try:
        yield p
    finally:
        p.close()


def _poll(pred: Callable[[], Any], what: str) -> Any:
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        if value := pred():
            return value
        time.sleep(0.05)  # paces the polling only
    raise AssertionError(f"timed out waiting for {what}")


_READ: dict[Path, list[dict[str, Any]]] = {}  # the human's messages read so far, by daemon


def notes(d: Daemon, about: str) -> list[dict[str, Any]]:
    """The human's inbox messages so far that mention ``about`` (reading acknowledges them,
    so what was read is kept)."""
    seen = _READ.setdefault(d.root, [])
    seen.extend(human_call(d, "inbox")["messages"])
    return [m for m in seen if about in m.get("text", "")]


def read_until(peer: Peer, enough: Callable[[list[str]], bool]) -> list[str]:
    """Everything the session's agent reads from its inbox until ``enough`` of it came."""
    texts: list[str] = []

    def more() -> bool:
        texts.extend(peer.inbox())
        return enough(texts)

    _poll(more, "the inbox")
    return texts


def audited(d: Daemon, kind: str) -> list[dict[str, Any]]:
    return [e for e in cli_json(d, "audit")["events"] if e["type"] == kind]


def first_delivery(d: Daemon, peer: Peer, text: str) -> dict[str, Any]:
    """The human's ``text`` to the session, as the frame its native inbox got."""
    human_call(d, "send", to=peer.agent, text=text)
    got = peer.frame()
    assert text in got["message"]["content"], got
    return got


@pytest.mark.parametrize("status", ["refused", "expired", "dropped"])
def test_a_final_no_is_told_and_the_message_comes_back_once(
    daemon: Daemon, peer: Peer, status: str
) -> None:
    """A refused, expired or dropped message: the sender's note says so and that the message
    comes the other way; the session's agent reads it once from its inbox (as the hooks do),
    even when the receipt comes twice; later messages skip the native inbox."""
    frame = first_delivery(daemon, peer, f"first {status} 7c1d")
    peer.receipt(status, frame)
    note = _poll(lambda: notes(daemon, "the other way"), "the sender's note")
    assert note[0]["from"] == peer.agent
    assert f"stand-in says {status}" in note[0]["text"], note
    assert (
        f"seq {frame['message']['content'].split('(message ')[1].split(')')[0]}"
        in (note[0]["text"])
    )
    peer.receipt(status, frame)  # a repeat hands nothing back again
    _poll(lambda: len(audited(daemon, "NATIVE_RECEIPT")) >= 1, "the receipt in the audit")
    human_call(daemon, "send", to=peer.agent, text=f"second {status} 7c1d")
    texts = read_until(peer, lambda texts: any("second" in t for t in texts))
    assert sum(f"first {status} 7c1d" in t for t in texts) == 1, texts
    assert sum(f"second {status} 7c1d" in t for t in texts) == 1, texts
    assert len(audited(daemon, "NATIVE_HANDED_BACK")) == 1
    assert len(notes(daemon, "the other way")) == 1
    assert [f for f in peer.frames if "7c1d" in json.dumps(f)] == [frame]


def test_held_then_let_in_stays_delivered(daemon: Daemon, peer: Peer) -> None:
    """A held message: the sender hears it waits for the session's user; when the user lets
    it in, the sender hears that too and nothing comes back to the inbox."""
    frame = first_delivery(daemon, peer, "held then in 3e9a")
    peer.receipt("held", frame)
    _poll(lambda: notes(daemon, "waits for its user"), "the held note")
    peer.receipt("delivered", frame)
    _poll(lambda: notes(daemon, "was let in"), "the let-in note")
    human_call(daemon, "send", to=peer.agent, text="after 3e9a")
    after = peer.frame()  # still written natively: the session took the held one after all
    assert "after 3e9a" in after["message"]["content"]
    assert not [t for t in peer.inbox() if "held then in 3e9a" in t]
    assert not audited(daemon, "NATIVE_HANDED_BACK")


def test_held_then_declined_comes_back_once(daemon: Daemon, peer: Peer) -> None:
    """A held message its user then declines (Claude Code's ``expired`` after ``held``) comes
    back to the inbox once; the sender hears both."""
    frame = first_delivery(daemon, peer, "held then no 0b4f")
    peer.receipt("held", frame)
    _poll(lambda: notes(daemon, "waits for its user"), "the held note")
    peer.receipt("expired", frame)
    _poll(lambda: notes(daemon, "the other way"), "the hand-back note")
    texts = read_until(peer, bool)
    assert sum("held then no 0b4f" in t for t in texts) == 1, texts


def test_held_when_the_session_ends_comes_back(daemon: Daemon, peer: Peer) -> None:
    """A session that ends while holding a message (its record goes): the message goes back
    to its agent's inbox and the sender hears it ended unread."""
    frame = first_delivery(daemon, peer, "held then gone 5d2a")
    peer.receipt("held", frame)
    _poll(lambda: notes(daemon, "waits for its user"), "the held note")
    peer.close()
    _poll(lambda: notes(daemon, "ended with the session"), "the ended note")
    back = audited(daemon, "NATIVE_HANDED_BACK")
    assert len(back) == 1, back
    assert back[0].get("state") == "ended", back
