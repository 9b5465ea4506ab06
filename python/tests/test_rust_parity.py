"""The binding against the Rust paths on the same input, equal to the bit: the Rust example
``examples/arrays.rs`` reads the input as .npy files, runs the CPU finder, the fast and the
full batch and the event loop (with the ``Cells`` broad phase, the binding's default), and
writes its answers; each array must equal the binding's bit for bit (floats compared as their
bit patterns, so NaN equals NaN and -0.0 differs from 0.0).

Without the binary these tests fail, saying how to build it (``cargo build --release
--example arrays``); ``SWEEPCAST_ARRAYS_BIN`` points at another build."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import sweepcast
from conftest import (
    world_id,
    CONTACT_FIELDS,
    World,
    all_pairs,
    assert_bit_equal,
    lattice_gas,
    random_world,
    run_arrays,
    world_inputs,
)

WORLDS: list[dict[str, Any]] = [
    dict(seed=201, n=200),
    dict(seed=202, n=200, dim=2),
    dict(seed=203, n=150, offset=4321.125),
    dict(seed=204, n=250, periodic=True),
    dict(seed=205, n=150, dim=2, periodic=True, separating=True),
    dict(seed=206, n=200, separating=True, groups=True),
    dict(seed=207, n=40, crowding=12.0),
]


@pytest.mark.parametrize("params", WORLDS, ids=world_id)
def test_find_contacts_equals_the_rust_finder_to_the_bit(
    params: dict[str, Any], tmp_path: Path
) -> None:
    world = random_world(**params)
    contacts = sweepcast.find_contacts(*world.bodies(), **world.step_options())
    assert len(contacts) > 0
    rust = run_arrays("find-contacts", world_inputs(world), tmp_path)
    for name in CONTACT_FIELDS:
        assert_bit_equal(getattr(contacts, name), rust[name], f"{world.label}: {name}")
    assert_bit_equal(
        np.array([contacts.candidates], dtype=np.int64), rust["candidates"], "candidates"
    )


@pytest.mark.parametrize("params", WORLDS, ids=world_id)
def test_sweep_equals_the_rust_batches_to_the_bit(params: dict[str, Any], tmp_path: Path) -> None:
    world = random_world(**params)
    rng = np.random.default_rng(params["seed"])
    pairs = all_pairs(world.n)
    # A few reversed pairs and bodies with themselves among them.
    extra = np.concatenate(
        [pairs[rng.choice(len(pairs), 20)][:, ::-1], np.repeat(np.arange(3)[:, None], 2, axis=1)]
    )
    pairs = np.ascontiguousarray(np.concatenate([pairs, extra]))
    world = World(**{**world.__dict__, "groups": None})  # the batches take no groups
    inputs = world_inputs(world, pairs)
    times = sweepcast.sweep(*world.bodies(), pairs, **world.options())
    rust = run_arrays("sweep", inputs, tmp_path / "fast")
    assert_bit_equal(times, rust["times"], f"{world.label}: sweep times")
    full = sweepcast.sweep(*world.bodies(), pairs, full=True, **world.options())
    rust = run_arrays("sweep-full", inputs, tmp_path / "full")
    for name in ("times", "status", "points", "normals"):
        assert_bit_equal(getattr(full, name), rust[name], f"{world.label}: sweep full {name}")


def box_planes(low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """``Wall.box_interior(low, high)`` as the arrays example takes walls: (W, 2, D), a point
    and a normal a plane, in the order -x, +x, -y, +y(, -z, +z): (low, +x), (high, -x), ..."""
    dim = len(low)
    planes = []
    for axis in range(dim):
        planes.append([low, np.eye(dim)[axis]])
        # + 0.0: zeros, not the -0.0 of a negation, as the binding's faces have them.
        planes.append([high, -np.eye(dim)[axis] + 0.0])
    return np.array(planes, dtype=np.float64)


def run_both(
    tmp_path: Path,
    positions: np.ndarray,
    velocities: np.ndarray,
    radii: np.ndarray,
    masses: np.ndarray,
    dt: float,
    steps: int,
    *,
    periodic_box: float | None = None,
    restitution: float = 1.0,
    box: tuple[np.ndarray, np.ndarray] | None = None,
) -> dict[str, np.ndarray]:
    """The same run in the binding's ``EventLoop`` and in the Rust loop of the arrays
    example; asserts every array equal to the bit, and returns the binding's."""
    dim = positions.shape[1]
    walls = sweepcast.Wall.box_interior(*box) if box is not None else None
    loop = sweepcast.EventLoop(
        positions,
        velocities,
        radii,
        masses,
        walls=walls,
        periodic_box=periodic_box,
        restitution=restitution,
    )
    names = ("times", "bodies", "partners", "walls", "images", "points", "normals", "impulses")
    parts: dict[str, list[np.ndarray]] = {name: [] for name in names}
    steps_of = []
    for step in range(steps):
        events = loop.advance(dt)
        for name in names:
            parts[name].append(getattr(events, name))
        steps_of.append(np.full(len(events), step, dtype=np.int64))
    ours = {name: np.concatenate(parts[name]) for name in names}
    ours["steps_of"] = np.concatenate(steps_of)
    ours["positions"], ours["velocities"] = loop.positions, loop.velocities
    inputs: dict[str, Any] = {
        "positions": positions,
        "velocities": velocities,
        "radii": radii,
        "masses": masses,
        "dt": np.array([dt]),
        "steps": np.array([steps], dtype=np.int64),
        "restitution": np.array([restitution]),
    }
    if periodic_box is not None:
        inputs["periodic_box"] = np.full(dim, periodic_box)
    if box is not None:
        inputs["walls_planes"] = box_planes(*box)
    rust = run_arrays("events", inputs, tmp_path)
    assert len(ours["times"]) > 100, "a run made to have events has few"
    for name, value in ours.items():
        assert_bit_equal(value, rust[name], f"events: {name}")
    return ours


def test_an_elastic_gas_in_a_periodic_box_gives_the_rust_loops_events(tmp_path: Path) -> None:
    positions, velocities, radii, masses, side = lattice_gas(300, 0.3, 211)
    run_both(tmp_path, positions, velocities, radii, masses, 0.05, 6, periodic_box=side)


def test_spheres_in_a_box_of_walls_give_the_rust_loops_events(tmp_path: Path) -> None:
    """Open space, the six inside faces of ``Wall.box_interior``, bodies of several sizes
    and masses."""
    rng = np.random.default_rng(212)
    n = 150
    low, high = np.zeros(3), np.full(3, 9.0)
    radii = rng.uniform(0.2, 0.5, n)
    positions = np.stack(np.unravel_index(np.arange(n), (6, 6, 6)), axis=1) * 1.5 + 0.75
    velocities = rng.normal(0, 1, (n, 3))
    masses = rng.uniform(0.5, 2.0, n)
    ours = run_both(tmp_path, positions, velocities, radii, masses, 0.25, 8, box=(low, high))
    assert np.any(ours["walls"] >= 0) and np.any(ours["partners"] >= 0)


def test_an_inelastic_gas_gives_the_rust_loops_events(tmp_path: Path) -> None:
    positions, velocities, radii, masses, side = lattice_gas(300, 0.25, 213)
    run_both(
        tmp_path,
        positions,
        velocities,
        radii,
        masses,
        0.05,
        6,
        periodic_box=side,
        restitution=0.8,
    )


def test_discs_in_a_box_of_walls_give_the_rust_loops_events(tmp_path: Path) -> None:
    """2D: (N, 2) arrays, the four lines of ``Wall.box_interior`` in 2D, restitution < 1."""
    rng = np.random.default_rng(214)
    n = 144
    low, high = np.zeros(2), np.full(2, 18.0)
    positions = np.stack(np.unravel_index(np.arange(n), (12, 12)), axis=1) * 1.5 + 0.75
    velocities = rng.normal(0, 1, (n, 2))
    radii = rng.uniform(0.2, 0.5, n)
    ours = run_both(
        tmp_path,
        positions,
        velocities,
        radii,
        np.ones(n),
        0.5,
        6,
        box=(low, high),
        restitution=0.9,
    )
    assert ours["points"].shape[1] == 2 and np.any(ours["walls"] >= 0)
