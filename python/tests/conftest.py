"""Shared helpers of the Python tests: random worlds, a brute-force NumPy reference of the
swept test, the parity judge's verdicts as assertions, the runner of the Rust arrays example
(`examples/arrays.rs`), bit-for-bit comparisons, and the GPU fixture.

The f32 paths (``find_contacts``, ``sweep``) take each body rounded to f32 about a local
origin (the centre of the centres' bounding box; 0 in a periodic box): ``f32_bodies`` applies
the same rounding, so that the brute force below sees the bodies those paths see.
"""

from __future__ import annotations

import os
import subprocess
import sys
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import numpy as np
import pytest
from numpy.typing import NDArray

import sweepcast

REPO = Path(__file__).resolve().parents[2]
ARRAYS_BIN = Path(
    os.environ.get("SWEEPCAST_ARRAYS_BIN", str(REPO / "target" / "release" / "examples" / "arrays"))
)

F64 = NDArray[np.float64]


# --------------------------------------------------------------------------------------------
# Random worlds
# --------------------------------------------------------------------------------------------


@dataclass
class World:
    """Bodies as the caller hands them over, and the options of the step."""

    centers: np.ndarray
    radii: np.ndarray
    displacements: np.ndarray
    periodic_box: float | None = None
    separating: bool = False
    groups: NDArray[np.uint32] | None = None
    label: str = ""

    @property
    def n(self) -> int:
        return len(self.radii)

    @property
    def dim(self) -> int:
        return int(np.shape(self.centers)[1])

    def options(self) -> dict[str, Any]:
        """The keyword arguments shared by every function (``groups`` is the step's only)."""
        return {"periodic_box": self.periodic_box, "separating": self.separating}

    def step_options(self) -> dict[str, Any]:
        return {**self.options(), "groups": self.groups}

    def bodies(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return self.centers, self.radii, self.displacements


def random_world(
    seed: int,
    n: int,
    dim: int = 3,
    *,
    crowding: float = 1.0,
    offset: float = 0.0,
    periodic: bool = False,
    separating: bool = False,
    groups: bool = False,
    dtype: type = np.float64,
) -> World:
    """``n`` bodies of radii 0.05 to 0.5 moving up to 1 along each axis, scattered so that a
    body has about ``crowding`` contacts in the step (the swept volume of a pair is about 2 in
    3D and 2.3 in 2D at these sizes), some overlapping at the start.

    ``offset`` moves the world away from the origin (the f32 paths then subtract a local
    origin); ``periodic`` wraps it in a cube (square) of an integer side, at least 8 so that
    a body's reach (radius + displacement, at most 1.5) stays below a quarter period.
    """
    rng = np.random.default_rng(seed)
    swept = 2.0 if dim == 3 else 2.3
    side = (n * swept / crowding) ** (1.0 / dim)
    radii = rng.uniform(0.05, 0.5, n)
    displacements = np.clip(rng.normal(0.0, 0.4, (n, dim)), -1.0, 1.0)
    period: float | None = None
    if periodic:
        period = float(max(8, int(np.ceil(side))))
        centers = rng.uniform(0.0, period, (n, dim)).astype(dtype)
        # Wrapped in the caller's dtype: a value that rounds up to the period becomes 0.
        centers = np.mod(centers, dtype(period))
    else:
        centers = (rng.uniform(0.0, side, (n, dim)) + offset).astype(dtype)
    group_words = None
    if groups:
        # Two groups: members of group 0 meet everyone, members of group 1 only group 0.
        memberships = rng.integers(1, 3, n)  # bit 0 or bit 1
        filters = np.where(memberships == 1, 0b11, 0b01)
        group_words = sweepcast.collision_groups(memberships, filters)
    return World(
        centers=centers,
        radii=radii.astype(dtype),
        displacements=displacements.astype(dtype),
        periodic_box=period,
        separating=separating,
        groups=group_words,
        label=f"seed {seed}, n {n}, {dim}D, offset {offset}, periodic {periodic}, "
        f"separating {separating}, groups {groups}, {np.dtype(dtype).name}",
    )


def all_pairs(n: int) -> NDArray[np.int64]:
    """Every pair i < j, as (K, 2) int64."""
    a, b = np.triu_indices(n, 1)
    return np.stack([a, b], axis=1).astype(np.int64)


def interacting(groups: NDArray[np.uint32] | None, pairs: np.ndarray) -> NDArray[np.bool_]:
    """Whether each pair interacts under collision groups: each one's memberships (low 16
    bits) meet the other's filter (high 16 bits)."""
    if groups is None:
        return np.ones(len(pairs), dtype=bool)
    g = np.asarray(groups, dtype=np.uint64)
    memberships, filters = g & 0xFFFF, g >> 16
    a, b = pairs[:, 0], pairs[:, 1]
    return ((memberships[a] & filters[b]) != 0) & ((memberships[b] & filters[a]) != 0)


# --------------------------------------------------------------------------------------------
# The brute force
# --------------------------------------------------------------------------------------------


def pad3(x: np.ndarray) -> F64:
    """(N, 2) or (N, 3) as (N, 3) float64, z = 0 for circles."""
    x = np.asarray(x, dtype=np.float64)
    if x.shape[1] == 2:
        x = np.concatenate([x, np.zeros((len(x), 1))], axis=1)
    return x


def local_origin(centers: np.ndarray, periodic_box: float | None) -> F64:
    """The origin the f32 paths subtract: the centre of the centres' bounding box, 0 in a
    periodic box (as the stub's module docstring says)."""
    c = np.asarray(centers, dtype=np.float64)
    if periodic_box is not None or len(c) == 0:
        return np.zeros(c.shape[1])
    return 0.5 * (c.min(axis=0) + c.max(axis=0))


def f32_bodies(world: World) -> tuple[F64, F64, F64]:
    """The bodies as the f32 paths take them, widened back to float64 (exact), in 3D."""
    origin = local_origin(world.centers, world.periodic_box)
    c = (np.asarray(world.centers, dtype=np.float64) - origin).astype(np.float32)
    r = np.asarray(world.radii, dtype=np.float64).astype(np.float32)
    d = np.asarray(world.displacements, dtype=np.float64).astype(np.float32)
    return pad3(c), r.astype(np.float64), pad3(d)


@dataclass
class Brute:
    """The brute force's answers for pairs, with the pair geometry it used."""

    times: F64
    status: NDArray[np.uint8]
    s: F64  # relative position, b - a (nearest image)
    v: F64  # relative displacement, a - b
    radius_sum: F64
    scale_squared: F64  # S² = (|s| + |v| + R)²
    image: NDArray[np.int64] = field(default_factory=lambda: np.zeros((0, 3), np.int64))

    def hits(self) -> NDArray[np.bool_]:
        return self.status != sweepcast.MISS

    def residual(self, t: np.ndarray) -> F64:
        """f(t) / S², f(t) = |s - v t|² - R²."""
        w = self.s - self.v * np.asarray(t, dtype=np.float64)[:, None]
        return ((w * w).sum(axis=1) - self.radius_sum**2) / self.scale_squared


def brute_force(
    centers: F64,
    radii: F64,
    displacements: F64,
    pairs: np.ndarray,
    *,
    period: float | None = None,
    separating: bool = False,
) -> Brute:
    """The swept test of two spheres in f64, for every pair at once.

    s = c_b - c_a (the nearest image in a periodic box), v = d_a - d_b, R = r_a + r_b and
    f(t) = |s - v t|² - R² = A t² - 2 B t + C with A = v·v, B = s·v, C = s·s - R². An overlap
    (C < 0) is OVERLAPPING at 0; touching (C = 0) a CONTACT at 0; otherwise the first root
    t = C / (B + sqrt(B² - A C)) (the stable form: both terms of the denominator are
    positive where a root exists) if the bodies approach (B > 0), the discriminant is not
    negative and t <= 1; a miss otherwise. Under ``separating``, a pair touching or
    overlapping at 0 (C <= 0) and not approaching (B <= 0) is a miss.
    """
    pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    a, b = pairs[:, 0], pairs[:, 1]
    s = centers[b] - centers[a]
    image = np.zeros(s.shape, dtype=np.int64)
    if period is not None:
        periods = np.round(s / period)  # round half to even, as the oracle
        image = periods.astype(np.int64)
        s = s - period * periods
    v = displacements[a] - displacements[b]
    radius_sum = radii[a] + radii[b]
    qa = (v * v).sum(axis=1)
    qb = (s * v).sum(axis=1)
    qc = (s * s).sum(axis=1) - radius_sum**2
    disc = qb * qb - qa * qc
    times = np.full(len(pairs), np.inf)
    status = np.full(len(pairs), sweepcast.MISS, dtype=np.uint8)
    with np.errstate(divide="ignore", invalid="ignore"):
        root = qc / (qb + np.sqrt(np.maximum(disc, 0.0)))
    hit = (qc > 0) & (qb > 0) & (disc >= 0) & (root <= 1.0)
    times[hit] = root[hit]
    status[hit] = sweepcast.CONTACT
    times[qc == 0] = 0.0
    status[qc == 0] = sweepcast.CONTACT
    times[qc < 0] = 0.0
    status[qc < 0] = sweepcast.OVERLAPPING
    if separating:
        moving_apart = (qc <= 0) & (qb <= 0)
        times[moving_apart] = np.inf
        status[moving_apart] = sweepcast.MISS
    scale = np.sqrt((s * s).sum(axis=1)) + np.sqrt(qa) + radius_sum
    scale_squared = np.where(scale > 0, scale * scale, 1.0)
    return Brute(times, status, s, v, radius_sum, scale_squared, image)


def brute_force_world(world: World, pairs: np.ndarray) -> Brute:
    """The brute force on the bodies as the f32 paths take them."""
    c, r, d = f32_bodies(world)
    period = None if world.periodic_box is None else float(np.float32(world.periodic_box))
    return brute_force(c, r, d, pairs, period=period, separating=world.separating)


# --------------------------------------------------------------------------------------------
# The judge as assertions
# --------------------------------------------------------------------------------------------


def judge(
    world: World,
    pairs: np.ndarray,
    times: np.ndarray,
    status: np.ndarray,
    bound: float,
) -> sweepcast.Judgement:
    return sweepcast.check_times(
        world.centers,
        world.radii,
        world.displacements,
        np.asarray(pairs, dtype=np.int64).reshape(-1, 2),
        times,
        status,
        bound=bound,
        **world.options(),
    )


def assert_judged(
    world: World,
    pairs: np.ndarray,
    times: np.ndarray,
    status: np.ndarray,
    bound: float,
    what: str,
) -> sweepcast.Judgement:
    """Every answer passes the parity judge with ``bound``."""
    verdict = judge(world, pairs, times, status, bound)
    if not verdict.passed:
        bad = np.flatnonzero(verdict.failed)[:10]
        lines = [
            f"pair {pairs[k].tolist()}: time {times[k]!r} status {status[k]}: "
            f"{verdict.reasons[k]} (backward error {verdict.backward_error[k]:.3g} eps)"
            for k in bad
        ]
        pytest.fail(
            f"{world.label}: {what}: {int(verdict.failed.sum())} failures\n" + "\n".join(lines)
        )
    return verdict


def decode_times(times: np.ndarray) -> tuple[NDArray[np.float32], NDArray[np.uint8]]:
    """``sweep``'s times-only encoding (t, -1.0 overlapping, inf miss) as times and status."""
    times = np.asarray(times)
    status = np.where(
        times == -1.0,
        sweepcast.OVERLAPPING,
        np.where(np.isinf(times), sweepcast.MISS, sweepcast.CONTACT),
    ).astype(np.uint8)
    return np.where(times == -1.0, np.float32(0.0), times).astype(np.float32), status


def assert_hits_agree(
    world: World,
    pairs: np.ndarray,
    expected_hits: np.ndarray,
    reported_hits: np.ndarray,
    reported_times: np.ndarray,
    reported_status: np.ndarray,
    bound: float,
    what: str,
) -> int:
    """Where the reported hits and the expected ones (the brute force's, or the oracle's)
    differ, the judge must pass the reported answer: a hit it reports is judged as such, a
    pair it misses is judged as a miss (right only within the bound of a grazing or
    end-of-step contact). Returns how many pairs differed."""
    differ = np.flatnonzero(expected_hits != reported_hits)
    if len(differ):
        assert_judged(
            world,
            pairs[differ],
            np.asarray(reported_times)[differ],
            np.asarray(reported_status)[differ],
            bound,
            f"{what}: pairs where the answer and the reference disagree on hit or miss",
        )
    return len(differ)


def earliest_from_contacts(
    n: int, pairs: np.ndarray, times: np.ndarray
) -> tuple[NDArray[np.float32], NDArray[np.int64]]:
    """Each body's least contact time among ``pairs``, and among equal times the lowest
    partner; inf and -1 for a body with none."""
    best_time = np.full(n, np.inf, dtype=np.float32)
    best_partner = np.full(n, -1, dtype=np.int64)
    for (a, b), t in zip(np.asarray(pairs).tolist(), np.asarray(times).tolist()):
        for body, partner in ((a, b), (b, a)):
            if t < best_time[body] or (t == best_time[body] and partner < best_partner[body]):
                best_time[body] = t
                best_partner[body] = partner
    return best_time, best_partner


# --------------------------------------------------------------------------------------------
# Bit-for-bit comparisons
# --------------------------------------------------------------------------------------------


def bits(x: np.ndarray) -> np.ndarray:
    """Floats as their bit patterns (so that NaN equals NaN and -0.0 differs from 0.0)."""
    x = np.ascontiguousarray(x)
    if x.dtype == np.float32:
        return x.view(np.uint32)
    if x.dtype == np.float64:
        return x.view(np.uint64)
    return x


def assert_bit_equal(got: Any, expected: Any, what: str) -> None:
    got, expected = np.asarray(got), np.asarray(expected)
    assert got.dtype == expected.dtype, f"{what}: dtype {got.dtype}, expected {expected.dtype}"
    assert got.shape == expected.shape, f"{what}: shape {got.shape}, expected {expected.shape}"
    same = bits(got) == bits(expected)
    if not np.all(same):
        k = np.argwhere(~same)[0]
        pytest.fail(
            f"{what}: {int((~same).sum())} elements differ; first at {k.tolist()}: "
            f"{got[tuple(k)]!r} against {expected[tuple(k)]!r}"
        )


CONTACT_FIELDS = (
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


def assert_contacts_bit_equal(
    got: sweepcast.Contacts, expected: sweepcast.Contacts, what: str
) -> None:
    for name in CONTACT_FIELDS:
        assert_bit_equal(getattr(got, name), getattr(expected, name), f"{what}: {name}")
    assert got.candidates == expected.candidates, what


# --------------------------------------------------------------------------------------------
# The Rust arrays example
# --------------------------------------------------------------------------------------------


def run_arrays(mode: str, inputs: dict[str, Any], directory: Path) -> dict[str, np.ndarray]:
    """Runs ``examples/arrays.rs`` (``arrays <mode> <dir>``) on ``inputs`` (each saved as
    ``<name>.npy``; ``separating`` as an empty file where true) and returns its outputs
    (``<dir>/out/<name>.npy``). Fails (never skips) where the binary is not built."""
    if not ARRAYS_BIN.exists():
        pytest.fail(
            f"the Rust arrays example is not built ({ARRAYS_BIN} does not exist): build it with "
            "`cargo build --release --example arrays` in the repository, or point "
            "SWEEPCAST_ARRAYS_BIN at it"
        )
    directory.mkdir(parents=True, exist_ok=True)
    for name, value in inputs.items():
        if value is None or value is False:
            continue
        if name == "separating":
            (directory / "separating").touch()
            continue
        np.save(directory / f"{name}.npy", np.asarray(value))
    done = subprocess.run(
        [str(ARRAYS_BIN), mode, str(directory)], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, (
        f"{ARRAYS_BIN} {mode} {directory} exited with {done.returncode}:\n"
        f"{done.stdout}\n{done.stderr}"
    )
    return {path.stem: np.load(path) for path in sorted((directory / "out").glob("*.npy"))}


def world_inputs(world: World, pairs: np.ndarray | None = None) -> dict[str, Any]:
    """A world as the arrays example reads it: float64 bodies, int64 pairs, the box as one
    period per axis, ``separating`` as an empty file, uint32 groups."""
    inputs: dict[str, Any] = {
        "centers": np.asarray(world.centers, dtype=np.float64),
        "radii": np.asarray(world.radii, dtype=np.float64),
        "displacements": np.asarray(world.displacements, dtype=np.float64),
        "separating": world.separating,
    }
    if pairs is not None:
        inputs["pairs"] = np.asarray(pairs, dtype=np.int64)
    if world.periodic_box is not None:
        inputs["periodic_box"] = np.full(world.dim, world.periodic_box, dtype=np.float64)
    if world.groups is not None:
        inputs["groups"] = np.asarray(world.groups, dtype=np.uint32)
    return inputs


# --------------------------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------------------------


@contextmanager
def raises_input_error(*fragments: str | tuple[str, ...]) -> Iterator[None]:
    """The block raises ``sweepcast.InputError`` (a ``ValueError``) whose message holds each
    of ``fragments`` (case-insensitive; a tuple: any one of its words); never a panic
    (``pyo3_runtime.PanicException`` derives from ``BaseException``, so it is caught here and
    named)."""
    try:
        yield
    except BaseException as error:  # noqa: BLE001 - a panic is a BaseException
        name = f"{type(error).__module__}.{type(error).__qualname__}"
        assert "PanicException" not in name, f"a panic, not an error: {error}"
        assert isinstance(error, sweepcast.InputError), f"{name}: {error}"
        assert isinstance(error, ValueError) and isinstance(error, sweepcast.Error)
        message = str(error).lower()
        for fragment in fragments:
            words = (fragment,) if isinstance(fragment, str) else fragment
            assert any(
                word.lower() in message for word in words
            ), f"{fragment!r} not in the message {error}"
        return
    pytest.fail(f"no InputError raised (expected one naming {fragments})")


# --------------------------------------------------------------------------------------------
# Gases for the event loop
# --------------------------------------------------------------------------------------------


def lattice_gas(
    n: int, packing: float, seed: int, dim: int = 3
) -> tuple[F64, F64, F64, F64, float]:
    """``n`` bodies of diameter 1 and mass 1 at packing fraction ``packing`` in a periodic
    cube (square in 2D), on a simple cubic (square) lattice, velocities Gaussian with no net
    momentum and kT = 1 exactly (the mean of m v² per axis). The side is an f32 value, so that
    the box holds it exactly. Returns positions, velocities, radii, masses and the side."""
    if dim == 3:
        side = (n * np.pi / (6.0 * packing)) ** (1.0 / 3.0)
    else:
        side = (n * np.pi / (4.0 * packing)) ** 0.5
    side = float(np.float32(side))
    per_side = int(np.ceil(n ** (1.0 / dim) - 1e-9))
    spacing = side / per_side
    cells = np.stack(np.unravel_index(np.arange(n), (per_side,) * dim), axis=1)
    positions = (cells + 0.5) * spacing
    rng = np.random.default_rng(seed)
    velocities = rng.normal(size=(n, dim))
    velocities -= velocities.mean(axis=0)
    velocities *= np.sqrt(1.0 / ((velocities**2).sum() / (dim * n)))
    return positions, velocities, np.full(n, 0.5), np.ones(n), side


# --------------------------------------------------------------------------------------------
# The GPU
# --------------------------------------------------------------------------------------------


def no_gpu(pytestconfig: pytest.Config, error: BaseException) -> None:
    """Fails where ``SWEEPCAST_REQUIRE_GPU=1``, else skips loudly (a line on the real stderr,
    past pytest's capture, and the skip's reason)."""
    message = f"no GPU adapter ({type(error).__name__}: {error})"
    if os.environ.get("SWEEPCAST_REQUIRE_GPU") == "1":
        pytest.fail(f"SWEEPCAST_REQUIRE_GPU=1 but {message}")
    capture = pytestconfig.pluginmanager.getplugin("capturemanager")
    if capture is not None:
        with capture.global_and_fixture_disabled():
            print(f"SKIPPED (no GPU adapter): {message}", file=sys.stderr)
    else:
        print(f"SKIPPED (no GPU adapter): {message}", file=sys.stderr)
    pytest.skip(f"SKIPPED (no GPU adapter): {message}; set WGPU_BACKEND or install Mesa")


@pytest.fixture(scope="session")
def gpu_step(pytestconfig: pytest.Config) -> sweepcast.GpuStep:
    """One ``GpuStep`` for the session, on the adapter ``WGPU_BACKEND`` picks."""
    try:
        return sweepcast.GpuStep()
    except sweepcast.DeviceError as error:
        no_gpu(pytestconfig, error)
        raise  # unreachable: no_gpu fails or skips


# --------------------------------------------------------------------------------------------
# The whole step's contacts, checked
# --------------------------------------------------------------------------------------------

EPSILON_F32 = 2.0**-23
# Below f32::MIN_POSITIVE a rounding errs by up to the subnormal spacing, 2^-149, absolutely.
SUBNORMAL_SPACING = 2.0**-149


def pair_keys(pairs: np.ndarray, n: int) -> NDArray[np.int64]:
    pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    return pairs[:, 0] * n + pairs[:, 1]


def check_contacts(
    world: World, contacts: sweepcast.Contacts, bound: float, what: str, walls: bool = False
) -> Brute:
    """Everything ``find_contacts`` promises about a world without walls (with ``walls``, the
    pair part only), against the brute force over every interacting pair i < j and the parity
    judge with ``bound``. Returns the brute force's answers for the reported pairs."""
    n, dim, k = world.n, world.dim, len(contacts)
    what = f"{world.label}: {what}"
    expected_shapes = {
        "pairs": ((k, 2), np.int64),
        "times": ((k,), np.float32),
        "points": ((k, dim), np.float64),
        "normals": ((k, dim), np.float32),
        "status": ((k,), np.uint8),
        "images": ((k, dim), np.int32),
        "earliest_time": ((n,), np.float32),
        "earliest_partner": ((n,), np.int64),
        "earliest_wall": ((n,), np.int64),
    }
    for name, (shape, dtype) in expected_shapes.items():
        value = getattr(contacts, name)
        assert (
            value.shape == shape and value.dtype == dtype
        ), f"{what}: {name} is {value.shape} {value.dtype}, expected {shape} {np.dtype(dtype)}"
    pairs, times, status = contacts.pairs, contacts.times, contacts.status
    assert np.all(pairs[:, 0] < pairs[:, 1]), f"{what}: the lower index first"
    assert np.all((pairs >= 0) & (pairs < n))
    assert len(np.unique(pair_keys(pairs, n))) == k, f"{what}: a pair twice"
    assert np.all(np.isin(status, [sweepcast.CONTACT, sweepcast.OVERLAPPING])), what
    assert np.all(times[status == sweepcast.OVERLAPPING] == 0.0), what
    assert np.all((times >= 0.0) & (times <= 1.0)), what
    order = np.lexsort((pairs[:, 1], pairs[:, 0], times))
    assert np.array_equal(order, np.arange(k)), f"{what}: not in time order, then by pair"
    assert contacts.candidates >= k, what
    assert np.all(interacting(world.groups, pairs)), f"{what}: a pair whose groups do not meet"

    # Every reported answer within the bound, and the hits those of the brute force over every
    # interacting pair, but for pairs the judge accepts either way (within the bound of a
    # grazing or end-of-step contact).
    assert_judged(world, pairs, times, status, bound, what)
    candidates = all_pairs(n)
    candidates = candidates[interacting(world.groups, candidates)]
    brute = brute_force_world(world, candidates)
    index = np.searchsorted(pair_keys(candidates, n), pair_keys(pairs, n))
    assert np.array_equal(pair_keys(candidates[index], n), pair_keys(pairs, n))
    reported = np.zeros(len(candidates), dtype=bool)
    reported[index] = True
    all_times = np.full(len(candidates), np.inf, dtype=np.float32)
    all_status = np.full(len(candidates), sweepcast.MISS, dtype=np.uint8)
    all_times[index], all_status[index] = times, status
    assert_hits_agree(world, candidates, brute.hits(), reported, all_times, all_status, bound, what)

    # Overlap or contact: as the brute force says wherever f(0) is beyond the bound.
    mine = brute_force_world(world, pairs)
    clear = np.abs(mine.residual(np.zeros(k))) > bound * EPSILON_F32
    both = clear & mine.hits()
    assert np.array_equal(status[both], mine.status[both]), f"{what}: overlap against contact"

    # Each body's earliest: the least time among its contacts, then the lowest partner.
    if not walls:
        earliest_time, earliest_partner = earliest_from_contacts(n, pairs, times)
        assert_bit_equal(contacts.earliest_time, earliest_time, f"{what}: earliest_time")
        assert_bit_equal(contacts.earliest_partner, earliest_partner, f"{what}: earliest_partner")
        assert np.all(contacts.earliest_wall == -1), f"{what}: a wall where there is none"

    # Images: none without a box; else the nearest image of the second body (b - image L),
    # wherever the pair is not within rounding of half a period apart.
    if world.periodic_box is None:
        assert np.all(contacts.images == 0), what
    else:
        period = float(np.float32(world.periodic_box))
        c, _, _ = f32_bodies(world)
        fraction = (c[pairs[:, 1]] - c[pairs[:, 0]])[:, :dim] / period
        clear = np.abs(np.abs(fraction - np.round(fraction)) - 0.5) > 1e-4
        assert np.array_equal(contacts.images[clear], mine.image[:, :dim][clear]), f"{what}: images"

    check_frames(world, contacts, mine, bound, what)
    return mine


def check_frames(world: World, contacts: Any, brute: Brute, bound: float, what: str) -> None:
    """Normals and points, to the bounds of the judge's frame check (src/parity.rs): the
    normal within ``k ε (1 + S / |w|)`` of ``w / |w|`` (w = s - v t, the second centre from
    the first at the time), the point within ``k ε (|c_a| + |d_a| + r_a)`` (plus the
    subnormal spacing) of ``c_a + d_a t + n r_a`` for the body as the f32 paths take it; the
    local origin added back in f64 adds at most 2^-53 of the point's magnitude. ``contacts``:
    anything with ``pairs``, ``times``, ``normals`` and ``points`` of hits."""
    k, dim = len(contacts.times), world.dim
    if k == 0:
        return
    c, r, d = f32_bodies(world)
    origin = local_origin(world.centers, world.periodic_box)
    a = contacts.pairs[:, 0]
    t = contacts.times.astype(np.float64)
    normals = contacts.normals.astype(np.float64)
    assert np.all(np.abs(np.linalg.norm(normals, axis=1) - 1.0) <= 1e-5), f"{what}: unit normals"
    w = (brute.s - brute.v * t[:, None])[:, :dim]
    distance = np.linalg.norm(w, axis=1)
    apart = distance > 0
    tolerance = bound * EPSILON_F32 * (1.0 + np.sqrt(brute.scale_squared[apart]) / distance[apart])
    error = np.linalg.norm(normals[apart] - w[apart] / distance[apart, None], axis=1)
    assert np.all(error <= tolerance), f"{what}: normals off by up to {error.max():.3g}"
    local = c[a, :dim] + d[a, :dim] * t[:, None] + normals * r[a, None]
    expected = local + origin
    size = np.linalg.norm(c[a], axis=1) + np.linalg.norm(d[a], axis=1) + r[a]
    tolerance = (
        bound * EPSILON_F32 * size
        + bound * SUBNORMAL_SPACING
        + 2.0**-53 * (np.linalg.norm(expected, axis=1) + np.linalg.norm(origin))
    )
    error = np.linalg.norm(contacts.points - expected, axis=1)
    assert np.all(error <= tolerance), f"{what}: points off by up to {error.max():.3g}"


def world_id(params: dict[str, Any]) -> str:
    """A test id for a world's parameters."""
    return "-".join(f"{k}={v.__name__ if isinstance(v, type) else v}" for k, v in params.items())
