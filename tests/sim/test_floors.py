"""Floors the throughput estimate can never beat (ptxopt.sim.floors), as a property of corpus kernels
and kernels written outside the corpus, under every pass, ESTIMATES.

For each kernel at its performance launch and each pass: the estimate is at least the launch's exact
distinct DRAM bytes over the DRAM bandwidth (cold L2), the same sectors over the L2 bandwidth, and its
FP32 / FP16 / tensor work over the device's peak; and a pass that does not change which addresses
are accessed (every pass here) leaves the exact DRAM bytes unchanged.  A violation fails.

The fast tier sweeps a small slice (``tests/corpus_tiers.py``'s fast corpus, a few passes); the slow
tier every pass; ``benchmarks/reports/floors_sweep.py`` the corpus x every pass and records the violations.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from ptxopt.kernels.corpus import get
from ptxopt.ptx.emit import emit
from ptxopt.equivalence.launch import Launch, Origin, Role
from ptxopt.evaluate.candidate import _manifest_performance
from ptxopt.measure.backend import MeasureJob
from ptxopt.measure.sim import SimBackend
from ptxopt.ptx.parser import parse
from ptxopt.passes.base import PassError
from ptxopt.passes.registry import pass_names
from ptxopt.passes.passmanager import PassManager
from ptxopt.passes.pipeline import Pipeline
from ptxopt.sim.device import device_for
from ptxopt.sim.floors import launch_floors

from corpus_tiers import FAST_CORPUS

OUTSIDE = Path(__file__).resolve().parents[2] / "benchmarks" / "outside_kernels"
#: passes the fast tier tries on each fast kernel (the slow tier: every pass)
FAST_PASSES = ("prefetch_L1",)
#: the fast tier's slice of tests/corpus_tiers.py's fast corpus (one pointwise, one reduction, one Triton)
FAST_FLOORS = ("cuda_saxpy", "cuda_reduce_sum_smem", "triton_softmax_row")
#: the slow tier's kernels x every pass (the whole corpus x every pass: benchmarks/reports/floors_sweep.py)
SLOW_FLOORS = ("cuda_transpose_smem", "triton_matmul_f16")


def outside(name: str):
    """(ptx text, entry, performance launch) of a kernel in benchmarks/outside_kernels/ (no byte counts)."""
    text = (OUTSIDE / f"{name}.ptx").read_text()
    perf = json.loads((OUTSIDE / f"{name}.contract.json").read_text())["performance"]
    launch = Launch(tuple(perf["grid"]), tuple(perf["block"]), perf.get("shared_bytes", 0), perf["scalars"],
                    origin=Origin.CONTRACT,
                    role=Role.PERFORMANCE, source=f"{name}.contract.json", entry=name)
    return text, name, launch


def measured(text: str, arch: str, entry: str, launch, spec=None, original: str | None = None):
    """The sim backend's throughput Measurement of ``text`` (a rewrite of ``original``, None: not a
    rewrite) under ``launch`` (what eval and search see)."""
    job = MeasureJob(text, arch, spec, entry, module=parse(text, entry), objective="throughput",
                     performance=launch, check_block=launch.block, original=original)
    (m,) = SimBackend().measure_many([job])
    if isinstance(m, Exception):
        raise m
    return m


def estimate_cycles(text: str, arch: str, entry: str, launch, spec=None) -> float:
    """The sim backend's throughput estimate of ``text`` under ``launch``."""
    return measured(text, arch, entry, launch, spec).cycles


#: passes that only hint where bytes stay (cache operators, prefetches, the read-only path): they may
#: move bytes earlier or keep them nearer, never remove a sector's first transfer to L1
HINT_PASSES = frozenset({"cache_ca", "cache_cg", "cache_cs", "cache_cv", "st_cache_wb", "st_cache_wt",
                         "st_cache_cs", "prefetch_L1", "prefetch_L2", "nc_ld"})


def applied(text: str, name: str, launch, entry: str) -> str | None:
    """``text`` after pass ``name`` (bound to the launch); None when it does not apply or changes nothing."""
    from ptxopt.evaluate.candidate import bind_launch

    try:
        pl = bind_launch(Pipeline.parse(name), launch, entry)
        out = emit(PassManager(pl).run(parse(text, name)).module)
    except PassError:
        return None
    return None if out == text else out


def check(text: str, arch: str, entry: str, launch, spec, passes) -> list[str]:
    """Every floor violation of the kernel and of each pass's output (empty: none)."""
    dev = device_for(arch)
    base = launch_floors(text, entry, launch, dev)
    m0 = measured(text, arch, entry, launch, spec)
    problems = [f"original: {v}" for v in base.violations(m0.cycles)]
    for name in passes:
        out = applied(text, name, launch, entry)
        if out is None:
            continue
        fl = launch_floors(out, entry, launch, dev)
        m = measured(out, arch, entry, launch, spec, original=text)
        problems += [f"{name}: {v}" for v in fl.violations(m.cycles)]
        if base.footprint_source == fl.footprint_source == "exact" and base.dram_bytes != fl.dram_bytes:
            problems.append(f"{name}: DRAM bytes {base.dram_bytes:,} -> {fl.dram_bytes:,} (addresses unchanged)")
        problems += [f"{name}: {v}" for v in lost_floor(base, fl, m.cycles)]
        problems += [f"{name}: {v}" for v in hint_violations(name, m0, m)]
    return problems


def lost_floor(base, floors, cycles: float) -> list[str]:
    """A pass does not change which addresses are accessed, so the original's exact DRAM floor is the
    rewrite's too: a rewrite whose footprint is less known (``exact`` -> ``extrapolated``/``unknown``)
    must not be estimated below it."""
    if base.footprint_source != "exact" or base.dram_cycles is None or floors.footprint_source == "exact" \
            or cycles >= base.dram_cycles * (1 - 1e-6):
        return []
    return [f"original's exact DRAM floor {base.dram_cycles:,.0f} cycles > estimate {cycles:,.0f} "
            f"(footprint {floors.footprint_source})"]


def hint_violations(name: str, before, after) -> list[str]:
    """A cache hint never removes a transfer: the L2 bytes the walk charges per thread do not fall
    (a prefetch and the load of its sector are one transfer, a bypassing load is one more)."""
    if name not in HINT_PASSES:
        return []
    b, a = before.extra["facts"]["l2_bytes"], after.extra["facts"]["l2_bytes"]
    same_path = before.extra["facts"]["issued_instructions"] > 0 and before.extra.get("trip_counts") == \
        after.extra.get("trip_counts")
    return [f"L2 bytes per thread {b:,} -> {a:,} under a cache hint"] if same_path and a < b else []


def _corpus():
    assert set(FAST_FLOORS) <= set(FAST_CORPUS)
    return [pytest.param(k, id=k) for k in FAST_FLOORS] + [pytest.param(k, id=k, marks=pytest.mark.slow)
                                                            for k in SLOW_FLOORS]


@pytest.mark.parametrize("kid", _corpus())
def test_corpus_estimates_never_beat_the_floors(kid):
    spec = get(kid)
    perf = _manifest_performance(spec)
    passes = FAST_PASSES if kid in FAST_FLOORS else pass_names()
    assert check(spec.ptx_text(), spec.arch, spec.entry, perf, spec, passes) == []


@pytest.mark.parametrize("name", ["transpose", "bitmix", "warp_reduce",
                                  pytest.param("sgemm_reg", marks=pytest.mark.slow)])
def test_outside_kernels_never_beat_the_floors(name):
    """Kernels nobody here wrote, with a performance launch but no byte counts: the footprint comes
    from the kernel, and a prefetch hint cannot take the estimate below DRAM."""
    text, entry, launch = outside(name)
    assert check(text, "sm_89", entry, launch, None, FAST_PASSES) == []


#: a kernel whose row loop has an exact footprint, while its versioned loop's is not (the two paths
#: each update the induction variable, which the footprint's loop analysis does not merge yet)
WEAKENED = ("rows_dot", "loop_version_4")


def test_a_rewrite_whose_footprint_is_less_known_keeps_the_originals_dram_floor():
    """The rewrite's footprint is less known than the original's, yet its estimate keeps the
    original's exact DRAM floor (source ``carried``) and so cannot beat it."""
    kernel, name = WEAKENED
    text, entry, perf = outside(kernel)
    arch, spec = "sm_89", None
    dev = device_for(arch)
    base = launch_floors(text, entry, perf, dev)
    out = applied(text, name, perf, entry)
    fl = launch_floors(out, entry, perf, dev)
    assert base.footprint_source == "exact" and fl.footprint_source != "exact"  # the case this test is about
    m = measured(out, arch, entry, perf, spec, original=text)
    assert m.extra["footprint"]["source"] == "carried"
    assert m.extra["footprint"]["floor_bytes"] == base.dram_bytes
    assert lost_floor(base, fl, m.cycles) == [] and m.cycles >= base.dram_cycles * (1 - 1e-6)
    # the check finds the case: measured as if it were no rewrite, the estimate beats the original's floor
    alone = measured(out, arch, entry, perf, spec)
    assert alone.extra["footprint"]["source"] == fl.footprint_source
    assert lost_floor(base, fl, alone.cycles)


def test_a_floor_that_was_not_exact_is_not_carried():
    from ptxopt.analysis.carried_footprint import carried
    from ptxopt.analysis.global_footprint import LaunchFootprint

    cand = LaunchFootprint((), "unknown", None)
    for src in ("extrapolated", "unknown", "counts"):
        assert carried(LaunchFootprint((), src, None if src != "counts" else 100), cand) is cand
    exact = LaunchFootprint((), "exact", 100)
    assert carried(exact, LaunchFootprint((), "exact", 100)).source == "exact"
    got = carried(exact, cand)
    assert (got.source, got.floor_bytes) == ("carried", 100) and "carried from the original" in got.notes[-1]


def test_a_floor_violation_is_found():
    """The check can fail: an estimate with the DRAM floor's input taken away (the model before the
    footprint fed it) is below the transpose's 512 MiB over 300 GB/s."""
    text, entry, launch = outside("transpose")
    fl = launch_floors(text, entry, launch, device_for("sm_89"))
    job = MeasureJob(text, "sm_89", None, entry, module=parse(text, entry), objective="throughput",
                     performance=launch, check_block=launch.block)
    import ptxopt.measure.sim as sim_backend

    old = sim_backend._dram_floor
    sim_backend._dram_floor = lambda job, perf: None
    try:
        (m,) = SimBackend().measure_many([replace(job)])
    finally:
        sim_backend._dram_floor = old
    assert fl.dram_bytes == 2 * 8192 * 8192 * 4
    assert any(v.startswith("DRAM floor") for v in fl.violations(m.cycles))
