"""A rewrite's loops keep their trip counts in the sim's walk (ESTIMATES; ptxas runs).

``loop_version`` puts a fast copy (vector loads) and a slow copy (scalar loads) of a loop body under one
alignment test; ``split_ld`` makes the fast copy's loads scalar again, the two arms become the same and
ptxas merges them, so the SASS loop holds one arm while the PTX loop's static signature counts both.  The
structural match then gave the SASS loop the counts of a loop that never ran: the walk took the row
loop once instead of K/4 times and the estimate read as a 2x gain.  These tests check the match by
the loop's per-iteration work, the refusal when trips are lost, and that no pipeline on the row kernels
makes the walk take far fewer global loads than the interpreter counted."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ptxopt.sim.trips import TRIPS_UNKNOWN, LoopCount, match_loops

ROWS = Path(__file__).resolve().parents[2] / "benchmarks" / "outside_kernels"


def test_a_loop_whose_arms_ptxas_merged_matches_by_its_per_iteration_work():
    # PTX loop 0: two arms of 8 loads each (static 16), 8 per iteration ran; loop 1 (2 loads) never ran
    static, per_iter, live = [(16, 0), (2, 0)], [(8, 0), None], [True, False]
    assert match_loops([(8, 0), (2, 0)], static, live, per_iter) == [(0, 1), (1, 1)]
    # the static signature still wins where it fits (both arms kept by ptxas)
    assert match_loops([(16, 0), (2, 0)], static, live, per_iter) == [(0, 1), (1, 1)]


def test_an_alignment_that_loses_a_loop_that_ran_is_refused():
    """Without the per-iteration work the only alignment gives the 8-load SASS loop (k=4) the counts of
    the loop that never ran: trip_counts_from_loop_profile refuses it instead of walking it once."""
    from ptxopt.sim.trips import _refuse_lost_trips

    match = match_loops([(8, 0), (2, 0)], [(16, 0), (2, 0)], [True, False])
    assert match == [(1, 4), (1, 1)]  # the alignment the walk used to take
    with pytest.raises(ValueError, match=TRIPS_UNKNOWN):
        _refuse_lost_trips(match, [LoopCount(96, 98304), LoopCount(0, 0)])
    # a loop that ran and has no SASS loop is ptxas's full unrolling when nothing is given a dead loop's counts
    _refuse_lost_trips([(1, 1)], [LoopCount(1, 4), LoopCount(2, 20)])


def _walk(text: str, entry: str, perf):
    """(trip source, issued instructions of the one-warp walk) as the sim backend gets them."""
    from ptxopt.measure.loop_slice import launch_only_check, trip_counts_for
    from ptxopt.ptx.parser import parse_bytes
    from ptxopt.sim import decode, simulate
    from ptxopt.toolchain import compile_ptx, disassemble

    compiled = compile_ptx(text, "sm_90")
    program = decode(disassemble(compiled.cubin), entry)
    module = parse_bytes(text.encode(), "t")
    check, _ = launch_only_check(module, entry, perf)
    trips, source, notes = trip_counts_for(program, module, entry, check=check, performance=perf)
    return source, trips, simulate(program, compiled, trips or None).issued_instructions


def _rewrite(name: str, pipeline: str):
    from ptxopt.cli.common import performance_launch
    from ptxopt.evaluate.candidate import bind_launch
    from ptxopt.passes.passmanager import PassManager
    from ptxopt.passes.pipeline import Pipeline
    from ptxopt.ptx.emit import emit
    from ptxopt.ptx.parser import parse_bytes
    from ptxopt.sim.throughput import launch_shape

    path = ROWS / f"{name}.ptx"
    text = path.read_text()
    module = parse_bytes(text.encode(), name)
    fn = module.entries[0]
    known = performance_launch(str(path), {}, entry=fn.name, fn=fn)
    after = text if not pipeline else emit(PassManager(bind_launch(Pipeline.parse(pipeline), known, fn.name))
                                           .run(parse_bytes(text.encode(), name)).module)
    return after, fn.name, launch_shape(known, origin="contract")


@pytest.mark.slow
def test_loop_version_then_split_ld_keeps_the_row_loop_trips():
    """rows_gemv: after loop_version_4,split_ld the row loop still runs K/4 SASS iterations per thread
    (K from the contract's performance launch), and the walk issues about as much as the original's."""
    contract = json.loads((ROWS / "rows_gemv.contract.json").read_text())
    k = contract["performance"]["scalars"]["rows_gemv_param_4"]
    text, entry, perf = _rewrite("rows_gemv", "")
    src0, _t0, issued0 = _walk(text, entry, perf)
    after, _, _ = _rewrite("rows_gemv", "loop_version_4,split_ld")
    source, trips, issued = _walk(after, entry, perf)
    assert src0 == source == "performance launch"
    assert max(trips.values()) == k // 4 - 1  # the back edge of the 4-fold row loop, taken K/4 - 1 times
    assert issued >= issued0 / 4, (issued, issued0)


def _walked_and_counted(text: str, entry: str, perf):
    """(trip source, global loads per loop entry the walk takes through the SASS loops, global loads per
    loop entry the interpreter counted in the PTX loops that ran) at the performance launch.  With every
    SASS loop a k-fold unrolling of its PTX loop, its iterations times its loads is the PTX loop's work
    whatever k is; a walk that lost a loop's trips takes about one iteration of it."""
    from ptxopt.measure.loop_slice import launch_only_check, performance_loop_profile, trip_counts_for
    from ptxopt.ptx.parser import parse_bytes
    from ptxopt.sim import decode
    from ptxopt.sim.trips import sass_loops, sass_signatures
    from ptxopt.toolchain import compile_ptx, disassemble

    program = decode(disassemble(compile_ptx(text, "sm_90").cubin), entry)
    module = parse_bytes(text.encode(), "t")
    check, _ = launch_only_check(module, entry, perf)
    trips, source, _notes = trip_counts_for(program, module, entry, check=check, performance=perf)
    prof = performance_loop_profile(module, entry, perf, **check)
    counted = sum(c.work[0] / c.entries for c in prof.counts if c.iterations and c.entries)
    walked = 0.0
    loops = [lp for lp in sass_loops(program) if lp.function == program.kernel]
    for lp, sig in zip(loops, sass_signatures(program)):
        if lp.conditional and lp.key in trips:
            walked += (trips[lp.key] + 1) * sig[0]
        elif not lp.conditional and lp.exits and trips.get((lp.function, lp.exits[0])):
            walked += sig[0] / trips[(lp.function, lp.exits[0])]
    return source, walked, counted


#: rows_gemv is left to the pair test above (its 4096-long rows make its slice the slow one)
ROW_KERNELS = ("rows_var_lowocc", "rows_dot", "rows_axpy", "rows_horner")


@pytest.mark.slow
@pytest.mark.parametrize("name", ROW_KERNELS)
def test_no_pipeline_loses_the_row_loop_trips(name):
    """Class check over the row kernels and the pipelines that reshape their row loop: the walk takes
    at least a quarter of the global loads the interpreter counted in the loops (ptxas may merge four
    scalar loads into a vector one), or the trips are said to be unknown -- never a silent walk of about
    one iteration.  Only a lower bound: a SASS loop that kept both arms of loop_version's test counts
    both arms' loads here while the walk takes one."""
    from ptxopt.measure.loop_slice import UNKNOWN

    for pipeline in ("", "split_ld", "loop_version_4", "loop_version_4,split_ld"):
        text, entry, perf = _rewrite(name, pipeline)
        source, walked, counted = _walked_and_counted(text, entry, perf)
        assert source == UNKNOWN or walked >= counted / 4, (pipeline, source, walked, counted)


def test_the_sim_backend_refuses_a_rewrite_whose_trips_are_unknown():
    """A rewrite whose loops ran but match no SASS loop is a failed measurement (not comparable with its
    original's counted walk), as a truncated walk is; the original itself is still walked and says so."""
    from ptxopt.measure.backend import MeasureError, MeasureJob
    from ptxopt.measure.loop_slice import UNKNOWN
    from ptxopt.measure.sim import SimBackend

    note = f"{UNKNOWN}: loops ran but their counts match no SASS loop (why)"
    job = MeasureJob("// rewritten", "sm_90", original="// original")
    with pytest.raises(MeasureError, match="not comparable") as e:
        SimBackend()._model(job, None, {}, UNKNOWN, [note], {})
    assert e.value.category == "unsupported" and UNKNOWN in str(e.value)


def test_lost_trips_are_refused_on_the_merged_arms_listing():
    """rows_gemv after loop_version_4,split_ld, its PTX loops' counts given without the per-iteration
    work: the only alignment loses the row loop, and the mapping refuses instead of walking it once."""
    from ptxopt.sim import decode
    from ptxopt.sim.trips import trip_counts_from_loop_profile
    from ptxopt.measure.measured_trips import loop_signatures
    from ptxopt.ptx.parser import parse_bytes
    from ptxopt.toolchain import compile_ptx, disassemble

    after, entry, _perf = _rewrite("rows_gemv", "loop_version_4,split_ld")
    program = decode(disassemble(compile_ptx(after, "sm_90").cubin), entry)
    sigs = loop_signatures(parse_bytes(after.encode(), "t"), entry)
    counts = [LoopCount(96, 98304), LoopCount(0, 0)]
    with pytest.raises(ValueError, match=TRIPS_UNKNOWN):
        trip_counts_from_loop_profile(program, counts, signatures=sigs)
    # with the work the interpreter counts (8 loads per iteration, the arm ptxas kept) it matches
    work = [LoopCount(96, 98304, work=(8 * 98304, 0, 0, 0, 0)), LoopCount(0, 0, work=(0, 0, 0, 0, 0))]
    trips = trip_counts_from_loop_profile(program, work, signatures=sigs)
    assert max(trips.values()) == 98304 / 96 - 1
