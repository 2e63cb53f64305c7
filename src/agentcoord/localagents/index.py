"""The live AgentiHub package index: ``<hub>/agents/<id>/package/CLAUDE.md`` (+ ``command.yml``).

Held in memory, never persisted (docs/localagents.md "Local agents: packages and sessions"). A full
scan at start, then watchfiles (inotify via Rust ``notify``) keeps it live: each change re-reads
only the package it touched, so a new ``CLAUDE.md`` shows within tens of milliseconds.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

from agentcoord.kernel.tasks import TaskSet
from agentcoord.localagents.manifest import Manifest, capability_tags, read_package_manifest
from agentcoord.localagents.paths import is_safe_agent_id, package_dir

__all__ = ["Package", "PackageIndex"]

log = logging.getLogger(__name__)

_STEP_MS = 20  # group changes for this long after the last one (watchfiles ``step``)
_DEBOUNCE_MS = 200  # never hold a burst of changes back longer than this


@dataclass(frozen=True)
class Package:
    """One indexed package: its id, its resolved directory and its manifest."""

    agent_id: str
    path: Path
    manifest: Manifest
    # Derived once: discover_local_agents builds a row per package on every call, and with a
    # thousand packages these were half its time (bench/localagents.py).
    tags: tuple[str, ...] = field(init=False, repr=False, compare=False)
    path_text: str = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "tags", tuple(capability_tags(self.agent_id, self.manifest)))
        object.__setattr__(self, "path_text", str(self.path))


def load_package(hub: Path, agent_id: str) -> Package | None:
    """Read one package from disk, applying every path check; None when it is not a package."""
    path = package_dir(hub, agent_id)
    if path is None:
        return None
    return Package(agent_id, path, read_package_manifest(path))


class PackageIndex:
    """Packages by id, kept live; an async context manager owning its watcher."""

    def __init__(self, hub: Path | None) -> None:
        self.hub = hub
        self._packages: dict[str, Package] = {}
        self._changed = asyncio.Condition()
        self._stop = threading.Event()
        self._tasks = TaskSet("package index")
        self._task: asyncio.Task[None] | None = None  # the watch, while there is one
        self.generation = 0  # bumped on every applied change (tests and benches wait on it)
        self.watching = False

    # -- reads -------------------------------------------------------------------------------
    def packages(self) -> list[Package]:
        """A snapshot of every indexed package, ordered by id."""
        return [self._packages[k] for k in sorted(self._packages)]

    def get(self, agent_id: str) -> Package | None:
        return self._packages.get(agent_id)

    def __len__(self) -> int:
        return len(self._packages)

    # -- updates -----------------------------------------------------------------------------
    def rescan(self) -> None:
        """Re-read every package from disk."""
        found: dict[str, Package] = {}
        if self.hub is not None:
            try:
                entries = list(os.scandir(self.hub / "agents"))
            except OSError:
                entries = []
            for entry in entries:
                if not is_safe_agent_id(entry.name):
                    continue
                pkg = load_package(self.hub, entry.name)
                if pkg is not None:
                    found[entry.name] = pkg
        self._packages = found
        self.generation += 1

    def refresh(self, agent_id: str) -> None:
        """Re-read one package (after a change under its directory)."""
        if self.hub is None:
            return
        pkg = load_package(self.hub, agent_id) if is_safe_agent_id(agent_id) else None
        if pkg is None:
            self._packages.pop(agent_id, None)
        else:
            self._packages[agent_id] = pkg

    def apply_changes(self, paths: list[str]) -> set[str]:
        """Map changed paths to package ids and refresh those; returns the ids touched."""
        if self.hub is None:
            return set()
        agents = str(self.hub / "agents")
        touched: set[str] = set()
        full = False
        for path in paths:
            if path == agents or not path.startswith(agents + os.sep):
                full = full or path == agents or agents.startswith(path)
                continue
            touched.add(path[len(agents) + 1 :].split(os.sep, 1)[0])
        if full:
            self.rescan()
            return set(self._packages)
        for agent_id in touched:
            self.refresh(agent_id)
        self.generation += 1
        return touched

    async def wait_generation(self, after: int) -> int:
        """Wait until the index has applied a change past ``after``."""
        async with self._changed:
            await self._changed.wait_for(lambda: self.generation > after)
            return self.generation

    # -- lifecycle ---------------------------------------------------------------------------
    async def __aenter__(self) -> PackageIndex:
        if self.hub is not None and self.hub.is_dir():
            await self._tasks.__aenter__()
            self._task = self._tasks.spawn(self._watch(), name="package-index-watch")
            # Watch first, then scan: a package created in between is seen by one or the other.
            try:
                async with self._changed:
                    await self._changed.wait_for(self._ready_or_failed)
            except BaseException:  # cancelled by start-up's bound: stop the watch again
                await self.__aexit__(None, None, None)
                raise
        else:
            self.rescan()
        return self

    def _ready_or_failed(self) -> bool:
        return self.watching or self._task is None or self._task.done()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stop.set()
        task, self._task = self._task, None
        try:
            if task is not None:
                await asyncio.wait([task])  # the stop event ends the watch between steps
        finally:
            await self._tasks.__aexit__(None, None, None)

    async def _notify(self) -> None:
        async with self._changed:
            self._changed.notify_all()

    async def _watch(self) -> None:
        from watchfiles._rust_notify import RustNotify

        assert self.hub is not None
        try:
            watcher = await asyncio.to_thread(
                RustNotify, [str(self.hub)], False, False, 300, True, True
            )
        except Exception:
            log.warning(
                "cannot watch %s; the package index will not update", self.hub, exc_info=True
            )
            self.rescan()
            self._task = None
            await self._notify()
            return
        try:
            await asyncio.to_thread(self.rescan)
            self.watching = True
            await self._notify()
            while not self._stop.is_set():
                changes = await asyncio.to_thread(
                    watcher.watch, _DEBOUNCE_MS, _STEP_MS, 1000, self._stop
                )
                if isinstance(changes, str):
                    continue  # "timeout" (loop to re-check stop), "stop" or "signal"
                touched = self.apply_changes([path for _, path in changes])
                log.debug("package index: %d change(s), packages %s", len(changes), touched)
                await self._notify()
        finally:
            self.watching = False
            watcher.close()
