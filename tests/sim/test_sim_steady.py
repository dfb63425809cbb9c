"""Steady-state loops in the SASS walk: a few iterations per
loop entry are replayed and the rest extrapolated; the estimate must match
the full replay, nested loops included, and flash attention at its
performance size must be estimated, not ``truncated``."""

from __future__ import annotations

import pytest

from ptxopt.sim import branch_sites, sass_loops, simulate
from tests.sim.test_sim import ins, listing, run

NESTED = (ins("MOV", "R0, RZ"),                                   # 0
          ins("MOV", "R1, RZ"),                                   # 1 <- .Louter
          ins("LDG.E", "R4, [R2.64]", wb=0),                      # 2 <- .Linner
          ins("FFMA", "R5, R4, R4, R5", stall=4, wait=(0,)),      # 3
          ins("IADD3", "R2, R2, 0x4, RZ"),                        # 4
          ins("BRA", "`(.Linner)", guard="P1"),                   # 5 inner back edge
          ins("IADD3", "R0, R0, 0x1, RZ", stall=2),               # 6
          ins("BRA", "`(.Louter)", guard="P0"),                   # 7 outer back edge
          ins("EXIT"))
LABELS = {1: ".Louter", 2: ".Linner"}


@pytest.mark.parametrize("outer,inner", [(40, 50), (7, 2.5), (3, 30)])
def test_nested_loops_extrapolate_to_the_full_replay(outer, inner):
    trips = {0x70: outer - 1, 0x50: inner - 1}
    full = run(*NESTED, labels=LABELS, trip_counts=trips, steady_state=False)
    fast = run(*NESTED, labels=LABELS, trip_counts=trips)
    assert fast.issued_instructions == pytest.approx(full.issued_instructions, rel=0.01)
    assert fast.cycles == pytest.approx(full.cycles, rel=0.02)
    assert fast.l2_bytes == pytest.approx(full.l2_bytes, rel=0.02)
    if outer * inner > 100:
        assert any("extrapolated" in n for n in fast.notes)


def test_a_replay_budget_counts_replayed_instructions_only():
    trips = {0x70: 999, 0x50: 999}  # a million inner iterations: 4 million issued instructions
    r = run(*NESTED, labels=LABELS, trip_counts=trips, max_steps=20_000)
    assert not r.truncated and r.issued_instructions > 4_000_000
    full = run(*NESTED, labels=LABELS, trip_counts=trips, max_steps=20_000, steady_state=False)
    assert full.truncated  # what the walk did before steady state


def test_unconditional_back_edge_loop_extrapolates_through_its_exit_rate():
    items = (ins("MOV", "R0, RZ"),                     # 0 <- .L0
             ins("BRA", "`(.Lout)", guard="P0"),       # 1 loop exit
             ins("IADD3", "R0, R0, 0x1, RZ", stall=3), # 2
             ins("BRA", "`(.L0)"),                     # 3 unconditional back edge
             ins("EXIT"))                              # 4 <- .Lout
    labels = {0: ".L0", 4: ".Lout"}
    full = run(*items, labels=labels, trip_counts={0x10: 1 / 40}, steady_state=False)
    fast = run(*items, labels=labels, trip_counts={0x10: 1 / 40})
    assert fast.issued_instructions == full.issued_instructions == 39 * 4 + 2 + 1
    assert fast.cycles == full.cycles


def test_call_noinc_to_a_local_label_is_a_loop_exit():
    """ptxas leaves some loops with ``@P0 CALL.REL.NOINC `(.L_x_1)`` whose block jumps on; read as a call
    the loop had no exit and the walk ran to max_steps (triton_flash_attn_fwd: ``truncated``)."""
    items = (ins("MOV", "R0, RZ"),                               # 0 <- .L0
             ins("CALL.REL.NOINC", "`(.L1)", guard="P0"),         # 1 loop exit
             ins("IADD3", "R0, R0, 0x1, RZ"),                    # 2
             ins("BRA", "`(.L0)"),                               # 3 back edge
             ins("BRA", "`(.Lout)"),                             # 4 <- .L1
             ins("EXIT"))                                        # 5 <- .Lout
    labels = {0: ".L0", 4: ".L1", 5: ".Lout"}
    kinds = {s.offset: s.kind for s in branch_sites(listing(*items, labels=labels))}
    assert kinds == {0x10: "loop-exit"}
    (lp,) = sass_loops(listing(*items, labels=labels))
    assert lp.exits == (0x10,)
    r = run(*items, labels=labels, trip_counts={0x10: 1 / 5})
    assert not r.truncated and r.issued_instructions == 4 * 4 + 2 + 2


@pytest.fixture(scope="module")
def flash():
    from ptxopt.kernels.corpus import get
    from ptxopt.equivalence.launch import performance_of
    from ptxopt.measure.loop_slice import trip_counts_for
    from ptxopt.ptx.parser import parse
    from ptxopt.sim.sass_decode import decode
    from ptxopt.toolchain import compile_ptx, disassemble

    k = get("triton_flash_attn_fwd")
    compiled = compile_ptx(k.ptx_text(), k.arch)
    program = decode(disassemble(compiled.cubin), k.entry)
    trips, source, notes = trip_counts_for(program, parse(k.ptx_text()), k.entry, check={"spec": k},
                                           performance=performance_of(k))
    return program, compiled, trips, source, notes


def test_flash_attention_at_its_performance_size_is_estimated(flash):
    program, compiled, trips, source, notes = flash
    # seq 4096 / BLOCK_N 64 key blocks per program, from the performance launch
    assert source == "performance launch" and notes[-1].endswith(" 64")
    fast = simulate(program, compiled, trips)
    full = simulate(program, compiled, trips, steady_state=False)
    assert not fast.truncated and not full.truncated
    # every loop has its count (only the forward branch that skips the loop when seq_len <= 0 has none)
    assert fast.fallback is None or any("no trip counts for 0 backward" in n for n in fast.notes)
    assert fast.cycles == pytest.approx(full.cycles, rel=0.01)
    assert any("extrapolated" in n for n in fast.notes)


@pytest.mark.slow
def test_no_corpus_loop_kernel_is_truncated_and_steady_state_matches_the_full_replay():
    """Every nvcc/Triton corpus kernel with a loop, at its performance launch's trip counts (the
    generated families through their slow-tier slice: tests/corpus_tiers.py)."""
    from corpus_tiers import slow_kernels

    from ptxopt.kernels.corpus import select
    from ptxopt.equivalence.launch import performance_of
    from ptxopt.measure.loop_slice import trip_counts_for
    from ptxopt.measure.measured_trips import loop_headers
    from ptxopt.ptx.parser import parse
    from ptxopt.sim.sass_decode import decode
    from ptxopt.toolchain import compile_ptx, disassemble

    seen = 0
    for k in slow_kernels(select("cuda,triton")):
        m = parse(k.ptx_text())
        if not loop_headers(m, k.entry):
            continue
        seen += 1
        compiled = compile_ptx(k.ptx_text(), k.arch)
        program = decode(disassemble(compiled.cubin), k.entry)
        trips, _, _ = trip_counts_for(program, m, k.entry, check={"spec": k}, performance=performance_of(k))
        fast = simulate(program, compiled, trips or None)
        full = simulate(program, compiled, trips or None, steady_state=False)
        assert not fast.truncated and not full.truncated, k.id
        assert fast.cycles == pytest.approx(full.cycles, rel=0.01), k.id
    assert seen >= 15
