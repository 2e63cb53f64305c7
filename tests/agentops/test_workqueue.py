"""The controller's work queue (client-go semantics): dedup, one worker per key at a time,
exponential back-off with a cap, and shut-down."""

from __future__ import annotations

import asyncio

import pytest

from agentcoord.agentops.workqueue import WorkQueue, backoff

pytestmark = pytest.mark.unit


async def _get(q: WorkQueue[str], timeout: float = 30.0) -> str | None:
    async with asyncio.timeout(timeout):
        return await q.get()


async def test_a_key_added_twice_while_waiting_is_taken_once() -> None:
    """Two adds of one waiting key queue it once; other keys keep their order."""
    q: WorkQueue[str] = WorkQueue()
    for key in ("a", "b", "a", "c", "b"):
        q.add(key)
    assert len(q) == 3
    assert [await _get(q), await _get(q), await _get(q)] == ["a", "b", "c"]
    assert len(q) == 0


async def test_a_key_added_while_held_waits_for_done_then_comes_again() -> None:
    """A key re-added while a worker holds it is not handed out until done, then once more."""
    q: WorkQueue[str] = WorkQueue()
    q.add("a")
    assert await _get(q) == "a"
    q.add("a")
    q.add("a")
    assert len(q) == 0  # held: not queued for a second worker
    q.add("b")
    assert await _get(q) == "b"
    q.done("a")
    assert len(q) == 1
    assert await _get(q) == "a"
    q.done("a")
    assert len(q) == 0


async def test_workers_never_process_one_key_at_the_same_time() -> None:
    """Four workers and a stream of adds: no key is ever held by two workers at once, and
    each key's last add is processed (a change seen during processing is not lost)."""
    q: WorkQueue[str] = WorkQueue()
    keys = ("a", "b", "c")
    added = dict.fromkeys(keys, 0)  # adds so far
    taken = dict.fromkeys(keys, 0)  # adds seen when a worker last took the key
    holding: set[str] = set()
    overlaps: list[str] = []
    adding = True
    settled = asyncio.Event()

    def caught_up() -> bool:
        return not adding and not holding and len(q) == 0 and taken == added

    async def worker() -> None:
        while (key := await q.get()) is not None:
            if key in holding:
                overlaps.append(key)
            holding.add(key)
            taken[key] = added[key]
            await asyncio.sleep(0)  # a yield while holding the key, so the others run
            holding.discard(key)
            q.done(key)
            if caught_up():
                settled.set()

    async with asyncio.TaskGroup() as tg:
        for _ in range(4):
            tg.create_task(worker())
        for i in range(300):
            key = keys[i % 3]
            added[key] += 1
            q.add(key)
            if i % 2:
                await asyncio.sleep(0)  # a yield, so adds land while keys are held
        adding = False
        if caught_up():
            settled.set()
        async with asyncio.timeout(60):
            await settled.wait()
        q.shut_down()
    assert overlaps == []
    assert taken == added


async def test_backoff_doubles_from_the_base_up_to_the_cap() -> None:
    """The n-th retry waits base * 2**n, never longer than the cap, even after many."""
    assert [backoff(n, 0.05, 1.0) for n in range(6)] == [0.05, 0.1, 0.2, 0.4, 0.8, 1.0]
    assert backoff(10_000, 0.05, 30.0) == 30.0
    with pytest.raises(ValueError, match="failures"):
        backoff(-1, 0.05, 1.0)


async def test_rate_limited_adds_come_back_after_a_growing_delay_until_forgotten() -> None:
    """add_rate_limited queues the key after its back-off (not at once); each failure grows
    the delay and forget starts it over."""
    q: WorkQueue[str] = WorkQueue(base_delay=0.01, max_delay=0.04)
    loop = asyncio.get_running_loop()
    assert [q.add_rate_limited("a") for _ in range(4)] == [0.01, 0.02, 0.04, 0.04]
    assert q.failures("a") == 4
    assert len(q) == 0  # delayed: not there yet
    began = loop.time()
    assert await _get(q) == "a"  # the earliest timer (0.01 s) wins
    assert loop.time() - began >= 0.005
    q.done("a")
    q.forget("a")
    assert q.failures("a") == 0
    assert q.add_rate_limited("a") == 0.01


async def test_an_add_during_the_backoff_is_processed_at_once() -> None:
    """A key waiting out its back-off that is added again (a new event) is handed out at
    once; its timer still brings it back, once, after the worker is done."""
    q: WorkQueue[str] = WorkQueue(base_delay=0.02, max_delay=0.02)
    q.add_rate_limited("a")
    q.add("a")
    assert await _get(q, timeout=0.015) == "a"  # sooner than the back-off
    q.add("b")
    assert await _get(q) == "b"  # "a" is held: not handed to a second worker
    q.done("a")
    q.done("b")
    assert await _get(q) == "a"  # the timer's add
    q.done("a")
    assert len(q) == 0


async def test_shut_down_wakes_waiting_workers_and_drops_later_work() -> None:
    """Shut-down returns None to waiting workers, cancels delayed keys and ignores adds."""
    q: WorkQueue[str] = WorkQueue(base_delay=0.01, max_delay=0.01)
    async with asyncio.timeout(60), asyncio.TaskGroup() as tg:
        waiting = [tg.create_task(q.get()) for _ in range(3)]
        q.add_rate_limited("late")
        q.shut_down()
    assert [w.result() for w in waiting] == [None, None, None]
    q.add("x")
    assert len(q) == 0
    assert await _get(q) is None
