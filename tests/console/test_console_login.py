"""The console's login against a real daemon: the link carries a one-time code (never the human
token), the code is good once and only until it expires, and the cookie it buys is a signed
session, not the token (docs/security.md "Console login")."""

from __future__ import annotations

import http.client
import json
import subprocess
import sys
import time

from tests.conftest import Daemon, console_link
from tests.tools.session_helpers import human_token


def _request(
    d: Daemon, method: str, path: str, headers: dict[str, str] | None = None
) -> tuple[int, dict[str, str], bytes]:
    host, port = d.http_addr.rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    try:
        conn.request(method, path, headers=headers or {})
        resp = conn.getresponse()
        body = resp.read()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, body
    finally:
        conn.close()


def _path(d: Daemon, link: str) -> str:
    return link.split(d.http_addr, 1)[1]


def test_a_code_logs_in_once_and_the_token_is_in_no_url(daemon: Daemon) -> None:
    """The link has a code, not the token; it sets a strict cookie once, then is refused."""
    token = human_token(daemon)
    link = console_link(daemon)
    assert link.startswith(f"{daemon.url}/console/login?code=")
    assert token not in link
    status, headers, _ = _request(daemon, "GET", _path(daemon, link))
    assert status == 303, daemon.log()
    assert token not in headers["location"]
    cookie = headers["set-cookie"]
    attributes = {a.strip().split("=")[0] for a in cookie.split(";")[1:]}
    assert {"HttpOnly", "SameSite", "Path", "Max-Age"} <= attributes
    assert "SameSite=Strict" in cookie
    assert "Path=/console" in cookie
    assert token not in cookie
    pair = cookie.split(";")[0]
    assert _request(daemon, "GET", "/console/", {"cookie": pair})[0] == 200
    again, headers, body = _request(daemon, "GET", _path(daemon, link))
    assert again == 403
    assert "set-cookie" not in headers
    assert b"agentcoord console" in body  # says how to get a new link


def test_the_permanent_token_logs_nobody_in(daemon: Daemon) -> None:
    """The token in a login URL, or as the cookie, is refused; a forged session is too."""
    token = human_token(daemon)
    status, headers, _ = _request(daemon, "GET", f"/console/login?token={token}")
    assert status == 403
    assert "set-cookie" not in headers
    assert _request(daemon, "GET", f"/console/login?code={token}")[0] == 403
    assert _request(daemon, "GET", "/console/", {"cookie": f"agentcoord_console={token}"})[0] == 401
    forged = f"agentcoord_console={int(time.time()) + 3600}.{'0' * 64}"
    assert _request(daemon, "GET", "/console/api/state", {"cookie": forged})[0] == 401


def test_only_the_token_bearer_gets_a_code(daemon: Daemon) -> None:
    """POST /console/api/login-code needs the human token in a header; a cookie is not enough."""
    link = console_link(daemon)
    _, headers, _ = _request(daemon, "GET", _path(daemon, link))
    cookie = headers["set-cookie"].split(";")[0]
    assert _request(daemon, "POST", "/console/api/login-code")[0] == 401
    assert _request(daemon, "POST", "/console/api/login-code", {"cookie": cookie})[0] == 401
    bearer = {"authorization": f"Bearer {human_token(daemon)}"}
    status, _, body = _request(daemon, "POST", "/console/api/login-code", bearer)
    assert status == 200
    assert set(json.loads(body)) == {"code", "expires_at"}


def test_an_expired_code_fails(daemon_factory: object) -> None:
    """With AGENTCOORD_CONSOLE_LOGIN_TTL=1, a code unused until its expiry is refused."""
    d = daemon_factory(AGENTCOORD_CONSOLE_LOGIN_TTL="1").start()  # type: ignore[operator]
    out = subprocess.run(
        [sys.executable, "-m", "agentcoord", "console", "--json"],
        env=d.env,
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    given = json.loads(out.stdout)
    # Wait on the clock itself: the daemon said when the code stops being good.
    while time.time() <= given["expires_at"]:
        time.sleep(max(0.0, given["expires_at"] - time.time()) + 0.05)
    status, headers, _ = _request(d, "GET", _path(d, given["url"]))
    assert status == 403, d.log()
    assert "set-cookie" not in headers


def test_the_session_outlives_a_daemon_restart(daemon: Daemon) -> None:
    """The cookie is signed with the human token, so a restarted daemon still accepts it."""
    _, headers, _ = _request(daemon, "GET", _path(daemon, console_link(daemon)))
    cookie = headers["set-cookie"].split(";")[0]
    assert daemon.stop() == 0, daemon.log()
    daemon.start()
    status, _, body = _request(daemon, "GET", "/console/api/state", {"cookie": cookie})
    assert status == 200, daemon.log()
    assert json.loads(body)["status"]["pid"] == daemon.proc.pid  # type: ignore[union-attr]
