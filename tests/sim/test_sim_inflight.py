"""The bytes-in-flight bound (ptxopt.sim.inflight, Little's law) and its place in the throughput
estimate: what the walk measures (bytes at first waits, bytes x latency), the ratio four independent
loads buy over one load then its use, occupancy, the per-SM cap, the floors it never goes below, and
passes that leave loads alone leaving it alone.  Every cycle figure is an ESTIMATE of the sim model."""

from __future__ import annotations

import dataclasses

import pytest

from ptxopt.sim import simulate
from ptxopt.sim.device import DEVICES
from ptxopt.sim.inflight import DepthTracker, per_sm_bytes, wave_cycles
from ptxopt.sim.throughput import BOUND_NAMES, KernelFacts, estimate
from ptxopt.toolchain import compile_ptx, disassemble

L4 = DEVICES["L4"]
H100 = DEVICES["H100-SXM"]
UNCAPPED = dataclasses.replace(L4, inflight_cap_bytes_per_sm=0.0)

_HEAD = """.version 8.0
.target sm_89
.address_size 64
.visible .entry k(.param .u64 pa, .param .u64 po, .param .u32 n)
{
.reg .b32 %r<40>; .reg .b64 %rd<40>;
ld.param.u64 %rd1, [pa]; ld.param.u64 %rd2, [po]; ld.param.u32 %r9, [n];
cvta.to.global.u64 %rd3, %rd1; cvta.to.global.u64 %rd4, %rd2;
mov.u32 %r1, %tid.x; mov.u32 %r2, %ctaid.x; mov.u32 %r3, %ntid.x; mad.lo.s32 %r4, %r2, %r3, %r1;
mul.wide.s32 %rd5, %r4, 4; add.s64 %rd6, %rd3, %rd5; ld.global.u32 %r10, [%rd6];
"""
#: four 4-byte loads, each one's address from the previous one's value: one load, then its use
SERIAL = _HEAD + """
mul.wide.s32 %rd7, %r10, 4; add.s64 %rd8, %rd3, %rd7; ld.global.u32 %r11, [%rd8];
mul.wide.s32 %rd9, %r11, 4; add.s64 %rd10, %rd3, %rd9; ld.global.u32 %r12, [%rd10];
mul.wide.s32 %rd11, %r12, 4; add.s64 %rd12, %rd3, %rd11; ld.global.u32 %r13, [%rd12];
add.s64 %rd13, %rd4, %rd5; st.global.u32 [%rd13], %r13; ret; }
"""
#: the same four loads, independent: all issued before the first use
INDEPENDENT = _HEAD + """
mul.wide.s32 %rd7, %r9, 4; add.s64 %rd8, %rd6, %rd7; ld.global.u32 %r11, [%rd8];
add.s64 %rd10, %rd8, %rd7; ld.global.u32 %r12, [%rd10];
add.s64 %rd12, %rd10, %rd7; ld.global.u32 %r13, [%rd12];
add.s32 %r14, %r10, %r11; add.s32 %r15, %r12, %r13; add.s32 %r16, %r14, %r15;
add.s64 %rd13, %rd4, %rd5; st.global.u32 [%rd13], %r16; ret; }
"""

LAUNCH = ((4096, 1, 1), (256, 1, 1))


def walk(ptx: str, arch: str = "sm_89", **kw):
    c = compile_ptx(ptx, arch)
    return simulate(disassemble(c.cubin), c, l2="cold", **kw)


@pytest.fixture(scope="module")
def pair():
    return walk(SERIAL), walk(INDEPENDENT)


# -- what the walk measures ------------------------------------------------------------------------


def test_four_independent_loads_put_four_times_the_bytes_in_flight(pair):
    serial, indep = pair
    # the same misses at the same level: equal bytes x latency; four times the bytes at the first wait
    assert serial.miss_latency_bytes == indep.miss_latency_bytes > 0
    assert serial.inflight_bytes == 4 and indep.inflight_bytes == 16
    threads = 6 * 256  # six resident blocks of 256 threads
    a, b = (wave_cycles(threads, KernelFacts.of(r), UNCAPPED) for r in pair)
    assert a == pytest.approx(4 * b)
    # uncapped, one wave's bound is the walked thread's exposed round trips: never above its own time
    assert a <= serial.single_warp_cycles and b <= indep.single_warp_cycles


def test_the_bound_in_the_estimate_moves_by_the_same_ratio(pair):
    e = [estimate(r, LAUNCH, UNCAPPED, "throughput", l2="cold") for r in pair]
    assert e[0].wave_bounds["bytes in flight"] == pytest.approx(4 * e[1].wave_bounds["bytes in flight"])
    assert list(e[0].bounds) == list(BOUND_NAMES)
    assert any("B per warp at its first wait" in n for n in e[0].notes)


def test_low_occupancy_raises_the_bound(pair):
    f = KernelFacts.of(pair[0])
    full = estimate(dataclasses.replace(f, registers=32), LAUNCH, UNCAPPED, "throughput", l2="cold")
    low = estimate(dataclasses.replace(f, registers=255), LAUNCH, UNCAPPED, "throughput", l2="cold")
    assert low.occupancy["warps_per_sm"] < full.occupancy["warps_per_sm"]
    assert low.bounds["bytes in flight"] > full.bounds["bytes in flight"]


def test_the_cap_bounds_bytes_in_flight_per_sm(pair):
    f = KernelFacts.of(pair[1])
    threads = 48 * 32
    got, capped = per_sm_bytes(threads, f, L4)
    assert capped and got == L4.inflight_cap_bytes_per_sm < threads * f.inflight_bytes
    assert wave_cycles(threads, f, L4) > wave_cycles(threads, f, UNCAPPED)
    assert any("capped at" in n for n in estimate(f, LAUNCH, L4, "throughput", l2="cold").notes)


@pytest.mark.parametrize("dram_bytes", [0, 1 << 20, 1 << 30])
@pytest.mark.parametrize("dev", [L4, H100, UNCAPPED])
def test_never_below_the_floors(pair, dev, dram_bytes):
    for r in pair:
        e = estimate(r, LAUNCH, dev, "throughput", l2="cold", dram_floor={"floor_bytes": dram_bytes,
                                                                            "source": "exact"})
        b = e.bounds
        assert b["bytes in flight"] >= max(b["DRAM bandwidth"], b["L2 bandwidth"])
        assert e.cycles >= b["DRAM bandwidth"]
        assert e.cycles >= max(v for k, v in e.wave_bounds.items())  # the bound is part of the estimate
        if b["bytes in flight"] == max(b["DRAM bandwidth"], b["L2 bandwidth"]):
            assert e.binding != "bytes in flight"  # at a tie the floor is named


def test_h100_needs_several_times_the_l4s_bytes_in_flight():
    need = {d.name: d.dram_bytes_per_cycle * d.latencies.dram for d in (L4, H100)}
    assert need["H100-SXM"] > 4 * need["L4"]
    for d in DEVICES.values():
        assert d.sources.get("inflight_cap_bytes_per_sm") and "inflight_cap_bytes_per_sm" in d.estimated


def test_no_waited_miss_no_bound():
    f = KernelFacts(100.0, 10, registers=32)
    assert wave_cycles(1024, f, L4) == 0.0
    e = estimate(f, LAUNCH, L4, "throughput")
    assert e.bounds["bytes in flight"] == max(e.bounds["L2 bandwidth"], e.bounds["DRAM bandwidth"])


# -- the tracker on hand-made sequences ------------------------------------------------------------


def test_tracker_one_load_then_use_and_four_before_the_first_use():
    one = DepthTracker()
    for i in range(4):
        one.issue(i, 0, 4, 10.0 * i * 100, 10.0 * i * 100 + 500)
        one.wait(0, 10.0 * i * 100 + 1)
    four = DepthTracker()
    for i in range(4):
        four.issue(i, i % 6, 4, i, 500 + i)
    for i in range(4):
        four.wait(i % 6, 10 + i)
    assert (one.depth, four.depth) == (4, 16)
    assert one.area == four.area == 4 * 4 * 500


def test_tracker_load_issued_an_iteration_ahead_counts_two():
    t = DepthTracker()
    t.issue(0, 0, 4, 0, 500)  # prologue: load of iteration 0
    for i in range(1, 9):  # iteration i-1 issues the load of i, then waits on i-1's
        t.issue(i, i % 2, 4, 250 * i, 250 * i + 500)
        t.wait((i - 1) % 2, 250 * i + 1)
    assert t.depth == 8


def test_tracker_depbar_waits_only_for_what_it_releases():
    t = DepthTracker()
    t.issue(0, 3, 8, 0, 400)
    t.issue(1, 3, 8, 1, 401)
    t.wait(3, 2, upto=400)  # DEPBAR SB3, 1: the older one is in
    assert t.depth == 16 and t.by_bar[3] == [1]
    t.wait(3, 402)  # already seen: no second sample
    assert t.sampled == 16


def test_tracker_steady_state_extrapolation_scales_sums_not_depth():
    t = DepthTracker()
    t.issue(0, 0, 4, 0, 500)
    t.wait(0, 1)
    snap = t.snapshot()
    t.issue(1, 0, 4, 600, 1100)
    t.wait(0, 601)
    t.extrapolate(snap, 3.0, 1800)
    assert t.area == 4 * 500 * 5 and t.depth == 4


# -- loops and passes --------------------------------------------------------------------------------

LOOP = """.version 8.0
.target sm_89
.address_size 64
.visible .entry k(.param .u64 pa, .param .u64 po, .param .u32 n)
{
.reg .pred %p<4>; .reg .b32 %r<40>; .reg .b64 %rd<40>;
ld.param.u64 %rd1, [pa]; ld.param.u64 %rd2, [po]; ld.param.u32 %r9, [n];
cvta.to.global.u64 %rd3, %rd1; cvta.to.global.u64 %rd4, %rd2;
mov.u32 %r1, %tid.x; mov.u32 %r2, %ctaid.x; mov.u32 %r3, %ntid.x; mad.lo.s32 %r4, %r2, %r3, %r1;
mul.lo.s32 %r5, %r4, %r9; mul.wide.s32 %rd5, %r5, 4; add.s64 %rd6, %rd3, %rd5;
mov.u32 %r6, 0; mov.u32 %r7, 0;
$L_loop:
ld.global.u32 %r10, [%rd6]; add.s32 %r7, %r7, %r10; add.s64 %rd6, %rd6, 4;
add.s32 %r6, %r6, 1; setp.lt.s32 %p1, %r6, %r9; @%p1 bra $L_loop;
mul.wide.s32 %rd7, %r4, 4; add.s64 %rd8, %rd4, %rd7; st.global.u32 [%rd8], %r7; ret; }
"""


@pytest.mark.slow
def test_loop_bytes_in_flight_per_trip_times_trips():
    r = [walk(LOOP, loop_trips=n) for n in (8, 16, 24)]
    per_trip = (r[1].miss_latency_bytes - r[0].miss_latency_bytes) / 8
    assert per_trip > 0
    assert r[2].miss_latency_bytes - r[1].miss_latency_bytes == pytest.approx(8 * per_trip)
    # each thread walks its own row (lane stride n x 4 B): every 4-byte load is its own bytes of its own
    # sector, so ptxas's 4-way unrolled body has 16 B in flight at its wait and the remainder's 4 B; the
    # mean over first waits moves towards the unrolled body's as the trips grow, never away
    assert 0 < r[0].inflight_bytes <= r[1].inflight_bytes <= r[2].inflight_bytes <= 16
    full = walk(LOOP, loop_trips=24, steady_state=False)  # steady-state extrapolation = the full replay
    assert (full.inflight_bytes, full.miss_latency_bytes) == (r[2].inflight_bytes, r[2].miss_latency_bytes)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["st_cache_wt", "st_cache_cs"])
def test_passes_that_leave_loads_alone_leave_bytes_in_flight_alone(name):
    from ptxopt.ptx.emit import emit
    from ptxopt.ptx.parser import parse
    from ptxopt.passes.passmanager import PassManager

    for ptx in (INDEPENDENT, LOOP):
        out = emit(PassManager(name).run(parse(ptx, "k")).module)
        assert out != ptx  # the pass changed the stores
        a, b = walk(ptx), walk(out)
        assert (a.inflight_bytes, a.miss_latency_bytes) == (b.inflight_bytes, b.miss_latency_bytes)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["prefetch_L1"])
def test_a_prefetch_moves_bytes_in_flight_earlier_never_removes_them(name):
    """A prefetch's fill is a transfer with the latency of its level, like the miss it replaces: the
    bytes x latency of the walk's misses do not fall, and the bytes stay in flight (a prefetch adds
    bytes in flight; it never takes the loads it serves out of the bound)."""
    from ptxopt.ptx.emit import emit
    from ptxopt.ptx.parser import parse
    from ptxopt.passes.passmanager import PassManager

    for ptx in (INDEPENDENT, LOOP):
        out = emit(PassManager(name).run(parse(ptx, "k")).module)
        assert out != ptx
        a, b = walk(ptx), walk(out)
        assert b.miss_latency_bytes >= a.miss_latency_bytes > 0
        assert b.inflight_bytes > 0


def test_tracker_one_load_is_one_entry_whatever_its_parts():
    t = DepthTracker()
    t.issue(0, -1, 4, 0, 500, key=("a", 0))  # a prefetch's fill of sector a:0
    t.claim(("a", 0), 5, 2)  # the load of step 5 finds it ...
    t.issue(5, 2, 12, 5, 505)  # ... and owes the 12 bytes beyond the prefetch's share
    t.issue(6, 2, 16, 6, 506)
    assert t.by_bar[2] == [5, 6] and t.out[5][0] == 16
    t.wait(2, 7)
    assert t.depth == 32 and t.area == 4 * 500 + 12 * 500 + 16 * 500
