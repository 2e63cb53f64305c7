"""A stand-in for ``claude -p``: accepts the real headless flags, talks MCP to the servers in
``--mcp-config`` (the agentcoord shim), and prints the real result JSON on stdout.

Usage: claude -p PROMPT --output-format json --mcp-config FILE --strict-mcp-config
              --permission-mode MODE --allowedTools TOOLS --max-turns N

The prompt is a script, one command per line, whose outputs become ``result`` (a JSON string):
  whoami            call the ``whoami`` tool through the shim
  write PATH        try to write PATH; reports "ok" or the error
  ps                the pids and names this process can see in /proc
  sleep SECONDS     sleep (for timeouts and die-with-parent)
  is_error          finish with is_error true and exit 0 (as API errors do)
  crash             exit 3 without any result JSON
  answer TEXT       the final answer (``result``) is TEXT instead of the JSON report
  ask AGENT REST    call ``ask`` (agent AGENT, text REST); the answer becomes ours, or
                    "error: <message>" when the tool fails
  send AGENT REST   call ``send_message``
  history           how many earlier prompts this session's transcript holds
With ``--session-id UUID`` or ``--resume ID`` the session is that one; ``--resume`` of a
session without a transcript fails as the real CLI does. Each run appends the prompt and the
answer to ``$CLAUDE_CONFIG_DIR/projects/<cwd, non-alphanumerics as '-'>/<session>.jsonl``.
Unknown flags exit 2, as the real CLI does, so a test fails when the daemon passes wrong ones.
"""

import json
import os
import subprocess
import sys
import time
import uuid

VALUE_FLAGS = {
    "--output-format",
    "--mcp-config",
    "--permission-mode",
    "--allowedTools",
    "--max-turns",
    "--resume",
    "--session-id",
}
BOOL_FLAGS = {"-p", "--print", "--strict-mcp-config"}


def parse(argv):
    flags, prompt, i = {}, None, 0
    while i < len(argv):
        arg = argv[i]
        if arg in BOOL_FLAGS:
            flags[arg] = True
        elif arg in VALUE_FLAGS:
            flags[arg] = argv[i + 1]
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
    return flags, prompt or ""


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


def main():
    flags, prompt = parse(sys.argv[1:])
    if flags.get("--output-format") != "json" or not (flags.get("-p") or flags.get("--print")):
        sys.stderr.write("this stand-in only does -p --output-format json\n")
        return 2
    started = time.monotonic()
    out = {"cwd": os.getcwd(), "flags": flags}
    is_error = False
    answer = None
    session_id = flags.get("--resume") or flags.get("--session-id") or str(uuid.uuid4())
    transcript = transcript_path(session_id)
    if flags.get("--resume") and not os.path.exists(transcript):
        sys.stderr.write(f"No conversation found with session ID: {session_id}\n")
        return 1
    for line in prompt.strip().splitlines():
        cmd, _, arg = line.strip().partition(" ")
        if cmd == "whoami":
            out["whoami"] = mcp_call(flags["--mcp-config"], "whoami", {})
        elif cmd == "write":
            try:
                with open(arg, "w") as fh:
                    fh.write("x")
                out.setdefault("write", {})[arg] = "ok"
            except OSError as exc:
                out.setdefault("write", {})[arg] = exc.strerror
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
            return 3
    result = {
        "type": "result",
        "subtype": "error_during_execution" if is_error else "success",
        "is_error": is_error,
        "result": json.dumps(out) if answer is None else answer,
        "session_id": session_id,
        "total_cost_usd": 0.0,
        "num_turns": 1,
        "duration_ms": int((time.monotonic() - started) * 1000),
        "usage": {"input_tokens": 0, "output_tokens": 0},
    }
    append_transcript(transcript, session_id, prompt, result["result"])
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
