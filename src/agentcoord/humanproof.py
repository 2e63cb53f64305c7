"""What it takes to be the human (DESIGN.md "Identity and trust": "Being the human takes proof,
not the absence of an agent").

Pure values shared by the daemon (which decides) and the CLI (which presents the proof and
refuses to print the human's credentials to an agent): the environment markers that betray an
agent's process, the token file's name, and the refusal texts.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

__all__ = [
    "AGENT_MARKERS",
    "HUMAN_TOKEN_FILE",
    "NOT_IDENTIFIED",
    "agent_markers",
    "marked_refusal",
    "read_human_token",
]

# Claude Code gives every process it starts CLAUDECODE=1, CLAUDE_CODE_ENTRYPOINT and (since
# 2.1.154) CLAUDE_CODE_SESSION_ID (FACTS.md "MCP clients"); AGENT_ID is the common convention of
# other agent harnesses; the daemon's own runners carry AGENTCOORD_JOB_ID (localagents/runner.py).
# A process started with ``setsid`` keeps them: detaching cuts the ancestry, not the environment.
AGENT_MARKERS = (
    "CLAUDECODE",
    "CLAUDE_CODE_SESSION_ID",
    "CLAUDE_CODE_ENTRYPOINT",
    "AGENT_ID",
    "AGENTCOORD_JOB_ID",
)

HUMAN_TOKEN_FILE = "human.token"  # in the state dir, 0600 (daemon/lifecycle.py writes it)

NOT_IDENTIFIED = (
    "this process is neither an agent nor the human: agents connect through `agentcoord mcp` "
    "from Claude Code; the human's commands (`agentcoord answer`, `prompts`, ...) present the "
    "human token ({token_file}) when run from your own terminal"
)


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
