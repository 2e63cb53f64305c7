"""A Claude session's tool calls that outlive daemon restarts: one connection per call.

Run under the stand-in ``claude`` (the session is that process, so its claims stay bound to
it across daemon restarts):  claude -- python reconnecting_session.py SOCKET
Each stdin line is ``{"call": TOOL, "args": {...}}``; each answer is one stdout line: the
tools/call result, or ``{"unreachable": "<why>"}`` when the daemon was down or died before it
answered (the call's effect is then unknown).
"""

import json
import socket
import sys


def call(path: str, name: str, arguments: dict) -> dict:
    req = {"jsonrpc": "2.0", "id": 1, "method": "tools/call"}
    req["params"] = {"name": name, "arguments": arguments}
    try:
        with socket.socket(socket.AF_UNIX) as sock:
            sock.settimeout(20)
            sock.connect(path)
            sock.sendall(json.dumps(req).encode() + b"\n")
            line = sock.makefile("rb").readline()
    except OSError as exc:
        return {"unreachable": repr(exc)}
    if not line:
        return {"unreachable": "connection closed before the answer"}
    return json.loads(line)["result"]  # type: ignore[no-any-return]


def main() -> int:
    for line in sys.stdin:
        cmd = json.loads(line)
        sys.stdout.write(json.dumps(call(sys.argv[1], cmd["call"], cmd.get("args", {}))) + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
