"""The leases service: who may write a file, and what the claim, the write guard and the commit
check do about it (docs/claims.md "The leases service").

:class:`Leases` sits above the claim store (:class:`~agentcoord.stores.kv.ClaimStore` keeps
the compare-and-set and the KV view) and the focus store, and owns the rest: file keys, holders,
the holders' sites, the write-guard decision, automatic edit leases and the commit check. The
``claim`` tools, the PreToolUse/SessionEnd hook handlers, the SessionStart recap and the
pre-commit check are thin adapters over it, through its verbs. Built once by the composition
root, with the :class:`~agentcoord.leases.filekeys.FileKeys` whose answers from git it keeps.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING, Any

from agentcoord.errors import DomainError
from agentcoord.leases.commit import blockers, candidates, legacy_file_key
from agentcoord.leases.editleases import AUTO_LEASE_PURPOSE, EditLeases, lease_step
from agentcoord.leases.filekeys import FILE_PREFIX, FileKey, FileKeys, split_file_key
from agentcoord.leases.gate import RepoGates
from agentcoord.leases.guard import Deny, decide_write
from agentcoord.leases.holders import (
    canonical_key,
    holder_process,
    holder_site,
    names_file,
    own_site,
    prefix_key,
)
from agentcoord.leases.matcher import covers, is_pattern
from agentcoord.leases.patterns import Overlap, PatternClaims, names_pattern
from agentcoord.leases.refusal import commit_refusal, deny_text, stage_refusal, tree_refusal
from agentcoord.leases.sites import ClaimSites, Site
from agentcoord.leases.worktrees import (
    Peer,
    Tree,
    changed_files,
    peers_in,
    risky_calls,
    theirs,
    tree_of,
)
from agentcoord.stores.kv import Contention, Granted
from agentcoord.stores.kv.keys import MAX_KEY_CHARS

if TYPE_CHECKING:
    from collections.abc import Mapping

    from agentcoord.kernel.caller import Caller
    from agentcoord.stores.kv import ClaimStore, Focus, FocusStore, Holder, Mode, ProcKey

__all__ = ["Leases"]

log = logging.getLogger(__name__)


class Leases:
    """Claims on files and other keys, over the claim store ``claims`` and the focus store
    ``focus`` (whose intents the refusals quote), resolving files' keys with ``keys``."""

    def __init__(
        self,
        claims: ClaimStore,
        focus: FocusStore,
        keys: FileKeys,
        edit_leases: EditLeases | None = None,
    ) -> None:
        self.claims = claims
        self.focus = focus
        self.keys = keys  # git's answers per directory, for as long as this daemon runs
        self.edit_leases = edit_leases or EditLeases()
        self.sites = ClaimSites(claims)  # each live file claim's holder site, in this daemon
        self.patterns = PatternClaims(claims)  # the live folder and glob claims, by repository
        self.gates = RepoGates()  # overlap check and write, one repository's at a time

    def site(self, key: str, token: int | None) -> Site | None:
        """The worktree and branch the grant ``token`` on ``key`` was taken from, if known."""
        return self.sites.get(key, token)

    def intent_of(self, agent: str) -> str:
        """``agent``'s focus intent, or empty."""
        focus = self.focus.get(agent)
        return focus.intent if focus is not None and focus.intent else ""

    def focus_of(self, agent: str) -> Focus | None:
        """``agent``'s focus (intent and files), if it set one."""
        return self.focus.get(agent)

    def own_site(self, cwd: str | None) -> Site | None:
        """The worktree and branch ``cwd`` is in (None outside git or without a cwd)."""
        return own_site(self.keys, cwd)

    @property
    def default_ttl(self) -> float:
        """How long a claim lasts when its claimer names no ttl."""
        return self.claims.policy.default_ttl

    @property
    def heartbeat_grace(self) -> float:
        """How long a heartbeating holder's claims live past its last heartbeat."""
        return self.claims.policy.heartbeat_grace

    # ---- claims ----------------------------------------------------------------------------

    async def claim(
        self, caller: Caller, agent: str, key: str, mode: Mode, ttl: float, purpose: str = ""
    ) -> tuple[str, FileKey | None, Granted | Contention]:
        """Claim ``key`` for ``agent`` on behalf of ``caller``: a file key is resolved against
        the claimer's cwd, not whoever later writes (docs/claims.md "Claiming files"); the
        grant is bound to the caller's process and its site noted. The stored key, the file's
        identity (None for other keys) and the store's answer: a file claim overlapping
        another agent's claim on another key (a folder or glob, docs/claims.md "Folders and
        globs") is refused with an :class:`Overlap`."""
        stored, fk = canonical_key(self.keys, key, caller.cwd)
        proc = holder_process(caller)
        if fk is None:
            out = await self.claims.claim(agent, stored, mode, ttl, purpose=purpose, proc=proc)
            return stored, fk, out
        out = await self._claim_file(agent, fk, mode, ttl, purpose, proc)
        if isinstance(out, Granted):
            self.sites.note(stored, out.holder.token, holder_site(self.keys, fk, caller.cwd))
        return stored, fk, out

    async def release(self, caller: Caller, agent: str, key: str, token: int | None) -> bool:
        """Drop ``agent``'s claim on ``key`` (a file key resolved against the caller's cwd, as
        :meth:`claim` stored it), fenced by ``token`` when given; False when none was held."""
        stored, _ = canonical_key(self.keys, key, caller.cwd)
        return await self.claims.release(agent, stored, token)

    async def renew(
        self, caller: Caller, agent: str, key: str, token: int | None, ttl: float | None
    ) -> tuple[str, Holder]:
        """Extend ``agent``'s claim on ``key`` (resolved as :meth:`release` does) by ``ttl``
        (None: its own); the stored key and the renewed holder."""
        stored, _ = canonical_key(self.keys, key, caller.cwd)
        return stored, await self.claims.renew(agent, stored, token, ttl)

    async def heartbeat(self, agent: str) -> list[str]:
        """Renew every claim ``agent`` holds; the keys renewed (docs/claims.md "Rules")."""
        return await self.claims.heartbeat(agent)

    def held_by(self, agent: str) -> list[tuple[str, Holder]]:
        """The live claims ``agent`` holds, by key."""
        return self.claims.held_by(agent)

    async def _claim_file(
        self, agent: str, fk: FileKey, mode: Mode, ttl: float, purpose: str, proc: ProcKey | None
    ) -> Granted | Contention:
        """Claim the file, folder or glob ``fk`` unless another agent's claim on another key
        overlaps it. The check and the write pass the repository's gate (leases/gate.py):
        alone for a folder or glob, shared for a file, so two overlapping claims in flight at
        once are checked one after the other."""
        async with self.gates.passing(fk.repo, alone=is_pattern(fk.rel)):
            clash = self.patterns.clash(agent, fk, mode)
            if clash is not None:
                return clash
            return await self.claims.claim(agent, fk.key, mode, ttl, purpose=purpose, proc=proc)

    def listing(self, prefix: str, cwd: str | None, agent: str = "") -> list[tuple[str, Holder]]:
        """The live claims ``check_claims`` lists for ``prefix`` (optionally one agent's): those
        whose key starts with it, and for a file, folder or glob prefix also every claim whose
        files overlap it (a folder over the file, a glob reaching into the folder)."""
        rows = self.claims.check(prefix_key(self.keys, prefix, cwd), agent)
        if not names_file(prefix) or prefix == FILE_PREFIX:
            return rows
        fk = self.keys.claim_key(prefix, cwd)
        near = self.patterns.overlapping(fk.repo, fk.rel)
        if is_pattern(fk.rel):
            near += self.patterns.files_in(fk)
        seen = {(key, h.token) for key, h in rows}
        for key, h in near:
            if (key, h.token) not in seen and (not agent or h.agent == agent):
                seen.add((key, h.token))
                rows.append((key, h))
        rows.sort(key=lambda item: (item[0], item[1].token or 0))
        return rows

    # ---- the write guard -------------------------------------------------------------------

    async def guard_write(self, writer: Caller, path: str, cwd: str | None) -> str | None:
        """The write guard for ``writer`` about to change ``path`` (resolved against ``cwd``):
        the deny reason when another agent holds a write claim on the file, else None, after
        taking or renewing the writer's automatic edit lease (docs/claims.md "Claiming
        files")."""
        fk = self.keys.file_key(path, cwd)
        # One lookup of exactly this key, not a walk over every claim: the guard runs on every
        # edit (docs/claims.md "Benchmark").
        holders = self.claims.holders(fk.key)
        # The folder and glob claims of the file's repository: few, kept apart (patterns.py).
        covering = [kh for kh in self.patterns.covering(fk.repo, fk.rel) if kh[0] != fk.key]
        leasable = len(fk.key) <= MAX_KEY_CHARS
        decision = decide_write(
            holders, writer.agent, writer.kind, leasable, self.edit_leases, covering
        )
        if isinstance(decision, Deny):
            return self._deny(fk, decision.holder, decision.key)
        if decision is None:
            return None
        return await self._edit_lease(writer, cwd, fk, decision.mine)

    async def _edit_lease(
        self, writer: Caller, cwd: str | None, fk: FileKey, mine: Holder | None
    ) -> str | None:
        """Take the writer's lease on its first edit of a file, renew it on later ones; the
        writer's own explicit claim (any mode) is left as it is: granting would replace it."""
        quiet = self.edit_leases.quiet
        step = lease_step(mine, time.time(), quiet)
        if step == "keep":
            return None
        if step == "renew" and mine is not None:
            try:
                await self.claims.renew(writer.agent, fk.key, mine.token, quiet)
                return None
            except DomainError:
                pass  # it lapsed or was replaced meanwhile: take a new one below
        out = await self._claim_file(
            writer.agent, fk, "write", quiet, AUTO_LEASE_PURPOSE, holder_process(writer)
        )
        if isinstance(out, Overlap):
            return self._deny(fk, out.holder, out.key)
        if isinstance(out, Contention):
            if out.holder.agent == writer.agent:
                return None
            return self._deny(fk, out.holder)
        self.sites.note(fk.key, out.holder.token, holder_site(self.keys, fk, cwd))
        return None

    def _deny(self, fk: FileKey, holder: Holder, key: str | None = None) -> str:
        """The deny reason for ``fk``, held by ``holder`` on its own key or on the folder or
        glob ``key``."""
        within = split_file_key(key)[1] if key is not None and key != fk.key else None
        site = self.sites.get(key or fk.key, holder.token)
        return deny_text(fk, holder, site, self.intent_of(holder.agent), within)

    async def release_edit_leases(self, agent: str) -> None:
        """``agent``'s automatic edit leases go (its conversation ended); its explicit claims
        stay."""
        for key, holder in self.claims.held_by(agent):
            if holder.purpose == AUTO_LEASE_PURPOSE and holder.token is not None:
                try:
                    await self.claims.release(agent, key, holder.token)
                except DomainError as exc:  # replaced or lapsed meanwhile
                    log.debug("edit lease on %s not released: %s", key, exc)

    # ---- the working-tree guard -----------------------------------------------------------

    async def guard_git(
        self, caller: Caller, line: str, cwd: str, cwds: Mapping[str, str]
    ) -> str | None:
        """The working-tree guard for ``caller`` about to run the shell command ``line`` in
        ``cwd``: the refusal when a git run in it moves a worktree another agent works in
        (``cwds``: the live sessions' names to their cwds; or claims taken from it), or stages
        everything there while that includes files others hold; else None (docs/claims.md
        "Working-tree guard")."""
        if "git" not in line:
            return None  # the usual Bash command: nothing to parse
        risky = await asyncio.to_thread(risky_calls, self.keys, line, cwd)
        for call, effect, tree in risky:
            peers = self.peers_in(tree, caller.agent, cwds)
            if not peers:
                continue
            if effect == "moves":
                return tree_refusal(call, tree, peers, self.intent_of)
            changed = await asyncio.to_thread(changed_files, tree.top)
            if changed is None:
                continue
            held = theirs(changed, peers)
            if held:
                own = [p for p in changed if p not in held]
                return stage_refusal(call, tree, held, own)
        return None

    def tree_of(self, directory: str) -> Tree | None:
        """The worktree ``directory`` is in, or None outside git (runs git when not known
        yet: off the event loop)."""
        return tree_of(self.keys, directory)

    def peers_in(self, tree: Tree, me: str, cwds: Mapping[str, str]) -> dict[str, Peer]:
        """The agents other than ``me`` working in ``tree``: by their cwd (``cwds``: the live
        sessions' names to cwds) and by the claims they took from it."""
        return peers_in(self.keys, tree, me, cwds, self.claims, self.sites)

    # ---- the commit check ------------------------------------------------------------------

    async def check_commit(
        self, committer: Caller, cwd: str, paths: list[str], push: bool = False
    ) -> dict[str, Any]:
        """Which of ``paths`` (relative to the worktree ``cwd``) another agent holds a write
        claim on: ``{"ok", "checked", "agent", "blocked": [...], "message"}`` (docs/claims.md
        "Commit guard"; for a push, the paths its commits change: "Push guard")."""
        live = [(key, h) for key, h in self.claims.check("") if h.mode == "write"]
        # Stored keys naming an absolute path (non-canonical, claimed before keys were) -> it.
        legacy = {key: path for key, _ in live if (path := legacy_file_key(key)) is not None}

        # Folder and glob claims cover paths whose names no key ends in: with one live, every
        # staged path is resolved (git is asked once per worktree).
        globs = [(key, *split_file_key(key)) for key, _ in live if names_pattern(key)]

        def resolve() -> tuple[dict[str, str], dict[str, str], dict[str, list[str]]]:
            # Resolving runs git (once per directory, cached): off the event loop.
            resolved = self.keys.file_keys(list(legacy.values()), None)
            aliases = {key: fk.key for key, fk in zip(legacy, resolved, strict=True)}
            claimed = {aliases.get(key, key) for key, _ in live}
            wanted: dict[str, str] = {}
            covered: dict[str, list[str]] = {}
            asked = paths if globs else candidates(paths, cwd, claimed)
            for path, fk in zip(asked, self.keys.file_keys(asked, cwd), strict=True):
                wanted.setdefault(fk.key, path)
                for key, repo, pattern in globs:
                    if repo == fk.repo and covers(pattern, fk.rel):
                        covered.setdefault(key, []).append(path)
            return wanted, aliases, covered

        # No write claim at all (the usual case): nothing to resolve, no git to run.
        wanted, aliases, covered = (
            await asyncio.to_thread(resolve) if paths and live else ({}, {}, {})
        )
        found = blockers(live, wanted, committer, self.intent_of, aliases, covered)
        return {
            "ok": not found,
            "checked": len(paths),
            "agent": committer.agent,
            "blocked": [b.as_dict() for b in found],
            "message": commit_refusal(found, committer, time.time(), push) if found else "",
        }
