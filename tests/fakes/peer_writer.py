"""A process that writes raw bytes to a Claude Code peer socket, for tests of what the daemon
accepts there. With --whoami it first asks the daemon who it is over the daemon's unix socket
(under a stand-in ``claude`` that makes it a session agent).

Usage: python peer_writer.py [--whoami DAEMON_SOCKET [--call TOOL ARGS_JSON]] TARGET < PAYLOAD
TARGET is a socket path, or ``record:NAME``: the socket of the registry record named NAME in
$CLAUDE_CONFIG_DIR/sessions (waited for up to 60 s). --call makes one tool call first, as the
same process. Prints {"agent": <whoami agent or null>, "error": <text or null>} as one line.
"""

import json
import os
import socket
import sys
import time


def call(path: str, tool: str, args: dict) -> dict:
    s = socket.socket(socket.AF_UNIX)
    s.connect(path)
    req = {"jsonrpc": "2.0", "id": 1, "method": "tools/call"}
    req["params"] = {"name": tool, "arguments": args}
    s.sendall(json.dumps(req).encode() + b"\n")
    reply: dict = json.loads(s.makefile("rb").readline())
    s.close()
    result: dict = reply["result"]
    return result


def whoami(path: str) -> str:
    return str(call(path, "whoami", {})["structuredContent"]["agent"])


def record_socket(name: str) -> str:
    folder = os.path.join(os.environ["CLAUDE_CONFIG_DIR"], "sessions")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        for entry in os.listdir(folder) if os.path.isdir(folder) else []:
            try:
                with open(os.path.join(folder, entry)) as fh:
                    data = json.load(fh)
            except (OSError, ValueError):
                continue
            if isinstance(data, dict) and data.get("name") == name:
                return str(data["messagingSocketPath"])
        time.sleep(0.05)
    raise SystemExit(f"no record named {name!r}")


def main() -> int:
    args = sys.argv[1:]
    agent = None
    if args[:1] == ["--whoami"]:
        daemon = args[1]
        agent, args = whoami(daemon), args[2:]
        if args[:1] == ["--call"]:
            out = call(daemon, args[1], json.loads(args[2]))
            if out.get("isError"):
                raise SystemExit(f"{args[1]} failed: {out}")
            args = args[3:]
    target = args[0]
    if target.startswith("record:"):
        target = record_socket(target[len("record:") :])
    payload = sys.stdin.buffer.read()
    error = None
    try:
        s = socket.socket(socket.AF_UNIX)
        s.connect(target)
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
