"""Agent focus (seed 000 ``annotate``/``find_agents``) on the NATS KV bucket ``agent-focus``.

``annotate`` is a whole-record write (fields left out are cleared, as the seed says). An
in-memory view fed by a KV watch answers ``find_agents``: the query is lowercased and split on
whitespace; a record matches when any term is a substring of its intent, files, symbols or
concepts. Unlike the seed, results are ranked (exact tag hits over substrings, tags over
free text, more terms over fewer, then most recent) and bounded.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from nats.js import api

from agentcoord.stores.kv._keys import escape_key

if TYPE_CHECKING:
    from agentcoord.stores.audit import AuditSink

__all__ = ["BUCKET", "Focus", "FocusStore", "rank"]

log = logging.getLogger(__name__)

BUCKET = "agent-focus"


@dataclass(frozen=True)
class Focus:
    """One agent's published focus."""

    agent: str
    intent: str = ""
    files: tuple[str, ...] = ()
    symbols: tuple[str, ...] = ()
    concepts: tuple[str, ...] = ()
    updated: float = 0.0
    _hay: tuple[str, tuple[str, ...]] = field(default=("", ()), compare=False, repr=False)

    @staticmethod
    def make(
        agent: str,
        intent: str = "",
        files: tuple[str, ...] = (),
        symbols: tuple[str, ...] = (),
        concepts: tuple[str, ...] = (),
        updated: float = 0.0,
    ) -> Focus:
        tags = tuple(t.lower() for t in (*files, *symbols, *concepts))
        return Focus(agent, intent, files, symbols, concepts, updated, (intent.lower(), tags))

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out.pop("_hay")
        for name in ("files", "symbols", "concepts"):
            out[name] = list(out[name])
        return out

    def encode(self) -> bytes:
        return json.dumps(self.as_dict(), separators=(",", ":")).encode()

    @staticmethod
    def decode(data: bytes) -> Focus:
        body = json.loads(data)
        return Focus.make(
            str(body["agent"]),
            str(body.get("intent", "")),
            tuple(body.get("files", ())),
            tuple(body.get("symbols", ())),
            tuple(body.get("concepts", ())),
            float(body.get("updated", 0.0)),
        )


def _score(focus: Focus, terms: list[str]) -> int:
    intent, tags = focus._hay
    score = 0
    for term in terms:
        if term in tags:
            score += 5  # an exact tag
        elif any(term in tag for tag in tags):
            score += 3
        elif term in intent:
            score += 2
    return score


def rank(records: list[Focus], query: str, limit: int) -> list[tuple[Focus, int]]:
    """The best ``limit`` matches of ``query`` (pure; see the module doc for the order)."""
    terms = [t for t in query.lower().split() if t]
    if not terms:
        return []
    scored = [(f, s) for f in records if (s := _score(f, terms)) > 0]
    scored.sort(key=lambda item: (-item[1], -item[0].updated, item[0].agent))
    return scored[: max(0, limit)]


class FocusStore:
    """Async context manager: the ``agent-focus`` bucket and its watch-fed view."""

    def __init__(
        self, js: Any, audit: AuditSink, *, clock: Callable[[], float] = time.time
    ) -> None:
        self._js = js
        self._audit = audit
        self._clock = clock
        self._kv: Any = None
        self._watcher: Any = None
        self._view: dict[str, Focus] = {}
        self._revs: dict[str, int] = {}
        self._synced = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> FocusStore:
        self._kv = await self._js.create_key_value(api.KeyValueConfig(bucket=BUCKET, history=1))
        self._watcher = await self._kv.watchall()
        self._task = asyncio.get_running_loop().create_task(self._watch(), name="focus-watch")
        await self._synced.wait()
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._task is not None:
            self._task.cancel("closing")
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        if self._watcher is not None:
            with contextlib.suppress(Exception):
                await self._watcher.stop()

    async def annotate(
        self,
        agent: str,
        intent: str,
        files: tuple[str, ...],
        symbols: tuple[str, ...],
        concepts: tuple[str, ...],
    ) -> Focus:
        """Replace ``agent``'s focus with exactly these fields."""
        focus = Focus.make(agent, intent, files, symbols, concepts, self._clock())
        esc = escape_key(agent)
        rev = await self._kv.put(esc, focus.encode())
        self._apply(esc, focus, rev)
        self._audit.emit(
            "AGENT_ANNOTATED",
            agent,
            intent=intent,
            files=list(files),
            symbols=list(symbols),
            concepts=list(concepts),
        )
        return focus

    def get(self, agent: str) -> Focus | None:
        return self._view.get(escape_key(agent))

    def all(self) -> list[Focus]:
        return list(self._view.values())

    def find(self, query: str, limit: int) -> list[tuple[Focus, int]]:
        return rank(list(self._view.values()), query, limit)

    def _apply(self, esc: str, focus: Focus | None, rev: int) -> None:
        if rev <= self._revs.get(esc, 0):
            return
        self._revs[esc] = rev
        if focus is None:
            self._view.pop(esc, None)
        else:
            self._view[esc] = focus

    async def _watch(self) -> None:
        async for entry in self._watcher:
            if entry is None:
                self._synced.set()
                continue
            esc, rev = str(entry.key), int(entry.revision)
            if entry.operation in ("DEL", "PURGE") or not entry.value:
                self._apply(esc, None, rev)
                continue
            try:
                self._apply(esc, Focus.decode(entry.value), rev)
            except (ValueError, TypeError, KeyError):
                log.warning("focus: undecodable entry for %s", esc)
