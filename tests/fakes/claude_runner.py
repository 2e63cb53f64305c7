"""A stand-in for ``claude -p``: accepts the real headless flags, talks MCP to the servers in
``--mcp-config`` (the agentcoord shim), and prints the real result JSON on stdout.

Usage: claude -p [PROMPT] [--input-format stream-json] --output-format json|stream-json
              [--verbose] --mcp-config FILE --strict-mcp-config --permission-mode MODE
              --allowedTools TOOLS --max-turns N [--disallowedTools T] [--model M]
              [--max-budget-usd X] [--append-system-prompt TEXT] [--add-dir DIR ...]

With ``--input-format stream-json`` every stdin line ``{"type": "user", "message": {...}}`` is a
turn, and each turn ends with a result line; end of stdin ends the process (exit 0).

A turn's prompt is a script, one command per line, whose outputs become ``result`` (JSON text);
``prompt`` (the turn's whole text) and ``turn`` (its number) are always included:
  whoami            call the ``whoami`` tool through the agent-coord server
  call TOOL JSON    call any tool through agent-coord; records its result or its error text
  setenv K V        set an environment variable (seen by MCP servers started afterwards)
  mcp_config        the MCP config file it was given, parsed
  env               AGENT_ID, AGENT_INBOX_SUBJECT, AGENT_STATUS_SUBJECT, MCP_SERVERS
  net               the network interfaces it can see
  write PATH        try to write PATH; reports "ok" or the error
  read PATH         try to read PATH; reports its first 200 characters or the error
  run ARGV...       run a command (shell words); reports its exit code and output
                    (stdout and stderr, first 4000 characters each) under ``run``
  touch PATH        create PATH (a signal to the test)
  wait_file PATH    wait (up to 60 s) until PATH exists
  ps                the pids and names this process can see in /proc
  sleep SECONDS     sleep (for timeouts and die-with-parent)
  is_error          finish with is_error true and exit 0 (as API errors do)
  crash             exit 3 without any result JSON
  answer TEXT       the final answer (``result``) is TEXT instead of the JSON report
  cost USD          the turn's ``total_cost_usd`` (0.0 otherwise)
  ask AGENT REST    call ``ask`` (agent AGENT, text REST); the answer becomes ours, or
                    "error: <message>" when the tool fails
  send AGENT REST   call ``send_message``
  history           how many earlier prompts this session's transcript holds
With ``--session-id UUID`` or ``--resume ID`` the session is that one; ``--resume`` of a
session without a transcript fails as the real CLI does. Each turn appends the prompt and the
answer to ``$CLAUDE_CONFIG_DIR/projects/<cwd, non-alphanumerics as '-'>/<session>.jsonl``.
Unknown flags exit 2, as the real CLI does, so a test fails when the daemon passes wrong ones.
"""

import json
import os
import socket
import subprocess
import sys
import time
import uuid
from typing import Any

VALUE_FLAGS = {
    "--output-format",
    "--input-format",
    "--mcp-config",
    "--permission-mode",
    "--allowedTools",
    "--disallowedTools",
    "--max-turns",
    "--model",
    "--max-budget-usd",
    "--append-system-prompt",
    "--resume",
    "--session-id",
}
LIST_FLAGS = {"--add-dir"}
BOOL_FLAGS = {"-p", "--print", "--strict-mcp-config", "--verbose"}
SESSION = str(uuid.uuid4())  # replaced in main() by --resume / --session-id


def parse(argv):
    flags: dict[str, Any] = {}
    prompt, i = None, 0
    while i < len(argv):
        arg = argv[i]
        if arg in BOOL_FLAGS:
            flags[arg] = True
        elif arg in VALUE_FLAGS:
            flags[arg] = argv[i + 1]
            i += 1
        elif arg in LIST_FLAGS:
            flags.setdefault(arg, []).append(argv[i + 1])
            i += 1
        elif arg.startswith("-"):
            sys.stderr.write(f"error: unknown option '{arg}'\n")
            sys.exit(2)
        elif prompt is None:
            prompt = arg
        else:
            sys.stderr.write(f"error: unexpected argument '{arg}'\n")
            sys.exit(2)
        i += 1
    return flags, prompt


def mcp_call(config_file, tool, arguments):
    with open(config_file) as fh:
        server = json.load(fh)["mcpServers"]["agent-coord"]
    env = dict(os.environ)
    env.update(server.get("env", {}))
    proc = subprocess.Popen(
        [server["command"], *server.get("args", [])],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=env,
    )
    msgs = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "claude-code", "version": "0"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": tool, "arguments": arguments},
        },
    ]
    assert proc.stdin is not None  # both are PIPEs
    assert proc.stdout is not None
    for msg in msgs:
        proc.stdin.write((json.dumps(msg) + "\n").encode())
    proc.stdin.flush()
    answer = None
    for line in proc.stdout:
        reply = json.loads(line)
        if reply.get("id") == 2:
            answer = reply
            break
    proc.stdin.close()
    proc.wait(5)
    assert answer is not None, "the MCP server closed before answering tools/call"
    result = answer["result"]
    if result.get("isError"):
        return {"error": result["content"][0]["text"]}
    return result.get("structuredContent", result)


def transcript_path(session_id):
    import re

    home = os.environ.get("CLAUDE_CONFIG_DIR") or os.path.expanduser("~/.claude")
    project = re.sub(r"[^A-Za-z0-9]", "-", os.getcwd())
    return os.path.join(home, "projects", project, f"{session_id}.jsonl")


def earlier_prompts(path):
    try:
        with open(path) as fh:
            return sum(1 for line in fh if json.loads(line).get("type") == "user")
    except OSError:
        return 0


def append_transcript(path, session_id, prompt, answer):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    lines = [
        {
            "type": "user",
            "sessionId": session_id,
            "cwd": os.getcwd(),
            "message": {"role": "user", "content": prompt},
        },
        {
            "type": "assistant",
            "sessionId": session_id,
            "cwd": os.getcwd(),
            "message": {
                "role": "assistant",
                "stop_reason": "end_turn",
                "content": [{"type": "text", "text": answer}],
            },
        },
    ]
    with open(path, "a") as fh:
        for line in lines:
            fh.write(json.dumps(line) + "\n")


def run_turn(flags, prompt, turn):
    """Run one turn's script; returns (result dict, exit code or None to go on)."""
    started = time.monotonic()
    out = {"cwd": os.getcwd(), "flags": flags, "prompt": prompt, "turn": turn}
    is_error = False
    answer = None
    cost = 0.0
    transcript = transcript_path(SESSION)
    for line in prompt.strip().splitlines():
        cmd, _, arg = line.strip().partition(" ")
        if cmd == "whoami":
            out["whoami"] = mcp_call(flags["--mcp-config"], "whoami", {})
        elif cmd == "call":
            tool, _, raw = arg.partition(" ")
            out.setdefault("calls", []).append(
                mcp_call(flags["--mcp-config"], tool, json.loads(raw or "{}"))
            )
        elif cmd == "setenv":
            key, _, value = arg.partition(" ")
            os.environ[key] = value
        elif cmd == "mcp_config":
            with open(flags["--mcp-config"]) as fh:
                out["mcp_config"] = json.load(fh)
        elif cmd == "env":
            names = ("AGENT_ID", "AGENT_INBOX_SUBJECT", "AGENT_STATUS_SUBJECT", "MCP_SERVERS")
            out["env"] = {k: os.environ.get(k) for k in names}
        elif cmd == "net":
            out["net"] = sorted(name for _, name in socket.if_nameindex())
        elif cmd == "write":
            try:
                with open(arg, "w") as fh:
                    fh.write("x")
                out.setdefault("write", {})[arg] = "ok"
            except OSError as exc:
                out.setdefault("write", {})[arg] = exc.strerror
        elif cmd == "read":
            try:
                with open(arg, errors="replace") as fh:
                    out.setdefault("read", {})[arg] = {"ok": fh.read(200)}
            except OSError as exc:
                out.setdefault("read", {})[arg] = {"error": exc.strerror}
        elif cmd == "run":
            import shlex

            try:
                done = subprocess.run(shlex.split(arg), capture_output=True, text=True, timeout=60)
                got = {"rc": done.returncode, "out": done.stdout[:4000], "err": done.stderr[:4000]}
            except (OSError, subprocess.TimeoutExpired) as exc:
                got = {"rc": None, "out": "", "err": str(exc)}
            out.setdefault("run", []).append({"argv": arg, **got})
        elif cmd == "touch":
            with open(arg, "w"):
                pass
        elif cmd == "wait_file":
            deadline = time.monotonic() + 60
            while not os.path.exists(arg) and time.monotonic() < deadline:
                time.sleep(0.02)
        elif cmd == "ps":
            seen = {}
            for name in os.listdir("/proc"):
                if name.isdigit():
                    try:
                        with open(f"/proc/{name}/cmdline", "rb") as fh:
                            seen[name] = fh.read().replace(b"\0", b" ").decode().strip()
                    except OSError:
                        pass
            out["ps"] = seen
        elif cmd == "sleep":
            time.sleep(float(arg))
        elif cmd == "is_error":
            is_error = True
        elif cmd == "answer":
            answer = arg
        elif cmd == "cost":
            cost = float(arg)
        elif cmd in ("ask", "send"):
            target, _, rest = arg.partition(" ")
            tool = "ask" if cmd == "ask" else "send_message"
            got = mcp_call(flags["--mcp-config"], tool, {"agent": target, "text": rest})
            out.setdefault(cmd, []).append(got)
            if cmd == "ask":
                answer = f"error: {got['error']}" if "error" in got else got.get("answer")
        elif cmd == "history":
            out["history"] = earlier_prompts(transcript)
        elif cmd == "crash":
            sys.stderr.write("stand-in crashed on purpose\n")
            return None, 3
    result = {
        "type": "result",
        "subtype": "error_during_execution" if is_error else "success",
        "is_error": is_error,
        "result": json.dumps(out) if answer is None else answer,
        "session_id": SESSION,
        "total_cost_usd": cost,
        "num_turns": 1,
        "duration_ms": int((time.monotonic() - started) * 1000),
        "usage": {"input_tokens": 0, "output_tokens": 0},
    }
    append_transcript(transcript, SESSION, prompt, result["result"])
    return result, None


def emit(value):
    sys.stdout.write(json.dumps(value) + "\n")
    sys.stdout.flush()


def main():
    global SESSION
    flags, prompt = parse(sys.argv[1:])
    SESSION = flags.get("--resume") or flags.get("--session-id") or SESSION
    if flags.get("--resume") and not os.path.exists(transcript_path(SESSION)):
        sys.stderr.write(f"No conversation found with session ID: {SESSION}\n")
        return 1
    output = flags.get("--output-format")
    if not (flags.get("-p") or flags.get("--print")) or output not in ("json", "stream-json"):
        sys.stderr.write("this stand-in only does -p with --output-format json|stream-json\n")
        return 2
    if output == "stream-json" and not flags.get("--verbose"):
        sys.stderr.write("Error: --output-format=stream-json requires --verbose\n")
        return 2
    if flags.get("--input-format") == "stream-json":
        if prompt is not None:
            sys.stderr.write("error: no prompt argument with --input-format stream-json\n")
            return 2
        if output != "stream-json":
            sys.stderr.write("Error: --input-format=stream-json requires stream-json output\n")
            return 2
        emit({"type": "system", "subtype": "init", "session_id": SESSION})
        turn = 0
        for line in sys.stdin:
            if not line.strip():
                continue
            msg = json.loads(line)
            if msg.get("type") != "user":
                sys.stderr.write(f"error: unexpected input line {line!r}\n")
                return 2
            content = msg["message"]["content"]
            if isinstance(content, list):
                content = "".join(c.get("text", "") for c in content)
            turn += 1
            result, code = run_turn(flags, content, turn)
            if code is not None:
                return code
            emit(result)
        return 0
    result, code = run_turn(flags, prompt or "", 1)
    if code is not None:
        return code
    emit(result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
