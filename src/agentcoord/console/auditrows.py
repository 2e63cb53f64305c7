"""An audit event as the console lists and filters it (docs/console.md "Search and filters").

The line is :func:`agentcoord.text.events.render_event`'s, the same one ``agentcoord audit``
prints; beside it go what the page's filters need: the agents the event names (its actor, and
any detail that names one: ``to``, ``by``, ``holder``, ``participants``, ...) and the
repositories of the claim keys in it. Pure (docs/architecture.md "Pure rules, thin I/O").
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from agentcoord.leases.filekeys import FILE_PREFIX, split_file_key
from agentcoord.leases.keytext import repo_name
from agentcoord.text.events import render_event

__all__ = ["MESSAGE_TYPES", "audit_row", "names_in", "repos_in"]

# The events that are a message between agents (docs/messaging.md "Audit"), and the delivery
# of one into a session or a runner.
MESSAGE_TYPES = frozenset(
    {
        "MESSAGE_SENT",
        "CHANNEL_POSTED",
        "BROADCAST_SENT",
        "MESSAGE_RECEIVED",
        "NATIVE_ROUTED",
        "CHANNEL_OPENED",
        "CHANNEL_WIDENED",
        "CHANNEL_CLOSED",
    }
)
_NAME_FIELDS = ("to", "by", "from", "holder", "sender", "session", "target", "source")


def _strings(value: Any) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def names_in(event: Mapping[str, Any], details: Mapping[str, Any]) -> list[str]:
    """The agents an event names: its actor, then the details that hold names."""
    found = [str(event.get("agent") or "")]
    for key in (*_NAME_FIELDS, "participants"):
        found += list(_strings(details.get(key)))
    return sorted({n for n in found if n and n != "-"})


def repos_in(details: Mapping[str, Any]) -> list[str]:
    """The repositories of the file claim keys in an event's details."""
    repos = set()
    for value in details.values():
        for s in _strings(value):
            if s.startswith(FILE_PREFIX):
                common, _ = split_file_key(s)
                if common:
                    repos.add(repo_name(common))
    return sorted(repos)


def audit_row(event: Mapping[str, Any]) -> dict[str, Any]:
    """``{type, agent, text, names, repos}`` (and ``seq`` where the event has one: a queried
    event, not a live one) for one event in any shape it travels in."""
    nested = event.get("data")
    details: Mapping[str, Any] = nested if isinstance(nested, Mapping) else event
    row: dict[str, Any] = {
        "type": event.get("type") or "",
        "agent": event.get("agent") or "",
        "text": render_event(event),
        "names": names_in(event, details),
        "repos": repos_in(details),
    }
    if "seq" in event:
        row["seq"] = event["seq"]
    return row
