"""A process that writes raw bytes to a Claude Code peer socket, for tests of what the daemon
accepts there. With --whoami it first asks the daemon who it is over the daemon's unix socket
(under a stand-in ``claude`` that makes it a session agent).

Usage: python peer_writer.py [--whoami DAEMON_SOCKET] TARGET_SOCKET < PAYLOAD
Prints {"agent": <whoami agent or null>, "error": <text or null>} as one JSON line.
"""

import json
import socket
import sys


def whoami(path: str) -> str:
    s = socket.socket(socket.AF_UNIX)
    s.connect(path)
    req = {"jsonrpc": "2.0", "id": 1, "method": "tools/call"}
    req["params"] = {"name": "whoami", "arguments": {}}
    s.sendall(json.dumps(req).encode() + b"\n")
    reply = json.loads(s.makefile("rb").readline())
    s.close()
    return str(reply["result"]["structuredContent"]["agent"])


def main() -> int:
    args = sys.argv[1:]
    agent = None
    if args[:1] == ["--whoami"]:
        agent, args = whoami(args[1]), args[2:]
    payload = sys.stdin.buffer.read()
    error = None
    try:
        s = socket.socket(socket.AF_UNIX)
        s.connect(args[0])
        s.sendall(payload)
        s.shutdown(socket.SHUT_WR)
        s.settimeout(10)
        s.recv(1)  # the daemon closes once it has read (or cut off) the connection
        s.close()
    except OSError as exc:
        error = str(exc)
    print(json.dumps({"agent": agent, "error": error}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
