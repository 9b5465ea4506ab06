"""The type stubs: ``mypy.stubtest`` finds them true to the module, and ``mypy`` accepts typed
code that uses the API as documented and rejects misuse (each misuse line carries a
``type: ignore`` with its error code, and ``--warn-unused-ignores`` fails the run where the
stub did not flag it)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from conftest import REPO

ALLOWLIST = REPO / "python" / "stubtest_allowlist.txt"

USAGE = """
from typing import assert_type

import numpy as np
from numpy.typing import NDArray

import sweepcast

centers = np.zeros((2, 3))
radii = np.ones(2)
moves = np.zeros((2, 3))
pairs = np.array([[0, 1]])

walls = sweepcast.Wall.box_interior([0, 0, 0], [9, 9, 9])
contacts = sweepcast.find_contacts(
    centers, radii, moves, periodic_box=10.0, separating=True,
    groups=sweepcast.collision_groups(1, 1), walls=walls,
)
assert_type(contacts, sweepcast.Contacts)
assert_type(contacts.pairs, NDArray[np.int64])
assert_type(contacts.times, NDArray[np.float32])
assert_type(contacts.points, NDArray[np.float64])
assert_type(contacts.earliest_partner, NDArray[np.int64])
count: int = len(contacts) + contacts.candidates

times = sweepcast.sweep(centers, radii, moves, pairs, periodic_box=[10.0, 10.0, float("inf")])
full = sweepcast.sweep(centers, radii, moves, pairs, full=True)
oracle = sweepcast.reference_sweep(centers, radii, moves, pairs)
assert_type(oracle, sweepcast.Impacts)
status: NDArray[np.uint8] = oracle.status
verdict = sweepcast.check_times(
    centers, radii, moves, pairs, oracle.times, oracle.status, bound=sweepcast.GPU_BOUND
)
assert_type(verdict, sweepcast.Judgement)
passed: bool = verdict.passed
worst: float = verdict.max_backward_error
reasons: list[str | None] = verdict.reasons

loop = sweepcast.EventLoop(
    centers, moves, radii, np.ones(2), walls=[sweepcast.Wall.plane([0, 0, 0], [0, 0, 1])],
    restitution=0.9, broad_phase="all", skin=0.1, local_skins=True, max_events=100,
)
events = loop.advance(0.1)
assert_type(events, sweepcast.Events)
impulses: NDArray[np.float64] = events.impulses
energy: float = loop.kinetic_energy()
loop.positions = loop.positions + 1.0
now: float = loop.time

try:
    step = sweepcast.GpuStep()
    adapter: str = step.adapter
    on_gpu = sweepcast.find_contacts(centers, radii, moves, device=step)
    gpu_loop = sweepcast.EventLoop(centers, moves, radii, np.ones(2), broad_phase=step)
except sweepcast.DeviceError as error:
    runtime: RuntimeError = error
except sweepcast.InputError as error:
    value: ValueError = error

epsilon: float = sweepcast.EPSILON
codes: tuple[int, int, int] = (sweepcast.MISS, sweepcast.CONTACT, sweepcast.OVERLAPPING)
version: str = sweepcast.__version__

# Misuse, each flagged by the stub (an unused ignore fails the run).
sweepcast.find_contacts(centers, radii, moves, device="gpu")  # type: ignore[arg-type]
sweepcast.EventLoop(centers, moves, radii, radii, broad_phase="octree")  # type: ignore[arg-type]
sweepcast.find_contacts(centers, radii, moves, 10.0)  # type: ignore  # options are keywords
bad_time: str = loop.time  # type: ignore[assignment]
loop.advance()  # type: ignore[call-arg]
loop.time = 1.0  # type: ignore[misc]
"""


def run(arguments: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "MYPY_CACHE_DIR": str(cwd / ".mypy_cache")}
    return subprocess.run(
        [sys.executable, "-m", *arguments],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=environment,
        timeout=300,
    )


def test_the_stubs_pass_stubtest(tmp_path: Path) -> None:
    """The installed module against its stubs. The allowlist names the extension module
    itself (``sweepcast.sweepcast``, re-exported by the package's ``__init__``)."""
    arguments = ["mypy.stubtest", "sweepcast"]
    if ALLOWLIST.exists():
        arguments += ["--allowlist", str(ALLOWLIST)]
    done = run(arguments, tmp_path)
    assert done.returncode == 0, f"stubtest failed:\n{done.stdout}\n{done.stderr}"


def test_mypy_accepts_typed_usage_and_rejects_misuse(tmp_path: Path) -> None:
    usage = tmp_path / "usage.py"
    usage.write_text(USAGE)
    done = run(
        ["mypy", "--strict", "--warn-unused-ignores", "--python-version", "3.11", str(usage)],
        tmp_path,
    )
    assert done.returncode == 0, f"mypy failed:\n{done.stdout}\n{done.stderr}"
