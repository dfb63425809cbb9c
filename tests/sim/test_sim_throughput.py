"""The device tables (ptxopt.sim.device) and the whole-launch estimate
(ptxopt.sim.throughput): occupancy rules on hand-computed cases, waves and the
tail wave, the DRAM roofline, objectives, assumed grids, error bars."""

from __future__ import annotations

import dataclasses
import math
from types import SimpleNamespace

import pytest

from ptxopt.sim.device import DEFAULT_BY_ARCH, DEVICES, device_for, device_named
from ptxopt.sim.latency import LATENCIES
from ptxopt.sim.occupancy import LIMITS
from ptxopt.sim.throughput import (ASSUMED_WAVES, BOUND_NAMES, KernelFacts, assumed_blocks, default_objective,
                                   estimate, launch_shape)

L4 = DEVICES["L4"]
H100 = DEVICES["H100-SXM"]


def facts(single=1000.0, issued=100, mem=0, l1=0, l2=0, regs=32, smem=0, err=0.25):
    return KernelFacts(single, issued, mem, l1, l2, regs, smem, err, "test basis")


# -- device tables ----------------------------------------------------------------


def test_every_device_field_is_cited_and_estimates_are_marked():
    cited = ("sms", "clock_mhz", "base_clock_mhz", "dram_gbps", "l2_bytes", "l1_shared_bytes_per_sm",
             "l2_bytes_per_cycle", "l1_bytes_per_cycle", "lsu_instructions_per_cycle", "limits", "issue", "latencies")
    for dev in DEVICES.values():
        for f in cited:
            assert dev.sources.get(f), f"{dev.name}.{f} has no source"
        for f in dev.estimated:
            assert "estimate" in dev.sources[f] or "third-party" in dev.sources[f] or "not verified" in dev.sources[f]
    # the vendor figures the defaults rest on
    assert (L4.arch, L4.sms, L4.clock_mhz, L4.dram_gbps, L4.l2_bytes) == ("sm_89", 58, 2040, 300, 48 << 20)
    assert (H100.arch, H100.sms, H100.clock_mhz, H100.dram_gbps, H100.l2_bytes) == ("sm_90", 132, 1980, 3350, 50 << 20)


def test_default_devices_and_device_option():
    assert device_for("sm_89") is L4 and DEFAULT_BY_ARCH["sm_89"] == "L4"
    assert device_for("sm_90a") is H100
    assert device_for("sm_90", "h100-sxm") is H100
    with pytest.raises(ValueError, match="sm_90"):
        device_for("sm_89", "H100-SXM")  # a device of another architecture than the SASS
    with pytest.raises(ValueError, match="known"):
        device_named("V100")
    assert "substituted" in device_for("sm_86").name and device_for("sm_86").limits is LIMITS["sm_86"]


def test_latency_and_throughput_read_the_same_tables():
    for dev in DEVICES.values():
        assert dev.limits is LIMITS[dev.arch]
        assert dev.latencies is LATENCIES[dev.arch]
        assert dev.issue_per_cycle == LATENCIES[dev.arch].issue_per_cycle
    # one clock converts both objectives' cycles to seconds
    lat = estimate(facts(), (None, 256), L4, "latency")
    thr = estimate(facts(), ((58, 1, 1), 256), L4, "throughput")
    assert lat.seconds == pytest.approx(lat.cycles / 2040e6)
    assert thr.seconds == pytest.approx(thr.cycles / 2040e6)


# -- occupancy (hand-computed: the CUDA occupancy rules) ------------------------------


def test_occupancy_255_registers_256_threads():
    # 255 x 32 = 8160 -> 8192 registers per warp (unit 256); 65536 / 8192 = 8 warps; 8 warps / block -> 1 block
    e = estimate(facts(regs=255), ((58, 1, 1), (256, 1, 1)), L4, "throughput")
    assert e.occupancy == {"warps_per_sm": 8, "blocks_per_sm": 1, "occupancy": pytest.approx(8 / 48),
                           "limited_by": "registers"}


def test_occupancy_shared_memory_limited_with_the_reserved_kilobyte():
    # 30 KB dynamic + 1 KB reserved = 31 KB per block: floor(100 / 31) = 3 blocks of 4 warps on sm_89
    e = estimate(facts(regs=32), ((1, 1, 1), (128, 1, 1), 30 * 1024), L4, "throughput")
    assert (e.occupancy["blocks_per_sm"], e.occupancy["limited_by"]) == (3, "shared memory")
    assert e.occupancy["occupancy"] == pytest.approx(12 / 48)
    # the static shared memory ptxas reports counts too: 20 KB static + 10 KB dynamic is the same 30 KB
    e2 = estimate(facts(regs=32, smem=20 * 1024), ((1, 1, 1), (128, 1, 1), 10 * 1024), L4, "throughput")
    assert e2.occupancy == e.occupancy
    # without the reserved kilobyte 3 x 33 KB would fit; with it only 2 do (34 KB each)
    assert estimate(facts(), (1, 128, 33 * 1024), L4, "throughput").occupancy["blocks_per_sm"] == 2


def test_occupancy_block_limited_and_warp_limited():
    e = estimate(facts(regs=16), (1, 32), L4, "throughput")  # 1-warp blocks: the 24-block cap binds first
    assert (e.occupancy["blocks_per_sm"], e.occupancy["limited_by"], e.occupancy["occupancy"]) == (24, "blocks", 0.5)
    e = estimate(facts(regs=16), (1, 1024), L4, "throughput")  # 32 warps: one block of 48 warps' room
    assert (e.occupancy["blocks_per_sm"], e.occupancy["limited_by"]) == (1, "warps")
    # H100 (sm_90): 64 registers -> 2048 per warp -> 32 warps -> 8 blocks of 4 warps = 50%
    e = estimate(facts(regs=64), (1, 128), H100, "throughput")
    assert (e.occupancy["blocks_per_sm"], e.occupancy["limited_by"], e.occupancy["occupancy"]) == (8, "registers", 0.5)


# -- waves, tail, bounds ------------------------------------------------------------


def test_tail_wave_costs_what_its_blocks_cost():
    # 256-thread blocks, 32 registers: 6 blocks (48 warps) per SM.  58 x 7 blocks: 7 per SM = one full
    # wave of 6 and a tail of 1.  Issue-bound: a wave of n blocks takes ceil(8n / 4) x issued cycles.
    f = facts(single=10.0, issued=1000)
    e = estimate(f, (58 * 7, 256), L4, "throughput")
    assert (e.full_waves, e.tail_blocks) == (1, 1)
    assert e.waves == pytest.approx(7 / 6)
    assert e.binding == "issue"
    assert e.cycles == pytest.approx(12 * 1000 + 2 * 1000)  # not 2 full waves (24 x 1000)
    # exactly two full waves
    two = estimate(f, (58 * 12, 256), L4, "throughput")
    assert (two.full_waves, two.tail_blocks, two.cycles) == (2, 0, 24 * 1000)


def test_latency_bound_waves_each_pay_the_single_warp_path():
    f = facts(single=5000.0, issued=10)
    e = estimate(f, (58 * 13, 256), L4, "throughput")  # 13 per SM at 6 per wave: 2 full waves + a tail
    assert e.binding == "latency" and e.cycles == 3 * 5000
    assert e.bounds["latency"] == 3 * 5000


def test_bandwidth_bounds_scale_with_resident_threads():
    f = facts(single=10.0, issued=10, mem=4, l1=64, l2=32)
    e = estimate(f, (58 * 6, 256), L4, "throughput")  # one full wave of 6 blocks = 1536 threads, 48 warps
    assert e.bounds["LSU issue"] == 48 * 4
    assert e.bounds["L1 bandwidth"] == pytest.approx(1536 * 64 / 128)
    assert e.bounds["L2 bandwidth"] == pytest.approx(1536 * 32 / L4.l2_bytes_per_cycle)
    assert e.binding == "L2 bandwidth" and e.cycles == pytest.approx(e.bounds["L2 bandwidth"])
    assert list(e.bounds) == list(BOUND_NAMES)


def test_roofline_no_estimate_beats_dram_bytes_over_bandwidth():
    f = facts(single=100.0, issued=20, mem=2, l1=8, l2=8)
    big = 4 << 30  # 4 GiB streamed: far over the 48 MB L2
    e = estimate(f, (58 * 6 * 100, 256), L4, "throughput", footprint_bytes=big)
    assert e.dram_bytes == big and e.binding == "DRAM bandwidth"
    assert e.seconds >= big / (L4.dram_gbps * 1e9) * (1 - 1e-9)
    assert e.seconds == pytest.approx(big / (L4.dram_gbps * 1e9))
    # L2 residency is a stated choice: cold (the default, L2 flushed as benchmarks do) streams even a
    # footprint that fits in L2 from DRAM; warm keeps it there, and says which it took
    half = L4.l2_bytes // 2
    cold = estimate(f, (58 * 6 * 100, 256), L4, "throughput", footprint_bytes=half)
    assert cold.l2 == "cold" and cold.dram_bytes == half
    assert cold.seconds >= half / (L4.dram_gbps * 1e9) * (1 - 1e-9)
    warm = estimate(f, (58 * 6 * 100, 256), L4, "throughput", footprint_bytes=half, l2="warm")
    assert warm.dram_bytes == 0 and warm.bounds["DRAM bandwidth"] == 0
    assert any("L2 warm (chosen)" in n for n in warm.notes) and warm.to_json()["l2"] == "warm"
    with pytest.raises(ValueError, match="L2 state"):
        estimate(f, (58 * 6 * 100, 256), L4, "throughput", footprint_bytes=half, l2="hot")
    # unknown footprint: no DRAM bound, and it says so
    none = estimate(f, (58 * 6 * 100, 256), L4, "throughput")
    assert none.bounds["DRAM bandwidth"] == 0 and any("footprint unknown" in n for n in none.notes)


# -- objectives, assumed grids, error bars ------------------------------------------


def test_objectives_and_error_bars():
    f = facts(single=777.0)
    lat = estimate(f, None, L4)
    assert lat.objective == "latency" and lat.cycles == 777 and lat.expected_error == 0.25
    assert lat.to_json()["estimate"] == {"cycles": 777.0, "seconds": pytest.approx(777 / 2040e6),
                                         "kind": "estimate", "expected_error": 0.25}
    thr = estimate(f, (100, 128), L4)  # a block size is known: throughput by default
    assert thr.objective == "throughput" and thr.expected_error is None
    assert thr.to_json()["estimate"]["expected_error"] == "uncalibrated" and thr.kind == "estimate"
    assert default_objective(None) == "latency" and default_objective((None, 128)) == "throughput"
    with pytest.raises(ValueError, match="block"):
        estimate(f, None, L4, "throughput")
    with pytest.raises(ValueError, match="objective"):
        estimate(f, (1, 32), L4, "speed")


def test_assumed_grid_is_fixed_by_the_original_kernel():
    orig = facts(single=3000.0, issued=50, regs=40)  # 6 blocks of 256 threads per SM
    budget = dataclasses.replace(orig, single_warp_cycles=2600.0, registers=48)  # 5 blocks per SM
    launch = (None, 256)
    blocks = assumed_blocks(orig, launch, L4)
    assert blocks == ASSUMED_WAVES * 58 * 6
    before = estimate(orig, launch, L4, "throughput", blocks=blocks)
    after = estimate(budget, launch, L4, "throughput", blocks=blocks)
    assert before.assumed and after.assumed and before.blocks == after.blocks == blocks
    assert (before.occupancy["blocks_per_sm"], after.occupancy["blocks_per_sm"]) == (6, 5)
    # the same work in 5 latency-bound waves instead of 4: slower, though one warp got faster
    assert after.full_waves == 4 and after.tail_blocks == 4
    assert after.cycles == 5 * 2600 > before.cycles == 4 * 3000
    assert estimate(budget, launch, L4, "latency").cycles < estimate(orig, launch, L4, "latency").cycles
    # without blocks=, the kernel's own occupancy sets the count (and the note says to pass the original's)
    own = estimate(budget, launch, L4, "throughput")
    assert own.blocks == ASSUMED_WAVES * 58 * 5 and any("original" in n for n in own.notes)


def test_launch_is_duck_typed():
    launch = SimpleNamespace(grid=(8, 2, 1), block=(32, 4, 1), shared_bytes=512, scalars={"n": 4}, origin="performance",
                             role="performance")
    s = launch_shape(launch)
    assert (s.grid, s.block, s.shared_bytes, s.scalars, s.origin) == ((8, 2, 1), (32, 4, 1), 512, {"n": 4},
                                                                       "performance")
    assert s.blocks == 16 and s.threads == 128
    assert launch_shape(grid=4, block=(64, 2)).threads == 128
    e = estimate(facts(), launch, L4, "throughput")
    assert e.blocks == 16 and not e.assumed and e.to_json()["launch"]["origin"] == "performance"
    assert math.isclose(e.waves, 16 / (58 * e.occupancy["blocks_per_sm"]))


def test_simulate_with_a_launch_is_the_estimate_of_its_single_warp_result():
    """One implementation: simulate(launch=) and estimate(simulate(), launch) give the same cycles."""
    from ptxopt.sim import simulate
    from ptxopt.toolchain import KernelResources

    from tests.sim.test_sim import ins, listing

    items = [ins("LDG.E", f"R{2 + i}, [R40.64+{hex(128 * i)}]", wb=0) for i in range(4)]
    items += [ins("FFMA", "R10, R2, R3, RZ", wait=(0,))] + [ins("FFMA", "R11, R10, R10, RZ") for _ in range(30)]
    items += [ins("STG.E", "[R40.64], R11", rb=1), ins("EXIT")]
    lst = listing(*items)
    res = KernelResources(registers=72, shared_bytes=2048)
    alone = simulate(lst, res)
    f = KernelFacts.of(alone)
    assert (f.registers, f.shared_bytes, f.memory_instructions) == (72, 2048, 5)
    assert KernelFacts.of(f.to_json()) == f
    for launch in ((58 * 9, 256, 0), (58 * 3 + 7, 128, 4096), (1, 32, 0)):
        many = simulate(lst, res, launch=launch)
        e = estimate(alone, launch, L4, "throughput", footprint_bytes=0)
        assert many.cycles == e.cycles and many.bound == e.binding and many.occupancy == e.occupancy


def test_a_block_that_cannot_be_resident_is_flagged_not_hidden():
    # 255 registers x 1024 threads: 8 warps fit by registers, the block has 32 -> 0 blocks per SM
    e = estimate(facts(regs=255), (58, 1024), L4, "throughput")
    assert e.occupancy["blocks_per_sm"] == 0 and e.occupancy["limited_by"] == "registers"
    assert any(n.startswith("WARNING") for n in e.notes) and e.cycles > 0


def test_the_equivalence_launch_is_accepted_as_is():
    from ptxopt.equivalence.launch import Launch, Origin, Role

    la = Launch((40, 1, 1), (128, 1, 1), 1024, {"n": 7}, origin=Origin.OPTIONS, role=Role.PERFORMANCE)
    s = launch_shape(la)
    assert (s.grid, s.block, s.shared_bytes, s.scalars, s.origin) == ((40, 1, 1), (128, 1, 1), 1024, {"n": 7},
                                                                       "options")
    assert estimate(facts(), la, L4).objective == "throughput"
