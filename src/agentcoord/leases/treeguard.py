"""What a git command does to the working tree it runs in (docs/claims.md "Working-tree guard").

Several sessions may share one worktree: a command that switches its branch, stashes, resets,
cleans, restores or checks out paths, rebases, merges or pulls changes the files and the branch
under every session working there (and ``worktree remove|move`` takes the tree it names away),
and one that stages everything (``add -A``, ``add .``, ``commit -a``) takes the other sessions'
half-done files into a commit. This module sorts a
:class:`~agentcoord.leases.shellgit.GitCall` into ``moves`` (the tree's branch or files are
rewritten), ``stages-all`` (every change in the tree is staged) or None (nothing another
session would lose: ``status``, ``log``, ``diff``, ``stash list``, ``clean -n``, ``add
<path>``). Pure: calls in, effects out.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from agentcoord.leases.shellgit import GitCall

__all__ = ["BUILTIN", "TreeEffect", "other_tree", "tree_effect"]

TreeEffect = Literal["moves", "stages-all"]

# Subcommands that rewrite the tree's files, its index or its branch (git(1)).
_MOVES = {
    "checkout",
    "switch",
    "stash",
    "reset",
    "clean",
    "restore",
    "rebase",
    "merge",
    "pull",
    "cherry-pick",
    "revert",
    "am",
}
# ``git stash`` subcommands that leave the tree alone.
_STASH_READS = {"list", "show", "create", "store", "drop", "clear"}
# git's own commands (and a few common ones): any other subcommand may be an alias.
BUILTIN = _MOVES | {
    "add",
    "commit",
    "status",
    "log",
    "diff",
    "show",
    "branch",
    "tag",
    "fetch",
    "push",
    "remote",
    "config",
    "init",
    "clone",
    "worktree",
    "blame",
    "grep",
    "ls-files",
    "rev-parse",
    "describe",
    "shortlog",
    "reflog",
    "mv",
    "rm",
    "bisect",
    "notes",
    "submodule",
    "help",
    "version",
    "gc",
    "fsck",
    "cat-file",
    "rev-list",
    "merge-base",
    "merge-tree",
    "symbolic-ref",
    "update-ref",
    "for-each-ref",
    "ls-tree",
    "ls-remote",
    "format-patch",
    "apply",
    "archive",
    "bundle",
    "range-diff",
    "whatchanged",
    "hash-object",
    "check-ignore",
    "var",
}
# Short options of ``git commit`` that take a value: a cluster like ``-am`` stops at them.
_COMMIT_VALUE_SHORTS = set("mFcCtS")
_ALL_PATHS = {".", "./", ":/", ":", ":/:", "*", "-A", "--all", "-u", "--update"}


def _options(args: tuple[str, ...]) -> list[str]:
    """The options before a ``--`` (the paths after it are not options)."""
    out = []
    for a in args:
        if a == "--":
            break
        out.append(a)
    return out


def _commit_all(args: tuple[str, ...]) -> bool:
    """``git commit -a`` / ``--all`` / a short cluster with ``a`` before a value option."""
    for a in _options(args):
        if a in ("-a", "--all"):
            return True
        if a.startswith("-") and not a.startswith("--"):
            for ch in a[1:]:
                if ch == "a":
                    return True
                if ch in _COMMIT_VALUE_SHORTS:
                    break
    return False


def _dry_clean(args: tuple[str, ...]) -> bool:
    """``git clean -n`` / ``--dry-run`` (in any short cluster): it lists, removes nothing."""
    for a in _options(args):
        if a == "--dry-run" or (a.startswith("-") and not a.startswith("--") and "n" in a):
            return True
    return False


def other_tree(call: GitCall) -> str | None:
    """The worktree a ``git worktree remove|move <tree>`` acts on (as written), else None: it
    deletes or moves that tree, not the one it runs in."""
    if call.sub != "worktree" or not call.args or call.args[0] not in ("remove", "move"):
        return None
    named = [a for a in call.args[1:] if not a.startswith("-")]
    return named[0] if named else None


def tree_effect(call: GitCall) -> TreeEffect | None:
    """What ``call`` does to the worktree it runs in, or for ``worktree remove|move`` to the
    tree it names (see the module doc)."""
    sub, args = call.sub, call.args
    if "-h" in args or "--help" in args:
        return None
    if other_tree(call) is not None:
        return "moves"
    if sub == "add":
        return "stages-all" if any(a in _ALL_PATHS for a in args) else None
    if sub == "commit":
        return "stages-all" if _commit_all(args) else None
    if sub not in _MOVES:
        return None
    if sub == "checkout" and not args:
        return None  # prints where HEAD is, changes nothing
    if sub == "stash" and args and args[0] in _STASH_READS:
        return None
    if sub == "clean" and _dry_clean(args):
        return None
    return "moves"
