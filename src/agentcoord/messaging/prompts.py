"""Questions for the human: ask, answer, and the reply subject between them (seed 000
"Handoff, merge, escalate"; DESIGN.md "Humans").

A question is a HumanPrompt record plus a reply subject ``prompts.<id>.reply``. The seed
subscribed *after* creating the record, so an instant answer was missed; here the subscription
exists before the record does, and a timed-out wait re-reads the record, so an answer is never
lost between the two. An unanswered prompt stays open (``answered: false``). Only the human
(CLI ``agentcoord answer``, the console) may answer; answers are checked against the prompt's
response schema, and each is one ``HUMAN_ANSWERED`` audit event.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import secrets
import time
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from agentcoord.errors import IdentityError, InvalidArguments, NotFound
from agentcoord.kernel import wire
from agentcoord.kernel.caller import Caller, decision_fields
from agentcoord.messaging import answers
from agentcoord.proto.agent.v1 import agent_pb2 as pb
from agentcoord.stores.audit import AuditSink
from agentcoord.stores.records import AlreadyAnswered, PromptRecord, PromptRecords

__all__ = [
    "HUMAN_ANSWERED",
    "HUMAN_ONLY",
    "ONLY_THE_HUMAN",
    "PROMPTS_NEW",
    "HumanPrompts",
    "answer_prompt",
    "new_prompt_id",
    "reply_subject",
]

log = logging.getLogger(__name__)

PROMPTS_NEW = "prompts.new"  # JSON announcement of each new prompt (daemon-published)
HUMAN_ANSWERED = "HUMAN_ANSWERED"
ONLY_THE_HUMAN = "only the human answers prompts (agentcoord answer, the console)"

# The tools only the human may call, each with the refusal an agent gets.
HUMAN_ONLY = {"answer_prompt": ONLY_THE_HUMAN}


def reply_subject(prompt_id: str) -> str:
    return f"prompts.{prompt_id}.reply"


def new_prompt_id() -> str:
    """A fresh HumanPrompt id (for a caller that must know it before :meth:`HumanPrompts.ask`
    returns, as the channel permission relay does)."""
    return f"prompt-{int(time.time() * 1000):x}{secrets.token_hex(2)}"


def _answer_fields(rec: PromptRecord, value: Any) -> dict[str, Any]:
    """The audit's view of an answer: which prompt, whose, and what was decided."""
    if rec.kind == "approval":
        summary = "approved" if value is True else "denied"
    else:
        text = value if isinstance(value, str) else json.dumps(value, default=str)
        summary = text if len(text) <= 200 else text[:197] + "..."
    return {"prompt": rec.id, "asker": rec.agent, "kind": rec.kind, "answer": summary}


# Delivers an answer nobody waits for any more to its asker: (the prompt, the answer's text,
# who answered).
LateAnswer = Callable[[PromptRecord, str, str], Awaitable[Any]]


class HumanPrompts:
    """Asking the human and recording the answers, over the HumanPrompt records."""

    def __init__(
        self, nc: Any, records: PromptRecords, audit: AuditSink, late: LateAnswer | None = None
    ) -> None:
        self._nc = nc
        self._records = records
        self._audit = audit
        self._late = late
        self._waiting: set[str] = set()  # prompts an ask() of this daemon still waits on

    async def _record_answer(self, rec: PromptRecord, text: str, by: str) -> Any:
        """Parse, check and record ``text``; the first answer wins and is what everyone sees."""
        value = answers.parse_answer(text, rec.kind, rec.schema)
        try:
            answered = (await self._records.answer(rec.id, value, by)).answer
        except AlreadyAnswered:  # the usual case: answer() recorded (and audited) it first
            done = await self._records.get(rec.id)
            assert done is not None
            return done.answer
        # Straight onto the reply subject, which only the daemon's own NATS user may publish on
        # (docs/messaging.md "Direct NATS access (per-agent users)"): audited too, saying so.
        fields = _answer_fields(rec, answered)
        self._audit.emit(HUMAN_ANSWERED, by, **fields, how="nats", pid=None, exe=None)
        return answered

    async def ask(
        self,
        me: str,
        kind: str,
        question: str,
        *,
        context: str = "",
        schema: dict[str, Any] | None = None,
        choices: list[str] | None = None,
        timeout: float = 60.0,
        prompt_id: str | None = None,
    ) -> dict[str, Any]:
        """Create a HumanPrompt (``prompt_id``, else a new id) and wait up to ``timeout`` s
        for its answer."""
        rec = PromptRecord(
            id=prompt_id or new_prompt_id(),
            agent=me,
            kind=kind,
            question=question,
            context=context,
            choices=list(choices or []),
            schema=schema,
        )
        replies: asyncio.Queue[Any] = asyncio.Queue()

        async def on_reply(raw: Any) -> None:
            replies.put_nowait(raw)

        # Subscribe BEFORE the record exists (seed 000's race: an instant answer was lost).
        sub = await self._nc.subscribe(reply_subject(rec.id), cb=on_reply)
        self._waiting.add(rec.id)
        try:
            await self._records.create(rec)
            self._audit.emit("HUMAN_PROMPTED", me, prompt=rec.id, kind=kind)
            # Announce at once (the audit append is batched): the console and desktop
            # notifications react to this, and an answer may come back within milliseconds.
            note = {
                "prompt": rec.id,
                "agent": me,
                "kind": kind,
                "question": rec.question,
                "ts": time.time(),
            }
            await self._nc.publish(PROMPTS_NEW, json.dumps(note).encode())
            deadline = time.monotonic() + timeout
            while (left := deadline - time.monotonic()) > 0:
                try:
                    raw = await asyncio.wait_for(replies.get(), left)
                except TimeoutError:
                    break
                try:
                    msg = wire.decode(raw.data)
                    text = msg.body.decode("utf-8", "replace")
                    answer = await self._record_answer(rec, text, getattr(msg, "from") or "nats")
                except (ValueError, InvalidArguments) as exc:
                    log.warning("ignoring a bad reply to %s: %s", rec.id, exc)
                    continue
                return {"prompt": rec.id, "answered": True, "answer": answer}
        finally:
            self._waiting.discard(rec.id)
            with contextlib.suppress(Exception):
                await sub.unsubscribe()
        current = await self._records.get(rec.id)  # answered as the wait ended?
        if current is not None and current.phase == "Answered":
            return {"prompt": rec.id, "answered": True, "answer": current.answer}
        return {"prompt": rec.id, "answered": False, "answer": None}

    async def list(self, *, everything: bool = False) -> list[dict[str, Any]]:
        """Open prompts (``everything``: answered ones too)."""
        return [r.view() for r in await self._records.list(open_only=not everything)]

    async def answer(self, prompt_id: str, text: str, human: Caller) -> dict[str, Any]:
        """Record a human's answer, audit it, and wake the waiting agent (the CLI, the tool,
        the console). Every human decision is one audit event saying how it came and from
        which process (DESIGN.md "Humans")."""
        if human.kind != "human":
            raise IdentityError(ONLY_THE_HUMAN)
        by = human.agent
        rec = await self._records.get(prompt_id)
        if rec is None:
            raise NotFound(f"prompt {prompt_id} does not exist")
        if rec.phase != "Open":
            raise AlreadyAnswered(f"prompt {rec.id} is already answered")
        value = answers.parse_answer(text, rec.kind, rec.schema)
        await self._records.answer(rec.id, value, by)
        self._audit.emit(HUMAN_ANSWERED, by, **_answer_fields(rec, value), **decision_fields(human))
        msg = wire.make_message(
            sender=by, kind=pb.MESSAGE_TEXT, body=text.encode(), correlation_id=rec.id
        )
        await self._nc.publish(reply_subject(rec.id), msg.SerializeToString())
        if rec.id not in self._waiting and self._late is not None:
            # Nobody waits any more (the ask timed out, or the daemon restarted since): the
            # asker gets the answer as a message, pushed or read like any other
            # (docs/messaging.md "Human prompts"). The answer itself is recorded either way.
            try:
                await self._late(rec, text, by)
            except Exception:
                log.warning("could not give %s the late answer to %s", rec.agent, rec.id)
        return {"prompt": rec.id, "answered": True, "answer": value}


class _WithHumans(Protocol):
    @property
    def humans(self) -> HumanPrompts: ...


async def answer_prompt(
    messaging: _WithHumans, prompt_id: str, text: str, human: Caller
) -> dict[str, Any]:
    """The human's answer to a prompt, from the console or the CLI (see
    :meth:`HumanPrompts.answer`)."""
    return await messaging.humans.answer(prompt_id, text, human)
