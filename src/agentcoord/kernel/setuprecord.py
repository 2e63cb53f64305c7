"""What ``agentcoord setup <cli>`` changed in a user's file, so ``--remove`` gives it back byte
for byte (docs/other-clis.md "Setup").

Before setup's first change to a file, :func:`remember` records (under ``backups``, outside any
project, private) whether the file existed, the dirs setup will create for it, and its bytes.
:func:`give_back` then takes setup's entries out: when what is left equals the recorded original
(nothing else changed since), the original bytes are written back, or the file (and the dirs
setup created) deleted when setup created it; otherwise only our entries go, and the rest of the
user's later edits stay.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from agentcoord.errors import ConfigError
from agentcoord.kernel.files import write_atomic, write_private

__all__ = [
    "JsonEntry",
    "Recalled",
    "apply",
    "give_back",
    "recall",
    "record_file",
    "remember",
    "remove_dirs",
    "restore_bytes",
]


def record_file(backups: Path, path: Path) -> Path:
    """Where the record of ``path`` lives under ``backups``."""
    key = hashlib.sha256(str(path.absolute()).encode()).hexdigest()[:32]
    return backups / f"{key}.json"


def remember(backups: Path, path: Path, *, again: bool = False) -> None:
    """Record ``path`` as it is now, unless a record is already there (a second setup keeps the
    first record: the state to give back); ``again`` replaces it (the file holds none of
    setup's entries any more, so what it is now is the state to give back)."""
    record = record_file(backups, path)
    if record.exists() and not again:
        return
    created = not path.exists()
    dirs = [str(d) for d in (path.parent, *path.parent.parents) if not d.exists()]
    entry: dict[str, object] = {"path": str(path.absolute()), "created": created, "dirs": dirs}
    if not created:
        entry["original"] = base64.b64encode(path.read_bytes()).decode()
    backups.mkdir(mode=0o700, parents=True, exist_ok=True)
    write_private(record, json.dumps(entry))


class Recalled(NamedTuple):
    """A file's record: where it is, whether setup created the file, the dirs setup created
    for it, and its bytes before (empty when setup created it)."""

    record: Path
    created: bool
    dirs: list[Path]
    original: bytes

    def original_json(self) -> object:
        """The original bytes as JSON (``{}`` when empty), or None when they are not JSON."""
        try:
            return json.loads(self.original.decode() or "{}")
        except ValueError:
            return None


def recall(backups: Path, path: Path) -> Recalled | None:
    """The record of ``path``, or None when there is none (or it names another file)."""
    record = record_file(backups, path)
    try:
        entry = json.loads(record.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(entry, dict) or entry.get("path") != str(path.absolute()):
        return None
    dirs = [Path(d) for d in entry.get("dirs", []) if isinstance(d, str)]
    original = base64.b64decode(entry.get("original", ""))
    return Recalled(record, bool(entry.get("created")), dirs, original)


def restore_bytes(path: Path, data: bytes) -> None:
    """Write a file's recorded bytes back (its mode kept, its dir made again if gone)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, data, keep_mode=True)


def remove_dirs(dirs: list[Path]) -> None:
    """Remove the dirs setup created, deepest first, each only when empty."""
    for d in sorted(dirs, key=lambda d: -len(d.parts)):
        with contextlib.suppress(OSError):  # not empty: it holds something else now
            d.rmdir()


def give_back(
    backups: Path,
    path: Path,
    without_ours: Callable[[bytes], bytes],
    same: Callable[[bytes, bytes], bool],
) -> str:
    """Take setup's entries out of ``path``: ``without_ours(current)`` is the file with them
    gone, ``same(left, original)`` says whether that is the original in substance. Returns what
    happened: ``restored``, ``deleted``, ``stripped`` or ``unchanged``."""
    if not path.exists():
        return "unchanged"
    current = path.read_bytes()
    left = without_ours(current)
    recalled = recall(backups, path)
    if recalled is None:
        if left == current:
            return "unchanged"
        write_atomic(path, left, keep_mode=True)
        return "stripped"
    recalled.record.unlink()
    if recalled.created:
        if same(left, b""):
            path.unlink()
            remove_dirs(recalled.dirs)
            return "deleted"
    elif same(left, recalled.original):
        write_atomic(path, recalled.original, keep_mode=True)
        return "restored"
    if left == current:
        return "unchanged"
    write_atomic(path, left, keep_mode=True)
    return "stripped"


def apply(backups: Path, path: Path, change: Callable[[bytes], bytes]) -> str:
    """Write ``change(current bytes)`` to ``path`` (b"" when missing), recording the file first;
    ``created``, ``updated`` or ``unchanged``."""
    existed = path.exists()
    current = path.read_bytes() if existed else b""
    new = change(current)
    if new == current:
        return "unchanged"
    remember(backups, path)
    path.parent.mkdir(parents=True, exist_ok=True)
    # A user's file keeps its own mode; a new one is 0600 (it may hold tokens).
    write_atomic(path, new, keep_mode=True)
    return "updated" if existed else "created"


# -- one entry in a JSON object file (Gemini's settings.json, OpenCode's opencode.json) ------


def _json(data: bytes, path_hint: str) -> dict[str, object]:
    try:
        loaded = json.loads(data.decode() or "{}")
    except ValueError as exc:
        raise ConfigError(f"{path_hint} is not valid JSON ({exc}); not touching it") from None
    if not isinstance(loaded, dict):
        raise ConfigError(f"{path_hint} does not hold a JSON object; not touching it")
    return loaded


class JsonEntry:
    """``data[table][name] = value`` in a JSON object file, added and taken out again."""

    def __init__(self, table: str, name: str, value: dict[str, object], where: str) -> None:
        self.table, self.name, self.value, self.where = table, name, value, where

    def add(self, current: bytes) -> bytes:
        data = _json(current, self.where)
        table = data.get(self.table)
        if table is None:
            table = data[self.table] = {}
        if not isinstance(table, dict):
            raise ConfigError(f"{self.where}: {self.table!r} is not an object; not touching it")
        if table.get(self.name) == self.value:
            return current
        table[self.name] = self.value
        return (json.dumps(data, indent=2) + "\n").encode()

    def present(self, current: bytes) -> bool:
        try:
            table = _json(current, self.where).get(self.table)
        except Exception:  # unreadable: not ours to judge here
            return False
        return isinstance(table, dict) and self.name in table

    def drop(self, current: bytes) -> bytes:
        data = _json(current, self.where)
        table = data.get(self.table)
        if not isinstance(table, dict) or self.name not in table:
            return current
        del table[self.name]
        if not table:
            del data[self.table]
        return (json.dumps(data, indent=2) + "\n").encode() if data else b""

    def same(self, left: bytes, original: bytes) -> bool:
        """Equal as JSON (an empty file and ``{}`` alike)."""
        try:
            return _json(left, self.where) == _json(original, self.where)
        except Exception:
            return False
