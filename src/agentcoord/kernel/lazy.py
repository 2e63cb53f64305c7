"""Modules that load on first use, for the daemon's start-up (ready <= 300 ms).

``on_first_use(name)`` registers a module whose code runs when an attribute it lacks is first
asked for; ``load_deferred()`` runs them all (the daemon calls it in a thread once ready, so
neither ready nor the first request pays). Unlike importlib's LazyLoader (3.11), a reader in
another thread waits for the code to finish instead of seeing a half-run module.
"""

from __future__ import annotations

import importlib.util
import sys
import threading
from types import ModuleType
from typing import Any

__all__ = ["load_deferred", "on_first_use"]

_lock = threading.RLock()
_deferred: list[ModuleType] = []


class _OnFirstUse(ModuleType):
    def __getattr__(self, name: str) -> Any:  # called only for attributes the module lacks
        _load(self)
        try:
            return self.__dict__[name]
        except KeyError:
            raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}") from None


def _load(module: ModuleType) -> None:
    with _lock:
        state = module.__dict__
        # While its own code runs (same thread), a missing attribute is just missing: the
        # import system asks for submodules that way.
        if state.get("_agentcoord_loaded") or state.get("_agentcoord_loading"):
            return
        state["_agentcoord_loading"] = True
        try:
            module.__spec__.loader.exec_module(module)  # type: ignore[union-attr]
            state["_agentcoord_loaded"] = True
        finally:
            state["_agentcoord_loading"] = False


def on_first_use(name: str) -> ModuleType:
    """``sys.modules[name]``, registering it to load on first use if not imported yet."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None:
        raise ModuleNotFoundError(f"no module named {name!r}", name=name)
    module = importlib.util.module_from_spec(spec)
    module.__class__ = _OnFirstUse
    sys.modules[name] = module
    _deferred.append(module)
    return module


def load_deferred() -> None:
    """Run every registered module's code now (safe from any thread)."""
    for module in list(_deferred):
        _load(module)
