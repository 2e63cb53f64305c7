"""A Claude Code session's last turns, for its page in the console (docs/console.md "An agent's
page").

The transcript is found, never given: ``<claude dir>/projects/<cwd with non-alphanumerics as
'-'>/<session id>.jsonl`` (docs/localagents.md), the cwd read from the session's own process and
the session id from its Agent's label; a session id that is not a plain id names no file. Only
the file's tail is read, and only the text of user and assistant turns is shown (tool calls and
their results, and Claude Code's own meta lines, are left out). Pure apart from reading the file
(docs/architecture.md "Pure rules, thin I/O").
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from agentcoord.kernel.timetext import human_time
from agentcoord.localagents.sessions import project_dir_name

__all__ = ["TAIL_BYTES", "last_turns", "transcript_path", "turn_text"]

TAIL_BYTES = 512 * 1024  # how much of a transcript's end is read: the last turns fit in it
_TURN_CHARS = 1500  # a turn longer than this is shown cut, with its length said
_SESSION_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9-]{0,99}$")


def transcript_path(claude_dir: Path, cwd: str, session_id: str) -> Path | None:
    """Where Claude Code keeps the transcript of ``session_id`` working in ``cwd``; None for a
    session id that is not a plain id (it could name another file)."""
    if not _SESSION_ID.match(session_id) or not cwd.startswith("/"):
        return None
    return claude_dir / "projects" / project_dir_name(cwd) / f"{session_id}.jsonl"


def turn_text(entry: dict[str, Any]) -> str:
    """The text a user or assistant entry says (its text blocks joined); empty for a tool call,
    a tool result or a meta line."""
    if entry.get("isMeta") or entry.get("type") not in ("user", "assistant"):
        return ""
    message = entry.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return content.strip()
    if not isinstance(content, list):
        return ""
    texts = [
        b["text"]
        for b in content
        if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)
    ]
    return "\n".join(texts).strip()


def _tail_lines(path: Path) -> list[bytes]:
    with path.open("rb") as fh:
        size = fh.seek(0, 2)
        start = max(0, size - TAIL_BYTES)
        fh.seek(start)
        data = fh.read()
    lines = data.split(b"\n")
    return lines[1:] if start else lines  # the first line of a tail may be cut


def last_turns(path: Path | None, count: int = 6) -> list[dict[str, str]]:
    """The last ``count`` user/assistant text turns, oldest first: ``{role, text, ts}``; empty
    when there is no transcript."""
    if path is None:
        return []
    try:
        lines = _tail_lines(path)
    except OSError:
        return []
    turns: list[dict[str, str]] = []
    for line in reversed(lines):
        if len(turns) >= count:
            break
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        text = turn_text(entry) if isinstance(entry, dict) else ""
        if not text or text.startswith("<"):  # command and hook output Claude Code inserts
            continue
        if len(text) > _TURN_CHARS:
            text = text[:_TURN_CHARS].rstrip() + f" ... ({len(text)} characters)"
        ts = entry.get("timestamp")
        # Written as every time people read (docs/architecture.md "Times and keys shown to
        # people").
        when = human_time(ts) if isinstance(ts, str) and ts else ""
        turns.append({"role": entry["type"], "text": text, "ts": when})
    return turns[::-1]
