"""The event loop from Python: a hard-sphere gas conserves energy and collides at Enskog's
rate, impulses add up to each body's change of momentum, every broad phase gives the same
events, 2D input, setting the bodies between steps, collision groups and the event limit."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

import sweepcast
from conftest import assert_bit_equal, lattice_gas, raises_input_error

EVENT_FIELDS = ("times", "bodies", "partners", "walls", "images", "points", "normals", "impulses")

# The gas: N spheres of diameter 1 and mass 1 at packing fraction η = 0.3, kT = 1.
N, PACKING = 1000, 0.3
BLOCKS = 10
EQUILIBRATION = 10.0  # collisions a body to forget the lattice
PER_BLOCK = 20.0  # collisions a body in each measured block


def contact_value(packing: float) -> float:
    """Carnahan and Starling's g(σ) = (1 - η/2) / (1 - η)³."""
    return (1.0 - packing / 2.0) / (1.0 - packing) ** 3


def enskog_rate(packing: float, density: float, kt: float, mass: float = 1.0) -> float:
    """Enskog's collisions per body per unit time, Γ = 4 n σ² g(σ) sqrt(π kT / m), σ = 1."""
    return 4.0 * density * contact_value(packing) * np.sqrt(np.pi * kt / mass)


@dataclass
class GasRun:
    side: float
    energy_start: float
    energy_end: float
    kt: float
    block_time: float
    block_collisions: list[int]
    collisions: int
    smallest_gap: float


@pytest.fixture(scope="module")
def gas_run() -> GasRun:
    """One elastic gas: equilibrated for EQUILIBRATION collisions a body from the lattice,
    then BLOCKS blocks of PER_BLOCK collisions a body each (by Enskog's rate), counted."""
    positions, velocities, radii, masses, side = lattice_gas(N, PACKING, 301)
    density = N / side**3
    loop = sweepcast.EventLoop(positions, velocities, radii, masses, periodic_box=side)
    energy_start = loop.kinetic_energy()
    kt = 2.0 * energy_start / (3.0 * N)  # 1 by construction
    rate = enskog_rate(PACKING, density, kt)
    collisions = len(loop.advance(EQUILIBRATION / rate))
    block_time = PER_BLOCK / rate
    block_collisions = []
    for _ in range(BLOCKS):
        events = loop.advance(block_time)
        assert np.all(events.partners >= 0) and np.all(events.walls == -1), "no walls here"
        block_collisions.append(len(events))
    collisions += sum(block_collisions)
    # The smallest gap between two bodies at the end (nearest image, every pair).
    p = loop.positions
    d = p[:, None, :] - p[None, :, :]
    d -= side * np.round(d / side)
    distance = np.sqrt((d**2).sum(axis=2)) - 1.0
    np.fill_diagonal(distance, np.inf)
    return GasRun(
        side,
        energy_start,
        loop.kinetic_energy(),
        kt,
        block_time,
        block_collisions,
        collisions,
        float(distance.min()),
    )


def test_an_elastic_gas_conserves_energy_over_many_collisions(gas_run: GasRun) -> None:
    """Relative drift of the kinetic energy below 1e-12 over more than 10⁴ collisions (each
    resolves in f64: a rounding of a few 2^-53 of the energy, in a random walk), and no two
    bodies overlapping beyond rounding at the end."""
    assert gas_run.collisions > 10_000, gas_run.collisions
    drift = abs(gas_run.energy_end - gas_run.energy_start) / gas_run.energy_start
    assert drift < 1e-12, f"relative energy drift {drift:.3e} over {gas_run.collisions} collisions"
    assert gas_run.smallest_gap > -1e-9, gas_run.smallest_gap


def test_the_collision_rate_is_enskogs(gas_run: GasRun) -> None:
    """The measured rate 2C / (N T) against Enskog's with Carnahan and Starling's contact
    value. Its error from the blocks: the standard error of the 10 block rates. Allowed: 4
    standard errors plus 1 % for the finite size of the gas and the contact value's own error
    (a stated allowance, not derived: N = 1000 in a periodic box, where g(σ) of
    Carnahan-Starling is within a few tenths of a per cent of simulations at η = 0.3)."""
    rates = np.array(gas_run.block_collisions) * 2.0 / (N * gas_run.block_time)
    rate = rates.mean()
    standard_error = rates.std(ddof=1) / np.sqrt(len(rates))
    expected = enskog_rate(PACKING, N / gas_run.side**3, gas_run.kt)
    allowed = 4.0 * standard_error + 0.01 * expected
    assert standard_error > 0
    assert abs(rate - expected) <= allowed, (
        f"rate {rate:.5f} ± {standard_error:.5f}, Enskog {expected:.5f} "
        f"({(rate / expected - 1) * 100:+.2f} %)"
    )


def momentum_check(
    masses: np.ndarray,
    start: np.ndarray,
    end: np.ndarray,
    bodies: np.ndarray,
    partners: np.ndarray,
    impulses: np.ndarray,
    energy: float,
) -> None:
    """m v_end - m v_start = Σ impulses received (a body +impulse, its partner -impulse),
    per body and component, within a derived bound. With u = 2^-53: each event's impulse is
    m (v' - v) of its body, two roundings (≤ 2u |J|); the partner's velocity moves by -J/m'
    through a response of a few roundings of its velocity and of J (≤ 4u (m'|v| + |J|)); the
    sum of E_i impulses errs by E_i u Σ|J|; the final m v_end - m v_start by 2u m (|v_start| +
    |v_end|). No speed exceeds sqrt(2 E / m) (restitution ≤ 1, static walls)."""
    u = 2.0**-53
    n, dim = start.shape
    received = np.zeros((n, dim))
    absolute = np.zeros((n, dim))
    count = np.zeros(n)
    np.add.at(received, bodies, impulses)
    np.add.at(absolute, bodies, np.abs(impulses))
    np.add.at(count, bodies, 1)
    pair = partners >= 0
    np.add.at(received, partners[pair], -impulses[pair])
    np.add.at(absolute, partners[pair], np.abs(impulses[pair]))
    np.add.at(count, partners[pair], 1)
    change = masses[:, None] * end - masses[:, None] * start
    fastest = np.sqrt(2.0 * energy / masses)
    tolerance = u * (
        (4.0 + count[:, None]) * absolute
        + 4.0 * (count * masses * fastest)[:, None]
        + 2.0 * masses[:, None] * (np.abs(start) + np.abs(end))
    )
    error = np.abs(change - received)
    assert np.all(error <= tolerance), (
        f"momentum change and impulses differ by up to {error.max():.3e} "
        f"(bound {tolerance[np.unravel_index(np.argmax(error / tolerance), error.shape)]:.3e})"
    )
    # The check can fail: forgetting the partners' share breaks it.
    wrong = np.zeros((n, dim))
    np.add.at(wrong, bodies, impulses)
    assert np.any(np.abs(change - wrong) > tolerance)


@pytest.mark.parametrize("restitution", [1.0, 0.7])
def test_impulses_add_up_to_each_bodys_change_of_momentum(restitution: float) -> None:
    """Bodies of several masses in a box of walls, elastic and not."""
    rng = np.random.default_rng(311)
    n = 216
    positions = np.stack(np.unravel_index(np.arange(n), (6, 6, 6)), axis=1) * 1.5 + 0.75
    velocities = rng.normal(0, 1, (n, 3))
    radii = rng.uniform(0.2, 0.5, n)
    masses = rng.uniform(0.5, 3.0, n)
    walls = sweepcast.Wall.box_interior([0, 0, 0], [9, 9, 9])
    loop = sweepcast.EventLoop(
        positions, velocities, radii, masses, walls=walls, restitution=restitution
    )
    assert_bit_equal(loop.masses, masses, "masses")
    assert_bit_equal(loop.radii, radii, "radii")
    energy = loop.kinetic_energy()
    assert energy == pytest.approx(0.5 * (masses * (velocities**2).sum(axis=1)).sum(), rel=1e-14)
    events = loop.advance(3.0)
    assert np.any(events.walls >= 0) and np.any(events.partners >= 0)
    assert np.all((events.partners >= 0) != (events.walls >= 0)), "a pair or a wall, not both"
    assert np.all(events.bodies[events.partners >= 0] < events.partners[events.partners >= 0])
    momentum_check(
        masses, velocities, loop.velocities, events.bodies, events.partners, events.impulses, energy
    )
    # Impulses push apart: along -normal for the body (its partner or wall lies along normal).
    along = (events.impulses * events.normals).sum(axis=1)
    assert np.all(along <= 0.0)
    if restitution < 1.0:
        assert loop.kinetic_energy() < energy
    else:
        assert abs(loop.kinetic_energy() / energy - 1.0) < 1e-13
    # Everything stays in the box.
    inside = (loop.positions - radii[:, None] > -1e-9) & (
        loop.positions + radii[:, None] < 9 + 1e-9
    )
    assert np.all(inside)


def test_impulses_in_a_periodic_gas_add_up_too() -> None:
    positions, velocities, radii, masses, side = lattice_gas(300, 0.3, 312)
    masses = np.random.default_rng(312).uniform(0.5, 2.0, 300)
    loop = sweepcast.EventLoop(positions, velocities, radii, masses, periodic_box=side)
    energy = loop.kinetic_energy()
    events = loop.advance(1.0)
    assert len(events) > 1000
    momentum_check(
        masses, velocities, loop.velocities, events.bodies, events.partners, events.impulses, energy
    )
    # Positions wrapped into the box.
    assert np.all((loop.positions >= 0) & (loop.positions < side))


def test_every_broad_phase_and_skin_gives_the_same_events() -> None:
    """The loop's promise: the same bodies give the same events, to the bit, whatever the
    broad phase ("cells", "all", "cpu"), the skin or local skins."""
    positions, velocities, radii, masses, side = lattice_gas(200, 0.3, 321)
    runs = {}
    for name, options in {
        "cells": {},
        "all": {"broad_phase": "all"},
        "cpu": {"broad_phase": "cpu"},
        "thin skin": {"skin": 0.05},
        "local skins": {"local_skins": True, "skin": 0.3},
    }.items():
        loop = sweepcast.EventLoop(
            positions, velocities, radii, masses, periodic_box=side, **options
        )
        events = [loop.advance(0.2) for _ in range(4)]
        runs[name] = (events, loop.positions, loop.velocities, loop.broad_phase_runs)
    reference, ref_positions, ref_velocities, _ = runs.pop("cells")
    assert sum(len(e) for e in reference) > 500
    for name, (events, positions_, velocities_, runs_) in runs.items():
        for step, (a, b) in enumerate(zip(events, reference)):
            for field in EVENT_FIELDS:
                assert_bit_equal(
                    getattr(a, field), getattr(b, field), f"{name} step {step} {field}"
                )
        assert_bit_equal(positions_, ref_positions, f"{name}: positions")
        assert_bit_equal(velocities_, ref_velocities, f"{name}: velocities")
        assert runs_ >= 0


def test_discs_in_two_dimensions_are_spheres_in_the_plane() -> None:
    """(N, 2) input: events of (E, 2) vectors, energy conserved, no overlap; and the same
    events as the same discs given as spheres in z = 0 (with the box's planes in 3D)."""
    positions, velocities, radii, masses, side = lattice_gas(400, 0.4, 331, dim=2)
    walls2 = sweepcast.Wall.box_interior([0, 0], [side, side])
    assert len(walls2) == 4
    loop = sweepcast.EventLoop(positions, velocities, radii, masses, walls=walls2)
    energy = loop.kinetic_energy()
    events = loop.advance(2.0)
    assert len(events) > 1000 and np.any(events.walls >= 0)
    for field in ("images", "points", "normals", "impulses"):
        assert getattr(events, field).shape == (len(events), 2), field
    assert loop.positions.shape == (400, 2) and loop.velocities.shape == (400, 2)
    assert abs(loop.kinetic_energy() / energy - 1.0) < 1e-13
    p = loop.positions
    gaps = np.sqrt(((p[:, None] - p[None]) ** 2).sum(axis=2)) - 1.0
    np.fill_diagonal(gaps, np.inf)
    assert gaps.min() > -1e-9
    # The same discs as spheres in the plane z = 0, between the box's four planes.
    pad = lambda x: np.concatenate([x, np.zeros((len(x), 1))], axis=1)  # noqa: E731
    walls3 = [
        sweepcast.Wall.plane([0, 0, 0], [1, 0, 0]),
        sweepcast.Wall.plane([side, side, 0], [-1, 0, 0]),
        sweepcast.Wall.plane([0, 0, 0], [0, 1, 0]),
        sweepcast.Wall.plane([side, side, 0], [0, -1, 0]),
    ]
    spheres = sweepcast.EventLoop(pad(positions), pad(velocities), radii, masses, walls=walls3)
    in_3d = spheres.advance(2.0)
    for field in ("times", "bodies", "partners", "walls"):
        assert_bit_equal(getattr(events, field), getattr(in_3d, field), field)
    for field in ("points", "normals", "impulses"):
        assert_bit_equal(getattr(events, field), getattr(in_3d, field)[:, :2], field)
        assert np.all(getattr(in_3d, field)[:, 2] == 0.0)
    assert_bit_equal(loop.positions, spheres.positions[:, :2], "positions")


def test_setting_positions_and_velocities_between_steps() -> None:
    """Set bodies take effect at once: the next step is that of a new loop made from them,
    event for event; zero velocities leave everything where it is."""
    positions, velocities, radii, masses, side = lattice_gas(200, 0.3, 341)
    loop = sweepcast.EventLoop(positions, velocities, radii, masses, periodic_box=side)
    first = loop.advance(0.2)
    assert len(first) > 0 and loop.time == 0.2
    # New bodies: the lattice moved along the diagonal, other velocities (given as lists).
    _, other_velocities, *_ = lattice_gas(200, 0.3, 342)
    other_positions = np.mod(positions + 0.37, side)
    loop.positions = other_positions
    loop.velocities = other_velocities.tolist()
    assert_bit_equal(loop.positions, other_positions, "positions as set")
    assert_bit_equal(loop.velocities, other_velocities, "velocities as set")
    assert loop.positions is not loop.positions  # a new array each time
    after = loop.advance(0.2)
    fresh = sweepcast.EventLoop(other_positions, other_velocities, radii, masses, periodic_box=side)
    expected = fresh.advance(0.2)
    assert len(after) > 0
    for field in EVENT_FIELDS:
        assert_bit_equal(getattr(after, field), getattr(expected, field), field)
    assert_bit_equal(loop.positions, fresh.positions, "positions")
    assert_bit_equal(loop.velocities, fresh.velocities, "velocities")
    # At rest: nothing happens and nothing moves.
    loop.velocities = np.zeros((200, 3))
    resting = loop.positions
    assert len(loop.advance(1.0)) == 0
    assert_bit_equal(loop.positions, resting, "bodies at rest")
    assert loop.kinetic_energy() == 0.0
    # Bad values are refused, by the setter or at the latest by the next step (the binding
    # checks them there), naming the body and the field; the positions stay as they were.
    bad = np.zeros((200, 3))
    bad[7, 1] = np.nan
    with raises_input_error("body 7", "velocit"):
        loop.velocities = bad
        loop.advance(0.1)
    assert_bit_equal(loop.positions, resting, "after a refused velocity")
    loop.velocities = np.zeros((200, 3))
    with raises_input_error("positions"):
        loop.positions = np.zeros((199, 3))
    assert_bit_equal(loop.positions, resting, "after refused positions")
    assert len(loop) == 200


def test_groups_that_do_not_interact_pass_through_each_other() -> None:
    positions, velocities, radii, masses, side = lattice_gas(300, 0.3, 351)
    half = np.arange(300) % 2
    # Each half meets only the other half.
    groups = sweepcast.collision_groups(1 << half, 1 << (1 - half))
    loop = sweepcast.EventLoop(
        positions, velocities, radii, masses, periodic_box=side, groups=groups
    )
    events = loop.advance(0.5)
    assert len(events) > 100
    assert np.all(half[events.bodies] != half[events.partners])


def test_too_many_events_is_a_limit_error_and_the_bodies_stay_valid() -> None:
    positions, velocities, radii, masses, side = lattice_gas(200, 0.3, 361)
    loop = sweepcast.EventLoop(
        positions, velocities, radii, masses, periodic_box=side, max_events=50
    )
    with pytest.raises(sweepcast.LimitError) as error:
        loop.advance(10.0)
    assert isinstance(error.value, RuntimeError) and isinstance(error.value, sweepcast.Error)
    # The bodies as at the last completed event: finite, and the loop's energy conserved.
    assert np.all(np.isfinite(loop.positions)) and np.all(np.isfinite(loop.velocities))
    energy = 0.5 * (loop.velocities**2).sum()
    assert abs(energy / (0.5 * (velocities**2).sum()) - 1.0) < 1e-13


def test_any_dtype_and_layout_of_the_bodies_gives_the_same_events() -> None:
    """float32, Fortran order and strided slices are the same values: the same events, to
    the bit, as C-contiguous float64 (the values are chosen exact in float32)."""
    positions, velocities, radii, masses, side = lattice_gas(200, 0.3, 371)
    velocities = velocities.astype(np.float32).astype(np.float64)
    reference = sweepcast.EventLoop(positions, velocities, radii, masses, periodic_box=side)
    expected = reference.advance(0.3)
    assert len(expected) > 100
    layouts = {
        "float32": lambda x: x.astype(np.float32),
        "Fortran order": np.asfortranarray,
        "slice of a wider array": lambda x: np.concatenate([x, x], axis=1)[:, :3],
        "every other row": lambda x: np.repeat(x, 2, axis=0)[::2],
    }
    for name, layout in layouts.items():
        assert np.array_equal(layout(positions), positions)
        loop = sweepcast.EventLoop(
            layout(positions), layout(velocities), radii, masses, periodic_box=side
        )
        got = loop.advance(0.3)
        for field in EVENT_FIELDS:
            assert_bit_equal(getattr(got, field), getattr(expected, field), f"{name}: {field}")
