"""Generated protobuf code for the agent.v1 wire format (see proto/).

``agent_pb2`` executes on first attribute use, not on import: loading protobuf and building the
descriptors costs ~12 ms that the daemon's start-up does not need (ready <= 300 ms), and the
daemon loads it in a thread while start-up waits on NATS (:func:`load_agent_pb2`).
"""

from __future__ import annotations

import importlib.util
import sys
import threading
from types import ModuleType
from typing import TYPE_CHECKING, Any

__all__ = ["agent_pb2", "load_agent_pb2"]

_lock = threading.RLock()


class _OnFirstUse(ModuleType):
    """A module whose code runs when an attribute it lacks is first asked for.

    Unlike importlib's LazyLoader (3.11), a reader in another thread waits for the code to
    finish instead of seeing a half-run module.
    """

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        with _lock:
            state = self.__dict__
            if not state.get("_agentcoord_loaded") and not state.get("_agentcoord_loading"):
                state["_agentcoord_loading"] = True
                try:
                    self.__spec__.loader.exec_module(self)  # type: ignore[union-attr]
                    state["_agentcoord_loaded"] = True
                finally:
                    state["_agentcoord_loading"] = False
        try:
            return state[name]
        except KeyError:
            raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}") from None


def _deferred(name: str) -> ModuleType:
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.find_spec(name)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    module.__class__ = _OnFirstUse
    sys.modules[name] = module
    return module


def load_agent_pb2() -> None:
    """Run the generated code now (safe from any thread)."""
    _ = agent_pb2.ChannelMessage


if TYPE_CHECKING:
    from agentcoord.proto.agent.v1 import agent_pb2  # the generated stubs (agent_pb2.pyi)
else:
    agent_pb2 = _deferred(f"{__name__}.agent_pb2")
