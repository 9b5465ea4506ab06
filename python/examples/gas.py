"""A hard-sphere gas from Python: the twin of the Rust example ``examples/gas.rs``.

N spheres of diameter σ = 1 and mass 1 in a periodic cube at packing fraction η, started on a
simple cubic lattice with Maxwell–Boltzmann velocities (kT = m = 1 exactly, no net momentum),
are run impact by impact by ``sweepcast.EventLoop``. After an equilibration the run is cut into
blocks; each block gives the compressibility factor Z = PV/NkT from the collision virial and
the collision rate, and Z's standard error comes from the blocks' spread.

Run it (from the repository's root, with the binding installed)::

    python python/examples/gas.py [--packing 0.3] [--bodies 2000] [--collisions 100]
        [--blocks 10] [--seed 1] [--out gas_speeds.png] [--broad-phase cells|all|cpu|gpu]
        [--skins local|global]

It prints Z beside Kolafa's and Carnahan–Starling's equations of state, the collision rate
per body beside Enskog's, the relative energy drift and collisions a second of wall time, and
draws the speeds' histogram over the Maxwell–Boltzmann density (``--out``). It checks, and
exits 1 with a line starting ``FAIL:`` when one fails (printing ``PASS`` and exiting 0
otherwise), that

- Z agrees with Kolafa's equation within four standard errors plus 0.5 % for the finite size
  (the NVE pressure of N bodies differs from the limit by O(1/N); 0.5 % is a stated
  allowance, not a derived one, as in the Rust example);
- the kinetic energy drifts by at most 1e-9 (relative): the impacts are elastic;
- no two bodies overlap by more than 1e-9 at any block's end, and every impulse pushes its
  two bodies apart (the sign the virial relies on).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from typing import Literal

import matplotlib

matplotlib.use("Agg")  # headless: no display is needed to save the picture
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from numpy.typing import NDArray  # noqa: E402

import sweepcast  # noqa: E402

SIGMA = 1.0  # the diameter: every distance is in diameters
EQUILIBRATION = 20.0  # collisions a body from the lattice start before measuring
ALLOWANCE = 0.005  # the finite-size allowance on Z, relative (stated, not derived)
MAX_DRIFT = 1e-9  # the largest relative energy drift allowed
MAX_OVERLAP = 1e-9  # the deepest overlap allowed between two bodies
NEAR = 1e-3  # pairs closer than this are looked at for overlaps


def carnahan_starling(eta: float) -> float:
    """Carnahan and Starling's equation of state (1969)."""
    return (1 + eta + eta**2 - eta**3) / (1 - eta) ** 3


def kolafa(eta: float) -> float:
    """Kolafa's refinement of it (as given by Boublík and Nezbeda, 1986)."""
    return (1 + eta + eta**2 - 2 / 3 * eta**3 * (1 + eta)) / (1 - eta) ** 3


def enskog_rate(eta: float, density: float, kt: float) -> float:
    """Enskog's collision rate per body, 4 n σ² √(π kT/m) g(σ), with Carnahan and Starling's
    contact value g(σ) = (1 − η/2)/(1 − η)³ (m = 1)."""
    contact = (1 - eta / 2) / (1 - eta) ** 3
    return 4 * density * SIGMA**2 * math.sqrt(math.pi * kt) * contact


def lattice_gas(
    n: int, eta: float, seed: int
) -> tuple[float, NDArray[np.float64], NDArray[np.float64]]:
    """The cube's side, and `n` centres on a simple cubic lattice in it (its spacing exceeds a
    diameter up to η = π/6) with Maxwell–Boltzmann velocities: no net momentum, kT = 1."""
    # The side rounded to f32, as the Rust example keeps it, so that the period is the same
    # whether the binding holds it in f32 or in f64.
    side = float(np.float32((n * math.pi * SIGMA**3 / (6 * eta)) ** (1 / 3)))
    per_side = math.ceil(n ** (1 / 3) - 1e-9)
    k = np.arange(n)
    cells = np.stack([k % per_side, (k // per_side) % per_side, k // per_side**2], axis=1)
    positions = (cells + 0.5) * (side / per_side)
    velocities = np.random.default_rng(seed).standard_normal((n, 3))
    velocities -= velocities.mean(axis=0)
    velocities *= 1 / math.sqrt(temperature(velocities))
    return side, positions, velocities


def temperature(velocities: NDArray[np.float64]) -> float:
    """kT from the kinetic energy (m = 1): the mean of v² over the bodies, divided by 3."""
    return float(np.einsum("ij,ij->", velocities, velocities) / (3 * len(velocities)))


def skin(eta: float, density: float, side: float) -> float:
    """The Rust example's skin: 0.8 √λ for the mean free path λ, within the box (the radius
    plus twice the skin below 90 % of a quarter period)."""
    contact = (1 - eta / 2) / (1 - eta) ** 3
    free_path = 1 / (math.sqrt(2) * math.pi * density * SIGMA**2 * contact)
    return min(0.8 * math.sqrt(free_path), 0.45 * (side / 4 - SIGMA / 2))


def virial_terms(events: sweepcast.Events, radii: NDArray[np.float64]) -> NDArray[np.float64]:
    """The collision virial's terms r_ij · J_j of a step's collisions, one a collision.

    Z = PV/NkT = 1 + ⟨Σ_i r_i · F_i⟩ / (3 N kT); a pair's forces give r_i·F_i + r_j·F_j =
    r_ij · F_j with r_ij = r_j − r_i, and over a time T the forces integrate to the impulses:
    Z = 1 + Σ_collisions r_ij · J_j / (3 N kT T). At contact r_ij = σ n (n from the body to its
    partner) and J_j = −impulse (the partner gets the opposite of the body's), so each term is
    −σ n · impulse = σ |J·n| ≥ 0: the body is pushed back, along −n. The Rust example adds
    m |Δv_a| (r_a + r_b), the same quantity.
    """
    pairs = events.partners >= 0
    bodies, partners = events.bodies[pairs], events.partners[pairs]
    contact = radii[bodies] + radii[partners]  # σ: the centres' distance at contact
    along: NDArray[np.float64] = np.einsum(
        "ij,ij->i", events.normals[pairs], events.impulses[pairs]
    )
    return -contact * along


def smallest_gap(positions: NDArray[np.float64], radii: NDArray[np.float64], side: float) -> float:
    """The smallest gap between two bodies within NEAR of touching (inf if none is that
    close): the pairs come from the CPU step with every sphere grown by NEAR/2 and at rest,
    the gaps are measured in f64 at the nearest image."""
    contacts = sweepcast.find_contacts(
        positions, radii + NEAR / 2, np.zeros_like(positions), periodic_box=side
    )
    if len(contacts) == 0:
        return math.inf
    a, b = contacts.pairs[:, 0], contacts.pairs[:, 1]
    d = positions[a] - positions[b]
    d -= np.round(d / side) * side
    return float(np.min(np.linalg.norm(d, axis=1) - radii[a] - radii[b]))


def draw_speeds(speeds: NDArray[np.float64], n: int, eta: float, out: str) -> None:
    """The speeds' histogram (in units of √(kT/m)) over the Maxwell–Boltzmann density."""
    v = np.linspace(0, 5, 400)
    figure, axes = plt.subplots(figsize=(8, 5))
    axes.hist(speeds, bins=40, range=(0, 5), density=True, color="#78a0dc", label="measured")
    axes.plot(
        v,
        np.sqrt(2 / np.pi) * v**2 * np.exp(-(v**2) / 2),
        color="#c82828",
        lw=2,
        label="Maxwell–Boltzmann",
    )
    axes.set_xlabel("speed / (kT/m)$^{1/2}$")
    axes.set_ylabel("density")
    axes.set_title(f"Speeds, N = {n}, η = {eta}, {len(speeds)} speeds pooled")
    axes.legend()
    figure.tight_layout()
    figure.savefig(out, dpi=100)
    plt.close(figure)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--packing", type=float, default=0.3, help="η, in (0, 0.49)")
    parser.add_argument("--bodies", type=int, default=2000, help="N, 64 or more")
    parser.add_argument("--collisions", type=float, default=100, help="collisions a body measured")
    parser.add_argument("--blocks", type=int, default=10, help="for Z's standard error")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", default="gas_speeds.png", help="the histogram (PNG)")
    parser.add_argument("--broad-phase", choices=["cells", "all", "cpu", "gpu"], default="cells")
    parser.add_argument(
        "--skins",
        choices=["local", "global"],
        help="local: each body renews its own skin (default but with gpu); global: the broad "
        "phase is asked again each time a body leaves its skin (default with gpu)",
    )
    args = parser.parse_args()
    eta, n = args.packing, args.bodies
    if not (0 < eta < 0.49) or n < 64 or args.blocks < 2 or args.collisions <= 0:
        parser.error("need 0 < η < 0.49, 64 bodies or more, 2 blocks or more, collisions > 0")

    broad_phase: Literal["cells", "all", "cpu"] | sweepcast.GpuStep
    if args.broad_phase == "gpu":
        try:
            broad_phase = sweepcast.GpuStep()
        except sweepcast.DeviceError as error:
            print(f"FAIL: no GPU adapter for --broad-phase gpu: {error}")
            return 1
        print(f"broad phase: the GPU step on {broad_phase.adapter}")
    else:
        broad_phase = args.broad_phase  # one of argparse's choices
        print(f"broad phase: {args.broad_phase}")
    # As the Rust example: on the GPU, the step is the broad phase all along (global skins);
    # elsewhere each body renews its own skin in the loop's grid, which is what is fast.
    local = (args.skins or ("global" if args.broad_phase == "gpu" else "local")) == "local"

    side, positions, velocities = lattice_gas(n, eta, args.seed)
    density = n / side**3
    radii = np.full(n, SIGMA / 2)
    loop = sweepcast.EventLoop(
        positions,
        velocities,
        radii,
        np.ones(n),
        periodic_box=side,
        broad_phase=broad_phase,
        skin=skin(eta, density, side),
        local_skins=local,
    )
    energy = loop.kinetic_energy()

    # Time in Enskog's units: a step of two mean times between a body's collisions (how
    # often Python sees the bodies; the loop goes on from step to step).
    rate = enskog_rate(eta, density, 1.0)
    dt = 2 / rate
    # Broad-phase runs in all: the binding makes the loop with a step of no time, which asks
    # the broad phase for the first pairs (and counts as the last advance until the first).
    runs = loop.broad_phase_runs
    started = time.perf_counter()
    for _ in range(max(1, round(EQUILIBRATION / rate / dt))):
        loop.advance(dt)
        runs += loop.broad_phase_runs
    kt = temperature(loop.velocities)
    steps = max(1, round(args.collisions / args.blocks / rate / dt))
    zs, rates, speeds = [], [], []
    collisions, pulls, gap = 0, 0, math.inf
    measuring = time.perf_counter()
    for _ in range(args.blocks):
        block_virial, block_collisions = 0.0, 0
        for _ in range(steps):
            events = loop.advance(dt)
            terms = virial_terms(events, radii)
            block_virial += float(np.sum(terms))
            block_collisions += len(terms)
            # An elastic collision of approaching bodies pushes them apart: a negative term
            # (beyond the rounding of impulses of order 1, should the binding take them as
            # m Δv) would mean the impulses' sign is not the stub's.
            pulls += int(np.count_nonzero(terms < -1e-12))
            runs += loop.broad_phase_runs
        duration = steps * dt
        zs.append(1 + block_virial / (3 * n * kt * duration))
        # Each collision counts for its two bodies; in units of √(kT/m), as Enskog's.
        rates.append(2 * block_collisions / (n * duration) / math.sqrt(kt))
        collisions += block_collisions
        speeds.append(np.linalg.norm(loop.velocities, axis=1) / math.sqrt(kt))
        gap = min(gap, smallest_gap(loop.positions, radii, side))
    finished = time.perf_counter()
    seconds = finished - measuring
    drift = abs(loop.kinetic_energy() - energy) / energy

    z = float(np.mean(zs))
    z_error = float(np.std(zs, ddof=1) / math.sqrt(len(zs)))
    k, cs = kolafa(eta), carnahan_starling(eta)
    measured_rate = float(np.mean(rates))
    print(
        f"N = {n}, η = {eta}, side {side:.4f}, {'local' if local else 'global'} skins: "
        f"{collisions} collisions in {seconds:.2f} s of wall time ({finished - started:.2f} s "
        f"with the equilibration), {collisions / seconds:.3e} a second; broad-phase runs: "
        f"{runs}"
    )
    print(
        f"Z = PV/NkT = {z:.4f} ± {z_error:.4f} (standard error of {len(zs)} blocks); "
        f"Kolafa {k:.4f}, Carnahan–Starling {cs:.4f}: {(z - k) / z_error:+.2f} standard errors, "
        f"{100 * (z - k) / k:+.3f}% ± {100 * z_error / k:.3f}% from Kolafa"
    )
    print(
        f"collision rate per body {measured_rate:.4f} (kT = 1), Enskog {rate:.4f}: "
        f"ratio {measured_rate / rate:.4f}"
    )
    print(f"energy drift {drift:.2e} (relative); smallest gap between two bodies {gap:.2e}")
    draw_speeds(np.concatenate(speeds), n, eta, args.out)
    print(f"picture: {args.out}")

    failures = []
    if abs(z - k) > 4 * z_error + ALLOWANCE * k:
        failures.append(
            f"Z = {z:.4f} departs from Kolafa's {k:.4f} by more than four standard errors "
            f"({4 * z_error:.4f}) plus the finite-size allowance ({ALLOWANCE * k:.4f})"
        )
    if not drift <= MAX_DRIFT:
        failures.append(f"the energy drifted by {drift:.2e}, beyond {MAX_DRIFT:.0e}")
    if pulls:
        failures.append(f"{pulls} collisions pulled the bodies together (impulse along n)")
    if not gap >= -MAX_OVERLAP:
        failures.append(f"two bodies overlap by {-gap:.2e}, beyond {MAX_OVERLAP:.0e}")
    for failure in failures:
        print(f"FAIL: {failure}")
    if failures:
        return 1
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
