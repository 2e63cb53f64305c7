"""escalate, request_approval, ask_choice, request_input, list_prompts, answer_prompt.

A question for the human is a HumanPrompt record plus a reply subject ``prompts.<id>.reply``.
The seed subscribed *after* creating the record, so an instant answer was missed; here the
subscription exists before the record does, and a timed-out wait re-reads the record, so an
answer is never lost between the two. An unanswered prompt stays open (``answered: false``).
Only the human (CLI ``agentcoord answer``, the console) may answer; answers are checked against
the prompt's response schema, and each is one ``HUMAN_ANSWERED`` audit event.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import secrets
import time
from typing import Any

from agentcoord import answers, wire
from agentcoord.daemon.messaging import Messaging, require
from agentcoord.errors import IdentityError, InvalidArguments, NotFound, ToolError
from agentcoord.kernel.caller import Caller, decision_fields
from agentcoord.proto.agent.v1 import agent_pb2 as pb
from agentcoord.stores.records import AlreadyAnswered, PromptRecord
from agentcoord.tools._base import Tool, ToolContext, obj_schema
from agentcoord.tools._caller import acting_agent

PROMPTS_NEW = "prompts.new"  # JSON announcement of each new prompt (daemon-published)

__all__ = ["HUMAN_ANSWERED", "HUMAN_ONLY", "TOOLS", "answer_prompt", "reply_subject"]

log = logging.getLogger(__name__)

_STR = {"type": "string"}
_QUESTION = {"type": "string", "maxLength": 8192}
_TIMEOUT = {"type": "number", "minimum": 0, "maximum": 3600}


def reply_subject(prompt_id: str) -> str:
    return f"prompts.{prompt_id}.reply"


def _new_id() -> str:
    return f"prompt-{int(time.time() * 1000):x}{secrets.token_hex(2)}"


async def _record_answer(m: Messaging, rec: PromptRecord, text: str, by: str) -> Any:
    """Parse, check and record ``text``; the first answer wins and is what everyone sees."""
    value = answers.parse_answer(text, rec.kind, rec.schema)
    try:
        answered = (await m.prompts.answer(rec.id, value, by)).answer
    except AlreadyAnswered:  # the usual case: answer_prompt recorded (and audited) it first
        done = await m.prompts.get(rec.id)
        assert done is not None
        return done.answer
    # Straight onto the reply subject, which only the daemon's own NATS user may publish on
    # (daemon/natsusers.py): audited too, saying so.
    m.emit(HUMAN_ANSWERED, by, **_answer_fields(rec, answered), how="nats", pid=None, exe=None)
    return answered


HUMAN_ANSWERED = "HUMAN_ANSWERED"


def _answer_fields(rec: PromptRecord, value: Any) -> dict[str, Any]:
    """The audit's view of an answer: which prompt, whose, and what was decided."""
    if rec.kind == "approval":
        summary = "approved" if value is True else "denied"
    else:
        text = value if isinstance(value, str) else json.dumps(value, default=str)
        summary = text if len(text) <= 200 else text[:197] + "..."
    return {"prompt": rec.id, "asker": rec.agent, "kind": rec.kind, "answer": summary}


async def _ask(
    ctx: ToolContext,
    args: dict[str, Any],
    kind: str,
    schema: dict[str, Any] | None,
    choices: list[str] | None = None,
) -> dict[str, Any]:
    me = acting_agent(ctx, args)
    m = require(ctx.app)
    rec = PromptRecord(
        id=_new_id(),
        agent=me,
        kind=kind,
        question=args["question"],
        context=args.get("context", ""),
        choices=list(choices or []),
        schema=schema,
    )
    replies: asyncio.Queue[Any] = asyncio.Queue()

    async def on_reply(raw: Any) -> None:
        replies.put_nowait(raw)

    # Subscribe BEFORE the record exists (seed 000's race: an instant answer was lost).
    sub = await m.nc.subscribe(reply_subject(rec.id), cb=on_reply)
    try:
        await m.prompts.create(rec)
        m.emit("HUMAN_PROMPTED", me, prompt=rec.id, kind=kind)
        # Announce at once (the audit append is batched): the console and desktop
        # notifications react to this, and an answer may come back within milliseconds.
        await m.nc.publish(
            PROMPTS_NEW,
            json.dumps(
                {
                    "prompt": rec.id,
                    "agent": me,
                    "kind": kind,
                    "question": rec.question,
                    "ts": time.time(),
                }
            ).encode(),
        )
        deadline = time.monotonic() + float(args.get("timeout_secs", 60))
        while (left := deadline - time.monotonic()) > 0:
            try:
                raw = await asyncio.wait_for(replies.get(), left)
            except TimeoutError:
                break
            try:
                msg = wire.decode(raw.data)
                answer = await _record_answer(
                    m, rec, msg.body.decode("utf-8", "replace"), getattr(msg, "from") or "nats"
                )
            except (ValueError, InvalidArguments) as exc:
                log.warning("ignoring a bad reply to %s: %s", rec.id, exc)
                continue
            return {"prompt": rec.id, "answered": True, "answer": answer}
    finally:
        with contextlib.suppress(Exception):
            await sub.unsubscribe()
    current = await m.prompts.get(rec.id)  # answered as the wait ended?
    if current is not None and current.phase == "Answered":
        return {"prompt": rec.id, "answered": True, "answer": current.answer}
    return {"prompt": rec.id, "answered": False, "answer": None}


def _render_ask(r: dict[str, Any]) -> str:
    if r["answered"]:
        return f"{r['prompt']} answered: {r['answer']}"
    return f"{r['prompt']} not answered yet; it stays open"


async def _escalate(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    return await _ask(ctx, args, "notify", None)


async def _request_approval(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    return await _ask(ctx, args, "approval", answers.approval_schema())


async def _ask_choice(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    choices = list(dict.fromkeys(args["choices"]))
    if len(choices) < 2:
        raise InvalidArguments("`choices` needs at least two options")
    return await _ask(ctx, args, "choice", answers.choice_schema(choices), choices)


async def _request_input(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    return await _ask(ctx, args, "input", answers.check_schema(args["schema"]))


async def _list_prompts(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    m = require(ctx.app)
    recs = await m.prompts.list(open_only=not args.get("all", False))
    return {"prompts": [r.view() for r in recs]}


def _render_prompts(r: dict[str, Any]) -> str:
    if not r["prompts"]:
        return "no open prompts"
    lines = []
    for p in r["prompts"]:
        extra = f" [{' | '.join(p['choices'])}]" if p.get("choices") else ""
        state = f" -> {p['answer']}" if p["phase"] == "Answered" else ""
        lines.append(f"{p['id']}  {p['kind']}  {p['agent']}: {p['question']}{extra}{state}")
    return "\n".join(lines)


async def answer_prompt(m: Messaging, prompt_id: str, text: str, human: Caller) -> dict[str, Any]:
    """Record a human's answer, audit it, and wake the waiting agent (the CLI, the tool, the
    console). Every human decision is one audit event saying how it came and from which
    process (DESIGN.md "Humans")."""
    if human.kind != "human":
        raise IdentityError(ONLY_THE_HUMAN)
    by = human.agent
    rec = await m.prompts.get(prompt_id)
    if rec is None:
        raise NotFound(f"prompt {prompt_id} does not exist")
    if rec.phase != "Open":
        raise ToolError(f"prompt {rec.id} is already answered")
    value = answers.parse_answer(text, rec.kind, rec.schema)
    await m.prompts.answer(rec.id, value, by)
    m.emit(HUMAN_ANSWERED, by, **_answer_fields(rec, value), **decision_fields(human))
    msg = wire.make_message(
        sender=by, kind=pb.MESSAGE_TEXT, body=text.encode(), correlation_id=rec.id
    )
    await m.nc.publish(reply_subject(rec.id), msg.SerializeToString())
    return {"prompt": rec.id, "answered": True, "answer": value}


ONLY_THE_HUMAN = "only the human answers prompts (agentcoord answer, the console)"

# Tools only the human may call, with the error anyone else gets: they are left out of an
# agent's tools/list (tools/registry.py) and refused if called anyway.
HUMAN_ONLY = {"answer_prompt": ONLY_THE_HUMAN}


async def _answer_prompt(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    return await answer_prompt(require(ctx.app), args["prompt"], args["answer"], ctx.caller)


_ASK_PROPS: dict[str, dict[str, Any]] = {
    "question": _QUESTION,
    "context": _STR,
    "timeout_secs": _TIMEOUT,
    "agent": _STR,
}

TOOLS = [
    Tool(
        "escalate",
        "Ask the human; waits timeout_secs (default 60) for the answer. Unanswered prompts "
        "stay open.",
        obj_schema(("question",), **_ASK_PROPS),
        _escalate,
        _render_ask,
    ),
    Tool(
        "request_approval",
        "Ask the human to approve or deny; answer is true/false.",
        obj_schema(("question",), **_ASK_PROPS),
        _request_approval,
        _render_ask,
    ),
    Tool(
        "ask_choice",
        "Ask the human to pick one of choices.",
        obj_schema(("question", "choices"), choices={"type": "array", "items": _STR}, **_ASK_PROPS),
        _ask_choice,
        _render_ask,
    ),
    Tool(
        "request_input",
        "Ask the human for input matching a JSON Schema (schema).",
        obj_schema(("question", "schema"), schema={"type": "object"}, **_ASK_PROPS),
        _request_input,
        _render_ask,
    ),
    Tool(
        "list_prompts",
        "Open human prompts (all=true includes answered ones).",
        obj_schema(all={"type": "boolean"}),
        _list_prompts,
        _render_prompts,
    ),
    Tool(
        "answer_prompt",
        "Answer a human prompt (the human only).",
        obj_schema(
            ("prompt", "answer"), prompt=_STR, answer={"type": "string", "maxLength": 65536}
        ),
        _answer_prompt,
        lambda r: f"{r['prompt']} answered: {r['answer']}",
    ),
]
