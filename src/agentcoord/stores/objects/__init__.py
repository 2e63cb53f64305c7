"""The Kubernetes-compatible object store and the HTTP API that ``kubectl`` talks to.

Pure core: :mod:`writerules` (resourceVersion, generation, deletion), :mod:`selectors`,
:mod:`patch`, :mod:`schema`, :mod:`kinds` (each kind's typed spec and status) with :mod:`typed`
(their schema and wire codec), :mod:`recordcodec` and :mod:`recordmaps` (records as objects),
:mod:`tables`. I/O shell: :mod:`store` (SQLite +
memory + watchers), :mod:`api` (HTTP), :mod:`tls` (CA, certificates, kubeconfig).
"""

from __future__ import annotations

from agentcoord.stores.objects.backend import ObjectBackend
from agentcoord.stores.objects.kinds import GROUP, GROUP_VERSION, KINDS, Kind
from agentcoord.stores.objects.statuserrors import (
    AlreadyExists,
    BadRequest,
    Conflict,
    Expired,
    Invalid,
    ObjectNotFound,
    StoreError,
    UnsupportedMediaType,
)
from agentcoord.stores.objects.store import ObjectStore
from agentcoord.stores.objects.watch import Watcher, WatchEvent

__all__ = [
    "GROUP",
    "GROUP_VERSION",
    "KINDS",
    "AlreadyExists",
    "BadRequest",
    "Conflict",
    "Expired",
    "Invalid",
    "Kind",
    "ObjectBackend",
    "ObjectNotFound",
    "ObjectStore",
    "StoreError",
    "UnsupportedMediaType",
    "WatchEvent",
    "Watcher",
]
