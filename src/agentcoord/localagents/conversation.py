"""A running runner's conversation: turns in on stdin, results out, messages between turns.

``claude -p --input-format stream-json --output-format stream-json`` keeps one process (one
sandbox, one MCP connection, one warm context) for many turns: each JSON line on stdin is a user
turn, each turn ends with a ``{"type": "result"}`` line, and closing stdin ends the process
after the turn in progress (docs/profiles.md says why this and not ``--resume``).

While the runner works, a pump reads the agent's durable inbox (direct messages, broadcasts,
its channels). Text messages are held until the turn in progress ends and then become the next
turn; CONTROL ``drain`` lets the turn finish and takes no more; CONTROL ``stop`` (or ``cancel``)
kills the runner now. Messages read but never delivered are put back into the inbox.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

__all__ = [
    "InboxMailbox",
    "Inboxes",
    "Incoming",
    "Mailbox",
    "StatusFn",
    "TurnsOutcome",
    "converse",
    "render_messages",
    "user_turn",
]

log = logging.getLogger(__name__)

_PUMP_WAIT_S = 0.5  # long-poll per read; short so a finished run lets go of the inbox quickly
_STOP_WORDS = ("stop", "cancel")


@dataclass(frozen=True)
class Incoming:
    """One message for the running agent, as read from its inbox."""

    seq: int
    sender: str
    kind: str  # text | control | offer | accept | reject
    text: str
    channel: str = ""
    subject: str = ""
    raw: Any = None  # the ChannelMessage, for putting it back


class Mailbox(Protocol):
    """Where a running agent's messages come from."""

    async def fetch(self, wait: float) -> list[Incoming]:
        """Messages not yet taken, waiting up to ``wait`` seconds for the first."""
        ...

    async def give_back(self, messages: Sequence[Incoming]) -> None:
        """Return messages that were taken but never delivered (the runner ended first)."""
        ...


StatusFn = Callable[..., Awaitable[None]]


def user_turn(text: str) -> bytes:
    """One stream-json input line: a user message."""
    msg = {"type": "user", "message": {"role": "user", "content": text}}
    return (json.dumps(msg) + "\n").encode()


def render_messages(messages: Sequence[Incoming]) -> str:
    """The text of a turn that delivers messages (one line per message, oldest first)."""
    lines = [f"{len(messages)} new message(s) for you, delivered by agentcoord:"]
    for m in messages:
        where = f" on #{m.channel}" if m.channel else ""
        lines.append(f"[{m.seq}] from {m.sender}{where} ({m.kind}): {m.text}")
    lines.append("Reply with the send tool if an answer is needed.")
    return "\n".join(lines)


def _focus(text: str) -> str:
    first = text.strip().splitlines()[0] if text.strip() else ""
    return first if len(first) <= 80 else first[:77] + "..."


@dataclass
class TurnsOutcome:
    """How the conversation ended."""

    results: list[dict[str, Any]] = field(default_factory=list)
    turns: int = 0
    delivered: list[int] = field(default_factory=list)  # seqs of messages given to the runner
    control: str = ""  # "drain" | "stop" when a CONTROL message ended the run
    control_from: str = ""

    @property
    def last(self) -> dict[str, Any] | None:
        return self.results[-1] if self.results else None


class _Pump:
    """Reads the mailbox until told to stop; text waits in ``pending``, control sets flags."""

    def __init__(self, mailbox: Mailbox, agent: str) -> None:
        self.mailbox = mailbox
        self.agent = agent
        self.pending: list[Incoming] = []
        self.changed = asyncio.Event()
        self.drain: Incoming | None = None
        self.stop: Incoming | None = None
        self._running = True
        self._lock = asyncio.Lock()

    async def run(self) -> None:
        while self._running:
            try:
                await self._take(_PUMP_WAIT_S)
            except Exception:
                log.warning("reading %s's inbox failed", self.agent, exc_info=True)
                await asyncio.sleep(_PUMP_WAIT_S)

    async def sweep(self) -> None:
        """At a turn boundary: take whatever the inbox holds now (after any read in flight)."""
        try:
            await self._take(0.0)
        except Exception:
            log.warning("reading %s's inbox failed", self.agent, exc_info=True)

    async def _take(self, wait: float) -> None:
        # One read-and-sort at a time, so a sweep sees everything a read in flight took.
        async with self._lock:
            got = await self.mailbox.fetch(wait)
            for m in got:
                if m.sender == self.agent and m.channel:
                    continue  # its own channel post coming back
                if m.kind == "control":
                    word = m.text.strip().lower()
                    if word in _STOP_WORDS:
                        self.stop = m
                    elif word == "drain":
                        self.drain = self.drain or m
                    else:
                        log.warning("ignoring unknown control %r for %s", m.text, self.agent)
                else:
                    self.pending.append(m)
            if got:
                self.changed.set()

    def finish(self) -> None:
        self._running = False


async def _read_results(
    stdout: asyncio.StreamReader, log_path: Path, on_result: Callable[[dict[str, Any]], None]
) -> None:
    """Copy the runner's stdout into its log; hand every result line to ``on_result``."""
    with log_path.open("ab") as logf:
        while line := await stdout.readline():
            logf.write(line)
            logf.flush()
            text = line.strip()
            if not text.startswith(b"{"):
                continue
            try:
                value = json.loads(text)
            except ValueError:
                continue
            if isinstance(value, dict) and value.get("type") == "result":
                on_result(value)


async def converse(
    *,
    agent: str,
    prompt: str,
    stdin: asyncio.StreamWriter,
    stdout: asyncio.StreamReader,
    log_path: Path,
    mailbox: Mailbox | None,
    status: StatusFn,
    kill: Callable[[], Awaitable[None]],
) -> TurnsOutcome:
    """Drive turns until the work is done, drained or stopped; returns once stdout ends."""
    out = TurnsOutcome()
    turn_done = asyncio.Event()

    def on_result(value: dict[str, Any]) -> None:
        out.results.append(value)
        turn_done.set()

    async def read() -> None:
        try:
            await _read_results(stdout, log_path, on_result)
        except Exception:  # the run goes on to its end; its log says what was lost
            log.warning("reading the runner output of %s failed", agent, exc_info=True)

    pump = _Pump(mailbox, agent) if mailbox is not None else None

    async def send_turn(text: str, focus: str) -> bool:
        out.turns += 1
        await status(phase="Running", focus=focus, turns=out.turns)
        try:
            stdin.write(user_turn(text))
            await stdin.drain()
        except (ConnectionError, RuntimeError):
            return False
        return True

    async def stopped() -> bool:
        if pump is None or pump.stop is None:
            return False
        out.control, out.control_from = "stop", pump.stop.sender
        await status(phase="Running", focus=f"stopping (control from {pump.stop.sender})")
        await kill()
        return True

    # Every task of the conversation lives in this group: none outlives the run, not even
    # when the run is cancelled (docs/architecture.md "Tasks").
    try:
        async with asyncio.TaskGroup() as tg:
            reader = tg.create_task(read(), name="runner-out")
            pump_task = tg.create_task(pump.run(), name="runner-inbox") if pump else None
            try:
                alive = await send_turn(prompt, _focus(prompt))
                while alive and not reader.done():
                    waits = [tg.create_task(turn_done.wait()), reader]
                    if pump is not None:
                        waits.append(tg.create_task(pump.changed.wait()))
                    await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
                    for w in waits:
                        if w is not reader and not w.done():
                            w.cancel()
                    if await stopped():
                        break
                    if pump is not None:
                        pump.changed.clear()
                    if not turn_done.is_set():
                        continue  # a message arrived mid-turn: it waits for the turn to end
                    turn_done.clear()
                    if pump is not None and not pump.pending and pump.drain is None:
                        await pump.sweep()  # anything sent before this turn ended is delivered now
                        if await stopped():
                            break
                    if pump is not None and pump.drain is not None:
                        out.control, out.control_from = "drain", pump.drain.sender
                        break
                    if pump is None or not pump.pending:
                        break  # the work is done and nobody wrote: end the run
                    batch, pump.pending = pump.pending, []
                    senders = ", ".join(dict.fromkeys(m.sender for m in batch))
                    focus = f"reading {len(batch)} message(s) from {senders}"
                    alive = await send_turn(render_messages(batch), focus)
                    if alive:
                        out.delivered += [m.seq for m in batch]
                    else:
                        pump.pending = batch + pump.pending  # the runner is gone: they go back
            finally:
                with contextlib.suppress(Exception):
                    stdin.close()  # the runner ends after the turn in progress
                if pump is not None and pump_task is not None:
                    pump.finish()
                    with contextlib.suppress(Exception):
                        await pump_task  # lets the last long-poll end, so no pull is left behind
                with contextlib.suppress(Exception):
                    await reader
    except BaseExceptionGroup as group:
        # The children catch their own errors, so the group holds only the loop's: raise it
        # as it came, as callers (run_local) expect.
        if len(group.exceptions) == 1:
            raise group.exceptions[0] from None
        raise
    if pump is not None and pump.pending and mailbox is not None:
        with contextlib.suppress(Exception):
            await mailbox.give_back(pump.pending)
    return out


class Inboxes(Protocol):
    """The messaging service's inbox verbs a started agent's conversation uses."""

    async def ensure_inbox(self, agent: str) -> None: ...

    async def read_inbox(
        self, agent: str, limit: int, wait: float = 0.0, after: int | None = None
    ) -> list[Any]: ...

    async def deliver(self, to: str, msg: Any, msg_id: str | None = None) -> Any: ...


class InboxMailbox:
    """:class:`Mailbox` over the daemon's JetStream inboxes (the messaging service)."""

    def __init__(self, inboxes: Inboxes, agent: str) -> None:
        self._inboxes = inboxes
        self._agent = agent

    async def fetch(self, wait: float) -> list[Incoming]:
        from agentcoord.kernel import wire

        out = []
        for r in await self._inboxes.read_inbox(self._agent, 100, wait):
            msg = r.message
            out.append(
                Incoming(
                    seq=r.seq,
                    sender=getattr(msg, "from"),
                    kind=wire.kind_name(msg.kind),
                    text=msg.body.decode(errors="replace"),
                    channel=msg.channel,
                    subject=r.subject,
                    raw=msg,
                )
            )
        return out

    async def give_back(self, messages: Sequence[Incoming]) -> None:
        for m in messages:
            if m.raw is not None:
                await self._inboxes.deliver(self._agent, m.raw)
