"""What agentcoord says when a file is someone else's: who holds it, since and until when,
what they are on, and how to go on (docs/claims.md "The leases service").

The one place for the refusal texts: the write guard's deny reason (a Claude Code hook's
``permissionDecisionReason``), the pre-commit refusal, and a ``claim`` that was not acquired.
Times for people are local time with its zone (:func:`agentcoord.kernel.timetext.human_time`). Pure:
values in, text out.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agentcoord.kernel.timetext import human_time
from agentcoord.leases.editleases import AUTO_LEASE_PURPOSE
from agentcoord.leases.override import ALLOW_ENV
from agentcoord.leases.rows import shown_key
from agentcoord.stores.kv import format_duration

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from agentcoord.kernel.caller import Caller
    from agentcoord.leases.commit import Blocker
    from agentcoord.leases.filekeys import FileKey
    from agentcoord.leases.shellgit import GitCall
    from agentcoord.leases.sites import Site
    from agentcoord.leases.worktrees import Peer, Tree
    from agentcoord.stores.kv import Holder

__all__ = [
    "claim_text",
    "commit_refusal",
    "deny_text",
    "file_row",
    "stage_refusal",
    "tree_refusal",
]


def file_row(fk: FileKey, site: Site | None) -> dict[str, Any]:
    """The fields :func:`~agentcoord.leases.rows.shown_key` reads, for the file ``fk`` held
    from ``site``."""
    row: dict[str, Any] = {"resource_key": fk.key, "path": fk.rel}
    if fk.repo is not None:
        row["repository"] = fk.repo
    if site is not None:
        row.update(worktree=site.worktree, branch=site.branch)
    return row


def deny_text(
    fk: FileKey, holder: Holder, site: Site | None, intent: str, within: str | None = None
) -> str:
    """The write guard's deny reason: who holds the file (or the folder or glob ``within``
    that covers it), since when, what they are on, and how to reach them."""
    lease = " (an automatic edit lease)" if holder.purpose == AUTO_LEASE_PURPOSE else ""
    what = f" is inside {within}, which is" if within else " is"
    text = (
        f"{shown_key(file_row(fk, site))}{what} claimed for writing by {holder.agent} since "
        f"{human_time(holder.acquired)}{lease}"
    )
    if intent:
        text += f"; they are working on: {intent}"
    if holder.purpose and holder.purpose != AUTO_LEASE_PURPOSE and holder.purpose != intent:
        text += f"; claim purpose: {holder.purpose}"
    return (
        f"{text}. Ask them with send_message to {holder.agent}, or wait for the claim to be "
        "released (check_claims)."
    )


def claim_text(result: dict[str, Any]) -> str:
    """A ``claim`` result as text: the grant, or who holds the key and until when."""
    if result["acquired"]:
        c = result["claim"]
        return (
            f"acquired {c['mode']} claim on {shown_key(c)} until {c['expires_at']}"
            f" (token {result['token']})"
        )
    h = result["holder"]
    return (
        f"not acquired: {shown_key(h)} is held by {h['agent']} ({h['mode']})"
        f" until {h['expires_at']}"
    )


def commit_refusal(found: list[Blocker], committer: Caller, now: float, push: bool = False) -> str:
    """What the pre-commit (or, with ``push``, the pre-push) hook prints when it refuses: each
    file, its holder, their intent, since and until when, then how to go on (the override, and
    what ``--no-verify`` also skips)."""
    n = len(found)
    what, doing = ("push", "pushes") if push else ("commit", "commits")
    if push:
        files = (
            "1 file the pushed commits change is"
            if n == 1
            else f"{n} files the pushed commits change are"
        )
    else:
        files = "1 staged file is" if n == 1 else f"{n} staged files are"
    lines = [f"agentcoord: {what} refused: {files} claimed for writing by another agent:"]
    for b in found:
        h = b.holder
        why = f" ({b.intent})" if b.intent else ""
        within = f" (claims {b.within})" if b.within else ""
        lines.append(
            f"  {b.path}: {h.agent}{within}{why}, since {human_time(h.acquired)} "
            f"({format_duration(max(0.0, now - h.acquired))} ago), until {human_time(h.expires)}"
        )
    if committer.kind == "anonymous":
        lines.append(
            f"This {what} comes from no agent (your terminal, or a process agentcoord cannot "
            "attribute), so any agent's write claim blocks it."
        )
    else:
        lines.append(f"You are {committer.agent}; your own claims never block your {doing}.")
    lines.append(
        f"Ask the holder, or wait for the claim to be released (agentcoord claims), or "
        f"{what} anyway:"
    )
    lines.append(f"  {ALLOW_ENV}=1 git {what} ...")
    lines.append(f"(git {what} --no-verify also skips it, and every other pre-{what} hook)")
    return "\n".join(lines)


def _tree_name(tree: Tree) -> str:
    return f"{tree.top} (branch {tree.branch})" if tree.branch else f"{tree.top} (detached)"


def _peer_line(peer: Peer, intent: str) -> str:
    how = []
    if peer.cwd:
        how.append(f"works there ({peer.cwd})")
    if peer.files:
        shown = ", ".join(peer.files[:5]) + (
            f" and {len(peer.files) - 5} more" if len(peer.files) > 5 else ""
        )
        how.append(f"holds {shown}")
    said = f"; working on: {intent}" if intent else ""
    return f"  {peer.agent}: {' and '.join(how)}{said}"


def tree_refusal(
    call: GitCall, tree: Tree, peers: Mapping[str, Peer], intent_of: Callable[[str], str]
) -> str:
    """Why a command that moves or rewrites a worktree is refused: the tree, who else works
    in it and on what, and how to go on (docs/claims.md "Working-tree guard")."""
    lines = [
        f"agentcoord: `{call.text}` would change the branch or files of the worktree "
        f"{_tree_name(tree)} under {'another session' if len(peers) == 1 else 'other sessions'}"
        " working in it:"
    ]
    lines += [_peer_line(p, intent_of(p.agent)) for p in sorted(peers.values(), key=_by_agent)]
    first = min(peers)
    lines.append(
        f"Ask them first (send_message to {first}), or work in a worktree of your own "
        "(git worktree add ../<dir> -b <branch>); a human may run it from a terminal."
    )
    return "\n".join(lines)


def _by_agent(peer: Peer) -> str:
    return peer.agent


def stage_refusal(call: GitCall, tree: Tree, held: Mapping[str, str], own: list[str]) -> str:
    """Why staging everything is refused: the changed files other sessions hold (path ->
    holder), and the command that stages only the rest."""
    n = len(held)
    lines = [
        f"agentcoord: `{call.text}` would stage {n} changed file{'s' if n != 1 else ''} in "
        f"{_tree_name(tree)} that other sessions hold:"
    ]
    lines += [f"  {path}: {agent}" for path, agent in sorted(held.items())]
    if own:
        paths = " ".join(_quoted(p) for p in own)
        tail = " && git commit ..." if call.sub == "commit" else ""
        lines.append(f"Stage only the other changes: git add -- {paths}{tail}")
    else:
        lines.append("Every change in this tree is someone else's: nothing of yours to stage.")
    return "\n".join(lines)


def _quoted(path: str) -> str:
    import shlex

    return shlex.quote(path)
