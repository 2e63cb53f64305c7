"""A session's own ``deny`` and ``ask`` permission rules, read from Claude Code's settings files
(docs/approvals.md "A session's own rules win").

Claude Code merges ``permissions`` from the managed settings, the user's settings, the
project's shared and local settings (code.claude.com/docs/en/settings, "Settings files"); a
standing approval must never allow what any of them denies, nor what they say to ask about
every time. The project is the session's working directory, and the top level of its git
worktree when that differs (a session started in a subdirectory). Each rule is kept with the
directory its ``/path`` patterns start from: the project for project files, the home
directory for the user's. A file that is missing or not JSON adds nothing; a rule that does
not parse is kept as "every use of its tool", so an unreadable deny still refuses.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentcoord.approvals.rules import Rule, parse_rule
from agentcoord.errors import InvalidArguments

__all__ = ["MANAGED_SETTINGS", "HeldRule", "session_rules"]

MANAGED_SETTINGS = Path("/etc/claude-code/managed-settings.json")


@dataclass(frozen=True)
class HeldRule:
    """A deny or ask rule of the session's settings, where it came from, and its root."""

    rule: Rule
    kind: str  # "deny" or "ask"
    source: str  # the settings file
    root: str


def _read(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _rules(path: Path, root: str) -> Iterable[HeldRule]:
    perms = _read(path).get("permissions")
    if not isinstance(perms, dict):
        return
    for kind in ("deny", "ask"):
        listed = perms.get(kind)
        for text in listed if isinstance(listed, list) else []:
            if not isinstance(text, str):
                continue
            try:
                rule = parse_rule(text)
            except InvalidArguments:
                tool = text.split("(", 1)[0].strip() or text
                rule = Rule(tool, None, text)
            yield HeldRule(rule, kind, str(path), root)


def session_rules(
    home: Path, claude_dir: Path, projects: Iterable[str], managed: Path = MANAGED_SETTINGS
) -> list[HeldRule]:
    """Every deny and ask rule a session in ``projects`` (its cwd, its worktree's top) has."""
    out = list(_rules(managed, "/"))
    out += _rules(claude_dir / "settings.json", str(home))
    seen: set[str] = set()
    for project in projects:
        if project in seen:
            continue
        seen.add(project)
        for name in ("settings.json", "settings.local.json"):
            out += _rules(Path(project) / ".claude" / name, project)
    return out
