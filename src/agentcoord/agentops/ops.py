"""send_message and ask (docs/ask-and-operator.md): rules, attribution, and the two ways a message
is run.

A daemon-run agent (a managed Agent, or a local package agent) gets the message as a turn in
its linked session "From <caller>" (:meth:`AgentController.message`): started cold, or
resumed with ``--resume``, and ``ask`` returns that turn's final answer. An interactive session
the daemon did not start cannot be prompted from outside: the text lands in its durable inbox
and ``ask`` waits, up to a timeout, for the session to answer with the ``reply`` tool
(:mod:`.asks`); the result says which of the two happened. A message that does not wait may
still ask for the turn's answer to come back as a message (``answer_back``, what a Claude Code
session's ``SendMessage`` gets: :mod:`.answerback`).
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Any

from agentcoord.agentops._writes import MANAGED_LABEL
from agentcoord.agentops.answerback import AnswersBack
from agentcoord.agentops.asks import INBOX_NOTE, InboxAsks
from agentcoord.agentops.callrules import (
    TurnPlace,
    attribution,
    may_message,
    next_turn,
    role_of,
    workspace_of,
)
from agentcoord.agentops.checkpoints import BundleRetention
from agentcoord.agentops.controller import AgentController
from agentcoord.errors import DomainError, NotFound, OperationFailed, Unavailable
from agentcoord.kernel import wire
from agentcoord.kernel.caller import Caller
from agentcoord.messaging.recipients import QUEUED_NOTE
from agentcoord.proto.agent.v1 import agent_pb2 as pb
from agentcoord.stores.messagebus import check_agent_id
from agentcoord.stores.objects import AlreadyExists, ObjectNotFound, StoreError

if TYPE_CHECKING:
    from agentcoord.budgets import Budgets
    from agentcoord.localagents import LocalAgents
    from agentcoord.messaging import Messaging, Recipients

__all__ = ["AgentOps"]


class AgentOps:
    """What the a2a and lifecycle tools share: the controller, inbox asks, the rules."""

    def __init__(
        self,
        controller: AgentController,
        *,
        messaging: Messaging | None,
        recipients: Recipients,
        local_agents: LocalAgents | None = None,
        bundle_retention: BundleRetention | None = None,
        budgets: Budgets | None = None,
        answers: AnswersBack | None = None,
    ) -> None:
        """``recipients``: who a message may be addressed to (docs/messaging.md
        "Recipients"); ``answers``: what returns a turn's answer to a sender that did not wait
        for it (without it ``answer_back`` does nothing)."""
        self.ctl = controller
        self.recipients = recipients
        # checkpoint bundles kept (docs/reliability.md "State retention")
        self.bundle_retention = bundle_retention or BundleRetention()
        self.store = controller.store
        self.ns = controller.ns
        self.user = controller.user
        self.messaging = messaging
        self.local_agents = local_agents
        self.inbox = InboxAsks(controller.active)
        self.budgets = budgets  # the ceilings a spawn is checked against (docs/budgets.md)
        self.answers = answers

    def emit(self, event: str, agent: str, **data: Any) -> None:
        self.ctl.emit(event, agent, **data)

    # -- rules -------------------------------------------------------------------------------

    def place(self, caller: Caller, target: str) -> TurnPlace:
        """The new turn's depth and chain, from what the daemon knows (never the caller)."""
        active = self.ctl.active.of(caller.agent)
        if caller.kind == "runner":
            # Its own chain (identity by transport) plus the depth of every turn it runs.
            active = [(d, ()) for d, _ in active]
        return next_turn(caller.agent, caller.depth, caller.chain, active, target)

    async def _profile(self, obj: dict[str, Any] | None) -> dict[str, Any] | None:
        name = ((obj or {}).get("spec") or {}).get("profile")
        if not name:
            return None
        try:
            return await self.store.get("agentprofiles", self.ns, name)
        except ObjectNotFound:
            return None

    async def check_rules(self, caller: Caller, target: dict[str, Any]) -> None:
        name = target["metadata"]["name"]
        target_ws = workspace_of(await self._profile(target))
        if caller.kind == "human":
            caller_ws = target_ws  # the daemon's own user reaches every workspace
        else:
            caller_ws = workspace_of(await self._profile(await self._agent(caller.agent)))
        may_message(
            caller=caller.agent,
            caller_workspace=caller_ws,
            target=name,
            target_workspace=target_ws,
            role=role_of(self.user, target, self.user),
        )

    async def _agent(self, name: str) -> dict[str, Any] | None:
        try:
            return await self.store.get("agents", self.ns, name)
        except ObjectNotFound:
            return None

    async def target(self, name: str) -> dict[str, Any]:
        """The Agent named ``name``; a local package agent gets its managed Agent on first use."""
        check_agent_id(name)
        obj = await self._agent(name)
        if obj is not None:
            return obj
        package = self._package(name)
        if package is None:
            raise NotFound(f"no agent {name!r} in this workspace")
        body = {
            "metadata": {"name": name, "labels": {MANAGED_LABEL: "agentcoord"}},
            "spec": {"agentType": "local", "cwd": str(package)},
        }
        try:
            return await self.store.create("agents", self.ns, body)
        except AlreadyExists:
            return await self.store.get("agents", self.ns, name)

    def _package(self, name: str) -> Any:
        la = self.local_agents
        if la is None or not la.enabled or la.hub is None:
            return None
        from agentcoord.localagents.paths import package_dir

        return package_dir(la.hub, name)

    # -- send_message / ask ------------------------------------------------------------------

    async def deliver(
        self,
        caller: Caller,
        name: str,
        text: str,
        *,
        wait: bool,
        timeout: float,
        queue_unknown: bool = False,
        answer_back: bool = False,
    ) -> dict[str, Any]:
        """Run ``text`` on the agent ``name`` (and, with ``wait``, return its answer). A name
        no agent has is refused with the closest names, or with ``queue_unknown`` waits in
        its inbox (docs/messaging.md "Recipients"). ``answer_back`` without ``wait``: a turn
        the daemon runs delivers its final answer into the caller's inbox, from ``name``, when
        it ends (docs/claude-code.md "Answers from local agents")."""
        try:
            return await self._deliver(
                caller,
                name,
                text,
                wait=wait,
                timeout=timeout,
                queue_unknown=queue_unknown,
                answer_back=answer_back and not wait and self.answers is not None,
            )
        except StoreError as exc:
            if isinstance(exc, DomainError):  # not found: already says what happened
                raise
            # A full disk, say: the caller learns why, not just "internal error".
            raise OperationFailed(f"{name} was not reached: {exc.message}") from exc

    async def _deliver(
        self,
        caller: Caller,
        name: str,
        text: str,
        *,
        wait: bool,
        timeout: float,
        queue_unknown: bool,
        answer_back: bool,
    ) -> dict[str, Any]:
        unknown = False
        try:
            target = await self.target(name)
        except NotFound:
            if not queue_unknown:
                await self.recipients.check([name])  # the closest names, when there are some
                raise
            target = {"metadata": {"name": name}}  # nobody yet: its inbox keeps the message
            unknown = True
        name = target["metadata"]["name"]
        await self.check_rules(caller, target)
        place = self.place(caller, name)
        who = attribution(caller.kind, caller.agent, self.user)
        managed = (target["metadata"].get("labels") or {}).get(MANAGED_LABEL) == "agentcoord"
        # Only a turn the daemon runs has a final answer to return (an inbox has none).
        returned = wait or (answer_back and managed)
        verb = "asks (your final answer is returned to them)" if returned else "sends"
        body = f"Message from {who}, who {verb}:\n{text}"
        audit = {
            "from": caller.agent,
            "attributed": who,
            "kind": "ask" if wait else "send",
            "depth": place.depth,
            "chain": list(place.chain),
            "text": text[:2000],
        }
        if not managed:
            queued = await self._deliver_inbox(caller, name, place, body, wait, timeout, audit)
            if unknown:
                queued["delivery"] = "queued"
                queued["note"] = QUEUED_NOTE.format(name=name) + "; " + queued.get("note", "")
            return queued
        # A turn starts a runner: admitted under the ceilings first, queued when the caller
        # waits for the answer (docs/budgets.md "Every start").
        slot = None
        waiting = timeout  # what is left of it for the answer, after a wait in the queue
        if self.budgets is not None:
            began = time.monotonic()
            slot = await self.budgets.admit(
                name, f"agent {name} (a message from {caller.agent})", wait=wait, timeout=timeout
            )
            waiting = max(0.0, timeout - (time.monotonic() - began))
        try:
            turn = await self.ctl.message(
                target,
                from_agent=caller.agent,
                from_session=caller.session_id or "",
                place=place,
                prompt=body,
                focus=f"{who}: {text}",
            )
        except BaseException:
            if slot is not None:
                slot.release()
            raise
        if slot is not None:
            held = slot
            turn.done.add_done_callback(lambda _: held.release())
        self.emit("MESSAGE_RECEIVED", name, session=turn.session.name, turn=turn.id, **audit)
        out: dict[str, Any] = {
            "agent": name,
            "session": turn.session.name,
            "session_id": turn.session.session_id,
            "resumed": turn.resume,
            "turn": turn.id,
            "depth": place.depth,
            "via": "runner",
            **(slot.report() if slot is not None else {}),
        }
        if not wait:
            if answer_back and self.answers is not None:
                out["answer_back"] = self.answers.follow(turn, caller.agent) is not None
            return {"sent": True, **out}
        try:
            result = await asyncio.wait_for(asyncio.shield(turn.done), waiting)
        except asyncio.CancelledError:
            # The asker cancelled (notifications/cancelled) or closed its connection: nobody
            # will read the answer, so the runner stops (MCP: "SHOULD stop processing").
            self.ctl.abandon(turn, "the asker went away")
            raise
        except TimeoutError:
            return {
                "answered": False,
                "answer": None,
                "note": f"{name} is still working after {timeout:g} s",
                **out,
            }
        if result["phase"] != "Succeeded":
            raise OperationFailed(f"{name}'s turn failed: {result['message']}")
        return {
            "answered": True,
            "answer": result["answer"],
            "duration_ms": result["duration_ms"],
            **out,
        }

    async def _deliver_inbox(
        self,
        caller: Caller,
        name: str,
        place: TurnPlace,
        body: str,
        wait: bool,
        timeout: float,
        audit: dict[str, Any],
    ) -> dict[str, Any]:
        m = self.messaging
        if m is None:
            raise Unavailable("messaging is not available (NATS is not connected)")
        self.emit("MESSAGE_RECEIVED", name, via="inbox", **audit)
        if wait:
            return await self.inbox.ask(
                m, me=caller.agent, target=name, place=place, body=body, timeout=timeout
            )
        msg = wire.make_message(
            sender=caller.agent, kind=pb.MESSAGE_TEXT, body=body.encode(), to=name
        )
        pub = await m.deliver(name, msg)
        return {
            "sent": True,
            "agent": name,
            "via": "inbox",
            "seq": pub.seq,
            "depth": place.depth,
            "note": INBOX_NOTE.format(target=name, how="it reads it from there"),
        }
