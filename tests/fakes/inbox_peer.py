"""A stand-in Claude Code session with a native inbox, for tests of the receipts: installed as
an executable named ``claude``, so the daemon takes the process for a session agent keyed by
its own pid.

It binds ``$XDG_RUNTIME_DIR/cc-socks/<pid>.sock``, writes its registry record
``$CLAUDE_CONFIG_DIR/sessions/<pid>.json`` as Claude Code does, asks the daemon who it is and
prints ``{"agent": NAME}``. Each frame written to its socket is printed as ``{"frame": {...}}``.
Commands on stdin, one JSON line each:

- ``{"receipt": STATUS, "orig": MSG_ID, "to": "uds:PATH"}``: answer that frame with a
  ``peer_message_status`` written to ``to`` (a refusal as Claude Code writes one: ``status:
  expired, status_detail: refused``); prints ``{"receipted": STATUS}``;
- ``{"call": TOOL, "args": {...}}``: call the daemon's tool as this session; prints
  ``{"result": ...}``;
- ``{"exit": true}``: remove the record and socket and exit.
"""

import json
import os
import socket
import sys
import threading
import time

LOCK = threading.Lock()


def say(obj: object) -> None:
    with LOCK:
        sys.stdout.write(json.dumps(obj) + "\n")
        sys.stdout.flush()


def proc_start(pid: int) -> str:
    with open(f"/proc/{pid}/stat") as fh:
        raw = fh.read()
    return raw.rsplit(")", 1)[-1].split()[19]


def call(daemon: str, tool: str, args: dict) -> dict:
    s = socket.socket(socket.AF_UNIX)
    s.connect(daemon)
    req = {"jsonrpc": "2.0", "id": 1, "method": "tools/call"}
    req["params"] = {"name": tool, "arguments": args}
    s.sendall(json.dumps(req).encode() + b"\n")
    reply: dict = json.loads(s.makefile("rb").readline())
    s.close()
    result: dict = reply.get("result", reply)
    return result


def serve(server: socket.socket) -> None:
    while True:
        try:
            conn, _ = server.accept()
        except OSError:
            return
        with conn:
            data = b""
            while chunk := conn.recv(65536):
                data += chunk
        for line in data.splitlines():
            if line.strip():
                say({"frame": json.loads(line)})


def receipt(own: str, status: str, orig: str, to: str) -> None:
    frame = {"type": "control", "action": "peer_message_status", "from": f"uds:{own}"}
    if status == "refused":
        frame.update(status="expired", status_detail="refused")
    else:
        frame["status"] = status
    frame.update(orig_msg_id=orig, reason=f"stand-in says {status}")
    s = socket.socket(socket.AF_UNIX)
    s.connect(to.removeprefix("uds:"))
    s.sendall(json.dumps(frame).encode() + b"\n")
    s.shutdown(socket.SHUT_WR)
    s.settimeout(10)
    s.recv(1)
    s.close()


def main() -> int:
    daemon = sys.argv[1]
    pid = os.getpid()
    socks = os.path.join(os.environ["XDG_RUNTIME_DIR"], "cc-socks")
    os.makedirs(socks, mode=0o700, exist_ok=True)
    path = os.path.join(socks, f"{pid}.sock")
    server = socket.socket(socket.AF_UNIX)
    server.bind(path)
    os.chmod(path, 0o600)
    server.listen(16)
    threading.Thread(target=serve, args=(server,), daemon=True).start()
    sessions = os.path.join(os.environ["CLAUDE_CONFIG_DIR"], "sessions")
    os.makedirs(sessions, mode=0o700, exist_ok=True)
    now = int(time.time() * 1000)
    record = {
        "pid": pid,
        "sessionId": f"stand-in-{pid}",
        "cwd": os.getcwd(),
        "startedAt": now,
        "procStart": proc_start(pid),
        "version": "stand-in",
        "peerProtocol": 1,
        "peerFeatures": ["notify_idle"],
        "kind": "interactive",
        "entrypoint": "cli",
        "messagingSocketPath": path,
        "status": "idle",
        "updatedAt": now,
    }
    recpath = os.path.join(sessions, f"{pid}.json")
    with open(recpath, "w") as fh:
        json.dump(record, fh)
    say({"agent": call(daemon, "whoami", {})["structuredContent"]["agent"]})
    for line in sys.stdin:
        cmd = json.loads(line)
        if "receipt" in cmd:
            receipt(path, cmd["receipt"], cmd["orig"], cmd["to"])
            say({"receipted": cmd["receipt"]})
        elif "call" in cmd:
            say({"result": call(daemon, cmd["call"], cmd.get("args", {}))})
        elif cmd.get("exit"):
            break
    os.unlink(recpath)
    server.close()
    os.unlink(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
