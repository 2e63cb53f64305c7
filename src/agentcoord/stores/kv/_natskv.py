"""Compare-and-set writes on a NATS KV bucket through JetStream, aware of limit markers.

nats-py 2.16's ``KeyValue.create`` re-checks a failed create with ``get``, which does not know
the server-placed ``Nats-Marker-Reason`` markers (nats-server >= 2.11): for as long as the
marker of an expired key lives, ``create`` keeps failing with "wrong last sequence" although
the key is gone (docs/claims.md "How it works"). :func:`create` re-reads the last message itself
and, when it is a delete/purge/limit marker, compare-and-sets on the marker's sequence.

Writes go through ``js.publish`` with ``Nats-Expected-Last-Subject-Sequence`` so every write is
a CAS and carries its own per-message TTL (``update()`` cannot set one).
"""

from __future__ import annotations

import logging
from typing import Any

import nats.js.errors

from agentcoord.errors import AgentCoordError
from agentcoord.stores._jspub import AckedPublisher
from agentcoord.stores._jsretry import create_asking_again, while_electing

__all__ = ["CasConflict", "create", "delete", "ensure_bucket", "fetch", "update"]

log = logging.getLogger(__name__)

KV_OP = "KV-Operation"
MARKER_REASON = "Nats-Marker-Reason"
EXPECTED_LAST = "Nats-Expected-Last-Subject-Sequence"
MSG_TTL = "Nats-TTL"  # whole seconds, as nats-py's js.publish(msg_ttl=) writes it
_WRONG_LAST = (10071, 10164)  # JSStreamWrongLastSequence(Constant)Err
# A delete marker lives this long, so a history-1 bucket keeps no tombstone per key ever used.
DELETE_MARKER_TTL = 1
# The reason the server gives the markers it places itself ("Remove"). Our delete markers do
# not carry it: with it, an expired marker uncovered the released claim to a view rebuilt at a
# restart (tests/reliability/test_restart_random.py), so a release costs the server's MaxAge
# marker after its own.
REMOVED = "Remove"


class CasConflict(AgentCoordError):
    """The key changed since the revision the write expected."""


def is_absent(headers: dict[str, str] | None) -> bool:
    """Whether a KV message with these headers says "no value" (delete, purge, limit marker)."""
    if not headers:
        return False
    return headers.get(KV_OP) in ("DEL", "PURGE") or MARKER_REASON in headers


async def ensure_bucket(js: Any, config: Any) -> None:
    """Create the KV bucket of ``config`` if absent. A bucket made earlier with another
    replica count (R1 before the move to a cluster, docs/one-host-to-many.md) is brought to
    ``config.replicas``; any other difference still fails, as nats-py says. A caller that
    wants the bucket's handle asks ``js.key_value`` for one bound to its own context."""
    try:
        await create_asking_again(js, lambda ctx: ctx.create_key_value(config))
    except nats.js.errors.BadRequestError:
        info = await js.stream_info(f"KV_{config.bucket}")
        if info.config.num_replicas == config.replicas:
            raise
        log.warning(
            "KV bucket %s has %s replicas; changing to %d",
            config.bucket,
            info.config.num_replicas,
            config.replicas,
        )
        info.config.num_replicas = config.replicas
        await while_electing(lambda: js.update_stream(info.config))
        await js.create_key_value(config)


async def fetch(js: Any, stream: str, subject: str) -> tuple[bytes | None, int]:
    """The value (None when absent) and the last sequence of ``subject`` (0 when none)."""
    try:
        msg = await while_electing(lambda: js.get_msg(stream, subject=subject))
    except nats.js.errors.NotFoundError:
        return None, 0
    if is_absent(msg.headers):
        return None, int(msg.seq)
    return bytes(msg.data or b""), int(msg.seq)


async def _publish(
    js: Any,
    subject: str,
    data: bytes,
    last: int,
    ttl: int | None,
    op: str | None = None,
    pub: AckedPublisher | None = None,
) -> int:
    headers = {EXPECTED_LAST: str(last)}
    if op is not None:
        headers[KV_OP] = op
    try:
        if pub is not None:
            if ttl is not None:
                headers[MSG_TTL] = str(ttl)
            return await while_electing(lambda: pub.publish(subject, data, headers))
        ack = await while_electing(lambda: js.publish(subject, data, headers=headers, msg_ttl=ttl))
    except nats.js.errors.APIError as exc:
        if exc.err_code in _WRONG_LAST:
            raise CasConflict(str(exc.description)) from None
        raise
    return int(ack.seq)


async def update(
    js: Any,
    subject: str,
    data: bytes,
    last: int,
    ttl: int | None,
    pub: AckedPublisher | None = None,
) -> int:
    """Write ``data`` if the subject's last sequence is still ``last``; the new revision.
    ``pub``: send through it instead of ``js.publish`` (the claim path, see _jspub)."""
    return await _publish(js, subject, data, last, ttl, pub=pub)


async def create(
    js: Any,
    stream: str,
    subject: str,
    data: bytes,
    ttl: int | None,
    pub: AckedPublisher | None = None,
) -> int:
    """Create-if-absent that also succeeds over a delete or limit marker (see module doc)."""
    try:
        return await _publish(js, subject, data, 0, ttl, pub=pub)
    except CasConflict:
        value, seq = await fetch(js, stream, subject)
        if value is not None:
            raise
        # Absent: a marker (CAS on its sequence) or nothing at all any more (seq 0).
        return await _publish(js, subject, data, seq, ttl, pub=pub)


async def delete(js: Any, subject: str, last: int, pub: AckedPublisher | None = None) -> int:
    """Delete if the last sequence is still ``last``; the marker itself expires shortly (the
    server then places its own, which expires too)."""
    return await _publish(js, subject, b"", last, DELETE_MARKER_TTL, op="DEL", pub=pub)
