"""MCP streamable-HTTP transport rules, each asserted on the wire with a plain HTTP client."""

from __future__ import annotations

import http.client
import json
from typing import Any

import pytest

from tests.conftest import Daemon
from tests.tools.session_helpers import human_token

INIT: dict[str, Any] = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t"}},
}


def _bearer(d: Daemon) -> dict[str, str]:
    """The header that makes an HTTP caller the human (docs/security.md "Who a caller is")."""
    return {"authorization": f"Bearer {human_token(d)}"}


def post(
    d: Daemon, body: Any, headers: dict[str, str] | None = None, raw: bytes | None = None
) -> tuple[int, dict[str, str], bytes]:
    host, port = d.http_addr.rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    hdrs = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
    hdrs.update(headers or {})
    conn.request("POST", "/mcp", body=raw if raw is not None else json.dumps(body), headers=hdrs)
    resp = conn.getresponse()
    data = resp.read()
    conn.close()
    return resp.status, {k.lower(): v for k, v in resp.getheaders()}, data


def human_post(
    d: Daemon, body: Any, headers: dict[str, str] | None = None, raw: bytes | None = None
) -> tuple[int, dict[str, str], bytes]:
    """:func:`post` as the human: the transport rules below are judged, not the caller."""
    return post(d, body, {**_bearer(d), **(headers or {})}, raw)


def request(d: Daemon, method: str, headers: dict[str, str] | None = None) -> int:
    """``method`` /mcp as the human (the bearer human token)."""
    host, port = d.http_addr.rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    conn.request(method, "/mcp", headers={**_bearer(d), **(headers or {})})
    status = conn.getresponse().status
    conn.close()
    return status


def test_initialize_issues_session_id_and_negotiates(daemon: Daemon) -> None:
    """initialize answers 200 with Mcp-Session-Id and echoes a supported protocol version."""
    status, headers, body = human_post(daemon, INIT)
    assert status == 200
    assert len(headers["mcp-session-id"]) >= 16
    result = json.loads(body)["result"]
    assert result["protocolVersion"] == "2025-06-18"
    assert result["serverInfo"]["name"] == "agent-coord"


def test_unknown_protocol_version_in_initialize_gets_latest(daemon: Daemon) -> None:
    """An unknown protocolVersion in initialize is answered with our latest, not an error."""
    body = dict(INIT, params=dict(INIT["params"], protocolVersion="1999-01-01"))
    _, _, data = human_post(daemon, body)
    assert json.loads(data)["result"]["protocolVersion"] == "2025-11-25"


def test_notification_only_gets_202(daemon: Daemon) -> None:
    """A body of only notifications is accepted with 202 and no body."""
    status, _, body = human_post(daemon, {"jsonrpc": "2.0", "method": "notifications/initialized"})
    assert (status, body) == (202, b"")


def test_batch_answers_each_request(daemon: Daemon) -> None:
    """A batch gets an array with one reply per request (none for the notification)."""
    batch = [
        {"jsonrpc": "2.0", "id": "a", "method": "ping"},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": "b", "method": "nope/nope"},
    ]
    status, _, body = human_post(daemon, batch)
    replies = {r["id"]: r for r in json.loads(body)}
    assert status == 200
    assert replies["a"]["result"] == {}
    assert replies["b"]["error"]["code"] == -32601


def test_unknown_session_id_is_404_and_missing_is_tolerated(daemon: Daemon) -> None:
    """An unknown Mcp-Session-Id is 404; a request without one still works."""
    ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
    assert human_post(daemon, ping, {"mcp-session-id": "deadbeef"})[0] == 404
    status, _, body = human_post(daemon, ping)
    assert status == 200
    assert json.loads(body)["result"] == {}


def test_session_delete_then_404(daemon: Daemon) -> None:
    """DELETE ends a session; the id is then unknown (404)."""
    _, headers, _ = human_post(daemon, INIT)
    sid = headers["mcp-session-id"]
    ping = {"jsonrpc": "2.0", "id": 3, "method": "ping"}
    assert human_post(daemon, ping, {"mcp-session-id": sid})[0] == 200
    assert request(daemon, "DELETE", {"mcp-session-id": sid}) == 204
    assert human_post(daemon, ping, {"mcp-session-id": sid})[0] == 404
    assert request(daemon, "DELETE", {"mcp-session-id": sid}) == 404


def test_get_is_405(daemon: Daemon) -> None:
    """GET /mcp is 405: the server offers no server-initiated stream."""
    assert request(daemon, "GET") == 405


@pytest.mark.parametrize(
    "headers",
    [
        {"origin": "http://evil.example"},
        {"origin": "null"},
        {"origin": "http://127.0.0.1.evil.example:80"},
        {"host": "evil.example"},
        {"host": "attacker.test:7420"},
    ],
)
def test_foreign_origin_or_host_is_403(daemon: Daemon, headers: dict[str, str]) -> None:
    """DNS-rebinding protection: a non-loopback Origin or Host gets 403."""
    assert human_post(daemon, {"jsonrpc": "2.0", "id": 1, "method": "ping"}, headers)[0] == 403


def test_loopback_origin_allowed(daemon: Daemon) -> None:
    """A loopback Origin (any port) is accepted."""
    status, _, _ = human_post(
        daemon, {"jsonrpc": "2.0", "id": 1, "method": "ping"}, {"origin": "http://localhost:3000"}
    )
    assert status == 200


def test_protocol_version_header(daemon: Daemon) -> None:
    """A known MCP-Protocol-Version header is accepted, an unknown one is 400."""
    ping = {"jsonrpc": "2.0", "id": 4, "method": "ping"}
    assert human_post(daemon, ping, {"mcp-protocol-version": "2025-03-26"})[0] == 200
    status, _, body = human_post(daemon, ping, {"mcp-protocol-version": "2031-01-01"})
    assert status == 400
    assert "Unsupported MCP-Protocol-Version" in json.loads(body)["error"]["message"]


def test_oversize_body_is_413_with_jsonrpc_error(daemon: Daemon) -> None:
    """A body over the size limit is refused with 413 and a JSON-RPC error body."""
    big = b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"' + b"a" * (5 << 20) + b'"}}'
    status, _, body = human_post(daemon, None, raw=big)
    assert status == 413
    assert json.loads(body)["error"]["code"] == -32600
    assert daemon.healthz() == (200, "ok")


def test_wrong_content_type_is_415(daemon: Daemon) -> None:
    """POST with a non-JSON content type is 415."""
    status, _, _ = human_post(daemon, None, {"content-type": "text/plain"}, raw=b"{}")
    assert status == 415


def test_parse_error_is_400_with_jsonrpc_error(daemon: Daemon) -> None:
    """Malformed JSON gets HTTP 400 carrying a -32700 JSON-RPC error."""
    status, _, body = human_post(daemon, None, raw=b'{"jsonrpc": "2.0", "id": 1, "method": ')
    assert status == 400
    assert json.loads(body)["error"]["code"] == -32700


def test_unknown_tool_is_32602_and_unknown_method_32601(daemon: Daemon) -> None:
    """Unknown tool -> -32602; unknown method -> -32601 (answered at once, before initialize)."""
    call = {"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "nope"}}
    assert json.loads(human_post(daemon, call)[2])["error"]["code"] == -32602
    disc = {"jsonrpc": "2.0", "id": 6, "method": "server/discover", "params": {}}
    assert json.loads(human_post(daemon, disc)[2])["error"]["code"] == -32601


def test_tool_wrong_argument_type_is_error_result(daemon: Daemon) -> None:
    """A bad argument is an isError result with a clear text, not a protocol error."""
    call = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {"name": "whoami", "arguments": "not-an-object"},
    }
    result = json.loads(human_post(daemon, call)[2])["result"]
    assert result["isError"] is True
    assert "must be an object" in result["content"][0]["text"]


def test_tools_list_paginates(daemon_factory: Any, tmp_path: Any) -> None:
    """With a page size of 1, tools/list pages with nextCursor until every tool is seen."""
    cfg = tmp_path / "small-pages.toml"
    cfg.write_text("tools_page_size = 1\n")
    d = daemon_factory("paged", AGENTCOORD_CONFIG=str(cfg)).start()
    seen: list[str] = []
    cursor = None
    for _ in range(100):
        params: dict[str, Any] = {"cursor": cursor} if cursor else {}
        reply = json.loads(
            human_post(d, {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": params})[2]
        )
        page = reply["result"]["tools"]
        assert len(page) == 1
        seen.extend(t["name"] for t in page)
        cursor = reply["result"].get("nextCursor")
        if cursor is None:
            break
    assert "whoami" in seen
    assert len(seen) == len(set(seen))
    bad = {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {"cursor": "zz"}}
    assert json.loads(human_post(d, bad)[2])["error"]["code"] == -32602
