"""The live folder and glob claims, by repository (docs/claims.md "Folders and globs").

The write guard runs on every edit and looks up the file's own key in one step; the folder and
glob claims that may cover the file are few, so they are kept apart, grouped by repository, by
a :class:`~agentcoord.stores.kv.KeyIndex` the claim store keeps up to date. Which of them cover
a file, or overlap another claim, is :mod:`agentcoord.leases.matcher`'s decision.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from agentcoord.leases.filekeys import FILE_PREFIX, SEPARATOR, split_file_key
from agentcoord.leases.matcher import GLOB_CHARS, is_pattern, overlaps, path_set
from agentcoord.stores.kv import Contention, compatible

if TYPE_CHECKING:
    from agentcoord.leases.filekeys import FileKey
    from agentcoord.stores.kv import ClaimStore, Holder, Mode

__all__ = ["Overlap", "PatternClaims", "literal_prefix", "names_pattern"]


@dataclass(frozen=True)
class Overlap(Contention):
    """A claim refused because ``holder`` holds an overlapping claim on another key, ``key``
    (a folder or glob over the file, a file in the folder or glob, or an overlapping one)."""

    key: str = ""


def literal_prefix(pattern: str) -> str:
    """The leading directories of a folder or glob path that hold no glob: every file it
    covers is below them (``src/**/*.py`` -> ``src/``, ``*.md`` -> empty)."""
    cut = next((k for k, c in enumerate(pattern) if c in GLOB_CHARS), len(pattern))
    return pattern[: pattern.rfind("/", 0, cut) + 1]


def names_pattern(key: str) -> bool:
    """Whether a stored claim key is a file claim on a folder or glob."""
    return key.startswith(FILE_PREFIX) and is_pattern(split_file_key(key)[1])


class PatternClaims:
    """The folder and glob claims of ``claims``' view, grouped by repository (the git common
    dir; None for paths outside git)."""

    def __init__(self, claims: ClaimStore) -> None:
        self._claims = claims
        self._index = claims.index(names_pattern)
        self._seen = -1
        self._by_repo: dict[str | None, list[tuple[str, str]]] = {}  # repo -> [(key, path)]

    def _grouped(self) -> dict[str | None, list[tuple[str, str]]]:
        if self._seen != self._index.version:
            grouped: dict[str | None, list[tuple[str, str]]] = {}
            for key in self._index.keys.values():
                repo, path = split_file_key(key)
                grouped.setdefault(repo, []).append((key, path))
            self._by_repo, self._seen = grouped, self._index.version
        return self._by_repo

    def any_in(self, repo: str | None) -> bool:
        """Whether ``repo`` has a folder or glob claim in the view (live or about to be
        reaped)."""
        return bool(self._grouped().get(repo))

    def covering(self, repo: str | None, path: str) -> list[tuple[str, Holder]]:
        """The live (key, holder) of every folder or glob claim of ``repo`` covering the file
        ``path``."""
        out: list[tuple[str, Holder]] = []
        for key, pattern in self._grouped().get(repo, ()):
            if path_set(pattern).covers(path):
                out.extend((key, h) for h in self._claims.holders(key))
        return out

    def files_in(self, fk: FileKey) -> list[tuple[str, Holder]]:
        """The live (key, holder) of every file claim (not folder or glob) in ``fk``'s
        repository that the folder or glob ``fk`` covers."""
        head = FILE_PREFIX + (fk.repo + SEPARATOR if fk.repo is not None else "")
        out: list[tuple[str, Holder]] = []
        for key, holder in self._claims.check(head + literal_prefix(fk.rel)):
            repo, path = split_file_key(key)
            if repo == fk.repo and not is_pattern(path) and path_set(fk.rel).covers(path):
                out.append((key, holder))
        return out

    def clash(self, agent: str, fk: FileKey, mode: Mode) -> Overlap | None:
        """The first live claim of another agent on another key whose files overlap ``fk``'s
        and whose mode excludes ``mode`` (the store settles a claim on the same key)."""
        near = self.overlapping(fk.repo, fk.rel)
        if is_pattern(fk.rel):
            near += self.files_in(fk)
        for key, holder in near:
            if key != fk.key and holder.agent != agent and not compatible(holder.mode, mode):
                return Overlap(holder, key)
        return None

    def overlapping(self, repo: str | None, path: str) -> list[tuple[str, Holder]]:
        """The live (key, holder) of every folder or glob claim of ``repo`` whose files overlap
        those of ``path`` (a file, folder or glob)."""
        out: list[tuple[str, Holder]] = []
        for key, pattern in self._grouped().get(repo, ()):
            if overlaps(pattern, path):
                out.extend((key, h) for h in self._claims.holders(key))
        return out
