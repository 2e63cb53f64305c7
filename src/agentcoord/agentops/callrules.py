"""Pure rules of agent-to-agent calls and of the Agent controller (seed 004, seed 000).

Values in, values out: turn depth and cycles, who may message whom, how a message is
attributed, which linked session a message runs in, and what the controller does with an
Agent object or a runner record it finds. The I/O lives in :mod:`.controller`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from agentcoord.errors import InvalidArguments, NotAllowed

__all__ = [
    "MAX_DEPTH",
    "TOO_DEEP",
    "Cycle",
    "LinkedSession",
    "TooDeep",
    "TurnPlace",
    "attribution",
    "fate_of_runner",
    "may_message",
    "new_session_name",
    "next_turn",
    "phase_after",
    "pick_session",
    "project_dir_name",
    "reconcile_action",
    "workspace_of",
]

MAX_DEPTH = 4  # seed 004: a call that would exceed depth 4 fails
TOO_DEEP = "too many agents in a row"
WORKSPACE_LABEL = "fastverk.savvifi.com/workspace"
ROLES_ANNOTATION = "fastverk.savvifi.com/roles"
_ROLE_RANK = {"viewer": 0, "operator": 1, "owner": 2}


class TooDeep(NotAllowed):
    """The turn would be deeper than :data:`MAX_DEPTH`."""


class Cycle(NotAllowed):
    """The target already takes part in the calling chain (A asks B asks A)."""


@dataclass(frozen=True)
class TurnPlace:
    """Where a new turn sits: its depth and the chain of agents that led to it."""

    depth: int
    chain: tuple[str, ...]


def next_turn(
    caller: str,
    caller_depth: int,
    caller_chain: Sequence[str],
    active: Iterable[tuple[int, Sequence[str]]],
    target: str,
) -> TurnPlace:
    """Depth and chain of a turn ``caller`` starts on ``target``; computed here, never taken
    from the caller. Depth is one more than the deepest turn the caller runs (0 for a person);
    the chain is the caller's and every agent above it, so A -> B -> A is seen at any depth."""
    depth = caller_depth
    chain: list[str] = list(caller_chain)
    for turn_depth, turn_chain in active:
        depth = max(depth, turn_depth)
        chain.extend(a for a in turn_chain if a not in chain)
    if caller not in chain:
        chain.append(caller)
    if target in chain:
        path = " -> ".join([*chain[chain.index(target) :], target])
        raise Cycle(f"refused: {path} is a cycle ({target} is already waiting in this chain)")
    if depth + 1 > MAX_DEPTH:
        raise TooDeep(TOO_DEEP)
    return TurnPlace(depth + 1, (*chain, target))


def attribution(caller_kind: str, caller: str, user: str) -> str:
    """Who a message is from, in the owner's name: ``agent planner (for alice)``."""
    if caller_kind == "human" or caller.startswith("human:"):
        return user
    return f"agent {caller} (for {user})"


def workspace_of(profile: Mapping[str, Any] | None) -> str:
    """An AgentProfile may split workspaces with its workspace label; default ``default``."""
    if not profile:
        return "default"
    labels = profile.get("metadata", {}).get("labels") or {}
    return str(labels.get(WORKSPACE_LABEL) or "default")


def role_of(user: str, target: Mapping[str, Any], owner: str) -> str:
    """``user``'s role on an Agent: the roles annotation (JSON ``{user: role}``) or, for the
    daemon's own user, owner (every agent of a local daemon belongs to its user)."""
    import json

    raw = (target.get("metadata", {}).get("annotations") or {}).get(ROLES_ANNOTATION)
    if raw:
        try:
            roles = json.loads(raw)
        except ValueError:
            roles = {}
        if isinstance(roles, dict) and user in roles:
            return str(roles[user])
    return "owner" if user == owner else "none"


def may_message(
    *,
    caller: str,
    caller_workspace: str,
    target: str,
    target_workspace: str,
    role: str,
) -> None:
    """Seed 004 "Rules": same workspace, and the caller's owner holds at least operator."""
    if caller == target:
        raise InvalidArguments("an agent cannot message itself")
    if caller_workspace != target_workspace:
        raise NotAllowed(
            f"{target} is in workspace {target_workspace!r}, not yours ({caller_workspace!r})"
        )
    if _ROLE_RANK.get(role, -1) < _ROLE_RANK["operator"]:
        raise NotAllowed(f"your owner needs at least the operator role on {target} (has {role!r})")


@dataclass
class LinkedSession:
    """A session on the target that runs messages from one agent (seed 004 "Linked sessions")."""

    name: str  # "From A", "From A (2)"
    session_id: str
    from_agent: str
    from_session: str = ""
    turns: int = 0  # turns started in it; 0 means it has no transcript yet (cold start)
    busy: bool = False

    def record(self) -> dict[str, Any]:
        """What is kept on the Agent (busy is live state, not kept)."""
        return {
            "name": self.name,
            "sessionId": self.session_id,
            "from": self.from_agent,
            "fromSession": self.from_session,
            "turns": self.turns,
        }

    @classmethod
    def from_record(cls, rec: Mapping[str, Any]) -> LinkedSession:
        return cls(
            name=str(rec["name"]),
            session_id=str(rec["sessionId"]),
            from_agent=str(rec.get("from", "")),
            from_session=str(rec.get("fromSession", "")),
            turns=int(rec.get("turns", 0)),
        )


def pick_session(sessions: Sequence[LinkedSession], from_agent: str) -> LinkedSession | None:
    """The first idle session linked to ``from_agent``; None means open a new one."""
    for s in sessions:
        if s.from_agent == from_agent and not s.busy:
            return s
    return None


def new_session_name(sessions: Sequence[LinkedSession], from_agent: str) -> str:
    """``From A``, then ``From A (2)``, ``From A (3)`` while the earlier ones are busy."""
    taken = {s.name for s in sessions}
    base = f"From {from_agent}"
    if base not in taken:
        return base
    n = 2
    while f"{base} ({n})" in taken:
        n += 1
    return f"{base} ({n})"


_NON_ALNUM = re.compile(r"[^A-Za-z0-9]")


def project_dir_name(cwd: str) -> str:
    """Claude Code's transcript directory for a cwd: every non-alphanumeric char as '-'."""
    return _NON_ALNUM.sub("-", cwd)


Action = Literal["finalize", "start", "idle", "none"]


def reconcile_action(obj: Mapping[str, Any], *, live_turns: int, handled: bool) -> Action:
    """What the controller does with one managed Agent object.

    ``finalize``: it is being deleted, stop its runners and let it go; ``start``: it has work
    (an objective or a checkpoint to resume) and never ran; ``idle``: nothing to run yet.
    """
    meta, status = obj.get("metadata", {}), obj.get("status") or {}
    if meta.get("deletionTimestamp"):
        return "finalize"
    if handled or live_turns or status.get("phase") not in (None, "", "Pending"):
        return "none"
    spec = obj.get("spec") or {}
    if spec.get("resumeFrom") or spec.get("ownerRef"):
        return "start"
    return "idle"


Fate = Literal["adopt", "reap"]


def fate_of_runner(record: Mapping[str, Any], alive_create_time: float | None) -> Fate:
    """After a restart: a recorded runner still alive as the same process (pid and start
    time match) is adopted; anything else is reaped (its status comes from its output)."""
    if alive_create_time is None:
        return "reap"
    recorded = float(record.get("createTime", -1))
    return "adopt" if abs(recorded - alive_create_time) < 0.01 else "reap"


def phase_after(parsed: Mapping[str, Any] | None, exit_code: int | None) -> tuple[str, str]:
    """(phase, message) for a finished turn, from its result JSON: ``is_error`` decides."""
    if parsed is None:
        return "Failed", f"the runner exited {exit_code} without a result"
    if parsed.get("is_error") is False and exit_code in (0, None):
        return "Succeeded", _first_line(str(parsed.get("result", "")))
    return "Failed", f"{parsed.get('subtype')}: {_first_line(str(parsed.get('result', '')))}"


def _first_line(text: str, limit: int = 200) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line[:limit]
