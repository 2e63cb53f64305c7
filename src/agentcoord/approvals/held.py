"""Permission dialogs the daemon holds open for the human (docs/approvals.md "Answering an
open dialog").

Claude Code draws a permission dialog while its PermissionRequest hook runs, takes the
terminal's keys meanwhile, and closes the dialog when the hook answers later ("allow" runs
the call, "deny" refuses it; tests/claude/test_held_dialogs.py runs the real binary). With
``permission_hold`` set, the hook that no standing approval answers is held that long: a grant
made meanwhile (the console's buttons, ``agentcoord top``'s ``g``, ``agentcoord allow``) is
tried on it at once, and the human may answer it "allow" or "deny" from the console or
``top``. A dialog answered in the terminal first simply closes; the hold ends at the
session's next dialog or when its time runs out, and its late answer changes nothing.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from agentcoord.errors import InvalidArguments, NotFound

__all__ = ["MAX_HOLD", "HeldDialogs"]

# The hold is bounded below the PermissionRequest hook's timeout that `agentcoord setup claude`
# writes (claude/configure.py HOOKS), so the daemon answers before Claude Code gives up on it.
MAX_HOLD = 590.0
ANSWERS = ("allow", "deny")


@dataclass
class _Held:
    tool: str
    input: str
    since: float
    still_open: Callable[[], bool]  # the session still waits on this dialog
    stale: bool = False  # a grant landed: decide again
    answer: str | None = None  # the human's "allow" or "deny"
    wake: asyncio.Future[None] | None = field(default=None, repr=False)

    def poke(self) -> None:
        if self.wake is not None and not self.wake.done():
            self.wake.set_result(None)


class HeldDialogs:
    """The open dialogs held for the human, one per session (its newest)."""

    def __init__(self, hold_s: float, clock: Callable[[], float] = time.time) -> None:
        if not 0 <= hold_s <= MAX_HOLD:
            raise InvalidArguments(f"permission_hold must be 0 to {MAX_HOLD:.0f}s, not {hold_s}")
        self.hold_s = hold_s
        self._clock = clock
        self._open: dict[str, _Held] = {}

    async def hold(
        self,
        agent: str,
        tool: str,
        summary: str,
        redecide: Callable[[], Awaitable[bool]],
        still_open: Callable[[], bool] = lambda: True,
    ) -> str | None:
        """Hold ``agent``'s dialog up to :attr:`hold_s`: "allow" when ``redecide`` (run after
        each grant) allows it or the human allows it, "deny" when the human denies it, None
        when the time runs out or the session opens another dialog. ``still_open``: whether
        the session still waits on it (false once the terminal answered it: then it is
        neither listed nor answered)."""
        if self.hold_s <= 0:
            return None
        older = self._open.pop(agent, None)
        if older is not None:  # that dialog was answered in the terminal: its hold ends
            older.poke()
        entry = _Held(tool, summary, self._clock(), still_open)
        self._open[agent] = entry
        loop = asyncio.get_running_loop()
        end = loop.time() + self.hold_s
        try:
            while self._open.get(agent) is entry:
                if entry.answer is not None:
                    return entry.answer
                if entry.stale:
                    entry.stale = False
                    # A grant never counts a use on a dialog the terminal already answered.
                    if entry.still_open() and await redecide():
                        return "allow"
                    continue
                left = end - loop.time()
                if left <= 0:
                    return None
                entry.wake = loop.create_future()
                try:
                    await asyncio.wait_for(entry.wake, left)
                except TimeoutError:
                    return None
            return None
        finally:
            if self._open.get(agent) is entry:
                del self._open[agent]

    def granted(self) -> None:
        """A standing approval was granted: every held dialog is decided again."""
        for entry in self._open.values():
            entry.stale = True
            entry.poke()

    def answer(self, agent: str, verdict: str) -> dict[str, Any]:
        """The human answers ``agent``'s held dialog ``verdict`` ("allow" or "deny"); its row.
        :class:`NotFound` when none is held (answered in the terminal, or its time ran out)."""
        if verdict not in ANSWERS:
            raise InvalidArguments(f"answer 'allow' or 'deny', not {verdict!r}")
        entry = self._open.get(agent)
        if entry is None or entry.answer is not None or not entry.still_open():
            raise NotFound(
                f"{agent} has no dialog held for you (answered in its terminal, or its "
                "permission_hold ran out): answer it in the session"
            )
        entry.answer = verdict
        entry.poke()
        return self._row(agent, entry)

    def listing(self) -> list[dict[str, Any]]:
        """The held dialogs: session, tool, input, since, until (epoch seconds)."""
        return [self._row(a, e) for a, e in self._open.items() if self._live(e)]

    def is_held(self, agent: str) -> bool:
        entry = self._open.get(agent)
        return entry is not None and self._live(entry)

    @staticmethod
    def _live(entry: _Held) -> bool:
        return entry.answer is None and entry.still_open()

    def _row(self, agent: str, entry: _Held) -> dict[str, Any]:
        return {
            "session": agent,
            "tool": entry.tool,
            "input": entry.input,
            "since": entry.since,
            "until": entry.since + self.hold_s,
        }
