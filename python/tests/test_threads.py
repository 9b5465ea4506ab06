"""Every long call releases the GIL: while a worker thread is inside ``find_contacts`` or
``EventLoop.advance``, the main thread's pure-Python loop keeps running.

The worker notes the clock just before and just after its call; the main thread counts its
loop's turns and notes the clock every 64 turns. Were the GIL held through the call, the
main thread could not run inside that window at all (but for the moments before the call
takes the GIL and after it returns): its notes would leave a hole as long as the call. So
the test asserts that thousands of turns fell inside the window, and that no gap between
the main thread's notes there spans half the window. No speed is asserted: only that
progress happened during the call."""

from __future__ import annotations

import threading
import time
from typing import Callable

import numpy as np

import sweepcast
from conftest import lattice_gas, random_world

STAMP_EVERY = 64


def progress_during(call: Callable[[], object]) -> tuple[int, float, float]:
    """Runs ``call`` in a thread while this thread spins. Returns how many turns of the spin
    fell inside the call's window, the window's length and the longest gap between this
    thread's notes of the clock inside it (the window's ends included)."""
    window: list[float] = []
    failure: list[BaseException] = []

    def worker() -> None:
        try:
            window.append(time.perf_counter())
            call()
            window.append(time.perf_counter())
        except BaseException as error:  # noqa: BLE001 - reported to the main thread
            failure.append(error)

    stamps: list[float] = []
    turns = 0
    thread = threading.Thread(target=worker)
    thread.start()
    while thread.is_alive():
        turns += 1
        if turns % STAMP_EVERY == 0:
            stamps.append(time.perf_counter())
    thread.join()
    assert not failure, failure
    start, end = window
    inside = np.array([s for s in stamps if start <= s <= end])
    edges = np.concatenate([[start], inside, [end]])
    return len(inside) * STAMP_EVERY, end - start, float(np.diff(edges).max())


def assert_progress(turns: int, length: float, gap: float, what: str) -> None:
    assert turns >= 5_000, f"{what}: only {turns} turns of the main thread in {length:.3f} s"
    assert (
        gap < 0.5 * length
    ), f"{what}: the main thread stood still for {gap:.3f} s of the call's {length:.3f} s"


def test_find_contacts_lets_another_thread_run() -> None:
    world = random_world(401, 300_000)
    turns, length, gap = progress_during(
        lambda: [sweepcast.find_contacts(*world.bodies()) for _ in range(3)]
    )
    assert_progress(turns, length, gap, "find_contacts")


def test_sweep_lets_another_thread_run() -> None:
    world = random_world(402, 100_000)
    rng = np.random.default_rng(402)
    pairs = rng.integers(0, world.n, (3_000_000, 2))
    turns, length, gap = progress_during(lambda: sweepcast.sweep(*world.bodies(), pairs, full=True))
    assert_progress(turns, length, gap, "sweep")


def test_event_loop_advance_lets_another_thread_run() -> None:
    positions, velocities, radii, masses, side = lattice_gas(4000, 0.3, 403)
    loop = sweepcast.EventLoop(positions, velocities, radii, masses, periodic_box=side)
    events: list[int] = []
    turns, length, gap = progress_during(lambda: events.append(len(loop.advance(12.0))))
    assert events[0] > 100_000
    assert_progress(turns, length, gap, "EventLoop.advance")
