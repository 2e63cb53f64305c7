"""A session's own deny and ask rules, read from Claude Code's settings files."""

from __future__ import annotations

import json
from pathlib import Path

from agentcoord.approvals.rules import Request, forbids
from agentcoord.approvals.settings import session_rules


def _write(path: Path, perms: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"permissions": perms}))


def test_rules_come_from_every_settings_file_with_their_root(tmp_path: Path) -> None:
    """Managed, user, project and project-local files each add their deny and ask rules, with
    the directory their /paths start from; a missing or broken file adds nothing; a rule that
    does not parse covers every use of its tool (an unreadable deny still refuses)."""
    home, claude, project = tmp_path / "home", tmp_path / "home" / ".claude", tmp_path / "proj"
    managed = tmp_path / "managed.json"
    _write(managed, {"deny": ["WebFetch"]})
    _write(claude / "settings.json", {"ask": ["Bash(git push:*)"], "allow": ["Bash"]})
    _write(project / ".claude" / "settings.json", {"deny": ["Edit(/secrets/**)", "Bash(("]})
    (project / ".claude" / "settings.local.json").write_text("{not json")
    rules = session_rules(home, claude, [str(project), str(project)], managed)
    got = [(r.kind, r.rule.text, Path(r.source).name, r.root) for r in rules]
    assert got == [
        ("deny", "WebFetch", "managed.json", "/"),
        ("ask", "Bash(git push:*)", "settings.json", str(home)),
        ("deny", "Edit(/secrets/**)", "settings.json", str(project)),
        ("deny", "Bash((", "settings.json", str(project)),
    ]
    broken = rules[-1]
    assert forbids(broken.rule, Request("Bash", {"command": "ls"}), broken.root)
    secrets = rules[2]
    inside = Request("Write", {"file_path": str(project / "secrets" / "k")}, str(project))
    assert forbids(secrets.rule, inside, secrets.root)
