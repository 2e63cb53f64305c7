"""The pure rules of docs/ask-and-operator.md: depth, cycles, attribution, workspaces, linked
sessions and the controller's decisions (values in, values out)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentcoord.agentops.callrules import (
    MAX_DEPTH,
    TOO_DEEP,
    Cycle,
    LinkedSession,
    TooDeep,
    attribution,
    fate_of_runner,
    may_message,
    new_session_name,
    next_turn,
    phase_after,
    pick_session,
    project_dir_name,
    reconcile_action,
    role_of,
    workspace_of,
)
from agentcoord.errors import NotAllowed

pytestmark = pytest.mark.unit


def test_depth_is_one_more_than_the_deepest_turn() -> None:
    """A person is 0; the new turn is one more than the deepest turn the caller runs."""
    assert next_turn("human:al", 0, (), [], "a").depth == 1
    assert next_turn("b", 1, ("a", "b"), [(3, ("x", "y", "b"))], "c").depth == 4


def test_fifth_hop_fails_with_the_exact_message() -> None:
    """Chaining turns: hops 1-4 pass, the fifth raises "too many agents in a row"."""
    chain: tuple[str, ...] = ()
    depth, caller = 0, "human:al"
    for hop in range(1, MAX_DEPTH + 1):
        place = next_turn(caller, depth, chain, [], f"a{hop}")
        depth, chain, caller = place.depth, place.chain, f"a{hop}"
        assert depth == hop
    with pytest.raises(TooDeep) as exc:
        next_turn(caller, depth, chain, [], "a5")
    assert str(exc.value) == TOO_DEEP == "too many agents in a row"


def test_cycle_is_refused_below_the_limit() -> None:
    """A -> B -> A is a cycle at depth 2 already; the chain is in the message."""
    place = next_turn("a", 0, (), [], "b")
    with pytest.raises(Cycle, match=r"a -> b -> a is a cycle"):
        next_turn("b", place.depth, place.chain, [], "a")


@given(st.lists(st.sampled_from("abcdefg"), min_size=1, max_size=8))
def test_any_accepted_chain_has_no_repeats(targets: list[str]) -> None:
    """Whatever sequence is tried, accepted turns never repeat an agent nor pass depth 4."""
    chain: tuple[str, ...] = ()
    depth, caller = 0, "human:al"
    for target in targets:
        try:
            place = next_turn(caller, depth, chain, [], target)
        except (Cycle, TooDeep):
            break
        assert len(set(place.chain)) == len(place.chain)
        assert place.depth <= MAX_DEPTH
        depth, chain, caller = place.depth, place.chain, target


def test_attribution_is_in_the_owners_name() -> None:
    """Agents speak "for" their owner; the human speaks as themself."""
    assert attribution("runner", "planner", "alice") == "agent planner (for alice)"
    assert attribution("human", "human:alice", "alice") == "alice"


def test_workspace_and_role_rules() -> None:
    """Different workspaces are refused; operator is the least role that may message."""
    prof = {"metadata": {"labels": {"fastverk.savvifi.com/workspace": "red"}}}
    assert workspace_of(prof) == "red"
    assert workspace_of(None) == "default"
    with pytest.raises(NotAllowed, match="workspace"):
        may_message(
            caller="a", caller_workspace="red", target="b", target_workspace="blue", role="owner"
        )
    viewer = {
        "metadata": {"annotations": {"fastverk.savvifi.com/roles": json.dumps({"al": "viewer"})}}
    }
    assert role_of("al", viewer, "al") == "viewer"
    assert role_of("al", {"metadata": {}}, "al") == "owner"
    with pytest.raises(NotAllowed, match="operator role"):
        may_message(
            caller="a", caller_workspace="x", target="b", target_workspace="x", role="viewer"
        )
    may_message(caller="a", caller_workspace="x", target="b", target_workspace="x", role="operator")


def test_linked_sessions_reused_while_idle() -> None:
    """An idle "From A" is picked; while busy a "From A (2)" opens; other senders never share."""
    s1 = LinkedSession(new_session_name([], "A"), "id1", "A")
    assert s1.name == "From A"
    assert pick_session([s1], "A") is s1
    assert pick_session([s1], "B") is None
    s1.busy = True
    assert pick_session([s1], "A") is None
    assert new_session_name([s1], "A") == "From A (2)"
    again = LinkedSession.from_record(s1.record())
    assert (again.name, again.session_id, again.busy) == ("From A", "id1", False)


def test_reconcile_decisions() -> None:
    """Deleting -> finalize; new with work -> start; new without -> idle; else nothing."""
    new = {"metadata": {}, "spec": {"ownerRef": {"name": "t"}}}
    assert reconcile_action(new, live_turns=0, handled=False) == "start"
    assert reconcile_action(new, live_turns=0, handled=True) == "none"
    assert reconcile_action({"metadata": {}, "spec": {}}, live_turns=0, handled=False) == "idle"
    done = {"metadata": {}, "spec": {"ownerRef": {"name": "t"}}, "status": {"phase": "Failed"}}
    assert reconcile_action(done, live_turns=0, handled=False) == "none"
    gone = {"metadata": {"deletionTimestamp": "x"}, "spec": {}}
    assert reconcile_action(gone, live_turns=1, handled=True) == "finalize"


def test_runner_fate_after_restart() -> None:
    """Same pid and start time: adopt; dead or a recycled pid: reap."""
    rec = {"pid": 10, "createTime": 100.0}
    assert fate_of_runner(rec, 100.0) == "adopt"
    assert fate_of_runner(rec, 250.0) == "reap"
    assert fate_of_runner(rec, None) == "reap"


def test_phase_after_reads_is_error_not_the_exit_code() -> None:
    """is_error true with exit 0 is a failure; no result JSON is a failure that says so."""
    assert phase_after({"is_error": False, "result": "ok\nmore"}, 0) == ("Succeeded", "ok")
    assert phase_after({"is_error": True, "subtype": "x", "result": "boom"}, 0)[0] == "Failed"
    assert phase_after(None, 3) == ("Failed", "the runner exited 3 without a result")


def test_project_dir_name_matches_claude_code() -> None:
    """Transcripts live under the cwd with every non-alphanumeric char as '-'."""
    assert project_dir_name("/home/u/my_proj.x") == "-home-u-my-proj-x"
