"""Desktop notifications, where ``notify-send`` exists (README "What the human gets"): one for
each new human prompt, and one when a session starts to wait for permission or for input,
naming the session, its repository and why (docs/activity.md "Desktop notices": said once per
wait, and held in the configured quiet hours)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import shutil
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from agentcoord.activity.notices import NoticeGate, in_window
from agentcoord.kernel.tasks import TaskSet

if TYPE_CHECKING:
    from agentcoord.activity import StateChange

__all__ = ["DesktopNotifier"]

log = logging.getLogger(__name__)

_DRAIN_S = 2.0  # how long a stop waits for notices already sent to notify-send


def _local_minute(now: float) -> int:
    local = time.localtime(now)
    return local.tm_hour * 60 + local.tm_min


class DesktopNotifier:
    """Async context manager: ``notify-send`` per ``prompts.new`` announcement, and per new
    wait of a session (:meth:`session_waiting`)."""

    def __init__(
        self,
        nc: Any,
        command: str | None = None,
        *,
        quiet_hours: tuple[int, int] | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._nc = nc
        self._command = command if command is not None else shutil.which("notify-send")
        self._sub: Any = None
        self._quiet = quiet_hours
        self._clock = clock
        self._gate = NoticeGate()
        self._tasks = TaskSet("desktop")

    @property
    def enabled(self) -> bool:
        return self._command is not None

    async def __aenter__(self) -> DesktopNotifier:
        await self._tasks.__aenter__()
        if self._command is not None and self._nc is not None:  # None: waits only
            self._sub = await self._nc.subscribe("prompts.new", cb=self._on_prompt)
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._sub is not None:
            with contextlib.suppress(Exception):
                await self._sub.unsubscribe()
        # Notices under way get a moment to be shown, then what is left is cancelled.
        live = self._tasks.live()
        if live:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(_DRAIN_S):
                    await asyncio.wait(live)
        await self._tasks.__aexit__(None, None, None)

    def _quiet_now(self) -> bool:
        return in_window(self._quiet, _local_minute(self._clock()))

    def session_waiting(self, change: StateChange) -> None:
        """A session began to wait: one notice, unless this wait was just announced or the
        hours are quiet (never blocks: the notice is sent in the background)."""
        if self._command is None or not self._tasks.running or self._quiet_now():
            return
        state = change.state
        if not self._gate.admit(
            (change.agent, state.state, state.tool, state.input), self._clock()
        ):
            return
        where = f" ({change.repository})" if change.repository else ""
        title = f"agentcoord: {change.agent}{where} is {change.reason.split(':', 1)[0]}"
        body = change.reason
        if state.tool:
            body += "\n(answer it in the session, or `agentcoord allow` a rule for it)"
        self._tasks.spawn(self._send(title, body), name="desktop-notice")

    async def _on_prompt(self, msg: Any) -> None:
        if self._quiet_now():
            return
        try:
            prompt = json.loads(msg.data)
            title = f"agentcoord: {prompt['agent']} asks"
            body = f"{prompt['question']}\n(agentcoord answer {prompt['prompt']} ...)"
        except (ValueError, KeyError, TypeError):
            return
        await self._send(title, body)

    async def _send(self, title: str, body: str) -> None:
        assert self._command is not None
        try:
            proc = await asyncio.create_subprocess_exec(
                self._command,
                "--app-name=agentcoord",
                title,
                body,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.DEVNULL,
                stderr=asyncio.subprocess.DEVNULL,
            )
            async with asyncio.timeout(5):
                await proc.wait()
        except (OSError, TimeoutError):
            log.info("notify-send failed; desktop notifications skipped", exc_info=True)
