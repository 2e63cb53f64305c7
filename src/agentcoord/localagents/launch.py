"""The launch API every start goes through: profile -> plan, the Agent's status, its mailbox.

``run_agent``/``dispatch_to_agent`` use it today; spawn, ask's cold starts and resume call the
same three steps::

    plan = await launcher.prepare(agent, profile_name, job_dir, depth=...)   # ProfileError
    outcome = await run_local(..., plan=plan, mailbox=launcher.mailbox(agent),
                              status=launcher.status_fn(agent, job_id))
    await launcher.finished(agent, outcome)

``prepare`` reads the profile from the store at that moment (so ``kubectl apply`` counts from
the next start) and fails the Agent (phase Failed, a readable ``status.message``) when the
profile cannot be launched. Status goes to the Agent object and, as it works, to
``agents.<id>.status`` on NATS.
"""

from __future__ import annotations

import json
import logging
import shlex
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentcoord.localagents.conversation import Inboxes, InboxMailbox, Mailbox, StatusFn
from agentcoord.localagents.profiles import (
    DEFAULT_PROFILE,
    LaunchPlan,
    Profile,
    ProfileError,
    default_profile_body,
    plan_launch,
    profile_problems,
    shim_server,
)
from agentcoord.localagents.profilestore import AgentObjects, ProfileBook

if TYPE_CHECKING:
    from agentcoord.localagents.runner import RunnerSpec, RunOutcome
    from agentcoord.stores.objects.backend import ObjectBackend

__all__ = ["Launcher", "status_subject"]

log = logging.getLogger(__name__)


def status_subject(agent: str) -> str:
    return f"agents.{agent}.status"


@dataclass
class Launcher:
    """Profiles, Agent objects and messages for started agents (see the module docstring)."""

    store: ObjectBackend
    defaults: Profile
    backends: Mapping[str, str]
    base_env: Mapping[str, str]
    runtime_dir: Path
    nc: Any = None  # NATS client for the status subject
    inboxes: Inboxes | None = None  # the messaging service's inboxes
    shim: Sequence[str] = (sys.executable, "-m", "agentcoord", "mcp")
    namespace: str = "default"  # the daemon's kube_namespace

    def __post_init__(self) -> None:
        self.profiles = ProfileBook(self.store, self.defaults, self.namespace)
        self.agents = AgentObjects(self.store, self.namespace)

    @classmethod
    def for_spec(
        cls,
        spec: RunnerSpec,
        store: ObjectBackend,
        *,
        base_env: Mapping[str, str],
        runtime_dir: Path,
        backends: Mapping[str, str] | None = None,
        nc: Any = None,
        inboxes: Inboxes | None = None,
        namespace: str = "default",
    ) -> Launcher:
        """The launcher whose ``default`` profile is the configured runner (docs/profiles.md):
        profiles from ``store``, messages from ``inboxes``, status on ``nc``."""
        defaults = Profile(
            DEFAULT_PROFILE,
            permission_mode=spec.permission_mode,
            allowed_tools=tuple(
                t for t in spec.allowed_tools.split(",") if t and not t.startswith("mcp__")
            ),
            max_turns=spec.max_turns,
            timeout_s=spec.timeout_s,
        )
        return cls(
            store=store,
            defaults=defaults,
            backends=dict(backends or {"claude-code": shlex.join(spec.command)}),
            base_env=base_env,
            runtime_dir=runtime_dir,
            nc=nc,
            inboxes=inboxes,
            namespace=namespace,
        )

    async def ensure_default_profile(self) -> None:
        """Create the ``default`` AgentProfile on first start."""
        await self.profiles.ensure_default(
            default_profile_body(
                permission_mode=self.defaults.permission_mode,
                allowed_tools=",".join(self.defaults.allowed_tools),
                max_turns=self.defaults.max_turns,
                timeout_s=int(self.defaults.timeout_s),
            )
        )

    async def prepare(
        self, agent: str, profile_name: str, job_dir: Path, *, depth: int = 0, cwd: str = ""
    ) -> LaunchPlan:
        """The launch plan for ``agent`` with the profile as stored now; fails the Agent if not."""
        name = profile_name or DEFAULT_PROFILE
        spec: dict[str, Any] = {"profile": name, "depth": depth}
        if cwd:
            spec["cwd"] = cwd
        await self.agents.starting(agent, spec)
        try:
            profile = await self.profiles.get(name)
            plan = plan_launch(
                profile=profile,
                agent=agent,
                backends=self.backends,
                base_env=self.base_env,
                job_dir=job_dir,
                default_agent_coord=shim_server(self.shim, self.runtime_dir),
            )
        except ProfileError as exc:
            await self.agents.status(agent, phase="Failed", message=str(exc), focus="")
            await self._publish(agent, {"phase": "Failed", "message": str(exc)})
            raise
        if self.inboxes is not None:
            await self.inboxes.ensure_inbox(agent)  # messages from now on wait for it
        return plan

    def mailbox(self, agent: str) -> Mailbox | None:
        return InboxMailbox(self.inboxes, agent) if self.inboxes is not None else None

    def status_fn(self, agent: str, job_id: str) -> StatusFn:
        """What the conversation calls as the agent works: Agent status + the status subject."""

        async def report(**fields: Any) -> None:
            phase, focus = fields.get("phase", "Running"), fields.get("focus", "")
            await self.agents.status(agent, phase=phase, focus=focus, message="")
            await self._publish(agent, {**fields, "job": job_id})

        return report

    async def finished(self, agent: str, outcome: RunOutcome, error: str = "") -> str:
        """Write the final phase; returns it (Succeeded or Failed)."""
        phase = "Succeeded" if outcome.success else "Failed"
        message = error
        if outcome.control == "drain":
            message = f"drained by {outcome.control_from}" + (f": {error}" if error else "")
        elif outcome.control == "stop":
            message = f"stopped by a control message from {outcome.control_from}"
        await self.agents.status(agent, phase=phase, message=message, focus="")
        await self._publish(agent, {"phase": phase, "message": message, "turns": outcome.turns})
        return phase

    async def _publish(self, agent: str, fields: dict[str, Any]) -> None:
        """One status update on ``agents.<id>.status`` (an agent.v1 ChannelMessage, JSON body)."""
        if self.nc is None:
            return
        from agentcoord.kernel import wire
        from agentcoord.proto.agent.v1 import agent_pb2 as pb

        msg = wire.make_message(
            sender=agent, kind=pb.MESSAGE_TEXT, to=agent, body=json.dumps(fields).encode()
        )
        try:
            await self.nc.publish(status_subject(agent), msg.SerializeToString())
        except Exception:
            log.warning("could not publish %s's status", agent, exc_info=True)

    async def listing(self) -> list[dict[str, Any]]:
        """Every profile with what is wrong with it on this machine (``list_profiles``)."""
        out = []
        for profile in await self.profiles.list():
            row = profile.as_dict()
            row["problems"] = profile_problems(profile, self.backends, self.base_env)
            out.append(row)
        return out
