"""sweepcast: when moving circles and spheres first touch (continuous collision detection),
on the CPU and on the GPU, and an f64 event loop, from NumPy arrays.

Bodies are given as arrays, one a field: ``centers`` (N, D) and ``displacements`` (N, D) with
D = 3 (spheres) or D = 2 (circles, in the plane z = 0), ``radii`` (N,). Any float dtype
(float32 or float64), any strides. The f32 paths (``find_contacts``, ``sweep``) subtract a
local origin in f64 (the centre of the centres' bounding box; 0 in a periodic box) and
round each body to f32 once; their points come back in the caller's coordinates, in
float64. The event loop (``EventLoop``) works in float64, its walls (``Wall``) as the f32
paths take them.

Bad input raises ``InputError`` (a ``ValueError``) naming the body and the field; a device
failure raises ``DeviceError`` (a ``RuntimeError``); a limit passed (too many events, too
much work or output) raises ``LimitError`` (a ``RuntimeError``). Every long call releases
the GIL.
"""

from typing import Literal, Sequence, final, overload

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = [
    "CONTACT",
    "CPU_BOUND",
    "Contacts",
    "DeviceError",
    "EPSILON",
    "Error",
    "EventLoop",
    "Events",
    "GPU_BOUND",
    "GpuStep",
    "Impacts",
    "InputError",
    "Judgement",
    "LimitError",
    "MISS",
    "OVERLAPPING",
    "Wall",
    "__version__",
    "check_times",
    "collision_groups",
    "find_contacts",
    "reference_sweep",
    "sweep",
]

__version__: str

EPSILON: float
"""f32's machine epsilon (2**-23) as a float: the unit of the parity bounds."""
CPU_BOUND: float
"""The backward-error bound of the f32 CPU paths, in units of EPSILON."""
GPU_BOUND: float
"""The backward-error bound of the WGSL paths, in units of EPSILON."""
MISS: int
"""Status code 0: the pair does not touch during the step."""
CONTACT: int
"""Status code 1: the pair first touches at the reported time."""
OVERLAPPING: int
"""Status code 2: the pair already overlaps at t = 0 (time 0)."""

class Error(Exception):
    """Every error sweepcast raises."""

class InputError(Error, ValueError):
    """Bad input: a NaN, a negative radius, a wrong shape, mismatched lengths, a periodic box
    too small, an out-of-range index. The message names the body (or pair, wall) and the
    field."""

class DeviceError(Error, RuntimeError):
    """No GPU adapter, or the device failed."""

class LimitError(Error, RuntimeError):
    """A limit was passed: too many events or too much work in a step, an output larger than
    the device holds."""

@final
class Wall:
    """A static wall: a plane (solid behind it) or a segment."""

    @staticmethod
    def plane(point: ArrayLike, normal: ArrayLike) -> Wall:
        """The plane through ``point`` facing ``normal`` (2 or 3 components each; in 2D a
        line)."""

    @staticmethod
    def segment(start: ArrayLike, end: ArrayLike) -> Wall:
        """The segment from ``start`` to ``end`` (2 or 3 components each)."""

    @staticmethod
    def box_interior(min: ArrayLike, max: ArrayLike) -> list[Wall]:
        """The inside faces of the box from ``min`` to ``max``: 6 planes in 3D, 4 lines in
        2D, in the order -x, +x, -y, +y(, -z, +z)."""

def collision_groups(memberships: ArrayLike, filter: ArrayLike) -> NDArray[np.uint32]:
    """Collision groups, one a body, as the ``groups=`` argument takes them: 16 membership
    bits and 16 filter bits each (broadcast together). Two bodies interact when each one's
    memberships meet the other's filter."""

@final
class Contacts:
    """The contacts of one step (``find_contacts``), in time order (then by pair). Every
    array is made by NumPy and filled by the step (no copy); passed back as ``out=`` to the
    next step, they are filled again in place (and grown when too small)."""

    @property
    def pairs(self) -> NDArray[np.int64]:
        """(K, 2) int64: the two bodies of each contact, the lower index first."""
    @property
    def times(self) -> NDArray[np.float32]:
        """(K,) float32: the fraction of the step at which they first touch (0 for an overlap)."""
    @property
    def points(self) -> NDArray[np.float64]:
        """(K, D) float64: the first body's surface point facing the second, in the caller's
        coordinates."""
    @property
    def normals(self) -> NDArray[np.float32]:
        """(K, D) float32: the unit normal from the first body's centre towards the second's."""
    @property
    def status(self) -> NDArray[np.uint8]:
        """(K,) uint8: CONTACT or OVERLAPPING."""
    @property
    def images(self) -> NDArray[np.int32]:
        """(K, D) int32: the periodic image of the second body met, in periods per axis (zeros
        without a periodic box)."""
    @property
    def earliest_time(self) -> NDArray[np.float32]:
        """(N,) float32: each body's earliest contact time, with a body or a wall; inf for none."""
    @property
    def earliest_partner(self) -> NDArray[np.int64]:
        """(N,) int64: the body met at ``earliest_time``; -1 for none or a wall."""
    @property
    def earliest_wall(self) -> NDArray[np.int64]:
        """(N,) int64: the wall met at ``earliest_time``; -1 for none or a body."""
    @property
    def candidates(self) -> int:
        """How many candidate pairs the broad phase gave."""
    def __len__(self) -> int: ...

@final
class Impacts:
    """The full answer of ``sweep(..., full=True)`` (float32) or ``reference_sweep`` (float64),
    one row a pair."""

    @property
    def times(self) -> NDArray[np.float32] | NDArray[np.float64]:
        """(K,): the time of first contact; inf for a miss, 0 for an overlap."""
    @property
    def status(self) -> NDArray[np.uint8]:
        """(K,) uint8: MISS, CONTACT or OVERLAPPING."""
    @property
    def points(self) -> NDArray[np.float64]:
        """(K, D) float64: the first body's surface point facing the second (NaN for a miss)."""
    @property
    def normals(self) -> NDArray[np.float32] | NDArray[np.float64]:
        """(K, D): the unit normal from the first body towards the second (NaN for a miss)."""
    def __len__(self) -> int: ...

@final
class Judgement:
    """The parity judge's verdict on answers for explicit pairs (``check_times``)."""

    @property
    def backward_error(self) -> NDArray[np.float64]:
        """(K,) float64: |f(t)| / S**2 in units of EPSILON at a reported contact; 0 otherwise."""
    @property
    def failed(self) -> NDArray[np.bool_]:
        """(K,) bool: the answer fails the bound."""
    @property
    def reasons(self) -> list[str | None]:
        """(K,): why each answer fails, or None."""
    @property
    def passed(self) -> bool:
        """No answer failed."""
    @property
    def max_backward_error(self) -> float: ...

_PeriodicBoxLike = float | Sequence[float] | ArrayLike
_Device = Literal["cpu"] | GpuStep

def find_contacts(
    centers: ArrayLike,
    radii: ArrayLike,
    displacements: ArrayLike,
    *,
    walls: Sequence[Wall] | None = None,
    periodic_box: _PeriodicBoxLike | None = None,
    separating: bool = False,
    groups: ArrayLike | None = None,
    device: _Device = "cpu",
    out: Contacts | None = None,
) -> Contacts:
    """The whole step: every pair of bodies that touches during it, and each body's earliest
    contact with a body or a wall.

    ``periodic_box``: a side (a cube or square) or one period per axis (``inf`` where the
    axis does not wrap); centres are taken as they are (wrap them into [0, period)).
    ``separating``: a pair touching or overlapping at t = 0 while moving apart is not a
    contact (what a simulation that resolves its collisions wants). ``groups``: (N,) uint32
    from ``collision_groups``. ``device``: "cpu", or a ``GpuStep`` to run on the GPU.
    """

@overload
def sweep(
    centers: ArrayLike,
    radii: ArrayLike,
    displacements: ArrayLike,
    pairs: ArrayLike,
    *,
    periodic_box: _PeriodicBoxLike | None = None,
    separating: bool = False,
    full: Literal[False] = False,
    device: _Device = "cpu",
) -> NDArray[np.float32]:
    """The swept test of the pairs ``pairs`` ((K, 2) integers) in f32.

    ``full=False``: (K,) float32 times: the time for a contact, -1.0 for a pair already
    overlapping at t = 0, inf for a miss. ``full=True``: an ``Impacts``.
    """
@overload
def sweep(
    centers: ArrayLike,
    radii: ArrayLike,
    displacements: ArrayLike,
    pairs: ArrayLike,
    *,
    periodic_box: _PeriodicBoxLike | None = None,
    separating: bool = False,
    full: Literal[True],
    device: _Device = "cpu",
) -> Impacts: ...

def reference_sweep(
    centers: ArrayLike,
    radii: ArrayLike,
    displacements: ArrayLike,
    pairs: ArrayLike,
    *,
    periodic_box: _PeriodicBoxLike | None = None,
    separating: bool = False,
) -> Impacts:
    """The f64 oracle on the pairs ``pairs``, for the bodies as the f32 paths take them
    (rounded to f32 about the same local origin): float64 times and normals."""

def check_times(
    centers: ArrayLike,
    radii: ArrayLike,
    displacements: ArrayLike,
    pairs: ArrayLike,
    times: ArrayLike,
    status: ArrayLike,
    *,
    periodic_box: _PeriodicBoxLike | None = None,
    separating: bool = False,
    bound: float = ...,
) -> Judgement:
    """The parity judge: whether each pair's answer (``times`` and ``status``, as ``Impacts``
    or ``Contacts`` give them; a miss's time is ignored) is exactly right for inputs within
    ``bound`` (in units of EPSILON; default CPU_BOUND) of the bodies as the f32 paths take
    them."""

@final
class GpuStep:
    """The GPU paths on one device, kept between steps (its buffers grow once and are
    reused). The adapter is chosen by the environment (``WGPU_BACKEND``,
    ``WGPU_ADAPTER_NAME``)."""

    def __init__(self) -> None:
        """Raises DeviceError when no adapter can run the shaders."""
    @property
    def adapter(self) -> str:
        """The adapter's name and backend."""
    def find_contacts(
        self,
        centers: ArrayLike,
        radii: ArrayLike,
        displacements: ArrayLike,
        *,
        walls: Sequence[Wall] | None = None,
        periodic_box: _PeriodicBoxLike | None = None,
        separating: bool = False,
        groups: ArrayLike | None = None,
        out: Contacts | None = None,
    ) -> Contacts:
        """``find_contacts`` on this device."""
    @overload
    def sweep(
        self,
        centers: ArrayLike,
        radii: ArrayLike,
        displacements: ArrayLike,
        pairs: ArrayLike,
        *,
        periodic_box: _PeriodicBoxLike | None = None,
        separating: bool = False,
        full: Literal[False] = False,
    ) -> NDArray[np.float32]:
        """``sweep`` on this device."""
    @overload
    def sweep(
        self,
        centers: ArrayLike,
        radii: ArrayLike,
        displacements: ArrayLike,
        pairs: ArrayLike,
        *,
        periodic_box: _PeriodicBoxLike | None = None,
        separating: bool = False,
        full: Literal[True],
    ) -> Impacts: ...

@final
class Events:
    """The impacts of one ``EventLoop.advance``, in time order, one row an event."""

    @property
    def times(self) -> NDArray[np.float64]:
        """(E,) float64: when, from the start of the step."""
    @property
    def bodies(self) -> NDArray[np.int64]:
        """(E,) int64: the body (of a pair, the lower index)."""
    @property
    def partners(self) -> NDArray[np.int64]:
        """(E,) int64: the other body; -1 for a wall."""
    @property
    def walls(self) -> NDArray[np.int64]:
        """(E,) int64: the wall; -1 for a pair."""
    @property
    def images(self) -> NDArray[np.int32]:
        """(E, D) int32: the periodic image of the partner met, in periods per axis."""
    @property
    def points(self) -> NDArray[np.float64]:
        """(E, D) float64: the body's surface point facing its partner."""
    @property
    def normals(self) -> NDArray[np.float64]:
        """(E, D) float64: the unit normal from the body's centre towards its partner."""
    @property
    def impulses(self) -> NDArray[np.float64]:
        """(E, D) float64: the impulse the body received (its partner the opposite): the change
        of its momentum."""
    def __len__(self) -> int: ...

@final
class EventLoop:
    """A simulation advanced impact by impact in float64: smooth spheres (or discs, D = 2)
    with a restitution, among walls, optionally in a periodic box.

    ``broad_phase``: "cells" (a grid, for bodies of similar size), "all" (every pair: a
    few hundred bodies), "cpu" (the CPU step), or a ``GpuStep``.
    """

    def __new__(
        cls,
        positions: ArrayLike,
        velocities: ArrayLike,
        radii: ArrayLike,
        masses: ArrayLike,
        *,
        walls: Sequence[Wall] | None = None,
        periodic_box: _PeriodicBoxLike | None = None,
        restitution: float = 1.0,
        groups: ArrayLike | None = None,
        broad_phase: Literal["cells", "all", "cpu"] | GpuStep = "cells",
        skin: float | None = None,
        local_skins: bool = False,
        max_events: int | None = None,
    ) -> EventLoop: ...
    def advance(self, dt: float) -> Events:
        """Runs to ``dt`` later: every impact resolved in time order, the bodies moved to the
        end (wrapped into the periodic box). On error the bodies are left as they were at
        the last completed event."""
    @property
    def positions(self) -> NDArray[np.float64]:
        """(N, D) float64: the centres now (a new array)."""
    @positions.setter
    def positions(self, value: ArrayLike) -> None: ...
    @property
    def velocities(self) -> NDArray[np.float64]:
        """(N, D) float64: the velocities now (a new array)."""
    @velocities.setter
    def velocities(self, value: ArrayLike) -> None: ...
    @property
    def radii(self) -> NDArray[np.float64]:
        """(N,) float64."""
    @property
    def masses(self) -> NDArray[np.float64]:
        """(N,) float64."""
    @property
    def time(self) -> float:
        """The time advanced since the loop was made."""
    @property
    def broad_phase_runs(self) -> int:
        """How many times the last advance asked its broad phase for pairs."""
    def kinetic_energy(self) -> float:
        """The sum of m v**2 / 2, in float64."""
    def __len__(self) -> int: ...
