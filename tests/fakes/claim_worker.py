"""A claim stress worker for tests and the stress bench: makes ATTEMPTS claim calls on random
keys over the daemon's unix socket, releases every grant at once, and prints one JSON line per
attempt with CLOCK_MONOTONIC times (comparable across processes on Linux). Once connected
and identified it creates GO_FILE.ready-SEED, then waits for GO_FILE to start.

Usage: python claim_worker.py SOCKET GO_FILE ATTEMPTS KEYS SEED
"""

import json
import os
import random
import socket
import sys
import time


def main() -> int:
    sock_path, go, attempts, keys, seed = sys.argv[1:6]
    rng = random.Random(int(seed))
    s = socket.socket(socket.AF_UNIX)
    s.connect(sock_path)
    reader = s.makefile("rb")
    out = sys.stdout
    n = 0

    def call(name, arguments):
        nonlocal n
        n += 1
        req = {"jsonrpc": "2.0", "id": n, "method": "tools/call"}
        req["params"] = {"name": name, "arguments": arguments}
        s.sendall(json.dumps(req).encode() + b"\n")
        return json.loads(reader.readline())["result"]

    me = call("whoami", {})["structuredContent"]["agent"]
    open(f"{go}.ready-{seed}", "x").close()  # a signal to the test: connected, identified
    while not os.path.exists(go):
        time.sleep(0.001)
    for _ in range(int(attempts)):
        key = f"k{rng.randrange(int(keys))}"
        mode = "read" if rng.random() < 0.3 else "write"
        sent = time.monotonic()
        res = call("claim", {"resource_key": key, "mode": mode, "ttl": "1m"})
        got = time.monotonic()
        rec = {"agent": me, "key": key, "mode": mode, "sent": sent, "got": got}
        if res.get("isError"):
            rec["error"] = res["content"][0]["text"]
        elif res["structuredContent"]["acquired"]:
            token = res["structuredContent"]["token"]
            rec.update(acquired=True, token=token, release_sent=time.monotonic())
            rel = call("release", {"resource_key": key, "token": token})
            rec["released"] = (rel.get("structuredContent") or {}).get("released")
            if rel.get("isError"):  # keep the reason: a failed release must be explainable
                rec["release_error"] = rel["content"][0]["text"]
        else:
            holder = res["structuredContent"]["holder"]
            rec.update(acquired=False, holder=holder["agent"], holder_token=holder["token"])
        out.write(json.dumps(rec) + "\n")
    out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
