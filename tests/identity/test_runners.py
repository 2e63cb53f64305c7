"""The runner table: starters register and forget runners; identity looks them up."""

from __future__ import annotations

import pytest

from agentcoord.identity.runners import RunnerInfo, Runners

pytestmark = pytest.mark.unit


def test_register_lookup_forget() -> None:
    """A registered runner is found by its pid and start time until it is forgotten."""
    runners = Runners()
    key = runners.register(42, 1.5, RunnerInfo("w", 1, ("a",)))
    assert key == (42, 1.5)
    assert runners.lookup((42, 1.5)) == RunnerInfo("w", 1, ("a",))
    assert runners.lookup((42, 2.5)) is None  # the pid again, another process
    assert runners.lookup((43, 1.5)) is None
    assert list(runners) == [((42, 1.5), RunnerInfo("w", 1, ("a",)))]
    assert len(runners) == 1
    runners.forget(key)
    assert runners.lookup(key) is None
    assert len(runners) == 0
    runners.forget(key)  # forgetting twice is harmless (a stop and an exit both forget)


def test_registering_again_replaces_and_iteration_is_a_snapshot() -> None:
    """The same process registered again runs the newer agent; iterating while forgetting is
    safe."""
    runners = Runners()
    runners.register(1, 1.0, RunnerInfo("a"))
    runners.register(2, 2.0, RunnerInfo("b"))
    runners.register(1, 1.0, RunnerInfo("c"))
    assert runners.lookup((1, 1.0)) == RunnerInfo("c")
    for key, _ in runners:
        runners.forget(key)
    assert len(runners) == 0
