"""Inbox messages delivered through Claude Code's native inbox (docs/claude-code.md "The native
inbox").

A live session that advertises an inbox socket in its registry record is written each message
of its agentcoord inbox as one ``user`` frame: an idle session starts a turn at once, a busy
one takes it with its next model request, with no launcher, no channel flag and no keystroke.

Exactly once across the native inbox, the channel push and the hooks: all three read the
agent's one durable consumer (:func:`agentcoord.claude.push.pump_inbox`), and the native pump
confirms a message only once its frame was handed over whole, so each message takes one way.
A session without a record (older Claude Code, ``--bare``) is never written to here and keeps
the hooks and channels.

Receipts a session sends back (docs/claude-code.md "Receipts"): ``held`` tells the sender its
message waits for the session's user; ``delivered`` (a held message let in) that it went in
after all; a final no (``refused``, ``expired``, ``dropped``, ``denied``, or a held message whose
session ended) tells the sender, and the message is put back into the recipient's inbox once
for the hooks or the channel, while that session's native inbox is no longer written to. The
session's policy said no to its cross-session inbox, not to agentcoord's own ways in.

Which session agent is which record: the session's ``claude`` process is the key of its Agent
(its pid), and the record is named by that pid. The registry is read every ``scan`` seconds
and when a message arrives for an agent not served yet.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentcoord.claude.inbox.client import Unreachable, write_frames
from agentcoord.claude.inbox.frames import (
    Incoming,
    new_msg_id,
    notify_when_idle,
    rename,
    user_frame,
)
from agentcoord.claude.inbox.listener import Conn, Identify
from agentcoord.claude.inbox.mailboxes import ROUTER_NAME, Mailboxes
from agentcoord.claude.inbox.sessionfiles import Peer, read_peer, registry_pids
from agentcoord.claude.push import context_line, pump_inbox
from agentcoord.errors import Unavailable
from agentcoord.kernel import wire
from agentcoord.kernel.tasks import TaskSet
from agentcoord.proto.agent.v1 import agent_pb2 as pb
from agentcoord.stores.messagebus import inbox_subject

if TYPE_CHECKING:
    from agentcoord.messaging import Messaging

__all__ = ["NativeInboxes", "Published", "Route", "SessionLister"]

log = logging.getLogger(__name__)

# The running session agents this daemon knows: their claude process's pid -> agent name.
SessionLister = Callable[[], Awaitable[dict[int, str]]]
# The agents (and channels) that are not Claude Code sessions and get a record: mailbox key ->
# the name shown.
Published = Callable[[], Awaitable[dict[str, str]]]
# A session's message to an agentcoord agent: (the writer as the daemon identified it, the
# agent whose mailbox it wrote to, the text); the result says what became of it.
Route = Callable[[Any, str, str], Awaitable[dict[str, Any]]]

_SCAN_S = 1.0
_PUBLISH_S = 2.0  # the records of the other agents and channels: brought up to date this often
_RELIST_S = 5.0  # a registry pid no session agent has: asked about again after this
_WAKE_RELIST_S = 0.5  # a message for an agent not served: the store is asked at most this often
_COOLDOWN_S = 5.0  # after a write failed, the session's record is believed again after this
_PUMP_END_S = 10.0  # a stopped pump's last confirming read ends well within this
_SENT_KEPT = 4096  # frames whose receipts we can still match to their sender
# A session's receipts (peer_message_status), as Claude Code 2.1.328 sends them: ``held`` for
# its user's approval, then ``delivered`` when let in; the final noes below.
_HELD, _LET_IN = "held", "delivered"
_DECLINED = {"refused", "expired", "dropped", "denied"}
_RECEIPTS = {_HELD, _LET_IN, *_DECLINED}
_SAID = {
    "held": "held (for its user's approval, by its inbound policy)",
    "refused": "refused (by its inbound policy)",
    "expired": "let expire",
    "dropped": "dropped",
    "denied": "refused (by its user)",
}
_WHAT = {
    "held": "was held by its inbound policy: it waits for its user to let it in",
    "delivered": "was let in by its user after being held",
    "refused": "was refused by its inbound policy",
    "expired": "expired before the session took it",
    "dropped": "was dropped by the session",
    "denied": "was refused by the session's user",
}


_BURST = 30  # frames a session takes from one sender at once (Claude Code's own limit) ...
_RATE = 0.5  # ... and then per second


@dataclass
class _Bucket:
    tokens: float = float(_BURST)
    at: float = field(default_factory=time.monotonic)

    def _fill(self) -> None:
        now = time.monotonic()
        self.tokens = min(float(_BURST), self.tokens + (now - self.at) * _RATE)
        self.at = now

    def delay(self) -> float:
        """Seconds until a frame may go (0: now)."""
        self._fill()
        return 0.0 if self.tokens >= 1.0 else (1.0 - self.tokens) / _RATE

    def take(self) -> None:
        self._fill()
        self.tokens -= 1.0


@dataclass(eq=False)
class _Target:
    agent: str
    peer: Peer
    wake: asyncio.Event = field(default_factory=asyncio.Event)
    stopped: bool = False
    bucket: _Bucket = field(default_factory=_Bucket)
    pump: asyncio.Task[Any] | None = None


@dataclass
class _Sent:
    """One message handed over in a frame: enough to tell its sender and to hand it back."""

    sender: str
    recipient: str
    pid: int
    seq: int | None
    message: Any = None  # the ChannelMessage, put back into the inbox on a final no
    held: bool = False


def _differs(agent: str, peer: Peer) -> bool:
    """Whether the session's registry name should become its agent's: they differ, the user
    did not choose it (``/rename``), and it is not the agent's name before the host suffix
    a shared NATS adds (docs/one-host-to-many.md "What runs where")."""
    if not peer.name or peer.name_source == "user":
        return False
    return agent != peer.name and not agent.startswith(peer.name + "--")


class NativeInboxes:
    """Async context manager: one pump per live session with a native inbox, the daemon's own
    peer socket, receipts and idle notices. :meth:`ask` puts a question to a live session and
    returns the final text of the turn it starts."""

    def __init__(
        self,
        messaging: Messaging,
        *,
        claude_dir: Path,
        socks_dir: Path,
        sessions: SessionLister,
        identify: Identify,
        route: Route,
        published: Published | None = None,
        elsewhere: Callable[[str], bool] | None = None,
        scan: float = _SCAN_S,
        uid: int | None = None,
    ) -> None:
        self._messaging = messaging
        self._claude_dir = claude_dir
        self._sessions = sessions
        self._scan_s = scan
        self._uid = os.getuid() if uid is None else uid
        self._boxes = Mailboxes(claude_dir, socks_dir, self._frame, identify, uid=self._uid)
        self._route = route
        self._published = published
        # An agent whose messages go another way the user chose (the channel of a session
        # started with `agentcoord claude`): its native inbox is left alone.
        self._elsewhere = elsewhere or (lambda agent: False)
        self._tasks = TaskSet("native inbox")
        self._targets: dict[str, _Target] = {}
        self._known: dict[int, str] = {}
        self._listed = 0.0
        self._republished = -_PUBLISH_S  # when the records were last brought up to date
        self._unmapped: set[int] = set()
        self._cooldown: dict[int, float] = {}
        self._sent: OrderedDict[str, list[_Sent]] = OrderedDict()  # by the frame's msg_id
        self._declined: set[int] = set()  # sessions that said no: never written to again
        self._back_later: list[tuple[str, _Sent, str]] = []  # hand-backs the bus did not take
        self._idle: dict[str, tuple[int, asyncio.Future[str]]] = {}
        self._asks: dict[str, tuple[int, asyncio.Future[str]]] = {}  # by the question's msg_id
        self._last: dict[int, str] = {}  # session pid -> the agent that wrote to it last
        self._rescan = asyncio.Event()
        self._relist = False  # a message came for an agent this side does not know
        self._subs: list[Any] = []
        self._watch_lock = asyncio.Lock()
        self._on = False

    async def __aenter__(self) -> NativeInboxes:
        await self._tasks.__aenter__()
        try:
            await self._boxes.__aenter__()
        except OSError as exc:
            # Without our socket sessions could not vet us: the hooks and channels carry on.
            log.warning("native inbox delivery is off: %s", exc)
            return self
        self._on = True
        self._tasks.spawn(self._scan_loop(), name="native inbox scan")
        return self

    async def __aexit__(self, *exc: object) -> None:
        for sub in self._subs:
            with contextlib.suppress(Exception):
                await sub.unsubscribe()
        for target in self._targets.values():
            target.stopped = True
            target.wake.set()
        for _, fut in self._idle.values():
            fut.cancel()
        await self._tasks.__aexit__(*exc)
        if self._on:
            await self._boxes.__aexit__(*exc)

    @property
    def address(self) -> str:
        """The daemon's own peer address (``uds:<socket>``)."""
        return self._boxes.address

    @property
    def mailboxes(self) -> Mailboxes:
        return self._boxes

    def serving(self, agent: str) -> bool:
        """Whether ``agent``'s messages go through its native inbox now."""
        return agent in self._targets

    def peer(self, agent: str) -> Peer | None:
        target = self._targets.get(agent)
        return None if target is None else target.peer

    # -- which sessions have an inbox -------------------------------------------------------

    async def _scan_loop(self) -> None:
        while True:
            self._rescan.clear()  # before the scan: a wake-up during it scans again
            try:
                await self._scan()
            except Exception:  # a store hiccup: the next scan tries again
                log.exception("scanning Claude Code's session registry failed")
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self._scan_s):
                    await self._rescan.wait()

    async def _scan(self, *, relist: bool = False) -> None:
        now = time.monotonic()
        if self._published is not None and (relist or now - self._republished >= _PUBLISH_S):
            self._republished = now
            try:
                await self._boxes.publish(await self._published())
            except OSError as exc:  # a full disk, no descriptors: sessions reach no other agent
                log.warning("sessions cannot message the other agents: %s", exc)
                self._published = None
        own = {os.getpid(), *(pub.pid for pub in self._boxes.holders())}
        pids = registry_pids(self._claude_dir) - own
        await self._watch(bool(pids or self._targets))
        for target in list(self._targets.values()):
            fresh = read_peer(self._claude_dir, target.peer.pid, self._uid)
            if target.peer.pid not in pids or fresh is None:
                self._stop(target, "its registry record is gone")
            elif self._elsewhere(target.agent):
                self._stop(target, "its messages go over its channel")
            else:
                target.peer = fresh  # its name and idle/busy status, as of this turn
        # A pid whose record went is forgotten: if the kernel gives it to a new session, that
        # one is looked up afresh, never taken for the agent of the one that ended.
        self._known = {p: a for p, a in self._known.items() if p in pids}
        self._last = {p: a for p, a in self._last.items() if p in pids}
        self._declined &= pids
        # What a session that ended still held for its user never went in: back to the inbox.
        held = [
            (msg_id, sent)
            for msg_id, sents in self._sent.items()
            for sent in sents
            if sent.held and sent.pid not in pids
        ]
        if held:
            await self._hand_back(held, "ended")
        retry, self._back_later = self._back_later, []
        for msg_id, sent, state in retry:
            self._sent[msg_id] = [sent]  # one message a time: the others of its frame went
            await self._hand_back([(msg_id, sent)], state)
        now = time.monotonic()
        unmapped = {p for p in pids if p not in self._known}
        if not unmapped:
            self._relist = False  # every record is known: nothing to ask the store
        if (
            relist
            or (self._relist and now - self._listed > _WAKE_RELIST_S)
            or (unmapped and (unmapped != self._unmapped or now - self._listed > _RELIST_S))
        ):
            self._relist = False
            self._known = await self._sessions()
            self._listed = now
            unmapped = {p for p in pids if p not in self._known}
        self._unmapped = unmapped
        for pid in pids:
            agent = self._known.get(pid)
            if agent is None or agent in self._targets or self._cooldown.get(pid, 0.0) > now:
                continue
            if pid in self._declined:
                continue
            if self._elsewhere(agent):
                continue
            peer = read_peer(self._claude_dir, pid, self._uid)
            if peer is not None:
                self._attach(agent, peer)

    def _attach(self, agent: str, peer: Peer) -> None:
        target = _Target(agent, peer)
        self._targets[agent] = target
        target.pump = self._tasks.spawn(self._pump(target), name=f"native inbox {agent}")
        log.info("delivering %s's messages through its native inbox (%s)", agent, peer.name)
        if _differs(agent, peer):
            self._tasks.spawn(self._rename(target), name=f"native rename {agent}")

    async def _rename(self, target: _Target) -> None:
        """The session's record came after its first contact (or its name is no agent id), so
        its agent kept agentcoord's name: the session is asked to take that name, so its
        ``ListAgents`` and agentcoord say the same (docs/claude-code.md "Names")."""
        was = target.peer.name
        frame = rename(target.agent, sender=self.address, msg_id=new_msg_id())
        try:
            await write_frames(target.peer, [frame])
        except Unreachable as exc:
            log.info("could not rename session %s to %s: %s", was, target.agent, exc)
            return
        log.info("asked session %s to take its agent's name %s", was, target.agent)
        self._messaging.emit("NATIVE_RENAMED", target.agent, was=was)

    def _stop(self, target: _Target, why: str) -> None:
        if self._targets.get(target.agent) is target:
            del self._targets[target.agent]
        target.stopped = True
        target.wake.set()
        log.info("native inbox of %s closed: %s", target.agent, why)

    async def _watch(self, wanted: bool) -> None:
        """Watch for wake-ups only while Claude Code has sessions registered: the watch copies
        every message sent on the machine into the daemon (docs/messaging.md "Wake-ups"). It
        starts in the scan that first sees a session, before that session is served."""
        async with self._watch_lock:  # two scans at once (a relist) subscribe once
            if wanted and not self._subs:
                self._subs = await self._messaging.watch(self._on_message)
            elif not wanted and self._subs:
                subs, self._subs = self._subs, []
                for sub in subs:
                    with contextlib.suppress(Exception):
                        await sub.unsubscribe()

    async def _on_message(self, msg: Any) -> None:
        """A wake-up (as the channel push takes them): the addressee's pump, or a scan when
        the addressee is a session not served yet."""
        subject: str = msg.subject
        if subject.startswith("agents.") and subject.endswith(".inbox"):
            agent = subject[len("agents.") : -len(".inbox")]
            target = self._targets.get(agent)
            if target is not None:
                target.wake.set()
            elif agent not in self._known.values():
                self._relist = True
                self._rescan.set()
            return
        for target in list(self._targets.values()):
            target.wake.set()  # a broadcast or channel post: the reads sort out who has one

    # -- delivery ---------------------------------------------------------------------------

    async def _pump(self, target: _Target) -> None:
        await pump_inbox(
            self._messaging,
            target.agent,
            target.wake,
            lambda: target.stopped,
            lambda got, written: self._write(target, got, written),
        )

    async def _write(self, target: _Target, got: list[Any], written: int) -> int:
        """Hand ``got`` over, consecutive messages of one sender as one frame; the highest
        seq handed over (or skipped as the agent's own post)."""
        mine = inbox_subject(target.agent)
        run: list[tuple[int, dict[str, Any], Any]] = []  # (seq, view, message), one sender
        for r in got:
            if target.stopped or self._elsewhere(target.agent):
                break  # left unconfirmed: the next reader gets it
            view = wire.message_view(r.message, r.seq)
            sender = str(view.get("from", ""))
            own = sender == target.agent and r.subject != mine
            if run and (own or run[0][1].get("from") != sender):
                if not await self._flush(target, run):
                    return written
                written, run = max(written, run[-1][0]), []
            if own:
                written = max(written, r.seq)
            else:
                run.append((r.seq, view, r.message))
        if run and not target.stopped and await self._flush(target, run):
            written = max(written, run[-1][0])
        return written

    async def _flush(self, target: _Target, run: list[tuple[int, dict[str, Any], Any]]) -> bool:
        """One frame for a run of one sender's messages, within the session's rate (Claude
        Code takes 30 frames from a sender, then one every 2 s, and drops a repeat within 30 s:
        the seq makes each text its own). False: nothing was handed over."""
        delay = target.bucket.delay()
        if delay > 0:
            await asyncio.sleep(delay)  # the messages wait, unconfirmed; more pile into the run
            if target.stopped:
                return False
        sender = str(run[0][1].get("from", ""))
        text = "\n".join(f"{context_line(view)} (message {seq})" for seq, view, _ in run)
        msg_id = new_msg_id()
        frame = user_frame(
            text,
            sender=self.address,
            sender_name=sender or ROUTER_NAME,
            msg_id=msg_id,
        )
        # Remembered before the write: the session's receipt may come back on another
        # connection before this one is closed on our side.
        self._remember(
            msg_id, [_Sent(sender, target.agent, target.peer.pid, seq, msg) for seq, _, msg in run]
        )
        try:
            await write_frames(target.peer, [frame])
        except Unreachable as exc:
            self._sent.pop(msg_id, None)
            self._cooldown[target.peer.pid] = time.monotonic() + _COOLDOWN_S
            self._stop(target, str(exc))
            return False
        target.bucket.take()
        self._last[target.peer.pid] = sender
        for seq, _, _ in run:
            self._messaging.emit(
                "MESSAGE_DELIVERED", target.agent, via="native", seq=seq, sender=sender
            )
        return True

    def _remember(self, msg_id: str, sents: list[_Sent]) -> None:
        self._sent[msg_id] = sents
        while len(self._sent) > _SENT_KEPT:
            self._sent.popitem(last=False)

    # -- what sessions write back -----------------------------------------------------------

    async def _frame(self, conn: Conn, box: str | None, frame: Incoming) -> None:
        if frame.kind == "idle":
            waiting = self._idle.get(frame.reply_to)
            if waiting is not None and waiting[0] == conn.pid and not waiting[1].done():
                waiting[1].set_result(frame.text)
        elif frame.kind == "status":
            await self._receipt(conn.pid, frame)
        elif frame.kind == "message":
            await self._message(conn, box, frame)

    async def _message(self, conn: Conn, box: str | None, frame: Incoming) -> None:
        """A session's ``SendMessage`` to a published agent's mailbox (``box``), or to the
        daemon's own socket (a reply): from the agent the daemon identifies the writing process
        as, never what the frame says."""
        who = await conn.who()
        if who is None or getattr(who, "kind", None) not in ("session", "runner"):
            self._boxes.limits.refused += 1
            log.warning("a message from pid %d, which is no agent's, was dropped", conn.pid)
            self._messaging.emit(
                "NATIVE_REFUSED", box or ROUTER_NAME, pid=conn.pid, why="not an agent"
            )
            return
        if box is None:
            # A reply to the from of what the daemon wrote: to the agent that wrote to this
            # session last (its receipts need that from to be the daemon's own, vetted address).
            box = self._last.get(conn.pid)
            if box is None or box == ROUTER_NAME:
                note = (
                    f"{ROUTER_NAME} routes replies to the agent that wrote to you last, and "
                    "none did: send to an agent by the name ListAgents shows"
                )
                await self._note(who.agent, note)
                return
        try:
            out = await self._route(who, box, frame.text)
        except Exception as exc:  # a DomainError says why; the sender is told
            await self._note(who.agent, f"your message to {box} was not delivered: {exc}")
            return
        self._messaging.emit("NATIVE_ROUTED", box, sender=who.agent, via=out.get("via"))

    async def _note(self, agent: str, text: str) -> None:
        """A note from the daemon into ``agent``'s inbox (reaching it the way its messages
        do)."""
        note = wire.make_message(
            sender=ROUTER_NAME, kind=pb.MESSAGE_TEXT, body=text.encode(), to=agent
        )
        await self._messaging.deliver(agent, note)

    async def _receipt(self, pid: int, frame: Incoming) -> None:
        """What became of a frame, from the session it was written to (no other's counts):
        each sender is told; on a final no the messages go back to the inbox for the hooks or
        the channel, once, and that session's native inbox is not written to again."""
        asked = self._asks.get(frame.reply_to)
        if asked is not None and asked[0] == pid and frame.state in _SAID:
            if not asked[1].done():  # the ask says so at once, not at its timeout
                asked[1].set_exception(
                    Unavailable(f"the session {_SAID[frame.state]} the question")
                )
            return
        sents = self._sent.get(frame.reply_to)
        if not sents or sents[0].pid != pid or frame.state not in _RECEIPTS:
            return
        if frame.state == _HELD:
            if all(sent.held for sent in sents):
                return  # said once already
            for sent in sents:
                sent.held = True
            await self._tell(frame.reply_to, sents, frame.state, frame.text)
        elif frame.state == _LET_IN:
            if self._sent.pop(frame.reply_to, None) is not None:
                await self._tell(frame.reply_to, sents, frame.state, frame.text)
        else:
            await self._decline(pid)
            back = [(frame.reply_to, sent) for sent in sents]
            await self._hand_back(back, frame.state, frame.text)

    async def _decline(self, pid: int) -> None:
        """The session said no: its native inbox is left alone while its record lasts, so its
        messages take the hooks or the channel. Returns once its pump has ended: the pump's
        last read confirms what it wrote and holds what it took with it for a while, so a
        message put back before then would wait out that hold."""
        self._declined.add(pid)
        for target in list(self._targets.values()):
            if target.peer.pid == pid:
                self._stop(target, "its inbound policy declines the daemon's messages")
                if target.pump is not None:
                    with contextlib.suppress(TimeoutError):
                        async with asyncio.timeout(_PUMP_END_S):
                            await asyncio.shield(target.pump)

    async def _hand_back(self, sents: list[tuple[str, _Sent]], state: str, said: str = "") -> None:
        """Each message back into its recipient's inbox (once: the bus drops a repeat of the
        same id, and the frame is forgotten here), its sender told."""
        by_frame: dict[str, list[_Sent]] = {}
        for msg_id in dict.fromkeys(m for m, _ in sents):
            if self._sent.pop(msg_id, None) is not None:  # not yet handed back or let in
                by_frame[msg_id] = [sent for m, sent in sents if m == msg_id]
        for msg_id, group in by_frame.items():
            for sent in group:
                if sent.message is None:
                    continue
                try:
                    await self._messaging.deliver(
                        sent.recipient, sent.message, f"native-back:{msg_id}:{sent.seq}"
                    )
                except Exception:  # the bus is away: the next scan tries again
                    log.exception("putting message %s back for %s failed", sent.seq, sent.recipient)
                    self._back_later.append((msg_id, sent, state))
                    continue
                self._messaging.emit(
                    "NATIVE_HANDED_BACK",
                    sent.recipient,
                    seq=sent.seq,
                    sender=sent.sender,
                    state=state,
                )
            await self._tell(msg_id, group, state, said, back=True)

    async def _tell(
        self, msg_id: str, sents: list[_Sent], state: str, said: str, *, back: bool = False
    ) -> None:
        """Audit the receipt and put a note in each sender's inbox, from the recipient."""
        for sent in sents:
            self._messaging.emit(
                "NATIVE_RECEIPT", sent.recipient, to=sent.sender, state=state, seq=sent.seq
            )
            if not sent.sender or sent.sender == sent.recipient:
                continue
            what = _WHAT.get(state, "ended with the session before its user let it in")
            body = f"your message (seq {sent.seq}) to {sent.recipient} {what}"
            if said:
                body += f" (the session says: {said[:500]})"
            if back:
                body += "; it is delivered to it the other way (its hooks or channel) instead"
            note = wire.make_message(
                sender=sent.recipient, kind=pb.MESSAGE_TEXT, body=body.encode(), to=sent.sender
            )
            await self._messaging.deliver(sent.sender, note, f"receipt:{msg_id}:{sent.seq}:{state}")

    # -- ask --------------------------------------------------------------------------------

    async def ask(self, agent: str, asker: str, text: str, timeout: float) -> str | None:
        """Put ``text`` to the live session ``agent`` through its native inbox and wait up to
        ``timeout`` s for the turn it starts to end: that turn's final text. None when the
        session has no native inbox (the caller takes another way); :class:`TimeoutError`
        when the turn did not end in time; :class:`~agentcoord.errors.Unavailable` when the
        session held, refused or let expire the question (its receipt)."""
        peer = self.peer(agent)
        if peer is None or "notify_idle" not in peer.features:
            return None
        question = new_msg_id()
        notice = new_msg_id()
        fut: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self._idle[notice] = (peer.pid, fut)
        self._asks[question] = (peer.pid, fut)
        try:
            self._last[peer.pid] = asker
            frames = [
                user_frame(text, sender=self.address, sender_name=asker, msg_id=question),
                notify_when_idle(sender=self.address, msg_id=notice),
            ]
            try:
                await write_frames(peer, frames)
            except Unreachable:
                return None
            async with asyncio.timeout(timeout):
                return await fut
        finally:
            self._idle.pop(notice, None)
            self._asks.pop(question, None)
