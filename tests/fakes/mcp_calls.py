"""An MCP client process for tests: connects to the daemon's unix socket, optionally waits for
a start file (so several processes race), makes tool calls and prints their results as one
JSON line. With --hold it then stays alive until killed (a claim holder that can "crash").

Usage: python mcp_calls.py SOCKET [--go FILE] [--hold] CALLS_JSON
CALLS_JSON is a list of [tool, arguments]; the output is the list of tools/call results.
"""

import json
import os
import socket
import sys
import time


def main() -> int:
    args = sys.argv[1:]
    sock_path, args = args[0], args[1:]
    go = None
    hold = False
    while args and args[0].startswith("--"):
        if args[0] == "--go":
            go, args = args[1], args[2:]
        elif args[0] == "--hold":
            hold, args = True, args[1:]
    calls = json.loads(args[0])
    s = socket.socket(socket.AF_UNIX)
    s.connect(sock_path)
    reader = s.makefile("rb")
    while go is not None and not os.path.exists(go):
        time.sleep(0.001)
    results = []
    for i, (name, arguments) in enumerate(calls):
        req = {"jsonrpc": "2.0", "id": i, "method": "tools/call"}
        req["params"] = {"name": name, "arguments": arguments}
        s.sendall(json.dumps(req).encode() + b"\n")
        results.append(json.loads(reader.readline())["result"])
    print(json.dumps(results), flush=True)
    while hold:
        time.sleep(3600)
    return 0


if __name__ == "__main__":
    sys.exit(main())
