"""``sweep`` (times only and ``full=True``), ``reference_sweep`` and ``check_times`` on explicit
pairs of random worlds, against the NumPy brute force of conftest.py and the parity judge."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

import sweepcast
from conftest import (
    world_id,
    World,
    all_pairs,
    assert_bit_equal,
    assert_hits_agree,
    assert_judged,
    brute_force_world,
    check_frames,
    decode_times,
    random_world,
)

WORLDS: list[dict[str, Any]] = [
    dict(seed=101, n=120),
    dict(seed=102, n=150, dim=2),
    dict(seed=103, n=100, offset=-250.75),
    dict(seed=104, n=250, periodic=True),
    dict(seed=105, n=120, separating=True),
    dict(seed=106, n=120, dim=2, periodic=True, separating=True),
    dict(seed=107, n=120, dtype=np.float32),
    dict(seed=108, n=30, crowding=12.0),
]

# The f64 oracle's own backward error, in units of f64's epsilon (2^-52): the rows of the
# f32 analysis (src/parity.rs) with u = 2^-53 give 6.5 ε; evaluating f(t) here in f64 errs by
# at most about 4 u S² = 2 ε more. 16 ε leaves room, as CPU_BOUND does for the f32 paths.
ORACLE_BOUND = 16.0 * 2.0**-52


def sweep_pairs(world: World, seed: int) -> np.ndarray:
    """Every pair i < j, 50 of them reversed (j, i) and 5 bodies paired with themselves (an
    overlap with itself), shuffled."""
    rng = np.random.default_rng(seed)
    pairs = all_pairs(world.n)
    reversed_ = pairs[rng.choice(len(pairs), 50, replace=False)][:, ::-1]
    selves = np.repeat(rng.choice(world.n, 5, replace=False)[:, None], 2, axis=1)
    pairs = np.concatenate([pairs, reversed_, selves])
    return np.ascontiguousarray(pairs[rng.permutation(len(pairs))])


@pytest.mark.parametrize("params", WORLDS, ids=world_id)
def test_sweep_times_are_the_brute_force_within_the_bound(params: dict[str, Any]) -> None:
    world = random_world(**params)
    pairs = sweep_pairs(world, params["seed"])
    times = sweepcast.sweep(*world.bodies(), pairs, **world.options())
    assert isinstance(times, np.ndarray)
    assert times.dtype == np.float32 and times.shape == (len(pairs),)
    # The encoding: a time in [0, 1], -1 for an overlap, inf for a miss; nothing else.
    assert np.all(((times >= 0) & (times <= 1)) | (times == -1) | (times == np.inf))
    decoded, status = decode_times(times)
    assert_judged(world, pairs, decoded, status, sweepcast.CPU_BOUND, "sweep")
    brute = brute_force_world(world, pairs)
    hits = status != sweepcast.MISS
    assert hits.sum() > 20, "a world made to have contacts has few"
    assert_hits_agree(
        world, pairs, brute.hits(), hits, decoded, status, sweepcast.CPU_BOUND, "sweep"
    )
    # A body with itself overlaps (unless separating: it is not approaching itself).
    selves = pairs[:, 0] == pairs[:, 1]
    expected = -1.0 if not world.separating else np.inf
    assert np.all(times[selves] == expected)


@pytest.mark.parametrize("params", WORLDS, ids=world_id)
def test_sweep_full_is_the_brute_force_and_the_times_only_answer(params: dict[str, Any]) -> None:
    world = random_world(**params)
    pairs = sweep_pairs(world, params["seed"])
    full = sweepcast.sweep(*world.bodies(), pairs, full=True, **world.options())
    assert isinstance(full, sweepcast.Impacts) and len(full) == len(pairs)
    k, dim = len(pairs), world.dim
    assert full.times.dtype == np.float32 and full.times.shape == (k,)
    assert full.status.dtype == np.uint8 and full.status.shape == (k,)
    assert full.points.dtype == np.float64 and full.points.shape == (k, dim)
    assert full.normals.dtype == np.float32 and full.normals.shape == (k, dim)
    miss = full.status == sweepcast.MISS
    overlap = full.status == sweepcast.OVERLAPPING
    assert np.all(np.isin(full.status, [sweepcast.MISS, sweepcast.CONTACT, sweepcast.OVERLAPPING]))
    assert np.all(full.times[miss] == np.inf) and np.all(full.times[overlap] == 0.0)
    assert np.all(np.isnan(full.points[miss])) and np.all(np.isnan(full.normals[miss]))
    assert np.all(np.isfinite(full.points[~miss])) and np.all(np.isfinite(full.normals[~miss]))
    assert_judged(world, pairs, full.times, full.status, sweepcast.CPU_BOUND, "sweep full")
    brute = brute_force_world(world, pairs)
    assert_hits_agree(
        world, pairs, brute.hits(), ~miss, full.times, full.status, sweepcast.CPU_BOUND, "full"
    )
    hits = ~miss
    check_frames(
        world,
        SimpleNamespace(
            pairs=pairs[hits],
            times=full.times[hits],
            normals=full.normals[hits],
            points=full.points[hits],
        ),
        brute_force_world(world, pairs[hits]),
        sweepcast.CPU_BOUND,
        f"{world.label}: sweep full",
    )
    # The times-only answer gives the same time to the bit wherever both report a contact;
    # where the two differ on hit, miss or overlap, each was judged within the bound above.
    times = sweepcast.sweep(*world.bodies(), pairs, **world.options())
    both = (full.status == sweepcast.CONTACT) & (times >= 0) & np.isfinite(times)
    assert both.sum() > 5
    assert_bit_equal(times[both], full.times[both], "times only against full")
    # Swapping the bodies of a pair gives the same time and status and the opposite normal.
    swapped = sweepcast.sweep(*world.bodies(), pairs[:, ::-1], full=True, **world.options())
    assert_bit_equal(swapped.times, full.times, "swapped times")
    assert_bit_equal(swapped.status, full.status, "swapped status")
    other = hits & (pairs[:, 0] != pairs[:, 1])  # a body with itself has no direction
    assert_bit_equal(swapped.normals[other], -full.normals[other], "swapped normals")


@pytest.mark.parametrize("params", WORLDS, ids=world_id)
def test_reference_sweep_is_the_brute_force_in_f64(params: dict[str, Any]) -> None:
    """The oracle and the brute force are both f64 on the same rounded bodies: they agree on
    hit, miss and overlap wherever the pair is not within f64 rounding (ORACLE_BOUND of S²)
    of touching at the start, grazing or touching at the end; the oracle's times touch
    (|f(t)| <= ORACLE_BOUND S²) and meet nothing earlier."""
    world = random_world(**params)
    pairs = sweep_pairs(world, params["seed"])
    oracle = sweepcast.reference_sweep(*world.bodies(), pairs, **world.options())
    k, dim = len(pairs), world.dim
    assert isinstance(oracle, sweepcast.Impacts) and len(oracle) == k
    assert oracle.times.dtype == np.float64 and oracle.normals.dtype == np.float64
    assert oracle.points.shape == (k, dim) and oracle.normals.shape == (k, dim)
    brute = brute_force_world(world, pairs)
    zero, one = np.zeros(k), np.ones(k)
    qa = (brute.v * brute.v).sum(axis=1)
    vertex = np.clip(
        np.divide((brute.s * brute.v).sum(axis=1), qa, out=np.zeros(k), where=qa > 0), 0, 1
    )
    near = (
        (np.abs(brute.residual(zero)) <= ORACLE_BOUND)
        | (np.abs(brute.residual(one)) <= ORACLE_BOUND)
        | (np.abs(brute.residual(vertex)) <= ORACLE_BOUND)
    )
    if world.separating:
        near |= np.abs((brute.s * brute.v).sum(axis=1)) / brute.scale_squared <= ORACLE_BOUND
    differ = oracle.status != brute.status
    assert not np.any(differ & ~near), f"{world.label}: oracle and brute force disagree"
    contact = oracle.status == sweepcast.CONTACT
    assert contact.sum() > 5
    t = oracle.times[contact]
    assert np.all((t >= 0) & (t <= 1))
    at_time = brute.residual(np.where(contact, oracle.times, 0.0))
    assert np.all(np.abs(at_time[contact]) <= ORACLE_BOUND), "not touching"
    before = np.minimum(
        brute.residual(zero), brute.residual(np.minimum(vertex, np.where(contact, oracle.times, 0)))
    )
    assert np.all(before[contact] >= -ORACLE_BOUND), "met before the oracle's time"
    # Both times, where both report a contact clear of the rounding, agree as far as the
    # time is conditioned: |dt| <= 2 ORACLE_BOUND S² / |f'(t)|, f'(t) = 2 sqrt(B² - A C).
    both = contact & (brute.status == sweepcast.CONTACT)
    qb = (brute.s * brute.v).sum(axis=1)
    qc = (brute.s * brute.s).sum(axis=1) - brute.radius_sum**2
    slope = 2.0 * np.sqrt(np.maximum(qb * qb - qa * qc, 0.0))
    conditioned = both & (slope > 0)
    dt = np.abs(oracle.times[conditioned] - brute.times[conditioned])
    allowed = (2.0 * ORACLE_BOUND * brute.scale_squared / np.where(slope > 0, slope, 1))[
        conditioned
    ]
    assert np.all(dt <= allowed), f"times differ by up to {dt.max():.3g}"
    # Misses: inf and NaN frames; overlaps at 0.
    miss = oracle.status == sweepcast.MISS
    assert np.all(oracle.times[miss] == np.inf) and np.all(np.isnan(oracle.points[miss]))
    assert np.all(oracle.times[oracle.status == sweepcast.OVERLAPPING] == 0.0)
    # Normals: unit, from the first centre to the second at the time.
    w = (brute.s - brute.v * np.where(miss, 0, oracle.times)[:, None])[:, :dim]
    distance = np.linalg.norm(w, axis=1)
    apart = ~miss & (distance > 1e-6)
    assert np.allclose(oracle.normals[apart], w[apart] / distance[apart, None], atol=1e-12)


def test_check_times_reports_each_pair() -> None:
    """The Judgement's fields, one entry a pair; the default bound is CPU_BOUND; a bound of 0
    fails contacts the CPU bound passes (measured backward errors are above 0), and the
    largest backward error is the largest entry."""
    world = random_world(121, 120)
    pairs = all_pairs(world.n)
    full = sweepcast.sweep(*world.bodies(), pairs, full=True)
    verdict = sweepcast.check_times(*world.bodies(), pairs, full.times, full.status)
    k = len(pairs)
    assert isinstance(verdict, sweepcast.Judgement)
    assert verdict.backward_error.shape == (k,) and verdict.backward_error.dtype == np.float64
    assert verdict.failed.shape == (k,) and verdict.failed.dtype == np.bool_
    assert len(verdict.reasons) == k and all(reason is None for reason in verdict.reasons)
    assert verdict.passed is True and not verdict.failed.any()
    assert verdict.max_backward_error == verdict.backward_error.max()
    assert verdict.max_backward_error <= sweepcast.CPU_BOUND
    contact = full.status == sweepcast.CONTACT
    assert np.all(verdict.backward_error[~contact] == 0.0)
    explicit = sweepcast.check_times(
        *world.bodies(), pairs, full.times, full.status, bound=sweepcast.CPU_BOUND
    )
    assert np.array_equal(explicit.backward_error, verdict.backward_error)
    strict = sweepcast.check_times(*world.bodies(), pairs, full.times, full.status, bound=0.0)
    assert np.array_equal(strict.failed, verdict.backward_error > 0.0)
    assert not strict.passed
    assert all(
        (reason is None) == (not failed) for reason, failed in zip(strict.reasons, strict.failed)
    )
    # A miss's time is ignored.
    times = full.times.copy()
    times[full.status == sweepcast.MISS] = 0.5
    again = sweepcast.check_times(*world.bodies(), pairs, times, full.status)
    assert again.passed
    # The bounds' constants.
    assert sweepcast.EPSILON == 2.0**-23
    assert (sweepcast.CPU_BOUND, sweepcast.GPU_BOUND) == (8.0, 16.0)
    assert (sweepcast.MISS, sweepcast.CONTACT, sweepcast.OVERLAPPING) == (0, 1, 2)


def test_no_pairs_and_no_bodies_give_empty_answers() -> None:
    """Empty input is valid: empty answers of the right dtypes and shapes, not an error (the
    stub names no error for it, and the crate returns empty results: docs/guarantees.md)."""
    for dim in (2, 3):
        centers, radii, moves = np.zeros((0, dim)), np.zeros(0), np.zeros((0, dim))
        no_pairs = np.zeros((0, 2), dtype=np.int64)
        times = sweepcast.sweep(centers, radii, moves, no_pairs)
        assert isinstance(times, np.ndarray) and times.shape == (0,) and times.dtype == np.float32
        full = sweepcast.sweep(centers, radii, moves, no_pairs, full=True)
        assert len(full) == 0 and full.points.shape == (0, dim) and full.normals.shape == (0, dim)
        oracle = sweepcast.reference_sweep(centers, radii, moves, no_pairs)
        assert len(oracle) == 0 and oracle.times.dtype == np.float64
        verdict = sweepcast.check_times(
            centers, radii, moves, no_pairs, np.zeros(0, np.float32), np.zeros(0, np.uint8)
        )
        assert verdict.passed and verdict.backward_error.shape == (0,)
        contacts = sweepcast.find_contacts(centers, radii, moves)
        assert len(contacts) == 0 and contacts.candidates == 0
        assert contacts.pairs.shape == (0, 2) and contacts.points.shape == (0, dim)
        assert contacts.earliest_time.shape == (0,) and contacts.earliest_partner.shape == (0,)
        # One body: nothing to meet.
        one = sweepcast.find_contacts(np.zeros((1, dim)), [1.0], np.ones((1, dim)))
        assert len(one) == 0 and one.earliest_time.tolist() == [np.inf]
        assert one.earliest_partner.tolist() == [-1] and one.earliest_wall.tolist() == [-1]


def test_a_touch_at_the_start_and_at_the_end_of_the_step_are_contacts() -> None:
    """Worked cases exact in f32: touching at t = 0 is a contact at 0, an overlap is -1, a
    touch exactly at t = 1 a contact at 1, a near miss (apart by 2^-10 of the radius sum at
    the closest) a miss, and a head-on gap of 2 closed by 4 at t = 0.5."""
    # 0, 1 touch; 2 closes its gap of 1 to 3 at the step's end; 5 closes its gap of 2 to 4
    # (centres 4 apart, radius sum 2) moving 4.
    centers = np.array([[0.0, 0, 0], [2, 0, 0], [10, 0, 0], [13, 0, 0], [20, 0, 0], [16, 0, 0]])
    radii = np.ones(6)
    moves = np.array([[0.0, 0, 0], [0, 0, 0], [1, 0, 0], [0, 0, 0], [0, 0, 0], [4, 0, 0]])
    pairs = np.array([[0, 1], [0, 0], [2, 3], [4, 5], [5, 4]])
    times = sweepcast.sweep(centers, radii, moves, pairs)
    assert times.tolist() == [0.0, -1.0, 1.0, 0.5, 0.5]
    full = sweepcast.sweep(centers, radii, moves, pairs, full=True)
    assert full.status.tolist() == [
        sweepcast.CONTACT,
        sweepcast.OVERLAPPING,
        sweepcast.CONTACT,
        sweepcast.CONTACT,
        sweepcast.CONTACT,
    ]
    near = np.array([[0.0, 0, 0], [0, 2 + 2.0**-9, 0]])
    assert sweepcast.sweep(near, [1.0, 1.0], [[5, 0, 0], [0, 0, 0]], [[0, 1]]).tolist() == [np.inf]
