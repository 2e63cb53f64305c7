"""The console's auth, page, state snapshot, CSRF guard and live audit stream, on the wire."""

from __future__ import annotations

import http.client
import json
import socket
import subprocess
import sys
import time
from typing import Any

from tests.conftest import Daemon, console_link


def _conn(d: Daemon) -> http.client.HTTPConnection:
    host, port = d.http_addr.rsplit(":", 1)
    return http.client.HTTPConnection(host, int(port), timeout=10)


def _get(d: Daemon, path: str, cookie: str | None = None) -> tuple[int, dict[str, str], bytes]:
    conn = _conn(d)
    conn.request("GET", path, headers={"cookie": cookie} if cookie else {})
    resp = conn.getresponse()
    body = resp.read()
    conn.close()
    return resp.status, {k.lower(): v for k, v in resp.getheaders()}, body


def _login_link(d: Daemon) -> str:
    return console_link(d)


def _login(d: Daemon) -> str:
    link = _login_link(d)
    status, headers, _ = _get(d, link.split(d.http_addr, 1)[1])
    assert status == 303
    return headers["set-cookie"].split(";")[0]


def test_console_requires_login(daemon: Daemon) -> None:
    """Without the login cookie the page is a 401 telling how to log in; the API is 401."""
    status, _, body = _get(daemon, "/console/")
    assert status == 401
    assert b"agentcoord console" in body
    assert _get(daemon, "/console/api/state")[0] == 401
    assert _get(daemon, "/console/login?code=forged")[0] == 403


def test_login_link_sets_strict_cookie_and_serves_page(daemon: Daemon) -> None:
    """The link from `agentcoord console` sets an HttpOnly SameSite=Strict cookie; page loads."""
    link = _login_link(daemon)
    assert link.startswith(f"http://{daemon.http_addr}/console/login?code=")
    status, headers, _ = _get(daemon, link.split(daemon.http_addr, 1)[1])
    assert status == 303
    assert "HttpOnly" in headers["set-cookie"]
    assert "SameSite=Strict" in headers["set-cookie"]
    cookie = headers["set-cookie"].split(";")[0]
    status, headers, body = _get(daemon, "/console/", cookie)
    assert status == 200
    assert b"<title>agentcoord</title>" in body
    assert headers["x-frame-options"] == "DENY"


def test_state_snapshot_has_status(daemon: Daemon) -> None:
    """/console/api/state returns the daemon status with the logged-in cookie."""
    status, _, body = _get(daemon, "/console/api/state", _login(daemon))
    assert status == 200
    state = json.loads(body)
    assert daemon.proc is not None
    assert state["status"]["pid"] == daemon.proc.pid


def test_answer_needs_csrf_header(daemon: Daemon) -> None:
    """A POST answer without X-Agentcoord (what a cross-site form sends) is refused."""
    conn = _conn(daemon)
    conn.request(
        "POST",
        "/console/api/prompts/p1/answer",
        body=b'{"answer":"yes"}',
        headers={"cookie": _login(daemon), "content-type": "application/json"},
    )
    resp = conn.getresponse()
    assert resp.status == 403
    assert b"X-Agentcoord" in resp.read()
    conn.close()


def test_audit_stream_relays_events(daemon: Daemon) -> None:
    """/console/api/events streams each `events.>` message as an SSE data line."""
    cookie = _login(daemon)
    host, port = daemon.http_addr.rsplit(":", 1)
    sock = socket.create_connection((host, int(port)), timeout=10)
    head = f"GET /console/api/events HTTP/1.1\r\nHost: {daemon.http_addr}\r\nCookie: {cookie}\r\n"
    sock.sendall(head.encode() + b"\r\n")
    buf = b""
    while b": connected" not in buf:
        buf += sock.recv(4096)
    conf = (daemon.state_dir / "nats" / "nats.conf").read_text()
    password = conf.split("password: ")[1].split('"')[1]
    status = json.loads(
        subprocess.run(
            [sys.executable, "-m", "agentcoord", "status", "--json"],
            env=daemon.env,
            capture_output=True,
            check=True,
            timeout=20,
        ).stdout
    )
    nats_port = int(status["nats_url"].rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", nats_port), timeout=5) as nats_sock:
        nats_sock.recv(4096)
        connect = {"verbose": False, "pedantic": False, "user": "agentcoord", "pass": password}
        payload = json.dumps({"type": "TEST_EVENT", "agent": "a-1"}).encode()
        nats_sock.sendall(
            b"CONNECT "
            + json.dumps(connect).encode()
            + b"\r\n"
            + f"PUB events.test {len(payload)}\r\n".encode()
            + payload
            + b"\r\nPING\r\n"
        )
        deadline = time.monotonic() + 60
        while b"TEST_EVENT" not in buf and time.monotonic() < deadline:
            buf += sock.recv(4096)
    sock.close()
    line = next(part for part in buf.split(b"\n") if b"TEST_EVENT" in part)
    assert line.startswith(b"data: ")
    event = json.loads(line.split(b"data: ", 1)[1])
    text = "-  TEST_EVENT  a-1"  # the one rendering of an event (agentcoord.text.events)
    # Beside the line, what the page's filters use: the agents and repositories it names.
    assert event == {
        "type": "TEST_EVENT",
        "agent": "a-1",
        "subject": "events.test",
        "text": text,
        "names": ["a-1"],
        "repos": [],
    }


def test_recent_audit_only_on_request(daemon: Daemon) -> None:
    """The snapshot carries the recent audit only with ?audit=1 (the page's first load)."""
    from tests.tools.session_helpers import own_call

    assert own_call(daemon, "claim", {"resource_key": "k:audit", "ttl": "1m"})["isError"] is False
    cookie = _login(daemon)
    assert "audit" not in json.loads(_get(daemon, "/console/api/state", cookie)[2])
    deadline = time.monotonic() + 60
    events: list[dict[str, object]] = []
    while not events and time.monotonic() < deadline:
        events = json.loads(_get(daemon, "/console/api/state?audit=1", cookie)[2])["audit"]
    assert any(e["type"] == "CLAIM_ACQUIRED" for e in events)


def test_claim_contention_shows_in_waits(daemon: Daemon, claude_bin: Any) -> None:
    """A refused claim shows as "who waits on whom" while the holder keeps the key."""
    from tests.tools.session_helpers import finish, read_results, session_call, spawn_session

    holder = spawn_session(
        daemon, claude_bin, [("claim", {"resource_key": "db:orders"}), ("whoami", {})], hold=True
    )
    try:
        holder_name = read_results(holder)[1]["structuredContent"]["agent"]
        refused = session_call(
            daemon, claude_bin, [("claim", {"resource_key": "db:orders"}), ("whoami", {})]
        )
        assert refused[0]["structuredContent"]["acquired"] is False
        waiter = refused[1]["structuredContent"]["agent"]
        waits = json.loads(_get(daemon, "/console/api/state", _login(daemon))[2])["waits"]
        assert {"waiter": waiter, "on": holder_name, "kind": "claim db:orders"}.items() <= next(
            w for w in waits if w["kind"] == "claim db:orders"
        ).items()
    finally:
        finish(holder)


def test_page_files_and_strict_csp(daemon: Daemon) -> None:
    """The page, an agent's page and the page's script and style sheet are served to a
    logged-in browser under a CSP that allows only the daemon's own files and no inline code;
    without the login they are 401, and a file the page does not have is 404."""
    cookie = _login(daemon)
    for path, kind in (
        ("/console/", "text/html"),
        ("/console/agents/some-agent", "text/html"),
        ("/console/static/app.js", "text/javascript"),
        ("/console/static/app.css", "text/css"),
    ):
        status, headers, body = _get(daemon, path, cookie)
        assert status == 200, path
        assert headers["content-type"].startswith(kind), path
        csp = headers["content-security-policy"]
        assert "default-src 'none'" in csp
        assert "script-src 'self'" in csp
        assert "unsafe-inline" not in csp
        assert headers["x-content-type-options"] == "nosniff"
        assert body
        assert _get(daemon, path)[0] == 401, path
    page = _get(daemon, "/console/", cookie)[2]
    assert b"<script>" not in page  # no inline script: the CSP would refuse it
    assert b"style=" not in page
    assert _get(daemon, "/console/static/other.js", cookie)[0] == 404
    assert _get(daemon, "/console/static/../routes.py", cookie)[0] == 404


def test_repository_grant_needs_a_live_session(daemon: Daemon) -> None:
    """ "Allow for this repository" names a session, whose directory the daemon reads: a name
    with no live session is 404, and nothing is granted."""
    conn = _conn(daemon)
    conn.request(
        "POST",
        "/console/api/approvals",
        body=json.dumps({"rule": "Bash(make:*)", "repo_of": "nobody-9"}).encode(),
        headers={"cookie": _login(daemon), "x-agentcoord": "1"},
    )
    resp = conn.getresponse()
    body = json.loads(resp.read())
    conn.close()
    assert resp.status == 404
    assert "nobody-9" in body["error"]
    assert json.loads(_get(daemon, "/console/api/state", _login(daemon))[2])["approvals"] == []
