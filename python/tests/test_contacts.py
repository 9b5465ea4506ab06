"""``find_contacts`` on random worlds: against a brute force written in NumPy (every pair i < j
swept in f64 on the bodies as the f32 paths take them), the crate's f64 oracle
(``reference_sweep``) and the parity judge (``check_times`` with ``CPU_BOUND``); in 2D and 3D,
float32 and float64, any layout, in a periodic box, under the separating option, with
collision groups and with walls."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import sweepcast
from conftest import (
    world_id,
    EPSILON_F32,
    World,
    all_pairs,
    assert_bit_equal,
    assert_contacts_bit_equal,
    assert_hits_agree,
    assert_judged,
    brute_force_world,
    check_contacts,
    f32_bodies,
    interacting,
    judge,
    local_origin,
    pair_keys,
    random_world,
)

# Each world: a seed and what it exercises. About one contact a body (crowding 1), and one
# dense world of many overlaps.
WORLDS: list[dict[str, Any]] = [
    dict(seed=1, n=150),
    dict(seed=2, n=200, dim=2),
    dict(seed=3, n=120, offset=1000.25),
    dict(seed=4, n=100, dim=2, offset=-3.0e4),
    dict(seed=5, n=250, periodic=True),
    dict(seed=6, n=150, dim=2, periodic=True),
    dict(seed=7, n=150, separating=True),
    dict(seed=8, n=250, periodic=True, separating=True),
    dict(seed=9, n=150, groups=True),
    dict(seed=10, n=100, dim=2, groups=True, separating=True),
    dict(seed=11, n=150, dtype=np.float32),
    dict(seed=12, n=150, dim=2, dtype=np.float32, periodic=True),
    dict(seed=13, n=40, crowding=12.0),
]


@pytest.mark.parametrize("params", WORLDS, ids=world_id)
def test_find_contacts_is_the_brute_force_within_the_bound(params: dict[str, Any]) -> None:
    world = random_world(**params)
    contacts = sweepcast.find_contacts(*world.bodies(), **world.step_options())
    assert len(contacts) > 0, f"{world.label}: a world made to have contacts has none"
    check_contacts(world, contacts, sweepcast.CPU_BOUND, "find_contacts")


@pytest.mark.parametrize("params", WORLDS, ids=world_id)
def test_find_contacts_is_the_oracle_within_the_bound(params: dict[str, Any]) -> None:
    """The same hits as ``reference_sweep`` over every interacting pair, but where the judge
    accepts the f32 answer either way."""
    world = random_world(**params)
    contacts = sweepcast.find_contacts(*world.bodies(), **world.step_options())
    pairs = all_pairs(world.n)
    if world.groups is not None:
        pairs = pairs[interacting(world.groups, pairs)]
    oracle = sweepcast.reference_sweep(*world.bodies(), pairs, **world.options())
    assert oracle.times.dtype == np.float64 and oracle.normals.dtype == np.float64
    index = np.searchsorted(pair_keys(pairs, world.n), pair_keys(contacts.pairs, world.n))
    reported = np.zeros(len(pairs), dtype=bool)
    reported[index] = True
    times = np.full(len(pairs), np.inf, dtype=np.float32)
    status = np.full(len(pairs), sweepcast.MISS, dtype=np.uint8)
    times[index], status[index] = contacts.times, contacts.status
    oracle_hits = oracle.status != sweepcast.MISS
    assert_hits_agree(
        world, pairs, oracle_hits, reported, times, status, sweepcast.CPU_BOUND, "oracle"
    )
    # Where both hit, the times agree as far as the bound says: the oracle's time rounded to
    # f32 is itself within the bound (its rounding moves f by at most 2 R |v| 2^-24), so both
    # are judged; and an f32 time far from the oracle's is possible only near a graze.
    both = reported & oracle_hits
    assert_judged(
        world,
        pairs[both],
        oracle.times[both].astype(np.float32),
        oracle.status[both],
        sweepcast.CPU_BOUND,
        "the oracle's times rounded to f32",
    )


def test_the_brute_force_is_right_and_the_judge_can_fail() -> None:
    """The brute force's own answers (rounded to f32) pass the judge, and the judge fails
    answers that are wrong: times moved well away from a contact and clear hits called
    misses. Without this the tests above could pass on a judge that passes everything."""
    world = random_world(21, 150)
    pairs = all_pairs(world.n)
    brute = brute_force_world(world, pairs)
    assert_judged(
        world, pairs, brute.times.astype(np.float32), brute.status, sweepcast.CPU_BOUND, "brute"
    )
    contact = np.flatnonzero((brute.status == sweepcast.CONTACT) & (brute.times > 0.2))
    assert len(contact) > 10
    early = judge(
        world,
        pairs[contact],
        (brute.times[contact] * 0.5).astype(np.float32),
        brute.status[contact],
        sweepcast.CPU_BOUND,
    )
    assert np.all(early.failed), "times halved passed the judge"
    assert not early.passed and all(reason for reason in early.reasons)
    # A hit whose least f over the step is far below the bound, reported as a miss.
    least = np.minimum(brute.residual(np.zeros(len(pairs))), brute.residual(np.ones(len(pairs))))
    deep = np.flatnonzero(brute.hits() & (least < -1e-3))
    assert len(deep) > 10
    missed = judge(
        world,
        pairs[deep],
        np.full(len(deep), np.inf, dtype=np.float32),
        np.full(len(deep), sweepcast.MISS, dtype=np.uint8),
        sweepcast.CPU_BOUND,
    )
    assert np.all(missed.failed), "deep hits reported as misses passed the judge"
    assert missed.max_backward_error == 0.0  # no contact reported, none measured


@pytest.mark.parametrize("dim", [2, 3])
def test_float32_lists_strides_and_fortran_order_give_the_same_contacts(dim: int) -> None:
    """The same values in any dtype and layout are the same bodies: the answers are equal to
    the bit. float32 input widens exactly to float64, so both give one world."""
    world = random_world(31, 150, dim, offset=17.5, dtype=np.float32)
    reference = sweepcast.find_contacts(*world.bodies())
    check_contacts(world, reference, sweepcast.CPU_BOUND, "float32")
    wide = {
        # A slice of a wider array: the bodies' rows strided, each row's components contiguous.
        "slice of a wider array": lambda x: np.concatenate([x, x], axis=1)[:, : x.shape[1]],
        # Every other row of an array twice as long: rows strided by two.
        "every other row": lambda x: np.repeat(x, 2, axis=0)[::2],
        "Fortran order": np.asfortranarray,
        "float64": lambda x: x.astype(np.float64),
        "float64 Fortran order": lambda x: np.asfortranarray(x.astype(np.float64)),
    }
    for name, layout in wide.items():
        centers, displacements = layout(world.centers), layout(world.displacements)
        radii = np.repeat(world.radii, 2)[::2] if "row" in name else world.radii
        assert np.array_equal(centers, world.centers)
        got = sweepcast.find_contacts(centers, radii, displacements)
        assert_contacts_bit_equal(got, reference, name)
    # Nested lists (an ArrayLike) too.
    got = sweepcast.find_contacts(
        world.centers.tolist(), world.radii.tolist(), world.displacements.tolist()
    )
    assert_contacts_bit_equal(got, reference, "lists")
    # The batches likewise, on every pair, with the pairs strided (the columns swapped).
    pairs = all_pairs(world.n)
    times = sweepcast.sweep(*world.bodies(), pairs)
    full = sweepcast.sweep(*world.bodies(), pairs, full=True)
    oracle = sweepcast.reference_sweep(*world.bodies(), pairs)
    for name, layout in wide.items():
        centers, displacements = layout(world.centers), layout(world.displacements)
        assert_bit_equal(sweepcast.sweep(centers, world.radii, displacements, pairs), times, name)
        got_full = sweepcast.sweep(centers, world.radii, displacements, pairs, full=True)
        assert_bit_equal(got_full.points, full.points, name)
        got_oracle = sweepcast.reference_sweep(centers, world.radii, displacements, pairs)
        assert_bit_equal(got_oracle.times, oracle.times, name)
    swapped = sweepcast.sweep(*world.bodies(), pairs[:, ::-1])
    assert not pairs[:, ::-1].flags.c_contiguous
    assert_bit_equal(swapped, times, "strided pairs")


def test_the_local_origin_keeps_a_far_world_as_it_is_near_the_origin() -> None:
    """A world 1e6 away from the origin, shifted by a power of two that the local origin
    takes out exactly, gives the contacts of the world near the origin, to the bit (points
    but for the shift)."""
    near = random_world(41, 150)
    shift = 2.0**20
    far = World(near.centers + shift, near.radii, near.displacements, label="far")
    # The bounding box's centre moves by the shift exactly, so the rounded bodies are equal.
    assert np.array_equal(local_origin(far.centers, None), local_origin(near.centers, None) + shift)
    a = sweepcast.find_contacts(*near.bodies())
    b = sweepcast.find_contacts(*far.bodies())
    for name in ("pairs", "times", "normals", "status", "earliest_time", "earliest_partner"):
        assert_bit_equal(getattr(b, name), getattr(a, name), name)
    # Points: the same local point plus the origin, rounded once in f64.
    assert np.allclose(b.points - shift, a.points, rtol=0, atol=2.0**-52 * (shift + 10))
    check_contacts(far, b, sweepcast.CPU_BOUND, "far")


def test_groups_remove_exactly_the_pairs_that_do_not_interact() -> None:
    """With every body in one group that meets only the other, a world's contacts are those
    of the world without groups less the pairs within one group."""
    world = random_world(51, 150)
    plain = sweepcast.find_contacts(*world.bodies())
    half = np.arange(world.n) % 2
    groups = sweepcast.collision_groups(1 << half, 1 << (1 - half))
    assert groups.dtype == np.uint32 and groups.shape == (world.n,)
    assert np.array_equal(groups, (1 << half) | (1 << (1 - half)) << 16)
    grouped = sweepcast.find_contacts(*world.bodies(), groups=groups)
    across = half[plain.pairs[:, 0]] != half[plain.pairs[:, 1]]
    assert 0 < across.sum() < len(plain)
    assert_bit_equal(grouped.pairs, plain.pairs[across], "pairs")
    assert_bit_equal(grouped.times, plain.times[across], "times")
    # Broadcast: one membership for all, a filter per body.
    assert np.array_equal(
        sweepcast.collision_groups(1, [1, 2, 3]), np.array([1 | 1 << 16, 1 | 2 << 16, 1 | 3 << 16])
    )
    # No body meets any: nothing, not even a candidate.
    none = sweepcast.find_contacts(
        *world.bodies(), groups=sweepcast.collision_groups(0, 0xFFFF) * np.ones(world.n, np.uint32)
    )
    assert len(none) == 0 and none.candidates == 0


def test_separating_drops_exactly_the_pairs_moving_apart_at_the_start() -> None:
    """The separating option removes from the step's contacts the pairs touching or
    overlapping at t = 0 and moving apart (s · v <= 0), and nothing else (but within the
    bound of either condition)."""
    world = random_world(61, 60, crowding=10.0)
    plain = sweepcast.find_contacts(*world.bodies())
    separating = sweepcast.find_contacts(*world.bodies(), separating=True)
    brute = brute_force_world(world, plain.pairs)
    at_start = plain.times == 0.0
    moving_apart = (brute.s * brute.v).sum(axis=1) <= 0.0
    assert (at_start & moving_apart).sum() > 5 and (at_start & ~moving_apart).sum() > 5
    # Clear of the bound: |s · v| / S² beyond k ε.
    clear = np.abs((brute.s * brute.v).sum(axis=1)) / brute.scale_squared > (
        sweepcast.CPU_BOUND * EPSILON_F32
    )
    kept = set(pair_keys(separating.pairs, world.n).tolist())
    for key, start, apart, sure in zip(
        pair_keys(plain.pairs, world.n).tolist(), at_start, moving_apart, clear
    ):
        if sure:
            assert (key in kept) == (not (start and apart)), key


def box_walls(low: np.ndarray, high: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The planes of ``Wall.box_interior(low, high)`` in its order (-x, +x, -y, +y(, -z, +z)):
    each face's point and inward normal."""
    dim = len(low)
    points, normals = [], []
    for axis in range(dim):
        for corner, sign in ((low, 1.0), (high, -1.0)):
            points.append(corner)
            normals.append(np.eye(dim)[axis] * sign)
    return np.array(points, dtype=np.float64), np.array(normals)


@pytest.mark.parametrize("dim", [2, 3])
def test_the_earliest_wall_is_the_brute_force_plane_sweep_within_the_bound(dim: int) -> None:
    """Bodies in a box of ``Wall.box_interior``: each body's earliest contact with a wall
    judged by backward error as the judge judges pairs. The height above a plane less the
    radius, g(t) = n · (c + d t - p) - r, computed in f32 from rounded inputs errs by a few
    roundings of |c - p|, |d|, r (each rounding 2^-24 of its size, a dot product three): at
    most about 10 u (|c| + |p| + |d| + r) with u = 2^-24, |c| and |p| from the local origin;
    CPU_BOUND ε = 16 u of the same covers it. Then: a reported wall touches at its time
    (|g(t)| within that), no wall was met before it (g >= -tol on [0, t]: g is linear, so at
    0 and t), the wall only where strictly earlier than the body's earliest pair; a body with
    no wall reported met no wall before its earliest pair (or within the step)."""
    side = 10.0
    rng = np.random.default_rng(71 + dim)
    # Few enough bodies, and in 2D small enough, that most meet a wall before another body.
    n = 120 if dim == 3 else 40
    centers = rng.uniform(0.55, side - 0.55, (n, dim)) + 3.0
    radii = rng.uniform(0.05, 0.5, n) * (1.0 if dim == 3 else 0.5)
    displacements = rng.uniform(-3.0, 3.0, (n, dim))
    low, high = np.full(dim, 3.0), np.full(dim, 3.0 + side)
    walls = sweepcast.Wall.box_interior(low, high)
    assert len(walls) == 2 * dim
    contacts = sweepcast.find_contacts(centers, radii, displacements, walls=walls)
    world = World(centers, radii, displacements, label=f"walls {dim}D")
    check_contacts(world, contacts, sweepcast.CPU_BOUND, "with walls", walls=True)

    origin = local_origin(centers, None)
    c, r, d = f32_bodies(world)
    c, d = c[:, :dim], d[:, :dim]
    points, normals = box_walls(low, high)
    points = points - origin

    # g for every body (rows) and wall (columns) at times t (per body).
    def g(t: np.ndarray) -> np.ndarray:
        position = c + d * t[:, None]
        return np.einsum("bwk,wk->bw", position[:, None, :] - points[None], normals) - r[:, None]

    size = (
        np.linalg.norm(c, axis=1)[:, None]
        + np.linalg.norm(points, axis=1)[None]
        + np.linalg.norm(d, axis=1)[:, None]
        + r[:, None]
    )
    tolerance = sweepcast.CPU_BOUND * EPSILON_F32 * size
    pair_time = np.full(n, np.inf)
    for (a, b), t in zip(contacts.pairs.tolist(), contacts.times.tolist()):
        pair_time[a] = min(pair_time[a], t)
        pair_time[b] = min(pair_time[b], t)
    wall, time = contacts.earliest_wall, contacts.earliest_time.astype(np.float64)
    hit = wall >= 0
    assert hit.sum() > 5, "a world made to meet walls met few"
    assert np.all((wall >= -1) & (wall < 2 * dim))
    assert np.all(contacts.earliest_partner[hit] == -1), "a wall and a partner"
    assert np.all(time[hit] < pair_time[hit]), "a wall not strictly before the earliest pair"
    rows = np.flatnonzero(hit)
    at_time = g(time)[rows, wall[rows]]
    touch = tolerance[rows, wall[rows]]
    later = time[rows] > 0
    assert np.all(np.abs(at_time[later]) <= touch[later]), "a wall where the body does not touch it"
    assert np.all(at_time[~later] <= touch[~later]), "a wall at t = 0 the body does not touch"
    # No wall met before the answer: before the wall's time, else before the earliest pair or
    # the step's end (where that is t = 0, a wall touching then is rightly not reported: the
    # pair comes first at equal times).
    until = np.where(hit, time, np.minimum(pair_time, 1.0))
    checked = until > 0
    least = np.minimum(g(np.zeros(n)), g(until))[checked]
    assert np.all(least >= -tolerance[checked]), "a wall met before the earliest contact"
    # A body that clearly meets a wall during the step and no other body reports the wall.
    crossing = (np.minimum(g(np.zeros(n)), g(np.ones(n))) < -tolerance).any(axis=1)
    crossing &= pair_time == np.inf
    assert crossing.sum() > 3
    assert np.all(hit[crossing]), "a wall clearly met, not reported"
    # A body without a wall: its earliest time is its earliest pair's (inf for none).
    assert_bit_equal(
        contacts.earliest_time[~hit], pair_time[~hit].astype(np.float32), "earliest_time"
    )


def test_out_fills_an_earlier_result_again_with_the_same_answers() -> None:
    """``out=`` writes a step into an earlier result's arrays: the answers are those of a
    fresh call, to the bit, whether the arrays are large enough (a smaller step after a
    larger), too small (grown) or of the other dimension (made anew); the result is ``out``."""
    fields = (
        "pairs",
        "times",
        "points",
        "normals",
        "status",
        "images",
        "earliest_time",
        "earliest_partner",
        "earliest_wall",
    )
    worlds = [
        random_world(71, 400, crowding=3.0),
        random_world(72, 100),
        random_world(73, 600, crowding=4.0),
        random_world(74, 300, dim=2, crowding=2.0),
        random_world(75, 50, dim=2, periodic=True),
    ]
    reused = sweepcast.find_contacts(*worlds[0].bodies())
    for world in worlds:
        options = dict(periodic_box=world.periodic_box)
        fresh = sweepcast.find_contacts(*world.bodies(), **options)
        again = sweepcast.find_contacts(*world.bodies(), **options, out=reused)
        assert again is reused
        assert len(again) == len(fresh) and again.candidates == fresh.candidates
        for field in fields:
            assert_bit_equal(getattr(again, field), getattr(fresh, field), f"{world.label}: {field}")
