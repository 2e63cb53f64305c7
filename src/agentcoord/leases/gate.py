"""One gate per repository, so two overlapping file claims are never both granted
(docs/claims.md "Folders and globs").

The claim store compare-and-sets each key alone: two claims on one file cannot both win. A
folder or glob claim and a claim of a file in it are two keys, so the leases service checks
for an overlap before it writes, and the check and the write must not interleave with another
claim's. A file claim passes the gate *shared* (file claims of one repository go on together:
the store settles each key), a folder or glob claim *alone* (it waits for the file claims in
flight, and they for it). Waiters are let in in order, and an uncontended pass costs a
dictionary lookup and a counter.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
from collections.abc import AsyncIterator, Hashable
from dataclasses import dataclass, field

__all__ = ["RepoGates"]


@dataclass
class _Gate:
    shared: int = 0
    alone: bool = False
    waiting: collections.deque[tuple[bool, asyncio.Future[None]]] = field(
        default_factory=collections.deque
    )

    def idle(self) -> bool:
        return not self.shared and not self.alone and not self.waiting


class RepoGates:
    """A gate per repository (any hashable name: a git common dir, or None outside git)."""

    def __init__(self) -> None:
        self._gates: dict[Hashable, _Gate] = {}

    @contextlib.asynccontextmanager
    async def passing(self, repo: Hashable, alone: bool) -> AsyncIterator[None]:
        """Hold ``repo``'s gate, alone or shared, for the block."""
        await self._enter(repo, alone)
        try:
            yield
        finally:
            self._leave(repo, alone)

    async def _enter(self, repo: Hashable, alone: bool) -> None:
        gate = self._gates.get(repo)
        if gate is None:
            gate = self._gates[repo] = _Gate()
        if not gate.waiting and not gate.alone and (not alone or not gate.shared):
            if alone:
                gate.alone = True
            else:
                gate.shared += 1
            return
        let_in: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        gate.waiting.append((alone, let_in))
        try:
            await let_in
        except BaseException:
            if let_in.done() and not let_in.cancelled():
                self._leave(repo, alone)  # let in, then cancelled: pass it on
            else:
                with contextlib.suppress(ValueError):
                    gate.waiting.remove((alone, let_in))
                self._wake(repo, gate)
            raise

    def _leave(self, repo: Hashable, alone: bool) -> None:
        gate = self._gates[repo]
        if alone:
            gate.alone = False
        else:
            gate.shared -= 1
        self._wake(repo, gate)

    def _wake(self, repo: Hashable, gate: _Gate) -> None:
        while gate.waiting and not gate.alone:
            alone, let_in = gate.waiting[0]
            if let_in.done():  # cancelled while waiting
                gate.waiting.popleft()
                continue
            if alone:
                if gate.shared:
                    break
                gate.waiting.popleft()
                gate.alone = True
                let_in.set_result(None)
                break
            gate.waiting.popleft()
            gate.shared += 1
            let_in.set_result(None)
        if gate.idle():
            self._gates.pop(repo, None)
