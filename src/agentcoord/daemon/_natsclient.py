"""The daemon's NATS client class: nats-py's, made to heal instead of closing for good
(docs/reliability.md "The NATS link"), and to refuse a line the server would answer by
closing the connection."""

from __future__ import annotations

import logging
from typing import Any

from nats import errors as nats_errors
from nats.aio.client import Client as NatsClient

__all__ = ["MAX_CONTROL_LINE", "HealingClient"]

log = logging.getLogger(__name__)

# nats-server's max_control_line (4 KiB, its default): a PUB/HPUB/SUB line longer than that is
# answered "-ERR 'Maximum Control Line Exceeded'" and the connection closed. The subject and
# the reply share the line with the verb and two sizes, so they get a little less.
MAX_CONTROL_LINE = 4096
_SUBJECTS_MAX = MAX_CONTROL_LINE - 64
_PERMISSIONS = "permissions violation"  # nats-py's PERMISSIONS_ERR: the server keeps the link


class HealingClient(NatsClient):
    """nats-py's client, except that no error the server reports closes it for good.

    nats-py 2.16 (the pinned series) closes the client on any ``-ERR`` but a stale connection
    or a permissions violation (``Client._process_err``), and a closed client never
    reconnects: one protocol error cut the daemon off from NATS until a restart. Here such an
    error takes the path nats-py takes for a stale connection (``_process_op_err``): the
    connection is dropped and made again, subscriptions restored, with the reconnect options
    the link was made with (forever)."""

    async def _process_err(self, err_msg: str) -> None:
        if self.is_connecting or _PERMISSIONS in err_msg:
            await super()._process_err(err_msg)
            return
        err = nats_errors.Error(f"nats: {err_msg.strip(chr(39))}")
        self._err = err
        log.warning("nats-server reported %s; reconnecting", err)
        await self._error_cb(err)
        await self._process_op_err(err)

    async def publish(
        self,
        subject: str,
        payload: bytes = b"",
        reply: str = "",
        headers: dict[str, str] | None = None,
    ) -> None:
        _check_line(subject, reply)
        await super().publish(subject, payload, reply, headers)

    async def subscribe(self, subject: str, *args: Any, **kwargs: Any) -> Any:
        _check_line(subject, kwargs.get("queue", ""))
        return await super().subscribe(subject, *args, **kwargs)


def _check_line(subject: str, reply: str) -> None:
    """Refuse a subject the server would answer by closing the connection."""
    if len(subject.encode("utf-8", "surrogatepass")) + len(reply) > _SUBJECTS_MAX:
        raise nats_errors.BadSubjectError
