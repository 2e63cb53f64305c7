"""The daemon's conflict watch (docs/claims.md "Conflicts between worktrees"): for every
worktree a live session works in, the files it changes against its merge base, kept up to date
from filesystem events; when two worktrees of one repository newly change the same file, each
session in either is told once, through its inbox, and told again when git merge-tree's verdict
on their commits gets worse.

- **What is watched**: the top level of each live session's worktree (recursively, through
  watchfiles' inotify), and its repository's git dir, where only ``HEAD``, ``packed-refs``,
  ``refs/`` and ``config`` count (a commit, a branch switch, a reset, the target branch moving,
  an upstream set); the rest of ``.git`` (objects, the index, lock files) is left out. The set
  follows the sessions: :meth:`ConflictWatch.sessions_changed` (called by the session watch)
  rebuilds it.
- **What a change costs**: changes are gathered until none came for 50 ms (at most 300 ms);
  then, per worktree a change touched, one ``git status --porcelain``; a ref change adds
  ``symbolic-ref`` and ``rev-parse``, and only when HEAD or the target moved, ``merge-base``
  and one ``diff --name-only`` (:mod:`agentcoord.leases.conflicttrees`). The branch each
  worktree merges into is kept with it, asked again when its branch changes, and for every
  worktree of the repository when a ref outside ``refs/heads/`` (a remote's, its ``HEAD``,
  ``packed-refs``) or ``config`` changed: a commit does not ask it. ``git merge-tree`` runs only
  for an overlapping pair whose shared files are all committed, once per pair of HEADs.
- **Who is told what**: :mod:`agentcoord.leases.conflictnotes` (pure).

Nothing here is kept across a restart: a daemon that starts tells live sessions of the overlaps
it finds, once.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Protocol

from agentcoord.kernel import wire
from agentcoord.kernel.tasks import TaskSet
from agentcoord.leases.conflictnotes import (
    Pair,
    Told,
    Verdict,
    notice_text,
    pair_key,
    shared_files,
    worse_text,
)
from agentcoord.leases.conflicts import merge_conflicts
from agentcoord.leases.conflicttrees import (
    TreeChanges,
    locate,
    refresh_commits,
    refresh_pending,
)
from agentcoord.proto.agent.v1 import agent_pb2 as pb

__all__ = ["SENDER", "ConflictWatch", "Inboxes", "TrackedOverlap", "TreeSide", "overlap_row"]

log = logging.getLogger(__name__)

SENDER = "agentcoord"  # who the notices are from: the daemon itself, as its native inbox says
DEBOUNCE_MS = 300  # changes are gathered until none came for _STEP_MS, at most this long
_STEP_MS = 50  # (an editor writes in bursts: watchfiles' debounce and step)
_WAIT_MS = 1000  # how long one watch call waits before looking at the stop flag again
_RETRY_S = 1.0  # after the watch failed, before watching again
_GIT_REF_NAMES = ("HEAD", "packed-refs")
_GIT_CONFIG_NAMES = ("config", "config.worktree")  # an upstream set or changed


class Inboxes(Protocol):
    """Where notices go: the messaging service's delivery, and its audit events."""

    async def deliver(self, to: str, msg: Any, msg_id: str | None = None) -> Any: ...

    def emit(self, event: str, agent: str, **data: Any) -> None: ...


@dataclass(frozen=True)
class TreeSide:
    """One side of an overlap: the worktree, its branch and the live sessions working there."""

    top: str
    branch: str | None
    sessions: tuple[str, ...]


@dataclass(frozen=True)
class TrackedOverlap:
    """Two live worktrees changing the same files, as the watch holds them now: ``since``, when
    the overlap began (epoch seconds); ``conflicts``, git merge-tree's verdict (None: cannot
    tell yet)."""

    repo: str
    a: TreeSide
    b: TreeSide
    files: tuple[str, ...]
    since: float
    conflicts: Verdict


def _git_ref_path(path: str) -> str | None:
    """What a changed path inside a git dir moves: ``"branch"`` a local branch (a commit),
    ``"target"`` what may change the branch work merges into as well (HEAD, a remote's refs,
    ``packed-refs``, the configuration), None nothing of the kind."""
    if path.endswith(".lock"):
        return None
    name = os.path.basename(path)
    if "/logs/" in path:  # a reflog: written beside the ref it logs, which counts itself
        return "branch" if name in _GIT_REF_NAMES or "/refs/" in path else None
    if name in _GIT_CONFIG_NAMES and "/refs/" not in path:
        return "target"
    if "/refs/heads/" in path:
        return "branch"
    return "target" if name in _GIT_REF_NAMES or "/refs/" in path else None


class ConflictWatch:
    """The service; see the module doc. ``sessions`` gives the live sessions' names and cwds
    (the session watch's ``live_cwds``); ``inboxes`` takes the notices."""

    def __init__(
        self,
        sessions: Callable[[], Mapping[str, str]],
        inboxes: Inboxes,
        *,
        debounce_ms: int = DEBOUNCE_MS,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._sessions = sessions
        self._inboxes = inboxes
        self._debounce = debounce_ms
        self._clock = clock
        self._where: dict[str, TreeChanges | None] = {}  # a session cwd -> its worktree
        self._trees: dict[str, TreeChanges] = {}  # live worktrees by top level
        self._agents: dict[str, tuple[str, ...]] = {}  # live worktree -> its sessions
        self._pairs: dict[tuple[str, str], Pair] = {}
        self._verdicts: dict[tuple[str, str], Verdict] = {}  # (head a, head b) -> merge-tree's
        self._told = Told()
        self._stop = threading.Event()  # wakes the watch thread: sessions changed, or stopping
        self._resync = asyncio.Event()
        self._closing = False
        self._tasks = TaskSet("conflict watch")
        self._task: asyncio.Task[None | None] | None = None
        self.recomputes = 0  # rounds of git work done, for tests and the benchmark

    async def __aenter__(self) -> ConflictWatch:
        await self._tasks.__aenter__()
        self._resync.set()
        self._task = self._tasks.spawn(self._run(), name="conflict-watch")
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._closing = True
        self._stop.set()  # the watch thread returns within one step
        self._resync.set()
        try:
            if self._task is not None:
                # Let the loop close its watcher itself: closing it under a thread that is
                # still inside watch() is not safe (as localagents/index.py does).
                await asyncio.wait([self._task], timeout=5)
        finally:
            await self._tasks.__aexit__(None, None, None)

    def sessions_changed(self) -> None:
        """A session started, ended or moved: watch what the live ones work in."""
        self._resync.set()
        self._stop.set()

    # -- what the tool, the CLI and the console read ---------------------------------------

    def overlaps(self, repo: str | None = None) -> list[TrackedOverlap]:
        """The current overlaps between live worktrees (of ``repo``, a git common dir, when
        given), oldest first."""
        out = []
        for (a, b), pair in self._pairs.items():
            if repo is not None and pair.repo != repo:
                continue
            ta, tb = self._trees.get(a), self._trees.get(b)
            if ta is None or tb is None:
                continue
            out.append(
                TrackedOverlap(
                    pair.repo,
                    TreeSide(a, ta.branch, self._agents.get(a, ())),
                    TreeSide(b, tb.branch, self._agents.get(b, ())),
                    pair.files,
                    pair.began,
                    pair.conflicts,
                )
            )
        return sorted(out, key=lambda o: o.since)

    def repo_of(self, directory: str) -> str | None:
        """The repository (git common dir) of a live worktree ``directory`` is in, when the
        watch follows it; None otherwise (no git call)."""
        real = os.path.realpath(directory)
        for top, tree in self._trees.items():
            if real == top or real.startswith(top + os.sep):
                return tree.repo
        return None

    def status(self) -> dict[str, Any]:
        """The watch at a glance: the worktrees followed, with their sessions and how many
        files each changes, and the overlaps (as :meth:`overlaps`)."""
        return {
            "worktrees": [
                {
                    "top": t.top,
                    "repo": t.repo,
                    "branch": t.branch,
                    "target": t.target,
                    "sessions": list(self._agents.get(top, ())),
                    "changes": len(t.changes),
                }
                for top, t in sorted(self._trees.items())
            ],
            "overlaps": [overlap_row(o) for o in self.overlaps()],
        }

    # -- the loop ----------------------------------------------------------------------------

    async def _run(self) -> None:
        while not self._closing:
            await self._resync.wait()
            if self._closing:
                return
            self._resync.clear()
            self._stop.clear()
            await self.follow_sessions()
            paths = self._paths()
            if not paths:
                await self._evaluate()  # no live worktree: no pair, nothing told is kept
                continue
            # Imported once a worktree is followed: watchfiles brings anyio and
            # multiprocessing, a few MB an idle daemon has no use for.
            from watchfiles._rust_notify import RustNotify

            try:
                watcher = await asyncio.to_thread(RustNotify, paths, False, False, 300, True, True)
            except Exception:
                log.warning("cannot watch %s; conflicts are not followed", paths, exc_info=True)
                continue
            try:
                await self._follow(watcher)
            except Exception:  # a worktree removed under the watch, say: watch again
                log.warning("the conflict watch failed; watching again", exc_info=True)
                self._resync.set()
                await asyncio.sleep(_RETRY_S)  # a back-off, not a poll
            finally:
                watcher.close()

    async def _follow(self, watcher: Any) -> None:
        """Recompute everything once the watch is in place, then each batch of changes, until
        the sessions change or the watch stops."""
        # After the watch is in place: a change made before it is seen here, one made after
        # by the watch.
        await self._recompute(set(self._trees), set(self._trees), set())
        while not self._stop.is_set():
            changes = await asyncio.to_thread(
                watcher.watch, self._debounce, _STEP_MS, _WAIT_MS, self._stop
            )
            if isinstance(changes, str):
                continue  # "timeout" (look at the flag again), "stop" or "signal"
            await self.changed([path for _, path in changes])

    async def follow_sessions(self) -> None:
        """Read the live sessions and find the worktrees they work in (git asked once per new
        cwd)."""
        live = dict(self._sessions())
        unknown = [cwd for cwd in set(live.values()) if cwd not in self._where]
        if unknown:
            found = await asyncio.to_thread(lambda: {cwd: locate(cwd) for cwd in unknown})
            self._where.update(found)
        agents: dict[str, list[str]] = {}
        for agent, cwd in live.items():
            tree = self._where.get(cwd)
            if tree is not None:
                agents.setdefault(tree.top, []).append(agent)
                self._trees.setdefault(tree.top, tree)
        for top in [t for t in self._trees if t not in agents]:
            del self._trees[top]
        self._agents = {top: tuple(sorted(names)) for top, names in agents.items()}
        for cwd in [c for c in self._where if c not in live.values()]:
            del self._where[cwd]  # asked again should a session work there later

    def _paths(self) -> list[str]:
        paths = set(self._trees)
        for tree in self._trees.values():
            if not any(tree.repo.startswith(top + os.sep) for top in self._trees):
                paths.add(tree.repo)  # a linked worktree's repository lives elsewhere
        return sorted(paths)

    async def changed(self, paths: Iterable[str]) -> None:
        """What the watch does with one batch of changed ``paths``: which worktrees they touch,
        then one recompute of those (and the notices it brings)."""
        files: set[str] = set()
        refs: set[str] = set()
        retarget: set[str] = set()
        for path in paths:
            for top, tree in self._trees.items():
                if path.startswith(tree.repo + os.sep) or path.startswith(tree.gitdir + os.sep):
                    moved = _git_ref_path(path)
                    if moved:
                        # A branch or HEAD moved: every worktree of the repository, since its
                        # target branch may be the one that moved.
                        same = {t for t, o in self._trees.items() if o.repo == tree.repo}
                        refs.update(same)
                        if moved == "target":
                            retarget.update(same)
                    break
                if path.startswith(top + os.sep):
                    dotgit = os.path.join(top, ".git")  # a linked worktree's pointer file
                    if path != dotgit and not path.startswith(dotgit + os.sep):
                        files.add(top)  # .github/ and .gitignore are files of the tree
                    break
        if files or refs:
            await self._recompute(files | refs, refs, retarget)

    async def _recompute(self, tops: set[str], refs: set[str], retarget: set[str]) -> None:
        trees = {t: self._trees[t] for t in tops if t in self._trees}
        if not trees:
            return

        def work() -> dict[str, TreeChanges]:
            out = {}
            for top, tree in trees.items():
                if top in refs or not tree.head:
                    tree = refresh_commits(tree, retarget=top in retarget)
                out[top] = refresh_pending(tree)
            return out

        fresh = await asyncio.to_thread(work)
        self.recomputes += 1
        for top, tree in fresh.items():
            if top in self._trees:
                self._trees[top] = tree
        await self._evaluate()

    async def _evaluate(self) -> None:
        """The pairs now, git merge-tree where it can judge, then the notices."""
        now = self._clock()
        pairs: dict[tuple[str, str], Pair] = {}
        judge: list[tuple[tuple[str, str], TreeChanges, TreeChanges]] = []
        tops = sorted(self._trees)
        for i, a in enumerate(tops):
            ta = self._trees[a]
            for b in tops[i + 1 :]:
                tb = self._trees[b]
                if tb.repo != ta.repo:
                    continue
                shared = shared_files(ta.changes, tb.changes)
                if not shared:
                    continue
                key = pair_key(a, b)
                old = self._pairs.get(key)
                since = {f: (old.since.get(f, now) if old else now) for f in shared}
                pairs[key] = Pair(ta.repo, a, b, since)
                if not shared & (ta.pending | tb.pending):
                    judge.append((key, ta, tb))
        verdicts: dict[tuple[str, str], Verdict] = {}
        asks = [(k, x, y) for k, x, y in judge if (x.head, y.head) not in self._verdicts]
        if asks:
            found = await asyncio.to_thread(
                lambda: {
                    (x.head, y.head): merge_conflicts(x.top, x.head, y.head) for _, x, y in asks
                }
            )
            self._verdicts.update(found)
        for key, x, y in judge:
            verdicts[key] = self._verdicts.get((x.head, y.head))
        used = {(x.head, y.head) for _, x, y in judge}
        self._verdicts = {k: v for k, v in self._verdicts.items() if k in used}
        self._pairs = {k: replace(p, conflicts=verdicts.get(k)) for k, p in pairs.items()}
        await self._tell(now)

    async def _tell(self, now: float) -> None:
        live: set[tuple[str, str]] = set()
        for (a, b), pair in self._pairs.items():
            for mine, other in ((a, b), (b, a)):
                for agent in self._agents.get(mine, ()):
                    live.add((agent, other))
                    new = self._told.news(agent, other, pair.files)
                    worse = self._told.worse(agent, other, pair.conflicts)
                    if new or worse:
                        await self._notify(agent, mine, other, new, worse, pair, now)
        self._told.keep_only(live)

    async def _notify(
        self,
        agent: str,
        mine: str,
        other: str,
        new: list[str],
        worse: list[str],
        pair: Pair,
        now: float,
    ) -> None:
        """One notice to ``agent``: ``new`` files newly shared (the verdict said with them),
        else the verdict newly naming the conflicting files ``worse``."""
        me, them = self._trees[mine], self._trees[other]
        text = (notice_text if new else worse_text)(
            mine=mine,
            my_branch=me.branch,
            other=other,
            other_branch=them.branch,
            others=self._agents.get(other, ()),
            new=new,
            pair=pair,
            now=now,
        )
        msg = wire.make_message(sender=SENDER, kind=pb.MESSAGE_TEXT, body=text.encode(), to=agent)
        try:
            await self._inboxes.deliver(agent, msg)
        except Exception:  # logged: the overlap stays in check_conflicts
            log.warning("could not tell %s of an overlap with %s", agent, other, exc_info=True)
            return
        self._inboxes.emit(
            "CONFLICT_NOTICE",
            agent,
            worktree=mine,
            other=other,
            files=new,
            conflicts=None if pair.conflicts is None else list(pair.conflicts),
            worse=worse,
        )


def overlap_row(o: TrackedOverlap) -> dict[str, Any]:
    """An overlap as data (the tool's and the CLI's ``--json`` row)."""

    def side(s: TreeSide) -> dict[str, Any]:
        return {"worktree": s.top, "branch": s.branch, "sessions": list(s.sessions)}

    return {
        "a": side(o.a),
        "b": side(o.b),
        "files": list(o.files),
        "since": o.since,
        "conflicts": None if o.conflicts is None else list(o.conflicts),
    }
