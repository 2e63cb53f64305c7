"""What waits on the human, in the order the console's queue shows it (docs/console.md "The
queue"): open prompts (questions, approvals, choices, relayed permission dialogs) oldest first,
then sessions stopped at a permission dialog, then sessions waiting for input. Pure
(docs/architecture.md "Pure rules, thin I/O").
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from agentcoord.approvals.fromprompt import prompt_rule, state_rule
from agentcoord.kernel.timetext import human_time

if TYPE_CHECKING:
    from agentcoord.stores.records import PromptRecord

__all__ = ["queue_items"]

_PERMISSION = "waiting for permission"
_INPUT = "waiting for input"


def _prompt_item(p: PromptRecord) -> dict[str, Any]:
    return {
        "id": f"prompt:{p.id}",
        "type": "prompt",
        "prompt": p.id,
        "kind": p.kind,
        "agent": p.agent,
        "question": p.question,
        "context": p.context,
        "choices": list(p.choices),
        "since": human_time(p.created_at),
        "at": p.created_at,
        # A relayed permission dialog offers the rule `answer --allow-for` grants
        # (docs/approvals.md "From a permission prompt"); "" for any other prompt.
        "rule": prompt_rule({"id": p.id, "question": p.question, "context": p.context}),
    }


def _wait_item(
    row: Mapping[str, Any], repos: Mapping[str, str], held: Collection[str]
) -> dict[str, Any]:
    state = str(row.get("state", ""))
    permission = state.startswith(_PERMISSION)
    return {
        "id": f"wait:{row['name']}",
        "type": "permission" if permission else "input",
        "agent": row["name"],
        "state": state,
        "since": human_time(row.get("state_since")),
        "at": row.get("state_since") or 0.0,
        "rule": state_rule(state) if permission else "",
        "repo": repos.get(row["name"], ""),
        # Its dialog is held for an answer from here (docs/approvals.md "Answering an open
        # dialog"); else it is answered in the session, and a grant covers its next call.
        "held": permission and row["name"] in held,
    }


def queue_items(
    prompts: Iterable[PromptRecord],
    agents: Iterable[Mapping[str, Any]],
    repos: Mapping[str, str],
    held: Collection[str] = (),
) -> list[dict[str, Any]]:
    """The queue: ``prompts`` (open ones), then the ``agents`` rows waiting for permission,
    then those waiting for input, each group oldest first; ``repos``: agent -> the name of the
    repository its session works in, where known; ``held``: the sessions whose dialog the
    daemon holds for the human."""
    asked = sorted((_prompt_item(p) for p in prompts), key=lambda i: i["at"])
    waits = [
        _wait_item(r, repos, held)
        for r in agents
        if not r.get("ended") and str(r.get("state", "")).startswith((_PERMISSION, _INPUT))
    ]
    waits.sort(key=lambda i: (i["type"] != "permission", i["at"]))
    return asked + waits
