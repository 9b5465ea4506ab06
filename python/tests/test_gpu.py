"""The GPU paths (``GpuStep``) on whatever adapter ``WGPU_BACKEND`` picks (in CI Mesa's software
adapters, lavapipe and llvmpipe GL): the step against the CPU step and the brute force, the
sweep against the judge with GPU_BOUND, the GPU step as the event loop's broad phase, and a
clean exit of a process that used one. Without an adapter these tests skip loudly, or fail
where ``SWEEPCAST_REQUIRE_GPU=1`` (the ``gpu_step`` fixture of conftest.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import numpy as np
import pytest

import sweepcast
from conftest import (
    world_id,
    assert_bit_equal,
    assert_contacts_bit_equal,
    assert_hits_agree,
    assert_judged,
    all_pairs,
    brute_force_world,
    check_contacts,
    decode_times,
    lattice_gas,
    no_gpu,
    pair_keys,
    random_world,
)

WORLDS: list[dict[str, Any]] = [
    dict(seed=601, n=300),
    dict(seed=602, n=300, dim=2),
    dict(seed=603, n=200, offset=777.5),
    dict(seed=604, n=250, periodic=True),
    dict(seed=605, n=200, dim=2, periodic=True, separating=True),
    dict(seed=606, n=200, groups=True, separating=True),
    dict(seed=607, n=40, crowding=12.0),
]


@pytest.mark.parametrize("params", WORLDS, ids=world_id)
def test_the_gpu_step_finds_the_cpu_steps_contacts(
    gpu_step: sweepcast.GpuStep, params: dict[str, Any]
) -> None:
    """The same pairs and statuses as the CPU step, bit for bit (random worlds have no pair
    within the bound of a graze, where the two could rightly differ); the GPU's times
    within GPU_BOUND, and everything the CPU step's answers are held to, with GPU_BOUND."""
    world = random_world(**params)
    cpu = sweepcast.find_contacts(*world.bodies(), **world.step_options())
    gpu = sweepcast.find_contacts(*world.bodies(), device=gpu_step, **world.step_options())
    check_contacts(world, gpu, sweepcast.GPU_BOUND, f"GPU ({gpu_step.adapter})")
    order = np.argsort(pair_keys(gpu.pairs, world.n))
    cpu_order = np.argsort(pair_keys(cpu.pairs, world.n))
    assert_bit_equal(gpu.pairs[order], cpu.pairs[cpu_order], "pairs")
    assert_bit_equal(gpu.status[order], cpu.status[cpu_order], "status")
    assert_bit_equal(gpu.images[order], cpu.images[cpu_order], "images")
    # The method on the step is the same call.
    again = gpu_step.find_contacts(*world.bodies(), **world.step_options())
    assert_contacts_bit_equal(again, gpu, "GpuStep.find_contacts")
    differ = int((gpu.times[order] != cpu.times[cpu_order]).sum())
    print(f"{gpu_step.adapter}: {len(gpu)} contacts, {differ} times differ from the CPU's")


@pytest.mark.parametrize("params", WORLDS[:5], ids=world_id)
def test_the_gpu_sweep_is_within_the_gpu_bound(
    gpu_step: sweepcast.GpuStep, params: dict[str, Any]
) -> None:
    world = random_world(**params)
    world.groups = None
    pairs = all_pairs(world.n)
    brute = brute_force_world(world, pairs)
    times = gpu_step.sweep(*world.bodies(), pairs, **world.options())
    assert isinstance(times, np.ndarray) and times.dtype == np.float32
    decoded, status = decode_times(times)
    assert_judged(world, pairs, decoded, status, sweepcast.GPU_BOUND, "GPU sweep")
    assert_hits_agree(
        world,
        pairs,
        brute.hits(),
        status != sweepcast.MISS,
        decoded,
        status,
        sweepcast.GPU_BOUND,
        "GPU sweep",
    )
    full = sweepcast.sweep(*world.bodies(), pairs, full=True, device=gpu_step, **world.options())
    assert isinstance(full, sweepcast.Impacts) and full.times.dtype == np.float32
    assert_judged(world, pairs, full.times, full.status, sweepcast.GPU_BOUND, "GPU sweep full")
    assert_hits_agree(
        world,
        pairs,
        brute.hits(),
        full.status != sweepcast.MISS,
        full.times,
        full.status,
        sweepcast.GPU_BOUND,
        "GPU sweep full",
    )
    miss = full.status == sweepcast.MISS
    assert np.all(np.isnan(full.points[miss])) and np.all(np.isfinite(full.points[~miss]))


def test_the_gpu_step_as_broad_phase_gives_the_events_of_cells(
    gpu_step: sweepcast.GpuStep,
) -> None:
    """The loop predicts every event in f64 from the bodies alone: the broad phase only
    finds partners, so the GPU step's gives the same events as the grid's, to the bit."""
    positions, velocities, radii, masses, side = lattice_gas(300, 0.3, 611)
    loops = {
        name: sweepcast.EventLoop(
            positions, velocities, radii, masses, periodic_box=side, broad_phase=broad_phase
        )
        for name, broad_phase in (("cells", "cells"), ("gpu", gpu_step))
    }
    for step in range(3):
        cells, gpu = (loops[name].advance(0.1) for name in ("cells", "gpu"))
        assert len(cells) > 50
        for field in (
            "times",
            "bodies",
            "partners",
            "walls",
            "images",
            "points",
            "normals",
            "impulses",
        ):
            assert_bit_equal(getattr(gpu, field), getattr(cells, field), f"step {step} {field}")
    assert loops["gpu"].broad_phase_runs > 0
    assert_bit_equal(loops["gpu"].positions, loops["cells"].positions, "positions")


def test_a_process_that_used_a_gpu_step_exits_cleanly(pytestconfig: pytest.Config) -> None:
    """Creating a GpuStep, using it and leaving the interpreter: exit status 0, no panic and
    no crash on the way out (the device is torn down after Python's own finalisation)."""
    script = (
        "import numpy as np, sweepcast\n"
        "try:\n"
        "    step = sweepcast.GpuStep()\n"
        "except sweepcast.DeviceError as error:\n"
        "    print('NO ADAPTER', error)\n"
        "    raise SystemExit(3)\n"
        "rng = np.random.default_rng(1)\n"
        "c = rng.uniform(0, 10, (500, 3))\n"
        "contacts = step.find_contacts(c, np.full(500, 0.3), rng.normal(0, 0.5, (500, 3)))\n"
        "loop = sweepcast.EventLoop(c[:8] * 3, np.ones((8, 3)), np.full(8, 0.3), np.ones(8),\n"
        "                           broad_phase=step)\n"
        "loop.advance(1.0)\n"
        "print('contacts', len(contacts))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ),
    )
    if done.returncode == 3 and "NO ADAPTER" in done.stdout:
        no_gpu(pytestconfig, RuntimeError(done.stdout.strip()))
    assert done.returncode == 0, f"exit status {done.returncode}:\n{done.stdout}\n{done.stderr}"
    for word in ("panicked", "Segmentation", "Aborted", "Traceback"):
        assert word not in done.stderr, done.stderr
    assert done.stdout.startswith("contacts ")


def test_the_adapter_is_named(gpu_step: sweepcast.GpuStep) -> None:
    assert isinstance(gpu_step.adapter, str) and gpu_step.adapter
    print(f"adapter: {gpu_step.adapter}")
