"""Bad input raises ``sweepcast.InputError`` (a ``ValueError``) naming the body and the field
where there is one; never a panic (``pyo3_runtime.PanicException``, a ``BaseException``), never
a crash. Each case runs on every function it applies to."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest

import sweepcast
from conftest import lattice_gas, raises_input_error

N = 8


def bodies(dim: int = 3) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(501)
    return rng.uniform(0, 10, (N, dim)), rng.uniform(0.1, 0.5, N), rng.uniform(-1, 1, (N, dim))


PAIRS = np.array([[0, 1], [2, 3], [4, 5]])


def every_function(
    centers: Any, radii: Any, displacements: Any, **options: Any
) -> list[Callable[[], object]]:
    """Each function that takes bodies, as a thunk."""
    return [
        lambda: sweepcast.find_contacts(centers, radii, displacements, **options),
        lambda: sweepcast.sweep(centers, radii, displacements, PAIRS, **options),
        lambda: sweepcast.sweep(centers, radii, displacements, PAIRS, full=True, **options),
        lambda: sweepcast.reference_sweep(centers, radii, displacements, PAIRS, **options),
        lambda: sweepcast.check_times(
            centers,
            radii,
            displacements,
            PAIRS,
            np.zeros(3, np.float32),
            np.zeros(3, np.uint8),
            **options,
        ),
    ]


def with_value(array: np.ndarray, index: tuple[int, ...], value: float) -> np.ndarray:
    array = array.copy()
    array[index] = value
    return array


@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("dim", [2, 3])
def test_non_finite_bodies_name_the_body_and_the_field(value: float, dim: int) -> None:
    c, r, d = bodies(dim)
    cases = [
        ("center", with_value(c, (3, 1), value), r, d),
        ("radius", c, with_value(r, (3,), value), d),
        ("displacement", c, r, with_value(d, (3, 0), value)),
    ]
    for field, centers, radii, displacements in cases:
        for call in every_function(centers, radii, displacements):
            with raises_input_error("body 3", field):
                call()


def test_a_negative_radius_names_the_body() -> None:
    c, r, d = bodies()
    for call in every_function(c, with_value(r, (3,), -0.25), d):
        with raises_input_error("body 3", "radius"):
            call()
    # 0 and -0 are points: valid.
    for call in every_function(c, with_value(with_value(r, (3,), 0.0), (4,), -0.0), d):
        call()


def test_a_component_beyond_the_f32_range_is_an_error() -> None:
    c, r, d = bodies()
    for call in every_function(c, r, with_value(d, (5, 2), 1e39)):
        with raises_input_error("body 5", "displacement"):
            call()


@pytest.mark.parametrize(
    "what, centers, radii, displacements",
    [
        ("centers (N, 4)", np.zeros((N, 4)), np.ones(N), np.zeros((N, 4))),
        ("centers (N,)", np.zeros(N), np.ones(N), np.zeros(N)),
        ("centers (N, 1)", np.zeros((N, 1)), np.ones(N), np.zeros((N, 1))),
        ("centers (N, 3, 1)", np.zeros((N, 3, 1)), np.ones(N), np.zeros((N, 3))),
        ("a scalar centre", 1.0, np.ones(N), np.zeros((N, 3))),
        ("radii (N, 3)", np.zeros((N, 3)), np.ones((N, 3)), np.zeros((N, 3))),
        ("radii (N, 1, 1)", np.zeros((N, 3)), np.ones((N, 1, 1)), np.zeros((N, 3))),
        (
            "displacements (N, 2) with centers (N, 3)",
            np.zeros((N, 3)),
            np.ones(N),
            np.zeros((N, 2)),
        ),
        ("radii of N - 1", np.zeros((N, 3)), np.ones(N - 1), np.zeros((N, 3))),
        ("displacements of N + 1", np.zeros((N, 3)), np.ones(N), np.zeros((N + 1, 3))),
        ("strings", np.full((N, 3), "a"), np.ones(N), np.zeros((N, 3))),
        ("objects", np.full((N, 3), None, dtype=object), np.ones(N), np.zeros((N, 3))),
        ("complex", np.zeros((N, 3), dtype=complex), np.ones(N), np.zeros((N, 3))),
        ("ragged lists", [[0.0, 0.0, 0.0], [1.0, 2.0]] * (N // 2), np.ones(N), np.zeros((N, 3))),
    ],
)
def test_wrong_shapes_lengths_and_dtypes_are_input_errors(
    what: str, centers: Any, radii: Any, displacements: Any
) -> None:
    for call in every_function(centers, radii, displacements):
        with raises_input_error():
            call()


@pytest.mark.parametrize(
    "pairs, fragment",
    [
        ([[0, N]], "pair 0"),
        ([[0, 1], [2, N + 100]], "pair 1"),
        ([[-1, 0]], "pair 0"),
        ([[0, 1, 2]], ""),
        ([0, 1], ""),
        ([[0.5, 1.0]], ""),  # not an index: "(K, 2) integers"
        ([[0, 2**40]], "pair 0"),
    ],
)
def test_bad_pairs_are_input_errors_naming_the_pair(pairs: Any, fragment: str) -> None:
    c, r, d = bodies()
    pairs = np.array(pairs)
    calls = [
        lambda: sweepcast.sweep(c, r, d, pairs),
        lambda: sweepcast.sweep(c, r, d, pairs, full=True),
        lambda: sweepcast.reference_sweep(c, r, d, pairs),
        lambda: sweepcast.check_times(
            c, r, d, pairs, np.zeros(len(pairs), np.float32), np.zeros(len(pairs), np.uint8)
        ),
    ]
    for call in calls:
        with raises_input_error(fragment):
            call()


def test_check_times_needs_one_answer_a_pair_and_known_status_codes() -> None:
    c, r, d = bodies()
    with raises_input_error():
        sweepcast.check_times(c, r, d, PAIRS, np.zeros(2, np.float32), np.zeros(3, np.uint8))
    with raises_input_error():
        sweepcast.check_times(c, r, d, PAIRS, np.zeros(3, np.float32), np.zeros(2, np.uint8))
    with raises_input_error():
        sweepcast.check_times(c, r, d, PAIRS, np.zeros(3, np.float32), np.full(3, 7, np.uint8))


def test_check_times_refuses_a_nan_bound() -> None:
    """Every comparison with NaN is false: a NaN bound would pass any answer at all."""
    c, r, d = bodies()
    with raises_input_error("bound"):
        sweepcast.check_times(
            c, r, d, PAIRS, np.zeros(3, np.float32), np.zeros(3, np.uint8), bound=np.nan
        )


@pytest.mark.parametrize("box", [0.0, -5.0, np.nan, [10.0, 10.0], [np.inf] * 3, "ten"])
def test_an_invalid_periodic_box_is_an_input_error(box: Any) -> None:
    c, r, d = bodies()
    for call in every_function(c, r, d, periodic_box=box):
        with raises_input_error():
            call()


def test_a_periodic_box_too_small_for_a_body_names_the_body() -> None:
    """A body whose radius plus displacement along an axis that wraps reaches a quarter of the
    period (here beyond half of it: every other body's reach is at most 1.5, below 3) cannot
    be placed at one nearest image."""
    c, r, d = bodies()
    c = np.mod(c, 12.0)
    d = with_value(d, (6, 0), 6.5)
    for call in every_function(c, r, d, periodic_box=12.0):
        with raises_input_error("body 6"):
            call()
    positions, velocities, radii, masses, side = lattice_gas(27, 0.3, 502)
    with raises_input_error():
        loop = sweepcast.EventLoop(
            positions, velocities, with_value(radii, (4,), side / 2), masses, periodic_box=side
        )
        loop.advance(0.1)


def test_bad_groups_devices_and_walls_are_input_errors() -> None:
    c, r, d = bodies()
    with raises_input_error():
        sweepcast.find_contacts(c, r, d, groups=np.ones(N - 1, np.uint32))
    with raises_input_error():
        sweepcast.find_contacts(c, r, d, groups=np.ones((N, 2), np.uint32))
    for device in ("gpu", "CPU", "", "cuda"):
        with raises_input_error():
            sweepcast.find_contacts(c, r, d, device=device)  # type: ignore[arg-type]
        with raises_input_error():
            sweepcast.sweep(c, r, d, PAIRS, device=device)  # type: ignore[arg-type]
    with raises_input_error():
        sweepcast.find_contacts(c, r, d, device=42)  # type: ignore[arg-type]
    # Walls: a zero normal, a NaN point, a wall of 4 components, 2D walls in a 3D world, not a
    # wall at all.
    for make in (
        lambda: [sweepcast.Wall.plane([0, 0, 0], [0, 0, 0])],
        lambda: [sweepcast.Wall.plane([np.nan, 0, 0], [1, 0, 0])],
        lambda: [sweepcast.Wall.plane([0, 0, 0, 0], [1, 0, 0, 0])],
        lambda: [sweepcast.Wall.segment([0, 0], [np.inf, 1])],
        lambda: sweepcast.Wall.box_interior([0, 0], [1, 1, 1]),
        lambda: [42],
    ):
        with raises_input_error():
            sweepcast.find_contacts(c, r, d, walls=make())
    with raises_input_error():
        sweepcast.collision_groups([1, 2, 3], [1, 2])
    with raises_input_error():
        sweepcast.collision_groups(1 << 16, 1)


def test_bad_event_loops_are_input_errors() -> None:
    positions, velocities, radii, masses, side = lattice_gas(27, 0.3, 503)

    def make(**changes: Any) -> sweepcast.EventLoop:
        arguments: dict[str, Any] = dict(
            positions=positions,
            velocities=velocities,
            radii=radii,
            masses=masses,
            periodic_box=side,
        )
        arguments.update(changes)
        return sweepcast.EventLoop(
            arguments.pop("positions"),
            arguments.pop("velocities"),
            arguments.pop("radii"),
            arguments.pop("masses"),
            **arguments,
        )

    for restitution in (1.5, -0.1, np.nan, np.inf):
        with raises_input_error("restitution"):
            make(restitution=restitution)
    for broad_phase in ("octree", "gpu", "", "CELLS"):
        with raises_input_error():
            make(broad_phase=broad_phase)
    for skin in (-1.0, 0.0, np.nan, np.inf):
        with raises_input_error("skin"):
            make(skin=skin).advance(0.1)
    for mass in (0.0, -1.0, np.nan, 1e-320):
        with raises_input_error("body 2", "mass"):
            make(masses=with_value(masses, (2,), mass)).advance(0.1)
    with raises_input_error("body 2", "radius"):
        make(radii=with_value(radii, (2,), -0.5)).advance(0.1)
    with raises_input_error("body 2", ("position", "center", "centre")):
        make(positions=with_value(positions, (2, 0), np.nan)).advance(0.1)
    with raises_input_error("body 2", "velocit"):
        make(velocities=with_value(velocities, (2, 0), np.inf)).advance(0.1)
    with raises_input_error():
        make(masses=np.ones(26))
    with raises_input_error():
        make(positions=np.zeros((27, 4)), velocities=np.zeros((27, 4)))
    with raises_input_error():
        make(velocities=np.zeros((27, 2)))
    loop = make()
    for dt in (-1.0, np.nan, np.inf):
        with raises_input_error():
            loop.advance(dt)
    # The loop still works after refused calls.
    assert len(loop.advance(0.1)) > 0


def test_empty_input_gives_empty_results() -> None:
    """N = 0 is valid everywhere: empty answers, not an error (the stub names no error for
    it; the crate's steps return nothing for no bodies)."""
    contacts = sweepcast.find_contacts(np.zeros((0, 3)), np.zeros(0), np.zeros((0, 3)))
    assert len(contacts) == 0 and contacts.earliest_time.shape == (0,)
    loop = sweepcast.EventLoop(np.zeros((0, 3)), np.zeros((0, 3)), np.zeros(0), np.zeros(0))
    events = loop.advance(1.0)
    assert len(events) == 0 and events.points.shape == (0, 3) and len(loop) == 0
    assert loop.kinetic_energy() == 0.0 and loop.positions.shape == (0, 3)
    # No bodies, but a pair: out of range.
    with raises_input_error("pair 0"):
        sweepcast.sweep(np.zeros((0, 3)), np.zeros(0), np.zeros((0, 3)), [[0, 0]])


def test_errors_are_typed() -> None:
    assert issubclass(sweepcast.InputError, ValueError)
    assert issubclass(sweepcast.InputError, sweepcast.Error)
    assert issubclass(sweepcast.DeviceError, RuntimeError)
    assert issubclass(sweepcast.LimitError, RuntimeError)
    assert issubclass(sweepcast.Error, Exception)


def unaligned(array: np.ndarray) -> np.ndarray:
    """A copy of ``array`` whose data starts one byte past an aligned address, as
    ``np.frombuffer`` at an odd offset (or a field of a packed record) gives."""
    raw = bytearray(array.nbytes + 1)
    out = np.frombuffer(raw, array.dtype, count=array.size, offset=1).reshape(array.shape)
    out[...] = array
    assert not out.flags.aligned
    return out


def test_unaligned_arrays_give_the_answers_of_aligned_ones() -> None:
    """The binding reads arrays in place, which needs their elements aligned: an unaligned
    one is read through an aligned copy (before, float64 bodies raised a panic and other
    dtypes were read through misaligned pointers)."""
    c, r, d = bodies()
    for dtype in (np.float64, np.float32):
        aligned = [x.astype(dtype) for x in (c, r, d)]
        odd = [unaligned(x) for x in aligned]
        want = sweepcast.sweep(*aligned, PAIRS, full=True)
        got = sweepcast.sweep(*odd, unaligned(PAIRS.astype(np.int64)), full=True)
        np.testing.assert_array_equal(got.times, want.times)
        np.testing.assert_array_equal(got.normals, want.normals)
        np.testing.assert_array_equal(
            sweepcast.find_contacts(*odd).pairs, sweepcast.find_contacts(*aligned).pairs
        )
    groups = sweepcast.collision_groups(np.arange(N) % 2 + 1, np.full(N, 3))
    want_grouped = sweepcast.find_contacts(c, r, d, groups=groups)
    got_grouped = sweepcast.find_contacts(c, r, d, groups=unaligned(groups))
    np.testing.assert_array_equal(got_grouped.pairs, want_grouped.pairs)
    status = np.zeros(3, np.int64)
    times = np.full(3, np.inf, np.float32)
    assert (
        sweepcast.check_times(c, r, d, PAIRS, unaligned(times), unaligned(status)).passed
        == sweepcast.check_times(c, r, d, PAIRS, times, status).passed
    )


def test_wall_points_are_shape_checked_before_they_are_read() -> None:
    """A point of 2 or 3 components, given as such: a strided (3, 2) array was read as its
    first column, and an array of three axes raised a panic."""
    for point in (
        np.arange(12.0).reshape(3, 4)[:, :2],
        np.zeros((1, 1, 3))[:, :, ::-1],
        np.zeros((1, 3)),
        np.broadcast_to(0.0, (2**40,)),
    ):
        with raises_input_error("point", "shape"):
            sweepcast.Wall.plane(point, [1, 0, 0])
    # A strided view of 3 components is still 3 components.
    assert sweepcast.Wall.plane(np.arange(6.0)[::2], [1, 0, 0]) is not None


def test_a_wall_out_of_the_plane_of_circles_is_an_input_error() -> None:
    """Circles live in z = 0: a wall given a z component would turn their motion out of the
    plane, and the 2-column outputs would drop it."""
    c, r, d = bodies(2)
    tilted = [
        sweepcast.Wall.plane([1, 0, 0], [-1, 0, -1]),
        sweepcast.Wall.plane([1, 0, 2], [-1, 0, 0]),
        sweepcast.Wall.segment([0, 0, 0], [1, 1, 1]),
    ]
    for wall in tilted:
        with raises_input_error("wall 0", "plane"):
            sweepcast.find_contacts(c, r, d, walls=[wall])
        with raises_input_error("wall 0", "plane"):
            sweepcast.EventLoop(c, d, r, np.ones(N), walls=[wall])
    # The same walls with z = 0, or 2 components, are walls of the plane.
    for wall in (
        sweepcast.Wall.plane([1, 0, 0], [-1, 0, 0]),
        sweepcast.Wall.plane([1, 0], [-1, 0]),
        sweepcast.Wall.segment([0, 0, 0], [1, 1, 0]),
    ):
        sweepcast.find_contacts(c, r, d, walls=[wall])
        sweepcast.EventLoop(c, d, r, np.ones(N), walls=[wall])


def test_huge_broadcast_integer_arrays_are_refused_before_a_copy() -> None:
    """A broadcast array of 2⁴⁰ elements takes no memory in NumPy; copying it would abort the
    process. Its shape is checked first."""
    c, r, d = bodies()
    huge = np.broadcast_to(np.int64(1), (2**40,))
    with raises_input_error("groups", "shape"):
        sweepcast.find_contacts(c, r, d, groups=huge)
    with raises_input_error("status", "shape"):
        sweepcast.check_times(c, r, d, PAIRS, np.zeros(3, np.float32), huge)
    with raises_input_error("pairs", "shape"):
        sweepcast.sweep(c, r, d, np.broadcast_to(np.int64(0), (2**40, 3)))
    for memberships, filter_ in ((huge, 1), (np.ones((2**20, 1), int), np.ones((1, 2**20), int))):
        with raises_input_error("bodies a step takes"):
            sweepcast.collision_groups(memberships, filter_)
    # The status of (K, 1) was flattened and accepted: one value a pair, as (K,).
    with raises_input_error("status", "shape"):
        sweepcast.check_times(c, r, d, PAIRS, np.zeros(3, np.float32), np.zeros((3, 1), np.uint8))


def test_one_element_boxes_negative_limits_and_empty_pairs_of_another_shape() -> None:
    """A periodic box given as an array of one element is an array of the wrong shape (NumPy
    would convert it to a float, with a DeprecationWarning); a negative ``max_events`` is an
    ``InputError``, not an ``OverflowError``; pairs of shape (5, 0) are not (K, 2)."""
    c, r, d = bodies()
    with raises_input_error("periodic_box", "shape"):
        sweepcast.find_contacts(c, r, d, periodic_box=np.array([50.0]))
    # A NumPy scalar is a side, as a float is.
    sweepcast.find_contacts(c, r, d, periodic_box=np.float64(50.0))
    with raises_input_error("max_events"):
        sweepcast.EventLoop(c, d, r, np.ones(N), max_events=-1)
    with raises_input_error("pairs", "shape"):
        sweepcast.sweep(c, r, d, np.zeros((5, 0), np.int64))
    for none in ([], np.zeros((0, 2), np.int64)):
        assert len(sweepcast.sweep(c, r, d, none)) == 0


def test_strings_wide_floats_and_huge_unsigned_values_are_refused_as_such() -> None:
    """A list of strings is not parsed as floats (NumPy would read "1.5" as 1.5); a long
    double that float64 does not hold is not rounded to an integer index (1 + 2⁻⁶⁰ was read
    as 1); a uint64 past 2⁶³ is named as given (it wrapped to a negative value)."""
    c, r, d = bodies()
    text = [[str(x) for x in row] for row in c]
    for call in every_function(text, r, d):
        with raises_input_error("dtype"):
            call()
    # The same numbers as numbers are taken.
    sweepcast.find_contacts(c.tolist(), r.tolist(), d.tolist())
    if np.finfo(np.longdouble).nmant > np.finfo(np.float64).nmant:
        off = np.array([[0, 1]], np.longdouble) + np.longdouble(2.0) ** -60
        with raises_input_error("pairs", "integer"):
            sweepcast.sweep(c, r, d, off)
    # Long doubles that hold integers are indices as before.
    whole = np.array([[0, 1]], np.longdouble)
    assert len(sweepcast.sweep(c, r, d, whole)) == 1
    with raises_input_error("pairs", str(2**63 + 5)):
        sweepcast.sweep(c, r, d, np.array([[0, 2**63 + 5]], np.uint64))
    with raises_input_error("groups", str(2**64 - 1)):
        sweepcast.find_contacts(c, r, d, groups=np.full(N, 2**64 - 1, np.uint64))
