"""The working-tree guard: a git command that would move or rewrite a worktree another live session
works in is refused before it runs (docs/claims.md "Working-tree guard").

For each ``git`` a Bash command line runs (:mod:`agentcoord.leases.shellgit`) that moves the
tree or stages everything in it (:mod:`agentcoord.leases.treeguard`), the worktree it runs in is
found (git asked once per worktree, the answer kept:
:class:`agentcoord.leases.filekeys.FileKeys`), and so are the other sessions working there:
those whose cwd is in it, and those holding claims taken from it (the claims' sites). A move is
refused naming them; staging everything is refused only when the tree's changes include files
they hold, and says which, and how to stage one's own. Aliases (``git co``) are looked up in the
repository's config.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from agentcoord.leases.filekeys import FILE_PREFIX, SEPARATOR, FileKeys, split_file_key
from agentcoord.leases.gitrun import git_out
from agentcoord.leases.matcher import covers
from agentcoord.leases.shellgit import GitCall, git_calls
from agentcoord.leases.treeguard import BUILTIN, TreeEffect, other_tree, tree_effect

if TYPE_CHECKING:
    from agentcoord.leases.sites import ClaimSites
    from agentcoord.stores.kv import ClaimStore

__all__ = ["Peer", "Tree", "changed_files", "peers_in", "risky_calls", "theirs", "tree_of"]

_GIT_TIMEOUT = 5.0
_ALIAS_DEPTH = 3


@dataclass(frozen=True)
class Tree:
    """A worktree: its repository (git common dir), its top level and its branch."""

    repo: str
    top: str
    branch: str | None


@dataclass
class Peer:
    """Another agent working in a tree: its cwd there (when that is how it is there), and the
    paths of the claims it took from the tree."""

    agent: str
    cwd: str | None = None
    files: list[str] = field(default_factory=list)


def tree_of(keys: FileKeys, directory: str) -> Tree | None:
    """The worktree ``directory`` is in, or None outside git."""
    fk = keys.file_key(os.path.join(directory, "_"), None)
    if fk.repo is None or fk.worktree is None:
        return None
    return Tree(fk.repo, fk.worktree, fk.branch)


def _git(directory: str, *args: str) -> str | None:
    return git_out(directory, *args, timeout=_GIT_TIMEOUT)


def _expand(call: GitCall, directory: str) -> list[GitCall]:
    """``call`` with a git alias of the repository resolved (``co = checkout``, or a ``!``
    shell alias parsed as a command line); a built-in command as it is."""
    for _ in range(_ALIAS_DEPTH):
        if call.sub in BUILTIN or call.sub.startswith("-"):
            return [call]
        alias = _git(directory, "config", "--get", f"alias.{call.sub}")
        if not alias or not alias.strip():
            return [call]
        text = alias.strip()
        if text.startswith("!"):
            return git_calls(f"{text[1:]} {shlex.join(call.args)}", directory)
        try:
            words = shlex.split(text)
        except ValueError:
            return [call]
        if not words:
            return [call]
        call = replace(call, sub=words[0], args=(*words[1:], *call.args))
    return [call]


def risky_calls(keys: FileKeys, line: str, cwd: str) -> list[tuple[GitCall, TreeEffect, Tree]]:
    """The git runs of ``line`` (started in ``cwd``) that move or stage everything in a
    worktree, with that worktree. Runs git (aliases, the worktree's identity): not on the
    event loop."""
    out: list[tuple[GitCall, TreeEffect, Tree]] = []
    for raw in git_calls(line, cwd):
        directory = raw.cwd or cwd
        for call in _expand(raw, directory):
            effect = tree_effect(call)
            if effect is None:
                continue
            named = other_tree(call)
            base = call.cwd or directory
            where = os.path.join(base, named) if named else call.work_tree or base
            tree = tree_of(keys, where)
            if tree is not None:
                out.append((call, effect, tree))
    return out


def peers_in(
    keys: FileKeys,
    tree: Tree,
    me: str,
    cwds: Mapping[str, str],
    claims: ClaimStore,
    sites: ClaimSites,
) -> dict[str, Peer]:
    """The agents other than ``me`` working in ``tree``: by their cwd (``cwds``: live
    sessions' names to cwds) and by the claims they took from it."""
    found: dict[str, Peer] = {}
    for agent, cwd in cwds.items():
        if agent == me or not cwd:
            continue
        there = tree_of(keys, cwd)
        if there is not None and there.top == tree.top:
            found[agent] = Peer(agent, cwd)
    for key, holder in claims.check(f"{FILE_PREFIX}{tree.repo}{SEPARATOR}"):
        if holder.agent == me or holder.mode == "intent":
            continue
        site = sites.get(key, holder.token)
        if site is None or site.worktree != tree.top:
            continue
        peer = found.setdefault(holder.agent, Peer(holder.agent))
        peer.files.append(split_file_key(key)[1])
    return found


def changed_files(top: str) -> list[str] | None:
    """The paths (from the top level) that ``git add -A`` would stage in the worktree ``top``:
    changed, deleted and untracked files; None when git cannot tell."""
    out = _git(top, "status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames")
    if out is None:
        return None
    return [entry[3:] for entry in out.split("\0") if len(entry) > 3]


def theirs(changed: list[str], peers: Mapping[str, Peer]) -> dict[str, str]:
    """Of the ``changed`` paths, those a peer holds (a file claim, or a folder or glob over
    it): path -> the peer."""
    out: dict[str, str] = {}
    for path in changed:
        for peer in peers.values():
            if any(covers(claimed, path) for claimed in peer.files):
                out[path] = peer.agent
                break
    return out
