"""The audit trail: JetStream stream ``AGENT_EVENTS`` on ``events.>``
(docs/architecture.md "Planes").

Appending is best-effort (docs/claims.md "How it works": a failed append is logged, never a tool
error, because the coordination action it records has already happened): tools enqueue an event and
return; a writer task publishes in batches and logs failures. On a clean shutdown the queue is
drained before the NATS client closes, so nothing queued is silently lost.

Subjects are ``events.<TYPE>.<agent>`` (agent escaped like a KV key), so queries by type and
agent filter on the server.

The stream is bounded by age and by bytes, whichever is reached first (docs/reliability.md
"State retention"): JetStream drops the oldest events. The limits are applied to an existing
stream at every start, so a state dir made before them, or under other limits, is brought to
the configured ones.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import json
import logging
import time
from collections import deque
from dataclasses import dataclass
from typing import Any, Protocol

from nats.js import api

from agentcoord.kernel.jsoncodec import dumps
from agentcoord.kernel.tasks import TaskSet
from agentcoord.stores._jsretry import connection_of
from agentcoord.stores.kv.keys import escape_key

__all__ = ["MAX_AGE", "MAX_BYTES", "STREAM", "AuditLog", "AuditSink", "Event"]

log = logging.getLogger(__name__)

STREAM = "AGENT_EVENTS"
MAX_AGE = 30 * 24 * 3600  # seconds; Config.audit_max_age
MAX_BYTES = 64 << 20  # Config.audit_max_bytes
_DRAIN_DEADLINE = 2.0
_QUERY_IDLE = 2.0
_COALESCE = 0.01
_BATCH = 512
_SUBJECT_CACHE = 4096
_QUERY_CONSUMER_IDLE = 30.0


class AuditSink(Protocol):
    """Where coordination actions report what they did."""

    def emit(self, type_: str, agent: str, **data: Any) -> None:
        """Record one event; never raises, never blocks."""
        ...


@dataclass(frozen=True)
class Event:
    """One audit record as stored (JSON) and as queried."""

    type: str
    agent: str
    ts: float
    data: dict[str, Any]
    seq: int = 0

    def as_dict(self) -> dict[str, Any]:
        iso = dt.datetime.fromtimestamp(self.ts, dt.UTC).isoformat(timespec="milliseconds")
        return {"seq": self.seq, "type": self.type, "agent": self.agent, "ts": iso, **self.data}


def _subject(type_: str, agent: str) -> str:
    return f"events.{type_}.{escape_key(agent) if agent else '-'}"


class AuditLog:
    """Async context manager owning the stream, the append queue and its writer task."""

    def __init__(
        self,
        js: Any,
        *,
        replicas: int = 1,
        max_age: float = MAX_AGE,
        max_bytes: int = MAX_BYTES,
    ) -> None:
        self._js = js
        self._max_age, self._max_bytes = float(max_age), int(max_bytes)
        self._nc, _ = connection_of(js)  # plain publishes need the connection
        self._replicas = replicas  # R3 on a cluster (docs/one-host-to-many.md)
        # Events waiting for the writer, in order; a list and two events rather than a Queue
        # (put, get and task_done per event cost the claim path a few percent).
        self._pending: list[tuple[str, bytes]] = []
        self._wake = asyncio.Event()  # set while events are pending
        self._idle = asyncio.Event()  # set when nothing is pending or being stored
        self._idle.set()
        self._subjects: dict[tuple[str, str], str] = {}  # (type, agent) -> subject, bounded
        self._tasks = TaskSet("audit")
        self.failed = 0  # appends that could not be stored (each one is logged)

    async def __aenter__(self) -> AuditLog:
        config = api.StreamConfig(
            name=STREAM,
            subjects=["events.>"],
            storage=api.StorageType.FILE,
            max_age=self._max_age,
            max_bytes=self._max_bytes,
            discard=api.DiscardPolicy.OLD,  # a full stream drops its oldest, never a new event
            num_replicas=self._replicas,
        )
        await self._create_stream(config)
        await self._tasks.__aenter__()
        self._tasks.spawn(self._write(), name="audit-writer")
        return self

    async def _create_stream(self, config: Any) -> None:
        """Create the stream (asked again while unanswered), or bring an older daemon's
        config up to date."""
        from agentcoord.stores._jsretry import ensure_stream

        await ensure_stream(self._js, config)

    async def __aexit__(self, *exc: object) -> None:
        try:
            async with asyncio.timeout(_DRAIN_DEADLINE):
                await self._idle.wait()
        except TimeoutError:
            log.error("audit: %d events not stored at shutdown", len(self._pending))
        finally:
            await self._tasks.__aexit__(None, None, None)  # cancels the writer, waits for it

    def emit(self, type_: str, agent: str, **data: Any) -> None:
        body = {"type": type_, "agent": agent, "ts": time.time(), "data": data}
        try:
            payload = dumps(body, default=str)
            subject = self._subjects.get((type_, agent))
            if subject is None:
                if len(self._subjects) >= _SUBJECT_CACHE:
                    self._subjects.clear()
                subject = self._subjects[(type_, agent)] = _subject(type_, agent)
            self._pending.append((subject, payload))
            self._idle.clear()
            self._wake.set()
        except Exception:
            self.failed += 1
            log.warning("audit: could not queue %s for %s", type_, agent, exc_info=True)

    async def _write(self) -> None:
        while True:
            await self._wake.wait()
            # Coalesce: events of the next few ms ride one socket write instead of one each
            # (audit appends were a third of the daemon's syscalls on the claim path).
            await asyncio.sleep(_COALESCE)
            batch, self._pending = self._pending[:_BATCH], self._pending[_BATCH:]
            if not self._pending:
                self._wake.clear()
            try:
                await self._append(batch)
            except Exception as exc:
                self.failed += len(batch)
                log.warning("audit: %d events not stored: %s", len(batch), exc)
            if not self._pending:
                self._idle.set()

    async def _append(self, batch: list[tuple[str, bytes]]) -> None:
        """Store ``batch`` in order with one acknowledgement: every event but the last is a
        plain publish, the last a JetStream publish. One connection delivers in order and the
        stream stores in arrival order, so the last event's ack means the stream has taken
        all of them; a refusal (a full disk) fails the last one too. One ack per batch
        instead of one per event halved the claim plane's CPU cost of auditing."""
        *rest, (subject, payload) = batch
        for rest_subject, rest_payload in rest:
            await self._nc.publish(rest_subject, rest_payload)
        await self._js.publish(subject, payload)

    async def flush(self) -> None:
        """Wait until everything emitted so far is stored (or has failed and been logged)."""
        await self._idle.wait()

    async def query(
        self,
        *,
        since: float | None = None,
        agent: str = "",
        type_: str = "",
        limit: int = 100,
    ) -> list[Event]:
        """The newest ``limit`` events at or after ``since`` (wall time), oldest first."""
        subject = f"events.{type_ or '*'}.{escape_key(agent) if agent else '*'}"
        # A pull consumer: nothing is delivered before we fetch, so num_pending is exact.
        config = api.ConsumerConfig(
            deliver_policy=api.DeliverPolicy.ALL,
            ack_policy=api.AckPolicy.NONE,
            inactive_threshold=_QUERY_CONSUMER_IDLE,
            mem_storage=True,
        )
        if since is not None:
            config.deliver_policy = api.DeliverPolicy.BY_START_TIME
            config.opt_start_time = dt.datetime.fromtimestamp(since, dt.UTC)
        sub = await self._js.pull_subscribe(subject, stream=STREAM, config=config)
        out: deque[Event] = deque(maxlen=max(1, limit))
        name = ""
        try:
            info = await sub.consumer_info()
            name, pending = info.name, info.num_pending
            while pending > 0:
                msgs = await sub.fetch(min(pending, 256), timeout=_QUERY_IDLE)
                for msg in msgs:
                    out.append(_decode(msg.data, msg.metadata.sequence.stream))
                pending = msgs[-1].metadata.num_pending if msgs else 0
        finally:
            with contextlib.suppress(Exception):
                await sub.unsubscribe()
            if name:
                with contextlib.suppress(Exception):
                    await self._js.delete_consumer(STREAM, name)
        return list(out)


def _decode(data: bytes, seq: int) -> Event:
    try:
        body = json.loads(data)
        return Event(
            type=str(body.get("type", "")),
            agent=str(body.get("agent", "")),
            ts=float(body.get("ts", 0.0)),
            data=dict(body.get("data") or {}),
            seq=seq,
        )
    except (ValueError, TypeError, AttributeError):
        return Event(
            type="?", agent="", ts=0.0, data={"raw": data.decode(errors="replace")}, seq=seq
        )
