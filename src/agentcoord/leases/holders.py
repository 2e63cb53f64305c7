"""Whose a claim is and what it names: the canonical key of a claimed file, the holder's
site, and the process whose exit releases a holder's claims (docs/claims.md "Claiming files").

A file key (``file:<path>``, or a bare absolute path) is resolved against the caller's cwd to
its canonical key (by the leases service's :class:`agentcoord.leases.filekeys.FileKeys`), so
the same file claimed from any worktree of one repository is one lease; other keys are kept as
given.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from agentcoord.leases.filekeys import FILE_PREFIX, FileKey, FileKeys
from agentcoord.leases.sites import Site
from agentcoord.stores.kv import ProcKey, proc_key

if TYPE_CHECKING:
    from agentcoord.kernel.caller import Caller

__all__ = [
    "canonical_key",
    "holder_process",
    "holder_site",
    "names_file",
    "own_site",
    "prefix_key",
]


def names_file(key: str) -> bool:
    """A ``file:`` key, or a bare absolute path; other keys (``symbol:``, ``lock:``, a bare
    name) are opaque (docs/claims.md "Claiming files")."""
    return key.startswith(FILE_PREFIX) or key.startswith("/")


def canonical_key(keys: FileKeys, key: str, cwd: str | None) -> tuple[str, FileKey | None]:
    """The key a claim is stored under: a file key (a file, a folder or a glob) resolved
    against ``cwd`` (the caller's) to its canonical form, with its identity; any other key
    unchanged, with None."""
    if not names_file(key):
        return key, None
    fk = keys.claim_key(key, cwd)
    return fk.key, fk


def holder_site(keys: FileKeys, fk: FileKey, cwd: str | None) -> Site:
    """The holder's worktree and branch: its cwd's when that is in the file's repository (an
    absolute path into another worktree is still claimed from the holder's own), else the
    file's."""
    if cwd:
        here = keys.file_key(os.path.join(cwd, "_"), None)
        if here.repo is not None and here.repo == fk.repo:
            return Site(here.worktree, here.branch)
    return Site(fk.worktree, fk.branch)


def own_site(keys: FileKeys, cwd: str | None) -> Site | None:
    """The worktree and branch ``cwd`` is in, or None outside git (or without a cwd)."""
    if not cwd:
        return None
    here = keys.file_key(os.path.join(cwd, "_"), None)
    return Site(here.worktree, here.branch) if here.repo is not None else None


def holder_process(caller: Caller) -> ProcKey | None:
    """The process whose exit releases the caller's claims: a session's ``claude``, a runner's
    peer; a human's CLI call is short-lived, so human claims are bound to no process."""
    pid = caller.session_pid if caller.kind == "session" else None
    if caller.kind == "runner":
        pid = caller.pid
    return proc_key(pid) if pid else None


def prefix_key(keys: FileKeys, prefix: str, cwd: str | None) -> str:
    """A claim listing's prefix in canonical form: ``file:src/`` (a directory, by its trailing
    slash) is every claim under the repository's ``src/``; ``file:`` alone is every file
    claim; any other prefix as given."""
    if not names_file(prefix) or prefix == FILE_PREFIX:
        return prefix
    raw = prefix.removeprefix(FILE_PREFIX)
    if raw in (".", "..") or raw.endswith(("/", "/.", "/..")):
        # resolve a name inside the directory, then cut the name: the directory's key + "/"
        return keys.file_key(os.path.join(raw, "_"), cwd).key[:-1]
    return keys.file_key(raw, cwd).key
