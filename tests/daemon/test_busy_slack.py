"""Start-up bounds stretch with the machine's contention and never without bound."""

from __future__ import annotations

import pytest

from agentcoord.kernel.busy import MAX_SLACK, slack

pytestmark = pytest.mark.unit


def test_an_idle_machine_keeps_the_bounds() -> None:
    """A run queue shorter than the CPUs, at nice 0, leaves a bound as it is."""
    assert slack(0.3, 2, 0) == 1.0
    assert slack(2.0, 2, 0) == 1.0


def test_a_long_run_queue_stretches_in_proportion() -> None:
    """Load 8 on 2 CPUs is four runnable tasks per CPU: four times the time."""
    assert slack(8.0, 2, 0) == pytest.approx(4.0)


def test_a_niced_daemon_gets_the_share_the_scheduler_gives_it() -> None:
    """Each nice level above 0 gives up about a quarter of the CPU share; negative is not faster."""
    assert slack(1.0, 2, 10) == pytest.approx(1.25**10)
    assert slack(1.0, 2, -5) == 1.0


def test_the_stretch_is_capped() -> None:
    """However loaded, a bound ends: start-up never hangs."""
    assert slack(500.0, 1, 19) == MAX_SLACK
