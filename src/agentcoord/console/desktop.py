"""Desktop notifications for new human prompts, where ``notify-send`` exists (README "What the
human gets")."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import shutil
from typing import Any

__all__ = ["DesktopNotifier"]

log = logging.getLogger(__name__)


class DesktopNotifier:
    """Async context manager: one ``notify-send`` per ``prompts.new`` announcement."""

    def __init__(self, nc: Any, command: str | None = None) -> None:
        self._nc = nc
        self._command = command if command is not None else shutil.which("notify-send")
        self._sub: Any = None

    @property
    def enabled(self) -> bool:
        return self._command is not None

    async def __aenter__(self) -> DesktopNotifier:
        if self._command is not None:
            self._sub = await self._nc.subscribe("prompts.new", cb=self._on_prompt)
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._sub is not None:
            with contextlib.suppress(Exception):
                await self._sub.unsubscribe()

    async def _on_prompt(self, msg: Any) -> None:
        assert self._command is not None
        try:
            prompt = json.loads(msg.data)
            title = f"agentcoord: {prompt['agent']} asks"
            body = f"{prompt['question']}\n(agentcoord answer {prompt['prompt']} ...)"
        except (ValueError, KeyError, TypeError):
            return
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
