"""What it takes to be the human (docs/security.md "Who a caller is": being the human takes proof,
not the absence of an agent).

Pure values shared by the daemon (which decides) and the CLI (which presents the proof and
refuses to print the human's credentials to an agent): the environment markers that betray an
agent's process, the token file's name, the refusal texts, and what the audit keeps of a refused
attempt to act as the human (``HUMAN_REFUSED``: which attempts become events, and what a
request was after).
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentcoord.identity.kinds import kind_markers
from agentcoord.identity.procinfo import ProcInfo

__all__ = [
    "AGENT_MARKERS",
    "HUMAN_REFUSED",
    "HUMAN_TOKEN_FILE",
    "NOT_IDENTIFIED",
    "PEER_GONE",
    "Admitted",
    "RefusalLimiter",
    "agent_markers",
    "attempt_of",
    "marked_refusal",
    "proof_gap",
    "read_human_token",
]

# Every session kind's markers (Claude Code gives every process it starts CLAUDECODE=1,
# CLAUDE_CODE_ENTRYPOINT and, since 2.1.154, CLAUDE_CODE_SESSION_ID: identity/kinds/claudecode.py;
# Codex, Gemini CLI and OpenCode theirs: docs/other-clis.md),
# then AGENT_ID, the common convention of other agent harnesses, and AGENTCOORD_JOB_ID, which
# the daemon's own runners carry (localagents/runner.py). A process started with ``setsid``
# keeps them: detaching cuts the ancestry, not the environment.
AGENT_MARKERS = (*kind_markers(), "AGENT_ID", "AGENTCOORD_JOB_ID")

HUMAN_TOKEN_FILE = "human.token"  # in the state dir, 0600 (daemon/run.py writes it)

NOT_IDENTIFIED = (
    "this process is neither an agent nor the human: agents connect through `agentcoord mcp` "
    "from Claude Code, Codex, Gemini CLI or OpenCode; the human's commands (`agentcoord answer`, "
    "`prompts`, ...) present the human token ({token_file}) when run from your own terminal"
)


# The proof is taken from the live caller before its request is acted on (docs/security.md
# "When the proof is taken"): a caller that is gone, or whose process cannot be read whole,
# proves nothing, so it is refused, never taken for the human.
PEER_GONE = (
    "refused to act as the human: the process behind this connection is gone (it closed the "
    "connection or exited before it could be checked); send the request and wait for its answer"
)


def proof_gap(chain: list[ProcInfo], pid: int) -> str | None:
    """Why ``chain`` (nearest first, read for the peer ``pid``) cannot prove its process is the
    human, or None when the peer itself was read. An empty environment is no gap: a browser's
    network process has one (Chromium's zygote clears it), so such a peer is judged by its
    ancestry alone (docs/security.md "When the proof is taken")."""
    if not chain or chain[0].pid != pid:
        return PEER_GONE
    return None


def agent_markers(environ: Mapping[str, str]) -> list[str]:
    """The agent markers set (non-empty) in ``environ``, in :data:`AGENT_MARKERS` order."""
    return [name for name in AGENT_MARKERS if environ.get(name)]


def marked_refusal(markers: list[str], what: str = "act as the human") -> str:
    """The one-line refusal for a process whose environment carries agent markers."""
    return (
        f"refused to {what}: this process's environment carries {', '.join(markers)}, so it "
        "runs under a Claude Code session or an agent runner; run it from your own terminal"
    )


def read_human_token(state_dir: Path) -> str | None:
    """The human token from the state dir, or None when it cannot be read."""
    try:
        return (state_dir / HUMAN_TOKEN_FILE).read_text().strip() or None
    except OSError:
        return None


# One audit event per refused attempt to act as the human: a human-only tool called by anyone
# else, the human token or ``agentcoord/login`` presented by a process that is not the human,
# an agent naming the human in a tool's ``agent``/``from`` (docs/security.md "Every human
# decision is audited").
HUMAN_REFUSED = "HUMAN_REFUSED"


@dataclass(frozen=True)
class Admitted:
    """A refusal that becomes an event, and what was left out since the last one."""

    repeats: int  # refusals of the same key inside the window, not recorded one by one
    dropped: int  # refusals of other keys left out when the global cap was reached


class RefusalLimiter:
    """Which refusals become audit events, so a loop of attempts cannot flood the audit stream:
    at most one per key (the process, the transport, what it tried) per ``window`` seconds, and
    at most ``burst`` events per window in all (a loop spawning a new process per attempt).
    What is left out is counted and reported by the next event of that key (``repeats``), or
    by the next event at all once the cap has passed (``dropped``). Pure: time is an argument.
    """

    def __init__(self, window: float = 10.0, burst: int = 50, max_keys: int = 4096) -> None:
        self.window = window
        self.burst = burst
        self.max_keys = max_keys
        self._keys: dict[Hashable, tuple[float, int]] = {}  # key -> (last event, left out since)
        self._recent: deque[float] = deque()  # times of the events of the last window
        self._dropped = 0

    def admit(self, key: Hashable, now: float) -> Admitted | None:
        """An :class:`Admitted` when this refusal is to be recorded, else None (counted)."""
        while self._recent and now - self._recent[0] >= self.window:
            self._recent.popleft()
        last = self._keys.get(key)
        if last is not None and now - last[0] < self.window:
            self._keys[key] = (last[0], last[1] + 1)
            return None
        if len(self._recent) >= self.burst:
            self._dropped += 1
            return None
        if len(self._keys) >= self.max_keys:
            self._forget(now)
        repeats = last[1] if last is not None else 0
        self._keys.pop(key, None)  # re-inserted: the dict stays in order of last event
        self._keys[key] = (now, 0)
        self._recent.append(now)
        admitted = Admitted(repeats=repeats, dropped=self._dropped)
        self._dropped = 0
        return admitted

    def _forget(self, now: float) -> None:
        """Drop the oldest keys (all whose window has passed, and more while still full);
        what they left out goes to ``dropped``."""
        while self._keys:
            oldest = next(iter(self._keys))
            at, left_out = self._keys[oldest]
            if now - at < self.window and len(self._keys) < self.max_keys:
                break
            del self._keys[oldest]
            self._dropped += left_out


def attempt_of(payload: Any) -> tuple[str | None, str | None, str | None]:
    """(method, tool, prompt) of a JSON-RPC payload (decoded, or the raw bytes of an HTTP
    body; the first message of a batch): what a refused request was trying to do."""
    if isinstance(payload, bytes | str):
        try:
            payload = json.loads(payload)
        except ValueError:
            return None, None, None
    if isinstance(payload, list):
        payload = payload[0] if payload else None
    if not isinstance(payload, dict):
        return None, None, None
    method = payload.get("method")
    params = payload.get("params")
    if not isinstance(method, str):
        return None, None, None
    if method != "tools/call" or not isinstance(params, dict):
        return method, None, None
    tool, arguments = params.get("name"), params.get("arguments")
    prompt = arguments.get("prompt") if isinstance(arguments, dict) else None
    return (
        method,
        tool if isinstance(tool, str) else None,
        prompt if isinstance(prompt, str) else None,
    )
