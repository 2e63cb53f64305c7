"""The daemon side of the git checkout and ref guards (docs/claims.md "Working-tree guard"
"From a terminal or a script"): the vendor method ``agentcoord/tree-check {cwd, what,
refuse}``, which says who else works in the worktree ``cwd`` is in.

The hooks (:mod:`agentcoord.gitguard.movehook`) run after a checkout (``post-checkout``) or
before a ref update of the checked-out branch (``reference-transaction``); the caller is the
one the transport resolved (a session's Bash, or an anonymous terminal), and its own presence
never counts. Who works in a tree is decided as for the Bash guard
(:func:`agentcoord.leases.worktrees.peers_in`: live sessions whose cwd is in it, and agents
holding claims taken from it).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from agentcoord.errors import ProtocolError
from agentcoord.kernel.jsonrpc import INVALID_PARAMS
from agentcoord.leases.worktrees import Peer, Tree

if TYPE_CHECKING:
    from agentcoord.kernel.caller import Caller
    from agentcoord.leases.leasing import Leases

__all__ = ["MOVE_ENV", "TREE_CHECK", "check_tree", "tree_params"]

TREE_CHECK = "agentcoord/tree-check"
MOVE_ENV = "AGENTCOORD_ALLOW_MOVE"  # the override for one refused ref update
_MAX_WHAT = 200


def tree_params(params: Mapping[str, Any]) -> tuple[str, str, bool]:
    """``(cwd, what, refuse)`` of a tree-check request: an absolute cwd, what git did (a few
    words for the message) and whether the hook refuses."""
    cwd, what, refuse = params.get("cwd"), params.get("what", "git"), params.get("refuse", False)
    if not isinstance(cwd, str) or not os.path.isabs(cwd) or "\0" in cwd:
        raise ProtocolError(INVALID_PARAMS, "tree-check needs `cwd`, an absolute path")
    if not isinstance(what, str) or len(what) > _MAX_WHAT:
        raise ProtocolError(INVALID_PARAMS, f"tree-check: `what` is a text of <= {_MAX_WHAT}")
    if not isinstance(refuse, bool):
        raise ProtocolError(INVALID_PARAMS, "tree-check: `refuse` is true or false")
    return cwd, what, refuse


def _tree_name(tree: Tree) -> str:
    return f"{tree.top} ({'branch ' + tree.branch if tree.branch else 'detached'})"


def _peer_line(peer: Peer, intent: str) -> str:
    parts = [f"works there ({peer.cwd})"] if peer.cwd else []
    if peer.files:
        parts.append(f"holds {', '.join(sorted(peer.files))}")
    if intent:
        parts.append(f"working on: {intent}")
    return f"  {peer.agent}: {'; '.join(parts)}"


def message(
    what: str, tree: Tree, peers: Mapping[str, Peer], intents: Mapping[str, str], refuse: bool
) -> str:
    """What the hook prints: the tree, who works there and on what, and how to go on."""
    many = "other sessions" if len(peers) > 1 else "another session"
    first = min(peers)
    if refuse:
        head = f"agentcoord: refused: {what} would move the worktree {_tree_name(tree)}"
        tail = (
            f"Ask them first (send_message to {first}), or work in a worktree of your own "
            f"(git worktree add ../<dir> -b <branch>), or run it anyway: {MOVE_ENV}=1 git ..."
        )
    else:
        head = f"agentcoord: warning: {what} moved the worktree {_tree_name(tree)}"
        tail = (
            f"Tell them (send_message to {first}): their next edits land on what this worktree "
            "has now. (git config agentcoord.treeGuard refuse: refuse such resets first.)"
        )
    lines = [f"{head} under {many} working in it:"]
    lines += [_peer_line(p, intents.get(p.agent, "")) for _, p in sorted(peers.items())]
    lines.append(tail)
    return "\n".join(lines)


async def check_tree(
    leases: Leases, caller: Caller, cwd: str, what: str, refuse: bool, cwds: Mapping[str, str]
) -> dict[str, Any]:
    """Who other than ``caller`` works in the worktree of ``cwd`` (``cwds``: the live sessions'
    names to their cwds): ``{"ok", "agent", "worktree", "branch", "peers": [...],
    "message"}``; ok when nobody does."""
    if caller.kind == "anonymous" and caller.cwd and not _same_dir(cwd, caller.cwd):
        # As for the commit check: an unattributed caller asks about its own tree only
        # (docs/security.md "The commit check").
        raise ProtocolError(INVALID_PARAMS, "tree-check: `cwd` is not your working directory")
    tree = await asyncio.to_thread(leases.tree_of, cwd)
    if tree is None:
        return {"ok": True, "agent": caller.agent, "peers": []}
    peers = leases.peers_in(tree, caller.agent, cwds)
    out: dict[str, Any] = {
        "ok": not peers,
        "agent": caller.agent,
        "worktree": tree.top,
        "branch": tree.branch,
        "peers": [
            {"agent": p.agent, "cwd": p.cwd, "files": sorted(p.files)}
            for _, p in sorted(peers.items())
        ],
    }
    if peers:
        intents = {name: leases.intent_of(name) for name in peers}
        out["message"] = message(what, tree, peers, intents, refuse)
    return out


def _same_dir(a: str, b: str) -> bool:
    try:
        return os.path.realpath(a) == os.path.realpath(b)
    except (OSError, ValueError):
        return False
