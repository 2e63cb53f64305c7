"""Agent focus (``annotate``/``find_agents``: docs/tools.md "Discovery") on the NATS KV bucket
``agent-focus``.

``annotate`` is a whole-record write (fields left out are cleared). An in-memory view fed by a KV
watch answers ``find_agents``: the query is lowercased and split on whitespace; a record matches
when any term is a substring of its intent, files, symbols or concepts. Results are ranked (exact
tag hits over substrings, tags over free text, more terms over fewer, then most recent) and bounded.
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

from agentcoord.kernel.tasks import TaskSet
from agentcoord.stores._jsretry import asking_again
from agentcoord.stores.kv import _natskv
from agentcoord.stores.kv.keys import escape_key

if TYPE_CHECKING:
    from agentcoord.stores.audit import AuditSink

__all__ = ["BUCKET", "Focus", "FocusStore", "by_recency", "rank"]

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
    # (everything, NUL-joined tags, set of tags), lowercased: precomputed for find_agents
    _hay: tuple[str, str, frozenset[str]] = field(
        default=("", "", frozenset()), compare=False, repr=False
    )

    @staticmethod
    def make(
        agent: str,
        intent: str = "",
        files: tuple[str, ...] = (),
        symbols: tuple[str, ...] = (),
        concepts: tuple[str, ...] = (),
        updated: float = 0.0,
    ) -> Focus:
        tags = [t.lower() for t in (*files, *symbols, *concepts)]
        joined = "\0".join(tags)
        hay = (intent.lower() + "\0" + joined, joined, frozenset(tags))
        return Focus(agent, intent, files, symbols, concepts, updated, hay)

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


def by_recency(records: list[Focus]) -> list[Focus]:
    """Newest first, then by name: the order :func:`rank` keeps within one score."""
    return sorted(records, key=lambda f: (-f.updated, f.agent))


def rank(records: list[Focus], query: str, limit: int) -> list[tuple[Focus, int]]:
    """The best ``limit`` matches of ``query``; ``records`` must be in :func:`by_recency`
    order (pure; see the module doc for the order).

    Per term: an exact tag scores 5, a substring of a tag 3, a substring of the intent 2.
    Matches are bucketed by score, so no sort runs per query.
    """
    terms = [t for t in query.lower().replace("\0", "").split() if t]
    if not terms:
        return []
    buckets: dict[int, list[Focus]] = {}
    for f in records:
        everything, joined, tags = f._hay
        score = 0
        for term in terms:
            if term in everything:  # the cheap test first: most records miss
                if term in tags:
                    score += 5
                elif term in joined:  # terms hold no NUL, so no hit spans two tags
                    score += 3
                else:
                    score += 2
        if score:
            bucket = buckets.get(score)
            if bucket is None:
                buckets[score] = [f]
            else:
                bucket.append(f)
    out: list[tuple[Focus, int]] = []
    for score in sorted(buckets, reverse=True):
        out.extend((f, score) for f in buckets[score][: limit - len(out)])
        if len(out) >= limit:
            break
    return out


class FocusView:
    """Every agent's focus as the bucket's watch last gave it, newest revision wins. Made
    before the store opens, so a reader (kubectl's Agent table) is built with it complete."""

    def __init__(self) -> None:
        self._view: dict[str, Focus] = {}
        self._ordered: list[Focus] | None = None  # the view by recency, rebuilt after changes
        self._revs: dict[str, int] = {}

    def get(self, agent: str) -> Focus | None:
        return self._view.get(escape_key(agent))

    def intent(self, agent: str) -> str | None:
        """``agent``'s intent, or None (the Agent table's FOCUS cell)."""
        focus = self._view.get(escape_key(agent))
        return focus.intent if focus is not None else None

    def has(self, esc: str) -> bool:
        return esc in self._view

    def all(self) -> list[Focus]:
        return list(self._view.values())

    def find(self, query: str, limit: int) -> list[tuple[Focus, int]]:
        if self._ordered is None:
            self._ordered = by_recency(list(self._view.values()))
        return rank(self._ordered, query, limit)

    def drop(self, esc: str) -> None:
        self._view.pop(esc, None)
        self._ordered = None

    def apply(self, esc: str, focus: Focus | None, rev: int) -> None:
        """Take one change at revision ``rev``; an older one than last seen is ignored."""
        if rev <= self._revs.get(esc, 0):
            return
        self._revs[esc] = rev
        self._ordered = None
        if focus is None:
            self._view.pop(esc, None)
        else:
            self._view[esc] = focus


class FocusStore:
    """Async context manager: the ``agent-focus`` bucket and its watch-fed view."""

    def __init__(
        self,
        js: Any,
        audit: AuditSink,
        *,
        clock: Callable[[], float] = time.time,
        replicas: int = 1,
        view: FocusView | None = None,
    ) -> None:
        self._js = js
        self._replicas = replicas  # R3 on a cluster (docs/one-host-to-many.md)
        self._audit = audit
        self._clock = clock
        self._kv: Any = None
        self._watcher: Any = None
        self.view = view if view is not None else FocusView()
        self._synced = asyncio.Event()
        self._tasks = TaskSet("focus")

    async def __aenter__(self) -> FocusStore:
        await _natskv.ensure_bucket(
            self._js, api.KeyValueConfig(bucket=BUCKET, history=1, replicas=self._replicas)
        )
        self._kv = await self._js.key_value(BUCKET)
        self._watcher = await asking_again(self._js, self._kv.watchall)
        await self._tasks.__aenter__()
        self._tasks.spawn(self._watch(), name="focus-watch")
        try:
            await self._synced.wait()
        except BaseException:  # cancelled by start-up's bound: stop the watch again
            await self.__aexit__(None, None, None)
            raise
        return self

    async def __aexit__(self, *exc: object) -> None:
        try:
            await self._tasks.__aexit__(None, None, None)  # cancels the watch, waits for it
        finally:
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
        self.view.apply(esc, focus, rev)
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
        return self.view.get(agent)

    async def forget(self, agent: str) -> None:
        """Remove ``agent``'s focus (a removed session agent's); not audited: no one chose it."""
        esc = escape_key(agent)
        if not self.view.has(esc):
            return
        await self._kv.purge(esc)
        # The watch applies the purge too (by its revision); the view forgets it now.
        self.view.drop(esc)

    def all(self) -> list[Focus]:
        return self.view.all()

    def find(self, query: str, limit: int) -> list[tuple[Focus, int]]:
        return self.view.find(query, limit)

    async def _watch(self) -> None:
        async for entry in self._watcher:
            if entry is None:
                self._synced.set()
                continue
            esc, rev = str(entry.key), int(entry.revision)
            if entry.operation in ("DEL", "PURGE") or not entry.value:
                self.view.apply(esc, None, rev)
                continue
            try:
                self.view.apply(esc, Focus.decode(entry.value), rev)
            except (ValueError, TypeError, KeyError):
                log.warning("focus: undecodable entry for %s", esc)
