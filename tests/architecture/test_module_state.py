"""The leases service keeps no state in its modules (docs/architecture.md "Services"): what
lives as long as the daemon (the claims' sites, git's answers per directory) is an object the
composition root builds, so a second service (a test's) starts empty."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "agentcoord"

# Calls that change a container in place, and the constructors of a lock or an event.
_MUTATORS = {
    "add", "append", "clear", "discard", "extend", "insert", "pop", "popitem", "remove",
    "setdefault", "update",
}  # fmt: skip
_SYNC = {"Lock", "RLock", "Event", "Condition", "Semaphore"}


def module_state(source: str) -> list[str]:
    """The module-level names of ``source`` that hold state: a lock or an event made at import,
    a name a function rebinds (``global``), or a module-level container changed in place."""
    tree = ast.parse(source)
    names: set[str] = set()
    found: set[str] = set()
    for stmt in tree.body:
        targets = stmt.targets if isinstance(stmt, ast.Assign) else []
        if isinstance(stmt, ast.AnnAssign):
            targets = [stmt.target]
        value = getattr(stmt, "value", None)
        for target in targets:
            if not isinstance(target, ast.Name):
                continue
            names.add(target.id)
            func = value.func if isinstance(value, ast.Call) else None
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name in _SYNC:
                found.add(target.id)
    for node in ast.walk(tree):  # every statement and expression, at any depth
        if isinstance(node, ast.Global):
            found.update(node.names)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            owner = node.func.value
            if isinstance(owner, ast.Name) and owner.id in names and node.func.attr in _MUTATORS:
                found.add(owner.id)
        elif isinstance(node, ast.Assign | ast.AugAssign | ast.Delete):
            targets = node.targets if isinstance(node, ast.Assign | ast.Delete) else [node.target]
            for target in targets:
                if (
                    isinstance(target, ast.Subscript)
                    and isinstance(target.value, ast.Name)
                    and target.value.id in names
                ):
                    found.add(target.value.id)
    return sorted(found)


def test_the_leases_modules_keep_no_state() -> None:
    """No module of leases/ keeps a cache, a lock or a counter of its own."""
    held = {
        str(path.relative_to(PACKAGE)): state
        for path in sorted((PACKAGE / "leases").glob("*.py"))
        if (state := module_state(path.read_text()))
    }
    assert held == {}


def test_module_state_is_recognised() -> None:
    """A module-level cache and its lock, a ``global`` counter and a set added to are found;
    constants, and the same containers inside a class, are not."""
    stateful = (
        "import threading\n_cache = {}\n_lock = threading.Lock()\n_seen = set()\nn = 0\n"
        "def f(k):\n    global n\n    n += 1\n    _seen.add(k)\n    with _lock:\n"
        "        _cache[k] = 1\n"
    )
    assert module_state(stateful) == ["_cache", "_lock", "_seen", "n"]
    clean = (
        "import threading\nNAMES = {'a', 'b'}\nLIMIT = 5\n"
        "class C:\n    def __init__(self):\n        self._cache = {}\n"
        "        self._lock = threading.Lock()\n    def put(self, k):\n"
        "        self._cache[k] = 1\n        self._cache.clear()\n"
        "def f(x):\n    out = {}\n    out[x] = 1\n    return x in NAMES\n"
    )
    assert module_state(clean) == []
