"""Claim keys as people read them: ``repo:path``, with the worktree and branch where they help
(docs/architecture.md "Times and keys shown to people")."""

from __future__ import annotations

import pytest

from agentcoord.leases.keytext import display_key, repo_name

pytestmark = pytest.mark.unit

KEY = "file:/home/me/app/.git//src/app.py"


def test_a_file_in_git_is_repo_colon_path() -> None:
    """The internal key shows as the main worktree's directory name, a colon, the path."""
    assert display_key(KEY) == "app:src/app.py"


def test_the_worktree_shows_only_when_it_is_not_the_main_one() -> None:
    """The main worktree goes unsaid; a linked one is named by its directory; the branch too."""
    assert display_key(KEY, "/home/me/app", "main") == "app:src/app.py (branch main)"
    assert (
        display_key(KEY, "/home/me/app-fix", "fix")
        == "app:src/app.py (worktree app-fix, branch fix)"
    )
    assert display_key(KEY, "/home/me/app-fix", None) == "app:src/app.py (worktree app-fix)"


def test_other_keys_are_kept() -> None:
    """A file outside git is its path; a key that is not a file's is as given."""
    assert display_key("file:/etc/hosts") == "/etc/hosts"
    assert display_key("deploy:prod") == "deploy:prod"
    assert display_key("db:billing", "/x", "main") == "db:billing"


def test_a_bare_repository_is_named_without_dot_git() -> None:
    """``/srv/app.git`` is ``app``; ``/x/app/.git`` is ``app``."""
    assert repo_name("/srv/app.git") == "app"
    assert repo_name("/x/app/.git") == "app"
    assert display_key("file:/srv/app.git//README") == "app:README"
