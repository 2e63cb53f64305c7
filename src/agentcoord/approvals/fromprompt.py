"""The standing approval a relayed permission dialog offers (pure; docs/approvals.md "From a
permission prompt").

A session's permission dialog reaches the human as a HumanPrompt (the channel relay,
docs/claude-code.md "Channels"): its question is ``Claude Code permission: allow TOOL? ...``
and its context ``session NAME, tool TOOL`` then ``input: PREVIEW``. Answering it "allow for
1h" grants the usual rule for that call: a shell command's first two words
(``Bash(npm test:*)``), else the tool itself.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agentcoord.errors import InvalidArguments

__all__ = [
    "PermissionCall",
    "grant_request",
    "permission_call",
    "prompt_rule",
    "state_rule",
    "suggested_rule",
]

# The relay's wording (claude/push.py: PERMISSION_PREFIX, its question and context).
_QUESTION = re.compile(r"^Claude Code permission: allow (?P<tool>[^\s?]+)\?")
_CONTEXT = re.compile(
    r"^session (?P<session>\S+), tool (?P<tool>\S+)(?:\ncwd: (?P<cwd>[^\n]*))?"
    r"(?:\ninput: (?P<input>.*))?$",
    re.S,
)
_COMMAND = re.compile(r'"command"\s*:\s*"((?:[^"\\]|\\.)*)')  # also in a cut-off JSON preview
_PLAIN = re.compile(r"^[\w./:@=+,-]+$")  # a word a rule can carry as it is


@dataclass(frozen=True)
class PermissionCall:
    """The call a permission prompt asks about."""

    session: str  # the agent name of the session that asked
    tool: str
    preview: str  # the start of the call's input, as Claude Code described it
    cwd: str = ""  # the session's working directory, when the relay knew it


def permission_call(prompt: Mapping[str, Any]) -> PermissionCall:
    """The call of a relayed permission prompt (a HumanPrompt's view); :class:`InvalidArguments`
    for any other prompt."""
    question = str(prompt.get("question") or "")
    found = _QUESTION.match(question)
    ctx = _CONTEXT.match(str(prompt.get("context") or ""))
    if found is None or ctx is None or ctx["tool"] != found["tool"]:
        raise InvalidArguments(
            f"prompt {prompt.get('id')} is not a session's permission request; --allow-for "
            "answers those only (agentcoord prompts shows them as 'Claude Code permission')"
        )
    return PermissionCall(
        ctx["session"], ctx["tool"], (ctx["input"] or "").strip(), (ctx["cwd"] or "").strip()
    )


def suggested_rule(call: PermissionCall) -> str:
    """The rule a grant from this prompt allows: ``Bash(<first two words>:*)`` for a shell
    command (the preview's ``command`` when it is JSON, even cut off), else the tool. A
    command that starts with no plain word (a quote, ``$(``) offers no rule
    (:class:`InvalidArguments`): "every command" is not what the dialog asked."""
    if call.tool != "Bash":
        return call.tool
    command = call.preview
    found = _COMMAND.search(command) if command.startswith("{") else None
    if found is not None:
        import json

        try:
            command = json.loads(f'"{found.group(1)}"')
        except ValueError:  # cut off inside an escape
            command = ""
    words = []
    for word in command.split()[:2]:
        if not _PLAIN.match(word):
            break
        words.append(word)
    if not words:
        raise InvalidArguments(
            f"no rule to offer for the command {command[:80]!r}; grant one with agentcoord allow"
        )
    return f"Bash({' '.join(words)}:*)"


def state_rule(state: str) -> str:
    """The rule a session's permission wait offers, as the console and ``agentcoord top``
    suggest it (docs/activity.md): ``waiting for permission: Bash npm test -x`` ->
    ``Bash(npm test:*)``; "" when the state names no call or the command no plain word."""
    _, _, call = state.partition(": ")
    tool, _, rest = call.partition(" ")
    if not tool:
        return ""
    try:
        return suggested_rule(PermissionCall("", tool, rest.strip()))
    except InvalidArguments:
        return ""


def grant_request(call: PermissionCall, *, repo: str | None, session: bool) -> dict[str, str]:
    """The grant answering a permission prompt "allow for a while" asks for, as the
    approvals service takes it: ``rule``, and ``repo`` (a directory: ``repo``, or "" for the
    asking session's working directory) or ``session`` (the asking session), or neither (every
    session). The CLI's ``answer --allow-for`` and the console's queue both build it here."""
    if repo is not None and session:
        raise InvalidArguments("give --repo or --session, not both")
    out = {"rule": suggested_rule(call)}
    if session:
        out["session"] = call.session
    elif repo is not None:
        directory = repo or call.cwd
        if not directory:
            raise InvalidArguments(
                f"the prompt does not say where {call.session} works; name it: --repo DIR"
            )
        out["repo"] = directory
    return out


def prompt_rule(prompt: Mapping[str, Any]) -> str:
    """The rule a relayed permission prompt offers, "" for any other prompt or a call that
    offers none (the console's queue shows it on the prompt's buttons)."""
    try:
        return suggested_rule(permission_call(prompt))
    except InvalidArguments:
        return ""
