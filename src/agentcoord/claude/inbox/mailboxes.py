"""The daemon's sockets among Claude Code's peers (docs/claude-code.md "Who sessions can
message"):

- its own socket and record, named :data:`ROUTER_NAME`: the ``from`` of every frame it writes,
  so idle notices, receipts and replies come back there (a session sends receipts only to an
  address whose record names the process that wrote the frame);
- a registry record for each agent that is not a Claude Code session (local package agents,
  registered HTTP agents, sessions of the other CLIs, the human) and for each live channel
  (``#<name>``), under a :class:`~agentcoord.claude.inbox.peerrecords.Holder`'s thread id, naming
  its mailbox: ``ListAgents`` lists it by that name and ``SendMessage`` reaches it.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import re
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from agentcoord.claude.inbox.listener import Identify, Limits, Listener, OnFrame
from agentcoord.claude.inbox.peerrecords import (
    Holder,
    remove_record,
    sweep_records,
    write_record,
)
from agentcoord.claude.inbox.sessionfiles import proc_start, sessions_dir

__all__ = ["MAX_MAILBOXES", "ROUTER_NAME", "Mailboxes", "channel_box", "channel_of"]

log = logging.getLogger(__name__)

ROUTER_NAME = "agentcoord"  # how sessions' ListAgents shows the daemon itself
MAX_MAILBOXES = 256  # bound sockets (one descriptor and one holder thread each)


CHANNEL_MARK = "#"  # a channel's record: no agent id or channel name holds it


def channel_box(channel: str) -> str:
    """The record name (and mailbox key) of the channel ``channel``: ``#<name>``."""
    return CHANNEL_MARK + channel


def channel_of(box: str) -> str | None:
    """The channel a mailbox key names, or None when it names an agent."""
    return box[len(CHANNEL_MARK) :] if box.startswith(CHANNEL_MARK) else None


_BOX = re.compile(r"^(\d+)-[0-9a-f]{16}\.sock$")  # <daemon pid>-<digest>.sock: box_path's form


def sweep_boxes(socks: Path, uid: int) -> int:
    """Remove the mailbox sockets of daemons that are gone (their pid is dead); how many."""
    gone = 0
    try:
        names = os.listdir(socks)
    except OSError:
        return gone
    for name in names:
        m = _BOX.match(name)
        if m is None or proc_start(int(m.group(1))) is not None:
            continue
        path = socks / name
        with contextlib.suppress(OSError):
            st = os.lstat(path)
            if stat.S_ISSOCK(st.st_mode) and st.st_uid == uid:
                os.unlink(path)
                gone += 1
    return gone


def _private_dir(path: Path, uid: int) -> None:
    """Make ``path`` (0700) or check that the one there is this user's and not shared."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != uid or st.st_mode & 0o022:
        raise PermissionError(f"{path} is not a private directory of this user")


@dataclass
class _Published:
    name: str  # as ListAgents shows it
    holder: Holder
    record: Path


class Mailboxes:
    """Async context manager over the daemon's peer sockets and records."""

    def __init__(
        self,
        claude_dir: Path,
        socks_dir: Path,
        on_frame: OnFrame,
        identify: Identify,
        *,
        uid: int,
    ) -> None:
        self._claude_dir = claude_dir
        self._socks = socks_dir
        self._on_frame = on_frame
        self._identify = identify
        self._uid = uid
        self._pid = os.getpid()
        self.limits = Limits(uid)
        self._stack = contextlib.AsyncExitStack()
        self._router: Listener | None = None
        self._record: Path | None = None
        self._boxes: dict[str, Listener] = {}
        self._published: dict[str, _Published] = {}

    async def __aenter__(self) -> Mailboxes:
        swept = sweep_records(self._claude_dir, self._uid)
        if swept:
            log.info("swept registry records a stopped daemon left: %s", swept)
        _private_dir(self._socks, self._uid)
        sweep_boxes(self._socks, self._uid)
        _private_dir(sessions_dir(self._claude_dir), self._uid)
        await self._stack.__aenter__()
        try:
            path = self._socks / f"{self._pid}.sock"
            router = Listener(path, None, self._on_frame, self._identify, self.limits)
            self._router = await self._stack.enter_async_context(router)
            self._record = write_record(
                self._claude_dir, self._pid, path, ROUTER_NAME, str(Path.home())
            )
        except BaseException:
            await self._stack.aclose()
            raise
        log.info("listening for Claude Code sessions on %s", path)
        return self

    async def __aexit__(self, *exc: object) -> None:
        for pub in self._published.values():
            remove_record(pub.record)
        if self._record is not None:
            remove_record(self._record)
        try:
            for pub in self._published.values():
                await pub.holder.__aexit__(None, None, None)
            for box in self._boxes.values():
                await box.__aexit__(None, None, None)
        finally:
            self._published.clear()
            self._boxes.clear()
            await self._stack.aclose()  # the daemon's own socket

    @property
    def address(self) -> str:
        """The daemon's own address (``uds:<socket>``)."""
        assert self._router is not None
        return self._router.address

    def box_path(self, agent: str) -> Path:
        # Hashed: an agent name may be longer than a socket path allows (108 bytes).
        digest = hashlib.sha256(agent.encode()).hexdigest()[:16]
        return self._socks / f"{self._pid}-{digest}.sock"

    async def address_of(self, agent: str) -> str:
        """``agent``'s mailbox (bound on first use), the daemon's own when too many are
        bound."""
        box = self._boxes.get(agent)
        if box is None:
            if len(self._boxes) >= MAX_MAILBOXES:
                return self.address
            listener = Listener(
                self.box_path(agent), agent, self._on_frame, self._identify, self.limits
            )
            box = self._boxes[agent] = await listener.__aenter__()
        return box.address

    def holders(self) -> list[Holder]:
        return [pub.holder for pub in self._published.values()]

    def published(self) -> dict[str, str]:
        """agent -> the name its record shows."""
        return {agent: pub.name for agent, pub in self._published.items()}

    async def publish(self, wanted: Mapping[str, str]) -> None:
        """Keep a record for exactly the agents of ``wanted`` (agent -> name shown)."""
        for agent in [a for a in self._published if wanted.get(a) != self._published[a].name]:
            pub = self._published.pop(agent)
            remove_record(pub.record)
            await pub.holder.__aexit__(None, None, None)
        # An agent that left gives its mailbox back: a slot kept for it would be lost to the
        # agents and channels that come after (docs/claude-code.md "Who sessions can message").
        for agent in [a for a in self._boxes if a not in wanted]:
            await self._boxes.pop(agent).__aexit__(None, None, None)
        for agent, name in wanted.items():
            if agent in self._published:
                continue
            address = await self.address_of(agent)
            if address == self.address:
                continue  # no mailbox left to give it
            holder = await Holder().__aenter__()
            try:
                record = write_record(self._claude_dir, holder.pid, self.box_path(agent), name, "/")
            except OSError:
                await holder.__aexit__(None, None, None)
                raise
            self._published[agent] = _Published(name, holder, record)
            log.info("sessions can message %s as %r (record of id %d)", agent, name, holder.pid)
