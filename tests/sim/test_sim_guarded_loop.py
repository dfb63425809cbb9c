"""The sim model values loops whose body ptxas lays out of line, so a guarded
unroll is estimated, not dropped.

``unroll``'s guarded form (:mod:`ptxopt.passes.unroll`) is a loop with an
if inside: the ``q``-guarded copies run only when every skipped test stays in
the loop.  ptxas places those copies before the loop's header, jumps back to
them and on again.  The model took every backward branch for a loop, so that
jump became a second loop overlapping the real one, and each reset the
other's count: the walk ran to ``max_steps`` (``truncated``).  Loops are now
natural loops (the back edge's target dominates it) and the copies' branch gets
its taken rate from the PTX loop's counted work (:class:`ptxopt.sim.LoopCount`
``work``).  Every cycle figure is an ESTIMATE.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from ptxopt.sim import (LoopCount, branch_sites, decode, sass_loops, simulate,
                        trip_counts_from_loop_profile)
from test_sim import ins, listing

#: the guarded form as ptxas lays it out: the copy (.C) before the header (.H), entered backwards
GUARDED = (
    ins("IADD3", "R0, R0, 0x1, RZ"),            # 0
    ins("BRA", "`(.H)"),                        # 1  into the loop at its header
    ins("LDG.E", "R2, [R4.64]", wb=0),          # 2 .C  the copy (runs when q holds)
    ins("BAR.SYNC.DEFER_BLOCKING", "0x0"),      # 3
    ins("BRA", "`(.T)"),                        # 4  on to the last copy
    ins("ISETP.GE.AND", "P0, PT, R0, 0x10, PT"),  # 5 .H  q
    ins("BRA", "`(.C)", guard="P0"),            # 6  backwards, but .C does not dominate it: no loop
    ins("LDG.E", "R3, [R4.64]", wb=1),          # 7 .T  the last copy
    ins("BAR.SYNC.DEFER_BLOCKING", "0x0", wait=(0, 1)),  # 8
    ins("ISETP.GE.AND", "P1, PT, R0, 0x20, PT"),  # 9
    ins("BRA", "`(.H)", guard="!P1"),           # 10 the back edge
    ins("EXIT"),                                # 11
)
LABELS = {2: ".C", 5: ".H", 7: ".T"}


def test_an_out_of_line_block_entered_backwards_is_no_loop():
    p = decode(listing(*GUARDED, labels=LABELS))
    assert p.back_edges == (10,)  # before: (6, 10), two overlapping "loops"
    assert p.loop_body[0] == frozenset(range(2, 11))  # the copy belongs to the loop
    (lp,) = sass_loops(p)
    assert (lp.header_offset, lp.branch_offset) == (5 * 16, 10 * 16)
    kinds = {s.offset: s.kind for s in branch_sites(p)}
    assert kinds == {6 * 16: "forward", 10 * 16: "back-edge"}


def test_the_static_fallback_walk_ends():
    """Before: the two "loops" reset each other and the walk stopped at max_steps (truncated)."""
    r = simulate(listing(*GUARDED, labels=LABELS), None, max_steps=10_000)
    assert not r.truncated
    assert r.issued_instructions == 2 + 9 * 6 + 1  # copy skipped (fallback): 6 per visit, 9 visits


@pytest.mark.parametrize("copies_run", [4, 3, 0])
def test_the_copy_branch_rate_comes_from_the_loops_work(copies_run):
    """4 visits per entry, each loading once in .T, plus once in .C when q holds: the PTX loop's counted
    loads give the rate; the walk then issues exactly the instructions those visits run."""
    visits = 4
    loads = visits + copies_run
    count = LoopCount(entries=2, iterations=2 * visits, work=(2 * loads, 0, 0, 2 * loads, 0))
    lst = listing(*GUARDED, labels=LABELS)
    trips = trip_counts_from_loop_profile(lst, [count], signatures=[(2, 0, 0, 2, 0)])
    assert trips == {("k", 10 * 16): visits - 1.0, ("k", 6 * 16): copies_run / visits}
    r = simulate(lst, None, trips)
    assert r.fallback is None and not r.truncated
    assert r.issued_instructions == 2 + visits * 6 + copies_run * 3 + 1


def test_no_rate_without_counted_work_or_when_the_work_does_not_fit():
    lst = listing(*GUARDED, labels=LABELS)
    plain = trip_counts_from_loop_profile(lst, [LoopCount(2, 8)], signatures=[(2, 0, 0, 2, 0)])
    assert plain == {("k", 10 * 16): 3.0}  # the copy's branch stays on the fallback, as before
    # loads say every copy ran, barriers say none did: no single rate fits
    odd = LoopCount(2, 8, work=(16, 0, 0, 8, 0))
    assert trip_counts_from_loop_profile(lst, [odd], signatures=[(2, 0, 0, 2, 0)]) == plain


@pytest.fixture(scope="module")
def matmul():
    from ptxopt.kernels.corpus import get
    from ptxopt.equivalence.launch import performance_of

    k = get("triton_matmul_f16")
    perf = performance_of(k)
    return k, replace(perf, scalars={n: 512 for n in perf.scalars})  # K/32 = 16 trips: a short slice


def _estimate(k, perf, pipeline: str):
    from ptxopt import emit, parse
    from ptxopt.measure.loop_slice import trip_counts_for
    from ptxopt.passes.passmanager import PassManager
    from ptxopt.passes.pipeline import Pipeline
    from ptxopt.toolchain import compile_ptx, disassemble

    text = k.ptx_text()
    if pipeline:
        text = emit(PassManager(Pipeline.parse(pipeline)).run(parse(text, k.id)).module)
    compiled = compile_ptx(text, k.arch)
    program = decode(disassemble(compiled.cubin), k.entry)
    trips, source, _ = trip_counts_for(program, parse(text, k.id), k.entry, check={"spec": k},
                                       performance=perf)
    inner = {s.key for s in branch_sites(program) if s.kind == "forward" and s.depth == 1}
    return simulate(program, compiled, trips, max_steps=200_000), source, {key: trips.get(key) for key in inner}


def test_unrolled_triton_matmul_is_valued_not_truncated(matmul):
    """unroll on the Triton K loop (a runtime trip count: the guarded form) was ``truncated`` at
    2,000,000 steps; now each factor gets an estimate from the performance launch's counts, near the
    original's (same work, fewer branches, more registers)."""
    k, perf = matmul
    base, source, _ = _estimate(k, perf, "")
    assert source == "performance launch" and not base.truncated
    for pipe in ("unroll_2", "unroll_4", "unroll{factor=8}"):
        r, source, inner = _estimate(k, perf, pipe)
        assert source == "performance launch", pipe
        assert not r.truncated, pipe
        # the copies' branch (the one branch inside the loop) has a rate from the loop's work
        (rate,) = inner.values()
        assert rate is not None and 0 < rate <= 1, (pipe, inner)
        assert 0.7 * base.cycles < r.cycles < 1.3 * base.cycles, (pipe, r.cycles, base.cycles)


#: the same loop as ptxas lays out triton_attention's: copies in line, skipped by a forward branch, the
#: back edge unconditional and the loop left through a guarded branch on the way round
INLINE = (
    ins("IADD3", "R0, R0, 0x1, RZ"),            # 0
    ins("ISETP.GE.AND", "P0, PT, R0, 0x10, PT"),  # 1 .H
    ins("BRA", "`(.T)", guard="!P0"),           # 2  skip the copy
    ins("LDG.E", "R2, [R4.64]", wb=0),          # 3  the copy
    ins("BAR.SYNC.DEFER_BLOCKING", "0x0"),      # 4
    ins("LDG.E", "R3, [R4.64]", wb=1),          # 5 .T
    ins("BAR.SYNC.DEFER_BLOCKING", "0x0", wait=(0, 1)),  # 6
    ins("ISETP.GE.AND", "P1, PT, R0, 0x20, PT"),  # 7
    ins("BRA", "`(.X)", guard="P1"),            # 8  the loop's exit
    ins("BRA", "`(.H)"),                        # 9  unconditional back edge
    ins("EXIT"),                                # 10 .X
)


@pytest.mark.parametrize("copies_run", [4, 3])
def test_the_rate_passes_the_loops_exit_on_the_way_round(copies_run):
    visits = 4
    loads = visits + copies_run
    lst = listing(*INLINE, labels={1: ".H", 5: ".T", 10: ".X"})
    trips = trip_counts_from_loop_profile(lst, [LoopCount(1, visits, work=(loads, 0, 0, loads, 0))],
                                          signatures=[(2, 0, 0, 2, 0)])
    assert trips == {("k", 8 * 16): 1 / visits, ("k", 2 * 16): (visits - copies_run) / visits}
    r = simulate(lst, None, trips)
    # 7 per visit without the copy, the last visit leaves at 8 (no 9), the copy 2 more, then EXIT
    assert not r.truncated and r.issued_instructions == 1 + visits * 7 - 1 + copies_run * 2 + 1
