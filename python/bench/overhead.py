"""Python's overhead over Rust (issue 26): the binding's ``find_contacts`` (CPU) and one
``EventLoop.advance`` against the Rust library on the very same float64 arrays, timed side by
side in one run.

    cargo build --release --example arrays
    /work/venv/bin/python python/bench/overhead.py [--sizes 10000 100000 1000000]
        [--repeats 5] [--rounds 5] [--rust-bin target/release/examples/arrays]

The Rust side is ``examples/arrays.rs`` run on ``.npy`` files of the same arrays: it times the
conversion from the arrays (``MovingSphere::from_f64_arrays_into`` about the same local
origin) and the call, reusing its finder and vectors as a Rust caller would, and prints the
median of ``--repeats`` calls. Each round runs the Rust program once (``--repeats`` calls) and
``--repeats`` Python calls, the two in turn (which goes first alternates), and the table
gives the median over the rounds of each side's median, and the median of the rounds'
ratios. Below 10⁵ bodies a round makes more calls (``repeats_for``). The Python call's time
stops when it returns: freeing its result (what a loop that replaces it pays) is timed among
the pieces.

Workloads: ``find_contacts`` on a gas-like world of N spheres of radius 0.5 uniform in a
cube at packing fraction 0.2 (overlaps allowed), displacements normal with a standard
deviation of 0.1 per axis, so that contacts are of order N; ``EventLoop.advance(dt)`` of a
hard-sphere gas of 10⁴ spheres of diameter 1 in a periodic cube at packing 0.3 (a lattice
start, Maxwell–Boltzmann velocities at kT = m = 1), dt giving about 2 collisions a body by
Enskog's rate, a fresh loop each repeat (its construction not timed).

After the table, ``find_contacts``'s time is cut into pieces on the Python side (the call
with other input layouts, reading the outputs) to say where an overhead comes from.
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

import numpy as np

import sweepcast

ROOT = Path(__file__).resolve().parents[2]

# The gas of the event-loop workload.
GAS_BODIES = 10_000
GAS_PACKING = 0.3
# Collisions a body in the timed advance, counted as the gas example counts them: each
# collision counts for both of its bodies (2 E / N).
GAS_COLLISIONS_PER_BODY = 2.0


def cpu_model() -> str:
    """The CPU's model name, family and model, as /proc/cpuinfo gives them."""
    fields: dict[str, str] = {}
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            for line in cpuinfo:
                key, _, value = line.partition(":")
                key = key.strip()
                if key in ("model name", "cpu family", "model") and key not in fields:
                    fields[key] = value.strip()
                if not line.strip() and fields:
                    break
    except OSError:
        return platform.processor() or "unknown"
    return (
        f"{fields.get('model name', 'unknown')} (family {fields.get('cpu family', '?')}, "
        f"model {fields.get('model', '?')}), {os.cpu_count()} logical CPUs"
    )


def gas_like_world(n: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """N spheres of radius 0.5 uniform in the cube of packing 0.2, displacements of typical
    length 0.1: about one contact a body."""
    side = (n * 4.0 / 3.0 * math.pi * 0.125 / 0.2) ** (1.0 / 3.0)
    return {
        "centers": rng.uniform(0.0, side, (n, 3)),
        "radii": np.full(n, 0.5),
        "displacements": rng.normal(0.0, 0.1, (n, 3)),
    }


def hard_sphere_gas(n: int, packing: float, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """The gas example's start (examples/hard_spheres): spheres of diameter 1 and mass 1 on a
    cubic lattice in a periodic cube at packing ``packing``, Gaussian velocities less their
    drift, scaled to kT = 1 exactly; and the step ``dt`` of about GAS_COLLISIONS_PER_BODY
    collisions a body by Enskog's rate with Carnahan and Starling's contact value."""
    side = (n * math.pi / (6.0 * packing)) ** (1.0 / 3.0)
    per_side = math.ceil(n ** (1.0 / 3.0))
    spacing = side / per_side
    k = np.arange(n)
    cells = np.stack([k % per_side, (k // per_side) % per_side, k // per_side**2], axis=1)
    positions = (cells + 0.5) * spacing
    velocities = rng.normal(0.0, 1.0, (n, 3))
    velocities -= velocities.mean(axis=0)
    # kT = m v² / 3 per body on average, m = 1.
    velocities *= math.sqrt(3.0 * n / np.sum(velocities**2))
    density = n / side**3
    contact = (1.0 - packing / 2.0) / (1.0 - packing) ** 3
    enskog = 4.0 * density * contact * math.sqrt(math.pi)
    return {
        "positions": positions,
        "velocities": velocities,
        "radii": np.full(n, 0.5),
        "masses": np.ones(n),
        "periodic_box": np.full(3, side),
        "dt": np.array([GAS_COLLISIONS_PER_BODY / enskog]),
        "steps": np.array([1], dtype=np.int64),
    }


def write_inputs(directory: Path, arrays: dict[str, np.ndarray]) -> None:
    for name, array in arrays.items():
        np.save(directory / f"{name}.npy", array)


def rust_run(rust_bin: Path, command: str, directory: Path, repeats: int) -> tuple[float, str]:
    """Runs the Rust program: its median over ``repeats`` calls, in seconds, and its line of
    counts."""
    result = subprocess.run(
        [str(rust_bin), command, str(directory), "--repeats", str(repeats)],
        capture_output=True,
        text=True,
    )
    if result.returncode != 0:
        sys.exit(f"{rust_bin} {command} failed ({result.returncode}): {result.stderr}")
    lines = result.stdout.strip().splitlines()
    key, _, value = lines[-1].partition(" ")
    if key != "median_seconds":
        sys.exit(f"unexpected output of {rust_bin}: {result.stdout!r}")
    return float(value), lines[0]


def python_median(call: Callable[[], float], repeats: int) -> float:
    """The median of ``repeats`` runs of ``call``, each returning the seconds it timed."""
    return statistics.median(call() for _ in range(repeats))


def timed(call: Callable[[], object]) -> float:
    """The seconds ``call`` takes; its result is freed after the clock stops (freeing is
    timed on its own among the pieces)."""
    start = time.perf_counter()
    result = call()
    seconds = time.perf_counter() - start
    del result
    return seconds


def repeats_for(n: int, repeats: int) -> int:
    """Calls a round at N bodies: ``repeats``, and more below 10⁵ bodies (as many as make a
    round as long as at 10⁵), where one call is short enough for a round's median to follow
    the machine's jitter."""
    return max(repeats, repeats * 100_000 // max(n, 1))


class Row:
    """One workload's medians, round by round."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.rust: list[float] = []
        self.python: list[float] = []
        self.count = ""

    def add(self, rust: float, python: float) -> None:
        self.rust.append(rust)
        self.python.append(python)

    def cells(self) -> str:
        rust, python = statistics.median(self.rust), statistics.median(self.python)
        ratios = statistics.median(p / r for p, r in zip(self.python, self.rust))
        return (
            f"| {self.label} | {rust * 1e3:.3f} | {python * 1e3:.3f} | "
            f"{(python / rust - 1.0) * 100:+.1f} | {(ratios - 1.0) * 100:+.1f} | {self.count} |"
        )


def side_by_side(
    row: Row, rounds: int, rust: Callable[[], float], python: Callable[[], float]
) -> None:
    """``rounds`` rounds of one Rust median and one Python median, which goes first
    alternating."""
    for round_index in range(rounds):
        if round_index % 2 == 0:
            rust_seconds = rust()
            python_seconds = python()
        else:
            python_seconds = python()
            rust_seconds = rust()
        row.add(rust_seconds, python_seconds)
        print(
            f"  {row.label}, round {round_index + 1}: Rust {rust_seconds * 1e3:.3f} ms, "
            f"Python {python_seconds * 1e3:.3f} ms",
            flush=True,
        )


def same_contacts(contacts: sweepcast.Contacts, out: Path) -> bool:
    """Whether the binding's contacts are the Rust program's, to the bit."""
    return all(
        np.array_equal(getattr(contacts, name), np.load(out / f"{name}.npy"), equal_nan=True)
        for name in ("pairs", "times", "points", "normals", "status", "earliest_time")
    )


def find_contacts_rows(
    n: int, args: argparse.Namespace, rng: np.random.Generator, directory: Path
) -> tuple[list[Row], list[str]]:
    world = gas_like_world(n, rng)
    write_inputs(directory, world)
    centers, radii, displacements = world["centers"], world["radii"], world["displacements"]

    def call() -> sweepcast.Contacts:
        return sweepcast.find_contacts(centers, radii, displacements)

    # One call each before timing: the Rust program's first call writes its outputs, to
    # compare with the binding's.
    _, rust_counts = rust_run(args.rust_bin, "find-contacts", directory, 1)
    contacts = call()
    same = same_contacts(contacts, directory / "out")
    row = Row(f"find_contacts, N = {n:,}")
    row.count = (
        f"{len(contacts):,} contacts, {contacts.candidates:,} candidates "
        f"(Rust: {rust_counts}; same answers: {'yes' if same else 'NO'})"
    )
    repeats = repeats_for(n, args.repeats)
    side_by_side(
        row,
        args.rounds,
        lambda: rust_run(args.rust_bin, "find-contacts", directory, repeats)[0],
        lambda: python_median(lambda: timed(call), repeats),
    )
    # The same step with the last result's arrays filled again (``out=``), as the Rust side
    # fills its ``Contacts`` again: no fresh memory a call once they are large enough.
    reused = Row(f"find_contacts(..., out=), N = {n:,}")
    reused.count = row.count
    side_by_side(
        reused,
        args.rounds,
        lambda: rust_run(args.rust_bin, "find-contacts", directory, repeats)[0],
        lambda: python_median(
            lambda: timed(lambda: sweepcast.find_contacts(centers, radii, displacements, out=contacts)),
            repeats,
        ),
    )
    return [row, reused], pieces(n, world, repeats)


def pieces(n: int, world: dict[str, np.ndarray], repeats: int) -> list[str]:
    """find_contacts's time on the Python side cut into pieces, each a median of
    ``repeats``."""
    centers, radii, displacements = world["centers"], world["radii"], world["displacements"]
    as_f32 = [array.astype(np.float32) for array in (centers, radii, displacements)]
    # The same values in strided views: every fourth float of a wider array.
    wide = np.zeros((n, 8))
    wide[:, 0:3], wide[:, 3], wide[:, 4:7] = centers, radii, displacements
    strided = (wide[:, 0:3], wide[:, 3], wide[:, 4:7])

    def median_ms(call: Callable[[], object]) -> float:
        return python_median(lambda: timed(call), repeats) * 1e3

    def freeing() -> float:
        contacts = sweepcast.find_contacts(centers, radii, displacements)
        start = time.perf_counter()
        del contacts
        return time.perf_counter() - start

    contacts = sweepcast.find_contacts(centers, radii, displacements)
    names = [
        "pairs",
        "times",
        "points",
        "normals",
        "status",
        "images",
        "earliest_time",
        "earliest_partner",
        "earliest_wall",
    ]
    results = {
        "float64, C-contiguous (as in the table)": median_ms(
            lambda: sweepcast.find_contacts(centers, radii, displacements)
        ),
        "float32, C-contiguous": median_ms(lambda: sweepcast.find_contacts(*as_f32)),
        "float64, strided views": median_ms(lambda: sweepcast.find_contacts(*strided)),
        "the outputs' nine arrays read (after the call)": median_ms(
            lambda: [getattr(contacts, name) for name in names]
        ),
        "freeing a result (del contacts; not in the call's time)": python_median(freeing, repeats)
        * 1e3,
        "the call on one body (a call's fixed cost)": median_ms(
            lambda: sweepcast.find_contacts(centers[:1], radii[:1], displacements[:1])
        ),
        "len(contacts), contacts.candidates": median_ms(
            lambda: (len(contacts), contacts.candidates)
        ),
        "numpy: a copy of the three inputs (one pass over them)": median_ms(
            lambda: (centers.copy(), radii.copy(), displacements.copy())
        ),
        "numpy: a copy of the nine outputs": median_ms(
            lambda: [getattr(contacts, name).copy() for name in names]
        ),
    }
    return [f"| N = {n:,} | {piece} | {ms:.3f} |" for piece, ms in results.items()]


def event_loop_row(args: argparse.Namespace, rng: np.random.Generator, directory: Path) -> Row:
    gas = hard_sphere_gas(GAS_BODIES, GAS_PACKING, rng)
    write_inputs(directory, gas)
    dt = float(gas["dt"][0])
    side = float(gas["periodic_box"][0])

    def advance_once() -> tuple[float, int]:
        # A fresh loop each repeat, its construction outside the timing.
        event_loop = sweepcast.EventLoop(
            gas["positions"],
            gas["velocities"],
            gas["radii"],
            gas["masses"],
            periodic_box=side,
        )
        start = time.perf_counter()
        events = event_loop.advance(dt)
        return time.perf_counter() - start, len(events)

    _, rust_counts = rust_run(args.rust_bin, "events", directory, 1)
    _, python_events = advance_once()
    rust_times = np.load(directory / "out" / "times.npy")
    row = Row(f"EventLoop.advance, N = {GAS_BODIES:,}")
    row.count = (
        f"{python_events:,} events = {2 * python_events / GAS_BODIES:.2f} collisions a body, "
        f"dt = {dt:.4f} (Rust: {rust_counts}; same count: "
        f"{'yes' if len(rust_times) == python_events else 'NO'})"
    )
    side_by_side(
        row,
        args.rounds,
        lambda: rust_run(args.rust_bin, "events", directory, args.repeats)[0],
        lambda: python_median(lambda: advance_once()[0], args.repeats),
    )
    construction = python_median(
        lambda: timed(
            lambda: sweepcast.EventLoop(
                gas["positions"],
                gas["velocities"],
                gas["radii"],
                gas["masses"],
                periodic_box=side,
            )
        ),
        args.repeats,
    )
    print(
        f"  EventLoop(...) itself (not in the table: it checks the bodies and runs a step of "
        f"no time, as the Rust side does before its timing): {construction * 1e3:.3f} ms"
    )
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--repeats", type=int, default=5, help="calls a round, each side")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument(
        "--rust-bin", type=Path, default=ROOT / "target" / "release" / "examples" / "arrays"
    )
    parser.add_argument("--seed", type=int, default=26)
    parser.add_argument("--no-events", action="store_true", help="skip the event loop")
    args = parser.parse_args()
    if not args.rust_bin.exists():
        sys.exit(f"{args.rust_bin} not found: cargo build --release --example arrays")

    print(f"CPU: {cpu_model()}")
    print(
        f"Python {platform.python_version()}, numpy {np.__version__}, "
        f"sweepcast {sweepcast.__version__}; {args.rounds} rounds of {args.repeats} calls a "
        "side (more below 10⁵ bodies), alternating",
        flush=True,
    )
    # glibc's malloc settings, where the environment sets them: whether freed memory is
    # handed back to the system decides how many fresh pages (page faults) a call touches.
    tunables = {key: value for key, value in os.environ.items() if key.startswith("MALLOC_")}
    print(f"malloc settings from the environment: {tunables or 'none (glibc defaults)'}")
    rng = np.random.default_rng(args.seed)
    rows: list[Row] = []
    piece_lines: list[str] = []
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as temporary:
        for n in args.sizes:
            directory = Path(temporary) / f"contacts_{n}"
            directory.mkdir()
            contact_rows, lines = find_contacts_rows(n, args, rng, directory)
            rows += contact_rows
            piece_lines += lines
        if not args.no_events:
            directory = Path(temporary) / "events"
            directory.mkdir()
            rows.append(event_loop_row(args, rng, directory))

    print()
    print(
        "| workload | Rust median (ms) | Python median (ms) | overhead (%) "
        "| median of the rounds' ratios − 1 (%) | counts |"
    )
    print("|---|---:|---:|---:|---:|---|")
    for row in rows:
        print(row.cells())
    print()
    print("find_contacts on the Python side, in pieces (median of each):")
    print()
    print("| size | piece | median (ms) |")
    print("|---|---|---:|")
    for line in piece_lines:
        print(line)
    print(f"\n{time.perf_counter() - started:.0f} s in all")


if __name__ == "__main__":
    main()
