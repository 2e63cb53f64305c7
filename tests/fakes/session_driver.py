"""One Claude session's MCP connection and hooks, driven line by line (for session lifetime tests).

Run under the stand-in ``claude`` so the daemon sees a Claude session:
    claude -- python session_driver.py SOCKET
Each stdin line is a JSON command; each answer is one JSON line on stdout:
    {"call": TOOL, "args": {...}}      -> the tools/call result, over the one MCP connection
    {"hook": EVENT, "payload": {...}}  -> {"output": ...} of ``agentcoord hook EVENT``, run as a
                                          child of this process (so under the same ``claude``)
End of stdin closes the connection and exits (the ``claude`` above then exits too).
"""

import itertools
import json
import socket
import subprocess
import sys


def main() -> int:
    sock = socket.socket(socket.AF_UNIX)
    sock.connect(sys.argv[1])
    reader = sock.makefile("rb")
    ids = itertools.count(1)
    for line in sys.stdin:
        cmd = json.loads(line)
        if "call" in cmd:
            req = {
                "jsonrpc": "2.0",
                "id": next(ids),
                "method": "tools/call",
                "params": {"name": cmd["call"], "arguments": cmd.get("args", {})},
            }
            sock.sendall(json.dumps(req).encode() + b"\n")
            answer = json.loads(reader.readline())["result"]
        else:
            done = subprocess.run(
                [sys.executable, "-m", "agentcoord", "hook", cmd["hook"]],
                input=json.dumps(cmd.get("payload", {})),
                capture_output=True,
                text=True,
                timeout=30,
            )
            answer = {"output": done.stdout, "returncode": done.returncode}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()
    sock.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
