"""A stand-in ``claude`` process: runs a command as its child, so the child's ancestry has a
process whose name is ``claude`` (tests install this file as an executable named ``claude``).

Usage: claude [--session-file ID [--session-name NAME]] -- CMD [ARGS...]
With --session-file, writes $CLAUDE_CONFIG_DIR/sessions/<pid>.json as Claude Code does, with
``name`` NAME when given (Claude Code's own name for the session).
"""

import json
import os
import subprocess
import sys
import time


def main() -> int:
    args = sys.argv[1:]
    session = None
    if args[:1] == ["--session-file"]:
        session, args = args[1], args[2:]
    name = None
    if args[:1] == ["--session-name"]:
        name, args = args[1], args[2:]
    if args[:1] == ["--"]:
        args = args[1:]
    if session is not None:
        sessions = os.path.join(os.environ["CLAUDE_CONFIG_DIR"], "sessions")
        os.makedirs(sessions, exist_ok=True)
        record = {
            "pid": os.getpid(),
            "sessionId": session,
            "cwd": os.getcwd(),
            "startedAt": int(time.time() * 1000),
        }
        if name is not None:
            record["name"] = name
        with open(os.path.join(sessions, f"{os.getpid()}.json"), "w") as fh:
            json.dump(record, fh)
    return subprocess.call(args)


if __name__ == "__main__":
    sys.exit(main())
