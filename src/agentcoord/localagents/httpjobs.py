"""The HTTP job contract with registered agents
(docs/localagents.md "HTTP agents: the job contract").

``POST {endpoint}/jobs`` with the task; the agent answers with ``job_id`` and ``status``. With
``wait=true`` the daemon polls ``GET {endpoint}/jobs/{job_id}`` until the status is terminal.
Blocking urllib runs in a worker thread; failures become :class:`DispatchFailed` with a retry
flag (connection trouble and 5xx/429 are worth retrying, 4xx and bad replies are not).
"""

from __future__ import annotations

import asyncio
import json
import time
import urllib.parse
from typing import Any

from agentcoord.localagents._errors import DispatchFailed

__all__ = ["TERMINAL", "get_job", "post_job", "wait_job"]

TERMINAL = frozenset({"done", "succeeded", "completed", "failed", "error", "cancelled"})
_MAX_BODY = 4 * 1024 * 1024


def _request(method: str, url: str, body: dict[str, Any] | None, timeout: float) -> dict[str, Any]:
    data = None if body is None else json.dumps(body).encode()
    import urllib.error  # here: only HTTP dispatch needs them (start-up is a goal)
    import urllib.request

    req = urllib.request.Request(url, data=data, method=method)
    req.add_header("Accept", "application/json")
    if data is not None:
        req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            raw = resp.read(_MAX_BODY)
    except urllib.error.HTTPError as exc:
        retry = exc.code >= 500 or exc.code == 429
        raise DispatchFailed(f"{method} {url} answered {exc.code}", retry=retry) from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise DispatchFailed(f"{method} {url} failed: {reason}", retry=True) from None
    try:
        value = json.loads(raw or b"{}")
    except ValueError:
        raise DispatchFailed(f"{method} {url} did not answer JSON", retry=False) from None
    if not isinstance(value, dict):
        raise DispatchFailed(f"{method} {url} did not answer a JSON object", retry=False)
    return value


def _job_url(endpoint: str, job_id: str = "") -> str:
    base = endpoint.rstrip("/") + "/jobs"
    return f"{base}/{urllib.parse.quote(job_id, safe='')}" if job_id else base


async def post_job(endpoint: str, body: dict[str, Any], timeout: float = 10.0) -> dict[str, Any]:
    """Submit a job; the reply must carry ``job_id`` (or ``id``)."""
    reply = await asyncio.to_thread(_request, "POST", _job_url(endpoint), body, timeout)
    job_id = reply.get("job_id", reply.get("id"))
    if not isinstance(job_id, str | int) or str(job_id) == "":
        raise DispatchFailed("the agent accepted no job (no job_id in its reply)", retry=False)
    reply["job_id"] = str(job_id)
    return reply


async def get_job(endpoint: str, job_id: str, timeout: float = 10.0) -> dict[str, Any]:
    """Fetch a job's current state."""
    return await asyncio.to_thread(_request, "GET", _job_url(endpoint, job_id), None, timeout)


async def wait_job(
    endpoint: str, job_id: str, *, deadline_s: float, first_delay: float = 0.05
) -> dict[str, Any]:
    """Poll until the job's status is terminal. The remote side offers no push, so this is the
    one place we poll: backing off from ``first_delay`` to 2 s, for at most ``deadline_s``."""
    stop = time.monotonic() + deadline_s
    delay = first_delay
    while True:
        state = await get_job(endpoint, job_id)
        if str(state.get("status", "")).lower() in TERMINAL:
            return state
        if time.monotonic() + delay > stop:
            raise DispatchFailed(
                f"job {job_id} not finished after {deadline_s:.0f}s", retry=False, job=state
            )
        await asyncio.sleep(delay)
        delay = min(delay * 2, 2.0)
