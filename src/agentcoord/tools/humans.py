"""escalate, request_approval, ask_choice, request_input, list_prompts, answer_prompt: questions
for the human as tools over :class:`agentcoord.messaging.prompts.HumanPrompts`.

An agent's listing has ``escalate`` alone, with ``approval``, ``choices`` and ``schema`` as
its options; the three tools of those names still answer (docs/messaging.md "Human prompts").

``answer_prompt`` is the human's alone (:data:`HUMAN_ONLY`): it is left out of an agent's
``tools/list`` and refused if called anyway (docs/security.md "Who a caller is").
"""

from __future__ import annotations

from typing import Any

from agentcoord.errors import InvalidArguments
from agentcoord.kernel.caller import Caller
from agentcoord.messaging import Messaging, answers
from agentcoord.messaging.prompts import HUMAN_ONLY
from agentcoord.tools._acting import acting_agent
from agentcoord.tools._shape import for_model, short_time
from agentcoord.tools.base import obj_schema, tool, unlisted

__all__ = ["HUMAN_ONLY", "HumanTools"]

# Tools only the human may call, with the error anyone else gets: they are left out of an
# agent's tools/list (tools/registry.py) and refused if called anyway.

_STR = {"type": "string"}
_QUESTION = {"type": "string", "maxLength": 8192}
_TIMEOUT = {"type": "number", "minimum": 0, "maximum": 3600}

_ASK_PROPS: dict[str, dict[str, Any]] = {
    "question": _QUESTION,
    "context": {"type": "string", "maxLength": 65536},  # a diff, a log excerpt
    "timeout_secs": _TIMEOUT,
    "agent": _STR,
}
# request_approval, ask_choice and request_input: escalate's options as tools of their own,
# callable and listed to the human only (an agent's listing has escalate with the options).
_VARIANT_PROPS = {**_ASK_PROPS, "agent": unlisted(_STR)}
_CHOICES = {"type": "array", "items": _STR}
_SCHEMA = {"type": "object"}


def _model_prompt(row: dict[str, Any]) -> dict[str, Any]:
    """A prompt row as a model reads it: not when it was raised (the list is in that order),
    and when it was answered to the second, as ISO text."""
    out = {k: v for k, v in row.items() if k != "created_at"}
    if "answered_at" in out:
        out["answered_at"] = short_time(out["answered_at"])
    return out


def _render_ask(r: dict[str, Any]) -> str:
    if r["answered"]:
        return f"{r['prompt']} answered: {r['answer']}"
    return f"{r['prompt']} not answered yet; it stays open"


def _render_prompts(r: dict[str, Any]) -> str:
    if not r["prompts"]:
        return "no open prompts"
    lines = []
    for p in r["prompts"]:
        extra = f" [{' | '.join(p['choices'])}]" if p.get("choices") else ""
        state = f" -> {p['answer']}" if p["phase"] == "Answered" else ""
        lines.append(f"{p['id']}  {p['kind']}  {p['agent']}: {p['question']}{extra}{state}")
    return "\n".join(lines)


class HumanTools:
    """The human-prompt tools over the messaging service's prompts."""

    def __init__(self, messaging: Messaging) -> None:
        self._messaging = messaging

    async def _ask(
        self,
        caller: Caller,
        args: dict[str, Any],
        kind: str,
        schema: dict[str, Any] | None,
        choices: list[str] | None = None,
    ) -> dict[str, Any]:
        return await self._messaging.ask_human(
            acting_agent(caller, args),
            kind,
            args["question"],
            context=args.get("context", ""),
            schema=schema,
            choices=choices,
            timeout=float(args.get("timeout_secs", 60)),
        )

    @tool(
        description="Ask the human (waits timeout_secs, 60). approval: yes/no; choices: pick one.",
        schema=obj_schema(
            ("question",),
            **_ASK_PROPS,
            approval={"type": "boolean"},
            choices=_CHOICES,
            schema=unlisted(_SCHEMA),  # typed input: rare for a model, kept for programs
        ),
        render=_render_ask,
    )
    async def escalate(self, caller: Caller, args: dict[str, Any]) -> dict[str, Any]:
        given = [k for k in ("approval", "choices", "schema") if args.get(k)]
        if len(given) > 1:
            raise InvalidArguments(f"give one of `approval`, `choices`, `schema`, not {given}")
        if args.get("approval"):
            return await self.request_approval(caller, args)
        if "choices" in given:
            return await self.ask_choice(caller, args)
        if "schema" in given:
            return await self.request_input(caller, args)
        return await self._ask(caller, args, "notify", None)

    @tool(
        description="Ask the human to approve; answer is true or false.",
        schema=obj_schema(("question",), **_VARIANT_PROPS),
        render=_render_ask,
        listed=False,
    )
    async def request_approval(self, caller: Caller, args: dict[str, Any]) -> dict[str, Any]:
        return await self._ask(caller, args, "approval", answers.approval_schema())

    @tool(
        description="Ask the human to pick one of choices.",
        schema=obj_schema(("question", "choices"), choices=_CHOICES, **_VARIANT_PROPS),
        render=_render_ask,
        listed=False,
    )
    async def ask_choice(self, caller: Caller, args: dict[str, Any]) -> dict[str, Any]:
        choices = list(dict.fromkeys(args["choices"]))
        if len(choices) < 2:
            raise InvalidArguments("`choices` needs at least two options")
        return await self._ask(caller, args, "choice", answers.choice_schema(choices), choices)

    @tool(
        description="Ask the human for input matching a JSON Schema.",
        schema=obj_schema(("question", "schema"), schema=_SCHEMA, **_VARIANT_PROPS),
        render=_render_ask,
        listed=False,
    )
    async def request_input(self, caller: Caller, args: dict[str, Any]) -> dict[str, Any]:
        return await self._ask(caller, args, "input", answers.check_schema(args["schema"]))

    @tool(
        description="Human prompts; all=true adds answered.",
        schema=obj_schema(all={"type": "boolean"}),
        render=_render_prompts,
    )
    async def list_prompts(self, caller: Caller, args: dict[str, Any]) -> dict[str, Any]:
        rows = await self._messaging.list_prompts(everything=bool(args.get("all", False)))
        if for_model(caller):
            return {"prompts": [_model_prompt(r) for r in rows]}
        return {"prompts": rows}

    @tool(
        description="Answer a human prompt (the human only).",
        schema=obj_schema(
            ("prompt", "answer"), prompt=_STR, answer={"type": "string", "maxLength": 65536}
        ),
        render=lambda r: f"{r['prompt']} answered: {r['answer']}",
    )
    async def answer_prompt(self, caller: Caller, args: dict[str, Any]) -> dict[str, Any]:
        return await self._messaging.answer_prompt(args["prompt"], args["answer"], caller)
