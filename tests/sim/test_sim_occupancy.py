"""Occupancy (ptxopt.sim.occupancy) against published worked examples, and the
many-warp bounds of ptxopt.sim.simulate(launch=...) on hand-built SASS."""

from __future__ import annotations

import pytest

from ptxopt.sim import simulate
from ptxopt.sim.model import EXPECTED_ERROR
from ptxopt.sim.device import device_for
from ptxopt.sim.occupancy import LIMITS, limits_for, occupancy
from ptxopt.toolchain import KernelResources

from tests.sim.test_sim import ins, listing


# -- occupancy ---------------------------------------------------------------


def test_best_practices_guide_worked_example_cc70():
    # CUDA C++ Best Practices Guide, "Calculating Occupancy": CC 7.0, 37 registers:
    # 128-thread blocks -> 75% (12 blocks); 320-thread blocks -> 63% (4 blocks).
    a = occupancy("sm_70", 128, 37)
    assert a.blocks_per_sm == 12 and a.warps_per_sm == 48 and a.occupancy() == pytest.approx(0.75)
    assert a.limited_by == "registers"
    b = occupancy("sm_70", 320, 37)
    assert b.blocks_per_sm == 4 and b.occupancy() == pytest.approx(0.625)  # "63%"


def test_architecture_limits_from_the_programming_guide():
    assert (LIMITS["sm_80"].max_warps, LIMITS["sm_80"].max_blocks) == (64, 32)
    assert (LIMITS["sm_89"].max_warps, LIMITS["sm_89"].max_blocks) == (48, 24)
    assert (LIMITS["sm_90"].max_warps, LIMITS["sm_90"].max_blocks) == (64, 32)
    assert limits_for("sm_90a") is LIMITS["sm_90"]
    with pytest.raises(ValueError):
        limits_for("sm_61")


def test_block_and_warp_limits():
    # 1024-thread blocks: one per SM on sm_89 (48 warps) -> 2/3; two on sm_80 (64 warps).
    assert occupancy("sm_89", 1024, 32).blocks_per_sm == 1
    assert occupancy("sm_80", 1024, 32).blocks_per_sm == 2
    # tiny blocks hit the resident-block cap
    o = occupancy("sm_89", 32, 16)
    assert o.blocks_per_sm == 24 and o.limited_by == "blocks"


def test_register_limit_rounds_per_warp_and_to_four_warps():
    # 255 registers: 255*32 -> 8192 per warp -> 8 warps per SM; a 256-thread block fits once.
    o = occupancy("sm_89", 256, 255)
    assert o.blocks_per_sm == 1 and o.limited_by == "registers"
    # 64 registers on sm_80: 2048 per warp -> 32 warps -> 4 blocks of 8 warps = 50%.
    assert occupancy("sm_80", 256, 64).occupancy() == pytest.approx(0.5)
    # more registers than a thread may have: cannot launch
    assert occupancy("sm_89", 32, 256).blocks_per_sm == 0


def test_shared_memory_limit_includes_the_reserved_kilobyte():
    # 48 KB + 1 KB reserved per block: two fit in 100 KB on sm_89, four in 228 KB on sm_90.
    assert occupancy("sm_89", 128, 32, 48 * 1024).blocks_per_sm == 2
    assert occupancy("sm_90", 128, 32, 48 * 1024).blocks_per_sm == 4
    # 50 KB + 1 KB: only one fits in 100 KB
    o = occupancy("sm_89", 128, 32, 50 * 1024)
    assert o.blocks_per_sm == 1 and o.limited_by == "shared memory"
    assert occupancy("sm_89", 128, 32, 100 * 1024).blocks_per_sm == 0  # over the 99 KB per block


# -- many-warp bounds ----------------------------------------------------------


def _kernel(n_ffma: int, n_loads: int = 1):
    items = [ins("LDG.E", f"R{2 + i}, [R40.64+{hex(128 * i)}]", wb=0) for i in range(n_loads)]
    items.append(ins("FFMA", "R10, R2, R2, RZ", wait=(0,)))
    items += [ins("FFMA", "R11, R10, R10, RZ") for _ in range(n_ffma)]
    items.append(ins("STG.E", "[R40.64], R11", rb=1))
    items.append(ins("EXIT"))
    return listing(*items)


def _res(regs=32, smem=0):
    return KernelResources(registers=regs, shared_bytes=smem)


def test_one_thread_launch_is_the_single_warp_estimate():
    lst = _kernel(20)
    alone = simulate(lst, _res())
    one = simulate(lst, _res(), launch=((1, 1, 1), (1, 1, 1), 0))
    assert one.cycles == alone.cycles and one.resident_warps == 1 and one.bound == "latency"
    assert one.occupancy["blocks_per_sm"] == 24


def test_issue_bound_grows_with_resident_warps_and_registers_cap_it():
    lst = _kernel(400)
    one = simulate(lst, _res())
    # 58 blocks of 1024 threads: one per SM (warp limit), 32 warps = 8 per scheduler
    full = simulate(lst, _res(), launch=(58, 1024, 0))
    assert full.resident_warps == 32 and full.bound == "issue"
    assert full.cycles == pytest.approx(8 * full.issued_instructions)
    assert full.cycles > one.cycles
    # 255 registers: 8 warps per SM -> 2 per scheduler (a register budget changes the estimate)
    tight = simulate(lst, _res(regs=255), launch=(58 * 4, 256, 0))
    assert tight.resident_warps == 8 and tight.waves == 4
    assert tight.cycles == pytest.approx(4 * max(tight.single_warp_cycles, 2 * tight.issued_instructions))


def test_dram_bound_only_when_the_footprint_exceeds_l2():
    lst = _kernel(2, n_loads=8)  # 8 loads of distinct sectors + one store per thread
    tp = device_for("sm_89")
    launch = (58 * 6 * 2000, 256, 0)
    warm = simulate(lst, _res(), launch=launch)  # no footprint: L2-resident, as in a warm timing loop
    assert warm.l2_bytes == 8 * 4 + 4 and warm.bound != "DRAM bandwidth"
    big = 1 << 30
    r = simulate(lst, _res(), launch=launch, footprint_bytes=big)
    assert r.bound == "DRAM bandwidth"
    assert r.cycles == pytest.approx(big / tp.sms / tp.dram_bytes_per_cycle)
    small = simulate(lst, _res(), launch=launch, footprint_bytes=tp.l2_bytes // 2)
    assert small.cycles == warm.cycles


def test_every_estimate_carries_its_expected_error():
    r = simulate(_kernel(3), _res())
    assert r.expected_error == EXPECTED_ERROR > 0
    j = r.to_json()
    assert j["expected_error"] == EXPECTED_ERROR and j["cycles_error"].startswith("±")
    many = simulate(_kernel(3), _res(), launch=(1000, 256, 0))
    assert "not calibrated" in many.expected_error_basis


def test_lsu_pipe_accepts_one_memory_instruction_per_sm_cycle():
    # 16 loads of one word + 1 store per thread, 48 warps resident: 48 x 17 memory instructions at
    # 1/cycle beat the issue bound (12 warps x ~20 instructions).  The loads read the SAME word: after
    # the first they hit L1 on bytes the thread already has, under any lane layout, so the L1-L2 side
    # moves 4 B loaded + 4 B stored per thread and only the LSU pipe binds.  (Sixteen different words
    # per thread would be 64 B of sectors per thread while the lanes are unknown -- taken as each
    # lane's own bytes, so that a split access moves what the whole one does -- and bind on L2.)
    items = [ins("LDG.E", f"R{2 + i}, [R40.64]", wb=0) for i in range(16)]
    items += [ins("FFMA", "R30, R2, R3, RZ", wait=(0,)), ins("STG.E", "[R40.64], R30", rb=1), ins("EXIT")]
    r = simulate(listing(*items), _res(), launch=(58 * 6, 256, 0))
    assert r.resident_warps == 48
    assert r.bound == "LSU issue"
    assert r.cycles == pytest.approx(48 * 17)


@pytest.mark.slow
def test_expected_error_covers_the_published_baselines():
    """EXPECTED_ERROR is derived from, and must cover, the MAPE on the published sm_89 baselines."""
    import statistics
    import sys
    from pathlib import Path

    sys.path[:0] = [str(Path(__file__).resolve().parents[2] / "benchmarks" / "reports"), str(Path(__file__).resolve().parents[2] / "benchmarks")]
    from sim_calibration import PUBLISHED_BASELINES, _estimate

    errs = [abs(_estimate(k)[0].cycles / hw - 1) for k, hw in PUBLISHED_BASELINES.items()]
    assert statistics.mean(errs) <= EXPECTED_ERROR


def test_sim_backend_estimates_the_objective_on_the_performance_launch_never_the_check_launch():
    """The manifest's launch is the interpreter's check launch (2 blocks of
    128 threads for cuda_saxpy); it must never be estimated as if it were the
    user's. Latency: one warp, the calibrated error bar. Throughput:
    the performance launch (or, without one, the check launch's block with an
    assumed grid), labelled uncalibrated, with the footprint when given."""
    from ptxopt.kernels.corpus import get
    from ptxopt.equivalence.launch import Launch
    from ptxopt.measure.backend import MeasureJob
    from ptxopt.measure.sim import SimBackend

    spec = get("cuda_saxpy")
    text = spec.ptx_text()
    b = SimBackend()
    lat = b.measure(text, "sm_89", spec)  # objective latency (the default job)
    assert lat.extra["expected_error"] == EXPECTED_ERROR and lat.extra["performance"] is None
    assert not any(n.startswith("many warps") for n in lat.notes)
    perf = Launch((4096, 1, 1), (128, 1, 1), origin="options", role="performance", source="options",
                  footprint_bytes=3 * 4 * (1 << 20))
    jobs = [MeasureJob(text, "sm_89", spec, spec.entry, objective="throughput", performance=perf),
            MeasureJob(text, "sm_89", spec, spec.entry, objective="throughput", check_block=(128, 1, 1),
                       blocks=7424)]
    given, assumed = b.measure_many(jobs)
    assert given.extra["expected_error"] is None and any("uncalibrated" in n for n in given.notes)
    assert "grid 4096x1x1" in given.extra["performance"] and given.extra["waves"] >= 1
    assert any(n.startswith("many warps") for n in given.notes)
    assert f"footprint {perf.footprint_bytes} B" in " ".join(given.notes)
    assert "grid assumed: 7424 blocks" in assumed.extra["performance"]
    assert "from the check launch" in assumed.extra["performance"]
    assert given.cycles != assumed.cycles and lat.cycles < given.cycles