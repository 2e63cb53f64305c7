"""Human CLI views: ``agentcoord agents | claims | channels | audit | tail | prompts | answer |
profiles``.

Each view calls the daemon's own tools over the unix socket (so the daemon decides who is
asking) and prints a readable table, or the structured result with ``--json`` (the tool's
``structuredContent`` as is: the same field names an MCP client gets). An empty view prints a
one-line hint of what would fill it, on stderr, as kubectl says "No resources found": a pipe
gets no rows and no header.
"""

from __future__ import annotations

import json
import sys
import textwrap
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from agentcoord.client.rpc import START_HINT, call_unix
from agentcoord.errors import AgentCoordError, DaemonUnreachable, IdentityError, ToolError
from agentcoord.identity.humanproof import agent_markers, marked_refusal, read_human_token
from agentcoord.kernel.config import Config
from agentcoord.kernel.timetext import human_time
from agentcoord.leases.keytext import display_key
from agentcoord.text.events import render_event

__all__ = [
    "CELL_WIDTH",
    "VIEWS",
    "answer",
    "answer_text",
    "call_tool",
    "empty_hint",
    "format_table",
    "run_view",
    "tail",
]

CELL_WIDTH = 60  # characters a table cell takes before it wraps onto the row's next line


def call_tool(cfg: Config, name: str, arguments: dict[str, Any]) -> tuple[Any, str]:
    """One tool call as the human (presenting the human token; the daemon decides whether
    this process may be the human); raises ToolError on an ``isError`` result."""
    result = call_unix(
        cfg.socket_path,
        "tools/call",
        {"name": name, "arguments": arguments},
        token=read_human_token(cfg.state_dir),
    )
    text = "\n".join(c.get("text", "") for c in result.get("content", []))
    if result.get("isError"):
        raise ToolError(text)
    return result.get("structuredContent"), text


def format_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """Left-aligned columns, two spaces apart; a cell longer than :data:`CELL_WIDTH` wraps
    onto the row's next lines at its spaces (never cut: a question or a key is read whole)."""
    cells = [[_cell(v) for v in row] for row in rows]
    widths = [len(h) for h in headers]
    for row in cells:
        for i, value in enumerate(row):
            widths[i] = max(widths[i], *(len(line) for line in value))
    lines = ["  ".join(h.upper().ljust(w) for h, w in zip(headers, widths, strict=True))]
    for row in cells:
        for n in range(max(len(value) for value in row)):
            parts = [
                (v[n] if n < len(v) else "").ljust(w) for v, w in zip(row, widths, strict=True)
            ]
            lines.append("  ".join(parts))
    return "\n".join(line.rstrip() for line in lines)


def _cell(value: Any) -> list[str]:
    """A cell's lines: its text's own lines, each wrapped at :data:`CELL_WIDTH` between words
    (a longer word, such as a path, stays whole on a line of its own)."""
    if value is None:
        return ["-"]
    if isinstance(value, list | tuple):
        value = ", ".join(str(v) for v in value)
    out: list[str] = []
    for line in str(value).splitlines() or [""]:
        wrapped = textwrap.wrap(line, CELL_WIDTH, break_long_words=False, break_on_hyphens=False)
        out += wrapped or [""]
    return out


def _agents(data: dict[str, Any]) -> str:
    rows = []
    for a in data["agents"]:
        focus = a.get("focus") or {}
        rows.append(
            [
                a.get("name"),
                _agent_status(a),
                a.get("transport", "session"),
                focus.get("intent") if isinstance(focus, dict) else "",
                a.get("capabilities", []),
            ]
        )
    return format_table(["agent", "status", "kind", "focus", "capabilities"], rows)


def _agent_status(a: dict[str, Any]) -> Any:
    """What the agent does now, and for how long (docs/activity.md), else its phase (or
    effective status); an ended session also says when and why."""
    status = a.get("phase") or a.get("effective_status")
    if a.get("ended_at"):
        return f"{status} {human_time(a['ended_at'])} ({a.get('reason') or 'no reason given'})"
    if a.get("state"):
        import time

        from agentcoord.kernel.duration import format_duration

        since = a.get("state_since")
        age = format_duration(max(0, round(time.time() - since))) if since else None
        return f"{a['state']} (for {age})" if age else a["state"]
    return status


def _claims(data: dict[str, Any]) -> str:
    rows = [
        [
            display_key(c["resource_key"], c.get("worktree"), c.get("branch")),
            c["agent"],
            c["mode"],
            human_time(c.get("expires_at")),
            c.get("purpose", ""),
        ]
        for c in data["claims"]
    ]
    return format_table(["key", "holder", "mode", "expires", "purpose"], rows)


def _channels(data: dict[str, Any]) -> str:
    rows = [
        [c["name"], c["phase"], c["participants"], c.get("topic", "")] for c in data["channels"]
    ]
    return format_table(["channel", "phase", "participants", "topic"], rows)


def _audit(data: dict[str, Any]) -> str:
    # One line per event, the same line `tail` and the console show (agentcoord.text.events).
    return "\n".join(render_event(e) for e in data["events"])


def _prompts(data: dict[str, Any]) -> str:
    # The whole question and its context, wrapped, never cut: what the human decides on
    # (docs/messaging.md "For the human").
    rows = [
        [
            p["id"],
            p["kind"],
            p["agent"],
            human_time(p.get("created_at")),
            p["question"],
            p.get("context") or "-",
            p.get("choices", []),
            p.get("phase"),
        ]
        for p in data["prompts"]
    ]
    return format_table(
        ["id", "kind", "from", "asked", "question", "context", "choices", "phase"], rows
    )


def _profiles(data: dict[str, Any]) -> str:
    rows = [
        [
            p["name"],
            p["backend"],
            p["model"] or "(default)",
            p["mcpServers"],
            p["permissionMode"],
            "on" if p["network"] else "off",
            "; ".join(p["problems"]) or "ok",
        ]
        for p in data["profiles"]
    ]
    return format_table(
        ["profile", "backend", "model", "mcp servers", "permissions", "network", "status"], rows
    )


# view name -> (tool, renderer)
VIEWS: dict[str, tuple[str, Callable[[dict[str, Any]], str]]] = {
    "agents": ("list_agents", _agents),
    "claims": ("check_claims", _claims),
    "channels": ("list_channels", _channels),
    "audit": ("audit", _audit),
    "prompts": ("list_prompts", _prompts),
    "profiles": ("list_profiles", _profiles),
}


# view name -> the result's list, and what fills it (said when the list is empty)
_ROWS = {
    "agents": "agents",
    "claims": "claims",
    "channels": "channels",
    "audit": "events",
    "prompts": "prompts",
    "profiles": "profiles",
}


def empty_hint(view: str, arguments: Mapping[str, Any]) -> str:
    """What to do next when ``view`` (with these tool arguments) has nothing to show."""
    if view == "agents":
        more = "" if arguments.get("status") else "; `agentcoord agents --all` lists ended ones"
        return (
            "no agents yet: start a Claude Code session with agent-coord set up "
            f"(`agentcoord setup claude`){more}"
        )
    if view == "claims":
        if arguments.get("prefix"):
            return f"no claims under {arguments['prefix']!r}; `agentcoord claims` lists all"
        return (
            "no claims: agents take them with the claim tool, and Claude Code's edits "
            "claim their files (docs/claims.md)"
        )
    if view == "channels":
        return "no channels: agents open one with the open_channel tool (docs/messaging.md)"
    if view == "prompts":
        if arguments.get("all"):
            return "no prompts yet: agents ask you with escalate, request_approval, ask_choice"
        return (
            "no prompts waiting for you; answered ones: `agentcoord prompts --all`; "
            "`agentcoord tail` shows new ones live"
        )
    if view == "profiles":
        return (
            "no agent profiles: the daemon makes `default` when it starts; "
            "add one with kubectl apply (docs/profiles.md)"
        )
    if arguments.keys() & {"since", "actor", "type"}:
        return "no events match: try a longer --since, or drop --agent/--type"
    return "no events yet: `agentcoord tail` follows the audit log live"


def run_view(cfg: Config, view: str, arguments: dict[str, Any], as_json: bool) -> int:
    tool, render = VIEWS[view]
    data, _text = call_tool(cfg, tool, arguments)
    if as_json:
        print(json.dumps(data, indent=2))
    elif not data.get(_ROWS[view]):
        print(empty_hint(view, arguments), file=sys.stderr)
    else:
        print(render(data))
    return 0


def human_http(cfg: Config) -> tuple[str, str]:
    """The running daemon's HTTP address and the human's bearer token."""
    token = read_human_token(cfg.state_dir)
    try:
        addr = cfg.http_addr_file.read_text().strip()
    except OSError:
        addr = ""
    if not addr or token is None:
        raise DaemonUnreachable(f"no running daemon found; {START_HINT}")
    return addr, token


def refuse_agent_process(what: str, environ: Mapping[str, str]) -> None:
    """Refuse to hand the human's credential to a process carrying agent markers: such a
    process is never the human (docs/security.md "Who a caller is")."""
    markers = agent_markers(environ)
    if markers:
        raise IdentityError(marked_refusal(markers, what))


def console_link(cfg: Config, environ: Mapping[str, str]) -> tuple[str, float]:
    """The web console's login link and when it expires (epoch seconds): a one-time code the
    daemon gives for the human token, good once and for a short while (docs/security.md
    "Console login"); the token stays in headers."""
    import http.client

    refuse_agent_process("print the console's login link", environ)
    addr, token = human_http(cfg)
    host, port = addr.rsplit(":", 1)
    conn = http.client.HTTPConnection(host.strip("[]"), int(port), timeout=30)
    try:
        conn.request(
            "POST", "/console/api/login-code", headers={"authorization": f"Bearer {token}"}
        )
        resp = conn.getresponse()
        body = resp.read()
    except OSError as exc:  # a stale http.addr: the daemon that wrote it is gone
        raise DaemonUnreachable(f"no daemon answers on {addr} ({exc}); {START_HINT}") from None
    finally:
        conn.close()
    if resp.status != 200:
        raise AgentCoordError(
            f"the daemon on {addr} gave no login code (HTTP {resp.status}); run it from your "
            "own terminal, with the daemon's own --state-dir (its human token)"
        )
    given = json.loads(body)
    return f"http://{addr}/console/login?code={given['code']}", float(given["expires_at"])


def tail(cfg: Config, as_json: bool, max_events: int | None = None) -> int:
    """Follow the audit log live (the console's SSE stream, with the human's token)."""
    import http.client

    addr, token = human_http(cfg)
    host, port = addr.rsplit(":", 1)
    conn = http.client.HTTPConnection(host.strip("[]"), int(port))
    try:
        conn.request("GET", "/console/api/events", headers={"authorization": f"Bearer {token}"})
        resp = conn.getresponse()
    except OSError as exc:  # a stale http.addr: the daemon that wrote it is gone
        raise DaemonUnreachable(f"no daemon answers on {addr} ({exc}); {START_HINT}") from None
    if resp.status != 200:
        raise AgentCoordError(
            f"the daemon on {addr} refused the event stream (HTTP {resp.status}); run it from "
            "your own terminal, with the daemon's own --state-dir (its human token)"
        )
    seen = 0
    for raw in resp:
        line = raw.decode("utf-8", "replace").rstrip("\n")
        if line.startswith(": connected"):
            print(
                f"following the audit log of {addr} (Ctrl-C to stop)", file=sys.stderr, flush=True
            )
        if not line.startswith("data: "):
            continue
        event = json.loads(line[6:])
        if as_json:
            print(json.dumps(event), flush=True)
        else:
            print(render_event(event), flush=True)
        seen += 1
        if max_events is not None and seen >= max_events:
            break
    conn.close()
    return 0


def answer_text(result: Mapping[str, Any]) -> str:
    """``answered <prompt>: <the value the agent gets>``, in words (yes/no, the text, JSON)."""
    value = result.get("answer")
    if isinstance(value, bool):
        said = "yes (approved)" if value else "no (denied)"
    elif isinstance(value, str):
        said = value
    else:
        said = json.dumps(value, sort_keys=True)
    return f"answered {result.get('prompt')}: {said}"


def answer(cfg: Config, prompt: str, text: str, as_json: bool = False) -> int:
    data, _out = call_tool(cfg, "answer_prompt", {"prompt": prompt, "answer": text})
    print(json.dumps(data, indent=2) if as_json else answer_text(data))
    return 0
