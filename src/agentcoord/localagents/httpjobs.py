"""The HTTP job contract with registered agents
(docs/localagents.md "HTTP agents: the job contract").

``POST {endpoint}/jobs`` with the task; the agent answers with ``job_id`` and ``status``. With
``wait=true`` the daemon polls ``GET {endpoint}/jobs/{job_id}`` until the status is terminal.
One :class:`JobClient` per daemon holds one pooled ``httpx.AsyncClient``; failures become
:class:`DispatchFailed` with a retry flag (connection trouble, timeouts and 5xx/429 are worth
retrying; 4xx, bad URLs and bad replies are not).
"""

from __future__ import annotations

import asyncio
import json
import time
import urllib.parse
from types import TracebackType
from typing import TYPE_CHECKING, Any

from agentcoord.localagents._failures import DispatchFailed

if TYPE_CHECKING:
    import httpx

__all__ = ["TERMINAL", "JobClient"]

TERMINAL = frozenset({"done", "succeeded", "completed", "failed", "error", "cancelled"})
_MAX_BODY = 4 * 1024 * 1024


def _job_url(endpoint: str, job_id: str = "") -> str:
    base = endpoint.rstrip("/") + "/jobs"
    return f"{base}/{urllib.parse.quote(job_id, safe='')}" if job_id else base


class JobClient:
    """The daemon's one HTTP client for agents' job endpoints, an async context manager.

    The ``httpx.AsyncClient`` is built on the first request: httpx costs ~50 ms to import and
    most daemons never dispatch over HTTP. ``timeout`` bounds each whole request (connect,
    send, every read); exit closes the pool, and later requests fail with ``retry``.
    """

    def __init__(self, *, timeout: float = 10.0) -> None:
        self.timeout = timeout
        self._client: httpx.AsyncClient | None = None
        self._closed = False

    async def __aenter__(self) -> JobClient:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._closed = True
        client, self._client = self._client, None
        if client is not None:
            await client.aclose()

    def _http(self) -> httpx.AsyncClient:
        if self._closed:
            raise DispatchFailed("the daemon is stopping", retry=True)
        if self._client is None:
            import httpx  # here: only HTTP dispatch needs it (start-up is a goal)

            # urllib's behaviour, kept: redirects are followed and the environment's proxy
            # settings apply, as for any HTTP client on the machine.
            self._client = httpx.AsyncClient(
                timeout=httpx.Timeout(self.timeout),
                follow_redirects=True,
                headers={"Accept": "application/json"},
            )
        return self._client

    async def _request(self, method: str, url: str, body: dict[str, Any] | None) -> dict[str, Any]:
        import httpx

        client = self._http()
        try:
            # httpx's timeout is per phase (a slow drip of bytes would never trip it); this
            # one bounds the whole exchange
            async with asyncio.timeout(self.timeout):
                async with client.stream(method, url, json=body) as resp:
                    if resp.status_code >= 400:
                        retry = resp.status_code >= 500 or resp.status_code == 429
                        raise DispatchFailed(
                            f"{method} {url} answered {resp.status_code}", retry=retry
                        )
                    raw = bytearray()
                    async for chunk in resp.aiter_bytes():
                        raw += chunk
                        if len(raw) > _MAX_BODY:
                            raise DispatchFailed(
                                f"{method} {url} answered more than {_MAX_BODY} bytes",
                                retry=False,
                            )
        except TimeoutError:
            raise DispatchFailed(
                f"{method} {url} failed: no answer within {self.timeout:g}s", retry=True
            ) from None
        except (httpx.InvalidURL, httpx.UnsupportedProtocol) as exc:
            raise DispatchFailed(f"{method} {url} failed: {exc}", retry=False) from None
        except httpx.HTTPError as exc:  # connection refused or reset, a timeout, bad framing
            reason = str(exc) or type(exc).__name__
            raise DispatchFailed(f"{method} {url} failed: {reason}", retry=True) from None
        try:
            value = json.loads(raw or b"{}")
        except ValueError:
            raise DispatchFailed(f"{method} {url} did not answer JSON", retry=False) from None
        if not isinstance(value, dict):
            raise DispatchFailed(f"{method} {url} did not answer a JSON object", retry=False)
        return value

    async def post_job(self, endpoint: str, body: dict[str, Any]) -> dict[str, Any]:
        """Submit a job; the reply must carry ``job_id`` (or ``id``)."""
        reply = await self._request("POST", _job_url(endpoint), body)
        job_id = reply.get("job_id", reply.get("id"))
        if not isinstance(job_id, str | int) or str(job_id) == "":
            raise DispatchFailed("the agent accepted no job (no job_id in its reply)", retry=False)
        reply["job_id"] = str(job_id)
        return reply

    async def get_job(self, endpoint: str, job_id: str) -> dict[str, Any]:
        """Fetch a job's current state."""
        return await self._request("GET", _job_url(endpoint, job_id), None)

    async def wait_job(
        self, endpoint: str, job_id: str, *, deadline_s: float, first_delay: float = 0.05
    ) -> dict[str, Any]:
        """Poll until the job's status is terminal. The remote side offers no push, so this is
        the one place we poll: backing off from ``first_delay`` to 2 s, for at most
        ``deadline_s``."""
        stop = time.monotonic() + deadline_s
        delay = first_delay
        while True:
            state = await self.get_job(endpoint, job_id)
            if str(state.get("status", "")).lower() in TERMINAL:
                return state
            if time.monotonic() + delay > stop:
                raise DispatchFailed(
                    f"job {job_id} not finished after {deadline_s:.0f}s", retry=False, job=state
                )
            await asyncio.sleep(delay)
            delay = min(delay * 2, 2.0)
