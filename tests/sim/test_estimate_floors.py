"""The throughput estimate takes the launch's floors inside its max (ptxopt.sim.throughput): whatever the
walked facts say, the estimate is at least the arithmetic work over the device's peak, the footprint's
crossings of L2 and (cold L2) of DRAM, and the bound that binds is named.  ESTIMATES throughout.

The property is checked on generated facts, launches and floors (the walk can undercount in many ways:
a loop counted once, a trip fallback, traffic it misses), and on the kernel that showed the bug: a
register-tiled SGEMM with no check launch, whose K loop the static trip fallback counted once.
"""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

from ptxopt.sim.device import DEVICES
from ptxopt.sim.throughput import BOUND_NAMES, DramFloor, KernelFacts, estimate

L4 = DEVICES["L4"]
CLASSES = ("fp32", "fp16", "tensor:fp16", "tensor:int8")


def _case(rng: random.Random):
    f = KernelFacts(rng.choice([1.0, 50.0, 5e3]), rng.choice([1, 40, 2000]), rng.choice([0, 3, 60]),
                    rng.choice([0, 16, 512]), rng.choice([0, 4, 256]), rng.choice([16, 64, 128, 255]),
                    rng.choice([0, 4096, 40000]))
    grid = (rng.choice([1, 7, 58 * 13, 4096]), rng.choice([1, 3]), 1)
    block = (rng.choice([32, 96, 256, 1024]), 1, 1)
    arith = {c: rng.choice([0.0, 10.0, 1e5, 3e7]) for c in rng.sample(CLASSES, rng.randint(0, 3))}
    fb = rng.choice([None, 0, 4096, 64 << 20, 4 << 30])
    floor = None if fb is None and rng.random() < 0.5 else DramFloor(fb, "exact" if fb is not None else "unknown")
    return f, (grid, block), arith, floor


@pytest.mark.parametrize("seed", range(4))
def test_no_estimate_is_below_a_floor_it_was_given(seed):
    rng = random.Random(seed)
    for _ in range(150):
        f, launch, arith, floor = _case(rng)
        l2 = rng.choice(["cold", "warm"])
        e = estimate(f, launch, L4, "throughput", floors=arith, dram_floor=floor, l2=l2)
        want = {"arithmetic": max(arith.values(), default=0.0)}
        if floor is not None and floor.floor_bytes is not None:
            want["L2 bandwidth"] = floor.floor_bytes / (L4.sms * L4.l2_bytes_per_cycle)
            if l2 == "cold" or floor.floor_bytes > L4.l2_bytes:
                want["DRAM bandwidth"] = floor.floor_bytes / (L4.sms * L4.dram_bytes_per_cycle)
        if "DRAM bandwidth" in want:  # DRAM moves at least the distinct bytes read + written
            assert e.dram_bytes >= floor.floor_bytes
        for name, cycles in want.items():
            assert e.cycles >= cycles * (1 - 1e-12), (name, cycles, e.cycles, f, launch, arith, floor, l2)
            assert e.bounds[name] >= cycles * (1 - 1e-12)
        assert list(e.bounds) == list(BOUND_NAMES)
        assert e.cycles >= max(e.bounds.values()) * (1 - 1e-12)
        top = max(e.bounds.values())
        assert e.bounds[e.binding] == top
        if e.binding == "arithmetic":
            assert arith[e.arithmetic_class] == top
            assert any(n.startswith("arithmetic floor: " + e.arithmetic_class) for n in e.notes)


def test_a_floor_binds_and_is_named():
    """A walk that saw a loop once (1 FMA per thread) against the launch's 8.6 G FMAs."""
    f = KernelFacts(600.0, 1700, 40, 2000, 600, 64, 4096)
    fp32 = 2048 ** 3 / (L4.sms * 128)
    e = estimate(f, ((32, 32, 1), (16, 16, 1)), L4, "throughput", floors={"fp32": fp32})
    assert e.binding == "arithmetic" and e.arithmetic_class == "fp32"
    assert e.cycles == pytest.approx(fp32)
    assert e.to_json()["arithmetic_class"] == "fp32"
    # without the floors: the walk's own bounds, far below the work
    assert estimate(f, ((32, 32, 1), (16, 16, 1)), L4, "throughput").cycles < fp32 / 10


def test_the_l2_floor_holds_with_a_warm_l2():
    """A warm L2 removes the DRAM time of a footprint that fits, not its crossing of L2 to the SMs."""
    f = KernelFacts(10.0, 10, 1, 4, 0, 32)
    e = estimate(f, ((4096, 1, 1), (256, 1, 1)), L4, "throughput", dram_floor=DramFloor(32 << 20, "exact"),
                 l2="warm")
    assert e.bounds["DRAM bandwidth"] == 0
    assert e.binding == "L2 bandwidth"
    assert e.cycles == pytest.approx((32 << 20) / (L4.sms * L4.l2_bytes_per_cycle))


@pytest.mark.slow
def test_sgemm_on_the_static_trip_fallback_still_meets_its_fp32_floor():
    """No interpreter profile at all (profile_loops off: the static fallback counts the K loop's 256
    trips as 8): the estimate is still at least the 8.6 G FMAs over the L4's FP32 peak, named."""
    from ptxopt.measure.backend import MeasureJob
    from ptxopt.measure.sim import SimBackend
    from ptxopt.ptx.parser import parse
    from ptxopt.sim.device import device_for
    from ptxopt.sim.floors import launch_floors
    from test_floors import outside

    text, entry, launch = outside("sgemm_reg")
    fl = launch_floors(text, entry, launch, device_for("sm_89"))
    job = MeasureJob(text, "sm_89", None, entry, module=parse(text, entry), objective="throughput",
                     performance=launch, check_block=launch.block, profile_loops=False)
    (m,) = SimBackend().measure_many([job])
    assert m.extra["trip_counts"].startswith("static")
    assert 0.99 * 2048 ** 3 <= fl.work["fp32"] <= 2048 ** 3  # a lower bound: 255 of the 256 trips
    assert fl.violations(m.cycles) == []
    assert m.extra["bound"] == "arithmetic"


@pytest.mark.slow
def test_loop_trips_come_from_the_performance_launch_without_a_check_launch():
    """A contract with the performance launch only (a kernel from outside the corpus): the loop-control
    slice runs on it, so the K loop counts its 256 trips instead of the static fallback's."""
    from ptxopt.measure.loop_slice import launch_only_check, trip_counts_for
    from ptxopt.ptx.parser import parse
    from ptxopt.sim import decode
    from ptxopt.toolchain import compile_ptx, disassemble
    from test_floors import outside

    text, entry, launch = outside("sgemm_reg")
    module = parse(text, entry)
    program = decode(disassemble(compile_ptx(text, "sm_89").cubin), entry)
    trips, source, notes = trip_counts_for(program, module, entry, check=None, performance=launch)
    assert source == "performance launch" and "$L__BB0_3 256" in notes[-1]
    # a scalar the launch does not give would be a guessed trip: refused, and the fallback says why
    partial = replace(launch, scalars={"sgemm_reg_param_3": 2048})
    assert launch_only_check(module, entry, partial)[0] is None
    _, source, notes = trip_counts_for(program, module, entry, check=None, performance=partial)
    assert source.startswith("static") and "sgemm_reg_param_4" in notes[-1]
