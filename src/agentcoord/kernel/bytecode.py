"""Compiled bytecode for every ``agentcoord`` process, even where the environment turns it off.

With ``PYTHONDONTWRITEBYTECODE`` set (common in containers and CI images) and the package run
from its source tree (an editable install), every start compiled the daemon's ~140 modules
from source again: about 350 ms of a 750 ms restart on this project's 2-CPU reference machine,
paid by every daemon start, shim and command hook. The variable's intent, no ``__pycache__``
in source trees, is kept: the bytecode goes to a private mirror tree in the user's cache dir
(``sys.pycache_prefix``, the documented PYTHONPYCACHEPREFIX mechanism). An explicit
PYTHONPYCACHEPREFIX is left as it is (docs/reliability.md "Bytecode cache").
"""

from __future__ import annotations

import os
import sys

__all__ = ["use_private_bytecode_cache"]


def use_private_bytecode_cache() -> str | None:
    """Point bytecode writes and reads at ``$XDG_CACHE_HOME/agentcoord/pycache`` when the
    environment turned writing off; returns the dir used, or None (nothing changed). Imports
    after this call use it; a cache dir that cannot be made leaves things as they were."""
    if os.environ.get("AGENTCOORD_NO_BYTECODE_CACHE") or not sys.dont_write_bytecode:
        return None
    if sys.pycache_prefix is not None:
        return None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    path = os.path.join(base, "agentcoord", "pycache")
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
    except OSError:
        return None
    if not os.access(path, os.W_OK):
        return None
    sys.pycache_prefix = path
    sys.dont_write_bytecode = False
    return path
