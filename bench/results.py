#!/usr/bin/env python3
"""What the model reads: the ``structuredContent`` size of the common tools' results, and the
``tools/list`` an agent gets (docs/claude-code.md "Results for the model").

    bench/results.py [--json | --show]

Claude Code hands a successful tool result to the model as its ``structuredContent`` JSON
(docs/claude-code.md "Results for the model"), so that JSON's size is what a call costs in context.
One real daemon, seven agents (stand-in ``claude`` sessions, each annotated), twenty claims, three
channels, ten messages waiting in the measuring agent's inbox and two open human prompts; the first
agent then makes each call once. Sizes are bytes of the compact JSON the daemon sends. ``BEFORE``
holds the same figures measured on the tree before results were shaped for the model (same script,
same state), so the ratio column reads against it.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.conftest import FAKES, Daemon, make_env  # noqa: E402
from tests.tools.conftest import AgentProc  # noqa: E402
from tests.tools.session_helpers import unix_request  # noqa: E402

__all__ = ["BEFORE", "area", "measure", "report"]

AGENTS, CLAIMS, CHANNELS, MESSAGES = 7, 20, 3, 10

# Measured with this script at commit 7921778, before results were shaped for the model, same
# state: bytes of structuredContent (the tools/list rows: of the tools array).
BEFORE: dict[str, int] = {
    "whoami": 152,
    "list_agents": 2283,
    "find_agents": 544,
    "get_agent": 348,
    "check_claims": 7994,
    "claim": 426,
    "claim (contended)": 424,
    "release": 17,
    "send": 94,
    "inbox": 1396,
    "list_channels": 815,
    "send (channel)": 69,
    "list_prompts": 307,
    "send_message": 191,
    "tools/list (human)": 13270,
    "tools/list (agent)": 13039,
}


def _size(value: Any) -> int:
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode())


def _state(agents: list[AgentProc]) -> None:
    """Seven annotated agents, twenty claims spread over them, three channels with everyone in
    them, ten messages for the first agent, two open prompts."""
    for i, a in enumerate(agents):
        a.call(
            "annotate",
            intent=f"refactor the {['auth', 'billing', 'search'][i % 3]} module's error paths",
            files=[f"src/app/mod{i}.py", f"tests/test_mod{i}.py"],
            concepts=["errors", "refactor"],
        )
    for n in range(CLAIMS):
        holder = agents[1 + n % (AGENTS - 1)]
        holder.call("claim", resource_key=f"file:src/app/part{n}.py", ttl="10m", purpose="edit")
    names = [a.name for a in agents]
    for c in range(CHANNELS):
        agents[1].call("open_channel", name=f"room-{c}", participants=names, topic="sync")
    for m in range(MESSAGES):
        agents[1 + m % (AGENTS - 1)].call(
            "send", to=agents[0].name, text=f"status {m}: tests pass on my branch"
        )
    for q in range(2):
        agents[2].call("escalate", question=f"may I drop table t{q}?", timeout_secs=0)


def measure(shown: dict[str, Any] | None = None) -> dict[str, int]:
    """The size of each common tool's result for the first of seven agents (each result also
    put in ``shown``, when given). File keys hold the project's path, so every run makes it
    in a temp dir named like BEFORE's (``/tmp/bench-results-XXXXXXXX``)."""
    with tempfile.TemporaryDirectory(prefix="bench-results-") as tmp:
        return _measure(Path(tmp), shown)


def _measure(tmp: Path, shown: dict[str, Any] | None) -> dict[str, int]:
    claude = tmp / "bin" / "claude"
    claude.parent.mkdir(parents=True)
    claude.write_text(f"#!{sys.executable}\n" + (FAKES / "claude_standin.py").read_text())
    claude.chmod(0o755)
    (tmp / "d").mkdir()
    d = Daemon(tmp / "d", make_env(tmp / "d", AGENTCOORD_LOG_LEVEL="WARNING")).start()
    agents: list[AgentProc] = []
    try:
        # One git repository all seven work in, so file claims contend and show repository
        # paths, as in a real project.
        project = tmp / "project"
        project.mkdir()
        subprocess.run(["git", "init", "-q", str(project)], check=True)
        agents = [AgentProc(d, claude, project) for _ in range(AGENTS)]
        _state(agents)
        me, peer = agents[0], agents[1]
        sizes: dict[str, int] = {}
        calls: list[tuple[str, dict[str, Any]]] = [
            ("whoami", {}),
            ("list_agents", {}),
            ("find_agents", {"query": "auth"}),
            ("get_agent", {"name": peer.name}),
            ("check_claims", {}),
            ("claim", {"resource_key": "file:src/app/new.py"}),
            ("claim (contended)", {"resource_key": "file:src/app/part0.py"}),
            ("release", {"resource_key": "file:src/app/new.py"}),
            ("send", {"to": peer.name, "text": "on it"}),
            ("inbox", {}),
            ("list_channels", {}),
            ("send (channel)", {"channel": "room-0", "text": "done"}),
            ("list_prompts", {}),
            ("send_message", {"agent": peer.name, "text": "please rebase"}),
        ]
        for label, args in calls:
            result = me.call(label.split(" ")[0], **args)
            sizes[label] = _size(result)
            if shown is not None:
                shown[label] = result
        listing = unix_request(d, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        sizes["tools/list (human)"] = _size(listing["result"]["tools"])
        sizes["tools/list (agent)"] = _size(_agent_listing(me))
        return sizes
    finally:
        for a in agents:
            a.close()
        d.stop()


def _agent_listing(agent: AgentProc) -> list[dict[str, Any]]:
    """tools/list as the agent's own connection gets it (every page)."""
    assert agent.proc.stdin is not None
    tools: list[dict[str, Any]] = []
    cursor: str | None = None
    while True:
        rid = 10_000 + len(tools)
        req: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": "tools/list"}
        if cursor is not None:
            req["params"] = {"cursor": cursor}
        agent.proc.stdin.write(json.dumps(req).encode() + b"\n")
        agent.proc.stdin.flush()
        with agent._cond:
            agent._cond.wait_for(lambda r=rid: r in agent._replies, 30)
            result = agent._replies.pop(rid)["result"]
        tools += result["tools"]
        cursor = result.get("nextCursor")
        if cursor is None:
            return tools


def report(sizes: dict[str, int]) -> str:
    """A markdown table: bytes now, bytes before, and the ratio."""
    lines = ["| result | bytes | before | ratio |", "|---|---:|---:|---:|"]
    for label, now in sizes.items():
        before = BEFORE.get(label)
        then, ratio = (f"{before:,}", f"{now / before:.2f}") if before else ("-", "-")
        lines.append(f"| {label} | {now:,} | {then} | {ratio} |")
    return "\n".join(lines)


def area(ctx: Any) -> Any:
    """bench/run's area (bench/_areas.py ``Ctx`` -> ``Area``): each size against BEFORE, in
    bytes; lower is better."""
    from _areas import Area
    from _common import Figure

    sizes = measure()
    figures = [
        Figure(
            f"{label} bytes" if label.startswith("tools/") else f"{label} structuredContent",
            float(now),
            "before (7921778)",
            float(BEFORE[label]) if label in BEFORE else None,
            "B",
            "<= 1x",
        )
        for label, now in sizes.items()
    ]
    notes = [
        "Bytes of the compact JSON a model gets (Claude Code sends structuredContent, "
        "not the text): 7 agents, 20 claims, 3 channels, 10 messages waiting, 2 open prompts; "
        "the baseline is the same state measured at commit 7921778, before results were shaped "
        "for the model (bench/results.py BEFORE)."
    ]
    return Area("Results for the model", figures, notes=notes)


def main() -> int:
    shown: dict[str, Any] = {}
    sizes = measure(shown)
    if "--show" in sys.argv[1:]:
        for label, result in shown.items():
            print(f"{label}: {json.dumps(result)}")
    elif "--json" in sys.argv[1:]:
        print(json.dumps(sizes, indent=2))
    else:
        print(report(sizes))
    return 0


if __name__ == "__main__":
    sys.exit(main())
