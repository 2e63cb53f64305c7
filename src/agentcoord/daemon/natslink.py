"""Our NATS connection: to the embedded server (:mod:`.natsd`) or to an existing server or
cluster (:mod:`agentcoord.kernel.natsremote`, docs/one-host-to-many.md). An async context
manager: connected on enter, closed on exit; ``healthy`` feeds ``/healthz``.

The link heals by itself (docs/reliability.md "The NATS link"): a lost server is reconnected
forever, and so is an error the server reports on the connection (:mod:`._natsclient`)."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from agentcoord.errors import ConfigError

if TYPE_CHECKING:
    from nats.aio.client import Client as NatsClient

    from agentcoord.daemon.natsd import NatsSupervisor
    from agentcoord.kernel.config import Config

__all__ = ["NatsLink", "js_timeout"]

log = logging.getLogger(__name__)

# A dead node drops the TCP connection at once; a lost host does not, so ping often enough to
# notice within ~15 s and move to another seed server (the default is minutes).
_EXTERNAL_PING_INTERVAL = 5
_EXTERNAL_MAX_PINGS = 2
# Tries per seed server before a first connect gives up and says why (a wrong password included);
# reconnects later are unlimited. Cancelling nats-py's connect is not reliable (its
# wait_for can swallow the cancellation), so the attempts are bounded instead of timed.
_EXTERNAL_FIRST_ATTEMPTS = 20


def js_timeout(cfg: Config) -> float:
    """JetStream request timeout: on a cluster a leader election after a node loss takes a few
    seconds, and a request that waits it out beats one that fails ambiguously."""
    return 15.0 if cfg.nats_url else 5.0


class NatsLink:
    """The daemon's NATS client, and the embedded server's supervisor when there is one."""

    def __init__(self, cfg: Config, supervisor: NatsSupervisor | None) -> None:
        self._cfg = cfg
        self.supervisor = supervisor
        self.url = supervisor.url if supervisor is not None else ""
        self._client: NatsClient | None = None

    @property
    def client(self) -> NatsClient:
        if self._client is None:
            raise RuntimeError("the NATS link is not connected yet")
        return self._client

    async def __aenter__(self) -> NatsLink:
        sup = self.supervisor
        if sup is None:
            self._client = await self._connect_external()
        else:
            # A bounded first connect: the embedded server is already up (its ready line).
            self._client = await _connect(sup.url, sup.user, sup.password, first_attempts=40)
        return self

    async def __aexit__(self, *exc: object) -> None:
        nc = self._client
        if nc is not None and not nc.is_closed:
            try:
                async with asyncio.timeout(1):
                    await nc.close()
            except Exception:
                log.warning("closing the nats client failed", exc_info=True)

    def healthy(self) -> tuple[bool, str]:
        """Readiness for ``/healthz``: NATS is up and our client is connected."""
        if self.supervisor is not None and not self.supervisor.alive:
            return False, "nats-server is down"
        if self.supervisor is not None and self.supervisor.store_error:
            # It answers, but refuses (or never answers) writes to that store until restarted.
            return False, "nats-server cannot write its store (disk full?)"
        if self._client is None or not self._client.is_connected:
            return False, "not connected to NATS"
        return True, "ok"

    @property
    def reconnects(self) -> int:
        """How many times the client has reconnected since the daemon started."""
        return int(self._client.stats["reconnects"]) if self._client is not None else 0

    async def _connect_external(self) -> NatsClient:
        """Connect to ``nats_url``; only the redacted URL is kept, logged or shown."""
        import nats.errors

        from agentcoord.kernel.natsremote import nats_target

        target = nats_target(self._cfg)
        self.url = target.display
        options = dict(target.options)
        seen: list[Exception] = []
        try:
            return await _connect(
                target.servers,
                options.pop("user", None),
                options.pop("password", None),
                seen,
                _EXTERNAL_FIRST_ATTEMPTS,
                ping_interval=_EXTERNAL_PING_INTERVAL,
                max_outstanding_pings=_EXTERNAL_MAX_PINGS,
                **options,
            )
        except (OSError, TimeoutError, nats.errors.Error) as exc:
            # nats-py's errors do not carry the URL's password; ours names the redacted URL.
            why = seen[-1] if seen else exc
            raise ConfigError(f"cannot connect to NATS at {target.display}: {why!r}") from None


async def _connect(
    url: str | list[str],
    user: str | None,
    password: str | None,
    seen: list[Exception] | None = None,
    first_attempts: int = -1,
    **options: Any,
) -> NatsClient:
    async def on_error(exc: Exception) -> None:
        log.debug("nats client: %s", exc)
        if seen is not None:
            seen.append(exc)

    client: list[Any] = []  # the connection, once made: its callbacks ask whether it closed

    async def on_disconnect() -> None:
        # nats-py calls this from close() too; a close is the daemon stopping (or a failed
        # start), not a lost server, so it is no news at INFO.
        if client and client[0].is_closed:
            log.debug("nats client closed")
            return
        log.info("nats client disconnected; reconnecting")

    async def on_reconnect() -> None:
        log.info("nats client reconnected")

    from agentcoord.daemon._natsclient import HealingClient

    nc = HealingClient()
    await nc.connect(
        url,
        user=user,
        password=password,
        name="agentcoord-daemon",
        allow_reconnect=True,
        max_reconnect_attempts=first_attempts,
        reconnect_time_wait=0.05,  # type: ignore[arg-type]  # seconds; nats-py sleeps a float
        connect_timeout=2,
        error_cb=on_error,
        disconnected_cb=on_disconnect,
        reconnected_cb=on_reconnect,
        **options,
    )
    client.append(nc)
    # A bounded first connect, then reconnect forever (nats-py reads this option
    # at each reconnect; it retries a first connect forever when it is -1).
    nc.options["max_reconnect_attempts"] = -1
    return nc
