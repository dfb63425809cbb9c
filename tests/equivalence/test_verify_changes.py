"""Holes a verifier can have, one small hand-written kernel per class: thread-serial
schedules and executed-instruction coverage in the interpreter; in verify,
changed-instruction coverage (a change no launch ran is never ``equal``),
the thread-serial launch (a barrier dropped inside one warp), descending
inputs (a reduction skipping its first element), boundary scalars (a
bounds check moved by one) and membermasks that leave out the executing
lane."""

from __future__ import annotations

import numpy as np
import pytest

from ptxopt.kernels.corpus import KernelSpec, Launch, Param
from ptxopt.interp import Program, WarpSyncError, run_kernel
from ptxopt.interp.snippets import module
from ptxopt.ptx.ir import iter_instructions
from ptxopt.equivalence.interpret import Geometry, verify
from ptxopt.equivalence.boundary import boundary_scalars, compared_immediates
from ptxopt.equivalence.changes import changes

# --------------------------------------------------------------------------
# a barrier inside one warp: st.shared own slot, bar, read the neighbour's

EXCHANGE = """
	ld.param.u64 %rd1, [pout];
	mov.u32 %r1, %tid.x;
	mov.u32 %r9, sm;
	shl.b32 %r2, %r1, 2;
	add.u32 %r3, %r9, %r2;
	st.shared.u32 [%r3], %r1;
	bar.sync 0;
	add.u32 %r4, %r1, 1;
	and.b32 %r4, %r4, 31;
	shl.b32 %r5, %r4, 2;
	add.u32 %r6, %r9, %r5;
	ld.shared.u32 %r7, [%r6];
	mul.wide.u32 %rd2, %r1, 4;
	add.s64 %rd3, %rd1, %rd2;
	st.global.u32 [%rd3], %r7;
	ret;"""
SHARED = ".shared .align 4 .b8 sm[128];"


def exchange(barrier: bool):
    body = EXCHANGE if barrier else EXCHANGE.replace("\tbar.sync 0;\n", "", 1)
    return module(body, ".param .u64 pout", extra=SHARED)


def run_exchange(m, schedule):
    return run_kernel(m, "k", 1, 32, [np.zeros(32, np.uint32)], schedule=schedule).buffers[0]


def test_thread_serial_schedule_shows_a_barrier_missing_inside_one_warp():
    good, bad = exchange(True), exchange(False)
    want = [(t + 1) % 32 for t in range(32)]
    for schedule in ("lockstep", "warps", "warps-reversed", "threads", "threads-reversed"):
        assert run_exchange(good, schedule).tolist() == want  # race-free: every schedule agrees
    # one warp: lockstep and warp-serial schedules run its lanes together and hide the race
    for schedule in ("lockstep", "warps", "warps-reversed"):
        assert run_exchange(bad, schedule).tolist() == want
    # one thread at a time: a lane reads its neighbour's slot before the neighbour wrote it
    assert run_exchange(bad, "threads").tolist() != want
    assert run_exchange(bad, "threads-reversed").tolist() != want


def test_verify_runs_a_thread_serial_launch_for_a_changed_synchronising_kernel():
    geo = Geometry((1, 1, 1), (32, 1, 1), buffer_bytes=128)
    r = verify(exchange(True), exchange(False), "k", geometry=geo, race_check=False)
    assert r.status == "mismatch" and r.mismatch.schedule == "threads"
    assert any(la.get("extra") == "thread-serial" for la in r.launches)
    # without the extra launches the race goes unnoticed
    assert verify(exchange(True), exchange(False), "k", geometry=geo, extra_launches=False).equal
    # nothing changed: no extra launch at all (it costs a Python step per thread)
    r = verify(exchange(True), exchange(True), "k", geometry=geo)
    assert r.equal and not any("extra" in la for la in r.launches)


# --------------------------------------------------------------------------
# executed-instruction coverage

BRANCHY = """
	ld.param.u64 %rd1, [pout];
	mov.u32 %r1, %tid.x;
	setp.lt.u32 %p1, %r1, 16;
	setp.gt.u32 %p2, %r1, 100;
	@%p2 mov.u32 %r1, 7;
	@%p2 bra $done;
	@%p1 bra $low;
	add.u32 %r1, %r1, 1000;
$low:
	bra.uni $store;
	mov.u32 %r1, 5;
$store:
	mul.wide.u32 %rd2, %r1, 4;
	add.s64 %rd3, %rd1, %rd2;
	@%p1 st.global.u32 [%rd3], %r1;
$done:
	ret;"""


def test_executed_flags_on_a_guarded_branchy_kernel():
    m = module(BRANCHY, ".param .u64 pout")
    r = run_kernel(m, "k", 1, 32, [np.zeros(2048, np.uint32)], executed=True)
    flags = r.coverage["executed"]["k"]
    assert set(r.coverage) == {"executed"}  # executed alone: just that part
    # pc: 0 ld, 1 mov, 2 setp, 3 setp, 4 @p2 mov, 5 @p2 bra, 6 @p1 bra, 7 add, 8 bra.uni,
    #     9 mov (dead), 10 mul, 11 add, 12 @p1 st, 13 ret
    ran = flags[:14].tolist()
    assert ran == [True, True, True, True, False, False, True, True, True, False, True, True, True, True]
    # the full coverage carries the same flags
    r2 = run_kernel(m, "k", 1, 32, [np.zeros(2048, np.uint32)], coverage=True)
    assert r2.coverage["executed"]["k"].tolist() == flags.tolist()


def test_a_change_no_launch_ran_is_inconclusive_and_named():
    geo = Geometry((1, 1, 1), (32, 1, 1), buffer_bytes=8192)
    orig = module(BRANCHY, ".param .u64 pout")
    # the dead mov (behind bra.uni) changed: equal on every launch, yet never tested
    dead = module(BRANCHY.replace("mov.u32 %r1, 5;", "mov.u32 %r1, 6;"), ".param .u64 pout")
    r = verify(orig, dead, "k", geometry=geo)
    assert r.status == "inconclusive" and r.verdict == "inconclusive"
    line = next(i.line for i in iter_instructions(dead.pick_entry("k").body) if str(i.operands[-1]) == "6")
    assert "never ran" in r.error and f"line {line} (mov.u32 %r1, 6)" in r.error
    assert f"line {line} (mov.u32 %r1, 5, the original's)" in r.error
    assert r.coverage.changed_instructions == 2 and r.coverage.changed_ran == 0
    assert len(r.coverage.changed_not_run) == 2  # the new one, and the original's at its site
    # the guarded mov whose guard never holds: same
    never = module(BRANCHY.replace("@%p2 mov.u32 %r1, 7;", "@%p2 mov.u32 %r1, 8;"), ".param .u64 pout")
    assert verify(orig, never, "k", geometry=geo).status == "inconclusive"
    # a dropped instruction that never ran in the original: its site is checked there
    dropped = module(BRANCHY.replace("\t@%p2 mov.u32 %r1, 7;\n", ""), ".param .u64 pout")
    r = verify(orig, dropped, "k", geometry=geo)
    assert r.status == "inconclusive" and "the original's" in r.error
    # a change that ran and computes the same: equal, with its coverage
    same = module(BRANCHY.replace("add.u32 %r1, %r1, 1000;", "add.u32 %r1, 1000, %r1;"), ".param .u64 pout")
    r = verify(orig, same, "k", geometry=geo)
    assert r.equal and r.coverage.changed_instructions == 2 and r.coverage.changed_ran == 2
    assert "changed_not_run" in r.to_json()["coverage"]
    # nothing changed: nothing to cover
    r = verify(orig, orig, "k", geometry=geo)
    assert r.equal and r.coverage.changed_instructions == 0


def test_moved_instructions_count_as_changed():
    a = module(BRANCHY, ".param .u64 pout")
    swapped = BRANCHY.replace("\tsetp.lt.u32 %p1, %r1, 16;\n\tsetp.gt.u32 %p2, %r1, 100;\n",
                              "\tsetp.gt.u32 %p2, %r1, 100;\n\tsetp.lt.u32 %p1, %r1, 16;\n")
    b = module(swapped, ".param .u64 pout")
    sites = changes(Program(a), Program(b))
    assert {s.side for s in sites} == {"original", "transformed"}
    assert all("setp" in s.text for s in sites) and 1 <= len(sites) <= 4


# --------------------------------------------------------------------------
# descending inputs: a max reduction that skips its first element

MAX = """
	ld.param.u64 %rd1, [px];
	ld.param.u64 %rd2, [pout];
	ld.global.f32 %f1, [%rd1];
	mov.u32 %r1, 1;
$loop:
	mul.wide.u32 %rd3, %r1, 4;
	add.s64 %rd4, %rd1, %rd3;
	ld.global.f32 %f2, [%rd4];
	max.f32 %f1, %f1, %f2;
	add.u32 %r1, %r1, 1;
	setp.lt.u32 %p1, %r1, 64;
	@%p1 bra $loop;
	st.global.f32 [%rd2], %f1;
	ret;"""


def test_descending_inputs_show_a_reduction_that_skips_its_first_element():
    geo = Geometry((1, 1, 1), (1, 1, 1), buffer_bytes=256)
    params = ".param .u64 px, .param .u64 pout"
    orig = module(MAX, params)
    bad = module(MAX.replace("ld.global.f32 %f1, [%rd1];", "ld.global.f32 %f1, [%rd1+4];"), params)
    assert verify(orig, bad, "k", geometry=geo, extra_launches=False).equal  # random values hide it
    r = verify(orig, bad, "k", geometry=geo, read_probe=False)
    assert r.status == "mismatch" and r.mismatch.flavour == "descending"
    # the read footprints catch it already in the first launch: element 0 is read by the original only
    r = verify(orig, bad, "k", geometry=geo)
    assert r.status == "mismatch" and r.mismatch.flavour == "random, elements read by the original only spiked high"
    assert r.mismatch.trial == 0


# --------------------------------------------------------------------------
# boundary scalars: K < 1 -> K < 2 differs only for K = 1

LOOP = """
	ld.param.u64 %rd1, [pout];
	ld.param.u32 %r9, [pk];
	mov.u32 %r1, %tid.x;
	mov.u32 %r3, 0;
	setp.lt.s32 %p1, %r9, 1;
	@%p1 bra $store;
	mov.u32 %r2, 0;
$loop:
	add.u32 %r3, %r3, %r2;
	add.u32 %r3, %r3, 1;
	add.u32 %r2, %r2, 1;
	setp.lt.s32 %p2, %r2, %r9;
	@%p2 bra $loop;
$store:
	mul.wide.u32 %rd2, %r1, 4;
	add.s64 %rd3, %rd1, %rd2;
	st.global.u32 [%rd3], %r3;
	ret;"""


def loop_spec(k=32, divisible=()):
    return KernelSpec(id="t_loop", family="t", compiler="t", path="", entry="k", source="", generator="",
                      arch="sm_89", ptx_version="8.0", launch=Launch((1, 1, 1), (64, 1, 1), 0),
                      params=(Param("pout", "out", "output", "u32", count=64),
                              Param("pk", "K", "scalar", "s32", value=k)),
                      divisible_by_16=tuple(divisible))


def test_boundary_scalars_proposed():
    p = Program(module(LOOP, ".param .u64 pout, .param .u32 pk"))
    assert compared_immediates(p, "k") == {"pk": {1}}
    got = {kind: (vals, what) for kind, vals, what in boundary_scalars(loop_spec(), p, "k")}
    assert got["tail"][0] == {1: 31}
    assert got["boundary"][0] == {1: 1} and "compared against" in got["boundary"][1]
    # a scalar the kernel was compiled assuming divisible by 16 stays divisible
    got = {kind: vals for kind, vals, _ in boundary_scalars(loop_spec(divisible=["K"]), p, "k")}
    assert got == {"tail": {1: 16}}
    # no integer scalar: nothing
    no = KernelSpec(id="t", family="t", compiler="t", path="", entry="k", source="", generator="", arch="sm_89",
                    ptx_version="8.0", launch=Launch((1, 1, 1), (64, 1, 1), 0),
                    params=(Param("pout", "out", "output", "u32", count=64),))
    assert boundary_scalars(no, p, "k") == []


def test_boundary_scalars_show_a_bounds_check_moved_by_one():
    params = ".param .u64 pout, .param .u32 pk"
    orig = module(LOOP, params)
    bad = module(LOOP.replace("setp.lt.s32 %p1, %r9, 1;", "setp.lt.s32 %p1, %r9, 2;"), params)
    spec = loop_spec()
    assert verify(orig, bad, "k", spec=spec, extra_launches=False).equal  # K = 32 never meets it
    r = verify(orig, bad, "k", spec=spec)
    assert r.status == "mismatch"
    hit = next(la for la in r.launches if la["trial"] == r.mismatch.trial)
    assert hit["extra"].startswith("boundary scalars") and hit["scalars"] == {"K": 1}


# --------------------------------------------------------------------------
# a membermask that leaves out the executing lane


def test_shfl_with_a_membermask_without_the_lane_is_an_error():
    body = """
	ld.param.u64 %rd1, [pout];
	mov.u32 %r1, %tid.x;
	shfl.sync.bfly.b32 %r2, %r1, 1, 31, {mask};
	mul.wide.u32 %rd2, %r1, 4;
	add.s64 %rd3, %rd1, %rd2;
	st.global.u32 [%rd3], %r2;
	ret;"""
    ok = module(body.replace("{mask}", "-1"), ".param .u64 pout")
    out = run_kernel(ok, "k", 1, 32, [np.zeros(32, np.uint32)]).buffers[0]
    assert out.tolist() == [t ^ 1 for t in range(32)]
    bad = module(body.replace("{mask}", "0"), ".param .u64 pout")
    with pytest.raises(WarpSyncError, match="membermask"):
        run_kernel(bad, "k", 1, 32, [np.zeros(32, np.uint32)])
    r = verify(ok, bad, "k", geometry=Geometry((1, 1, 1), (32, 1, 1), buffer_bytes=128))
    assert r.status == "error" and r.verdict == "differ" and r.error_kind == "warp-sync"


# --------------------------------------------------------------------------
# shared-memory race detection


def test_race_detection_sees_a_missing_barrier_under_any_schedule():
    for schedule in ("lockstep", "warps", "threads"):
        r = run_kernel(exchange(False), "k", 1, 32, [np.zeros(32, np.uint32)], schedule=schedule, races=True)
        assert r.races[0] > 0 and "same barrier interval" in r.races[1][0]
        r = run_kernel(exchange(True), "k", 1, 32, [np.zeros(32, np.uint32)], schedule=schedule, races=True)
        assert r.races == (0, [])
    assert run_kernel(exchange(False), "k", 1, 32, [np.zeros(32, np.uint32)]).races is None  # off by default


SLOT = """
	ld.param.u64 %rd1, [pout];
	mov.u32 %r1, %tid.x;
	mov.u32 %r9, sm;
	{store}
	bar.sync 0;
	ld.shared.u32 %r7, [%r9];
	mul.wide.u32 %rd2, %r1, 4;
	add.s64 %rd3, %rd1, %rd2;
	st.global.u32 [%rd3], %r7;
	ret;"""


@pytest.mark.parametrize("store, racy", [
    ("st.shared.u32 [%r9], 5;", False),  # every thread stores one value: Triton's redundant stores
    ("st.shared.u32 [%r9], %r1;", True),  # different values to one word: who wins depends on the schedule
    ("atom.shared.add.u32 %r8, [%r9], 1;", False),  # atomics do not race
])
def test_race_detection_same_value_stores_and_atomics(store, racy):
    m = module(SLOT.replace("{store}", store), ".param .u64 pout", extra=SHARED)
    for schedule in ("lockstep", "threads"):
        r = run_kernel(m, "k", 1, 64, [np.zeros(64, np.uint32)], schedule=schedule, races=True)
        assert (r.races[0] > 0) == racy, (schedule, r.races)


def test_verify_reports_a_race_the_original_does_not_have():
    geo = Geometry((1, 1, 1), (32, 1, 1), buffer_bytes=128)
    r = verify(exchange(True), exchange(False), "k", geometry=geo)
    assert r.status == "error" and r.error_kind == "race" and r.verdict == "differ"
    assert "data race" in r.error and "the original does not have" in r.error
    assert r.launches[0].get("races") == "detected"
    # both race: not compared, and said
    racy = module(SLOT.replace("{store}", "st.shared.u32 [%r9], %r1;"), ".param .u64 pout", extra=SHARED)
    r = verify(racy, racy.copy(), "k", geometry=geo)  # nothing changed: no extra launch, no race check
    assert r.equal and not any("extra" in la for la in r.launches)
    racy2 = module(SLOT.replace("{store}", "st.shared.u32 [%r9], %r1;\n\tadd.u32 %r1, %r1, 0;"),
                   ".param .u64 pout", extra=SHARED)
    r = verify(racy, racy2, "k", geometry=geo)
    assert r.equal and any("races on shared memory too" in n for n in r.notes)
