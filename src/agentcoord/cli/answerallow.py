"""``agentcoord answer ID --allow-for D [--repo [DIR] | --session]``: allow a session's
relayed permission request and grant the standing approval it offers, in one answer
(docs/approvals.md "From a permission prompt").

The prompt must be a permission request the channel relay made (docs/claude-code.md
"Channels"); its call gives the rule and scope
(:func:`agentcoord.approvals.fromprompt.grant_request`, as the console's queue does).
The grant goes through the daemon's ``agentcoord/approvals`` method as ``agentcoord allow``'s
does (the same checks, the same ``APPROVAL_GRANTED`` audit), then the prompt is answered
"allow", so the waiting dialog closes too. Nothing is answered when the grant is refused.
"""

from __future__ import annotations

import json
import os
from typing import Any

from agentcoord.approvals.fromprompt import grant_request, permission_call
from agentcoord.cli.allow import grant_params, granted_line
from agentcoord.errors import InvalidArguments, NotFound
from agentcoord.kernel.config import Config

__all__ = ["answer_allowing"]


def _open_prompt(cfg: Config, prompt_id: str) -> dict[str, Any]:
    from agentcoord.cli.views import call_tool

    data, _text = call_tool(cfg, "list_prompts", {})
    for row in data.get("prompts") or []:
        if row.get("id") == prompt_id:
            return dict(row)
    raise NotFound(f"no open prompt {prompt_id!r} (agentcoord prompts lists them)")


def answer_allowing(
    cfg: Config,
    prompt_id: str,
    text: str,
    *,
    duration: str,
    repo: str | None,
    session: bool,
    as_json: bool,
) -> int:
    """Grant the rule the permission prompt ``prompt_id`` offers, for ``duration``, for all
    sessions, the repository (``repo``: a directory, or "" for the asking session's), or the
    asking session alone; then answer the prompt "allow"."""
    from agentcoord.cli.views import answer_text, call_tool

    if text and text.strip().lower() != "allow":
        raise InvalidArguments(f"--allow-for answers 'allow', not {text!r}")
    if repo is not None and session:
        raise InvalidArguments("give --repo or --session, not both")
    call = permission_call(_open_prompt(cfg, prompt_id))
    wanted = grant_request(call, repo=repo, session=session)
    if "repo" in wanted:
        wanted["repo"] = os.path.abspath(wanted["repo"])
    row = grant_params(cfg, {"op": "grant", "duration": duration, **wanted})
    data, _out = call_tool(cfg, "answer_prompt", {"prompt": prompt_id, "answer": "allow"})
    if as_json:
        print(json.dumps({"answer": data, "approval": row}, indent=2))
    else:
        print(answer_text(data))
        print(granted_line(row))
    return 0
