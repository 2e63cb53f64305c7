"""AgentProfile and Agent objects for started agents, read and written in the object store.

Profiles are read from the store at every start, so ``kubectl apply`` of a profile takes effect
for the next start and never for runs already going (their command line is fixed at spawn).
The Agent a runner works as gets ``status.phase`` Pending -> Running -> Succeeded | Failed with
a readable ``status.message``; an unresolvable profile fails the Agent before anything starts.
"""

from __future__ import annotations

import contextlib
import logging
import time
from typing import TYPE_CHECKING, Any

from agentcoord.localagents.profiles import (
    DEFAULT_PROFILE,
    Profile,
    ProfileError,
    profile_from_object,
)
from agentcoord.stores.objects.statuserrors import AlreadyExists, ObjectNotFound, StoreError
from agentcoord.stores.objects.writerules import rfc3339

if TYPE_CHECKING:
    from agentcoord.stores.objects.backend import ObjectBackend

__all__ = ["AgentObjects", "ProfileBook"]

log = logging.getLogger(__name__)


class ProfileBook:
    """AgentProfiles in one namespace of the store."""

    def __init__(self, store: ObjectBackend, defaults: Profile, namespace: str = "default") -> None:
        self._store = store
        self._defaults = defaults
        self._ns = namespace

    async def ensure_default(self, body: dict[str, Any]) -> bool:
        """Create the ``default`` profile unless one exists (a user's edits are kept)."""
        try:
            await self._store.create("agentprofiles", self._ns, body)
        except AlreadyExists:
            return False
        log.info("created the default AgentProfile")
        return True

    async def get(self, name: str) -> Profile:
        """The profile as stored now; a missing one is a :class:`ProfileError`."""
        try:
            obj = await self._store.get("agentprofiles", self._ns, name or DEFAULT_PROFILE)
        except ObjectNotFound:
            raise ProfileError(
                f"no AgentProfile {name!r} (kubectl get agentprofiles lists them)"
            ) from None
        return profile_from_object(obj, self._defaults)

    async def list(self) -> list[Profile]:
        objs, _ = await self._store.list("agentprofiles", self._ns)
        profiles = [profile_from_object(o, self._defaults) for o in objs]
        return sorted(profiles, key=lambda p: p.name)


class AgentObjects:
    """The Agent object of a started runner: created or reused, then its status as it runs."""

    def __init__(self, store: ObjectBackend, namespace: str = "default") -> None:
        self._store = store
        self._ns = namespace

    async def starting(self, name: str, spec: dict[str, Any]) -> None:
        """Make sure the Agent exists with ``spec`` merged in, phase Pending."""
        body = {"metadata": {"name": name}, "spec": {"agentType": "local", **spec}}
        try:
            await self._store.create(
                "agents", self._ns, {**body, "status": {"phase": "Pending"}}, keep_status=True
            )
        except AlreadyExists:
            await self._store.patch("agents", self._ns, name, {"spec": body["spec"]})
        await self.status(name, phase="Pending", message="", focus="")

    async def status(self, name: str, **fields: Any) -> None:
        """Merge ``fields`` into ``status``; never fails the run (logged instead)."""
        status = {k: v for k, v in fields.items()}
        if fields.get("phase") == "Running" and "startedAt" not in status:
            status["startedAt"] = rfc3339(time.time())
        status["lastHeartbeat"] = rfc3339(time.time())
        try:
            await self._store.patch(
                "agents", self._ns, name, {"status": status}, subresource="status"
            )
        except StoreError:
            log.warning("could not update Agent %s status", name, exc_info=True)

    async def get(self, name: str) -> dict[str, Any] | None:
        with contextlib.suppress(ObjectNotFound):
            return await self._store.get("agents", self._ns, name)
        return None
