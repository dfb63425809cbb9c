"""Tests for the ``sim`` backend (ptxopt.sim): a SASS issue model over control bits.

Most cases build tiny SASS listings by hand (``SassInstruction`` + ``Control``),
so every expected cycle count is derived here from the stall counts and the
latency table -- not from ptxas scheduling and not from a previous run.  A few
end-to-end tests compile corpus kernels with ptxas.
"""

from __future__ import annotations


import pytest

from ptxopt.sim import (LATENCIES, LoopCount, branch_sites, decode, estimate, latencies_for, sass_loops,
                        simulate, trip_counts_from_loop_profile)
from ptxopt.sim.sass_decode import K_GLOBAL, K_GLOBAL_L2, K_GLOBAL_NA, _latency_class
from ptxopt.toolchain import Control, KernelResources, PtxasError, SassInstruction, SassListing

LAT = LATENCIES["sm_89"]
NB = 7  # "no barrier"


def ins(opcode: str, operands: str = "", *, stall: int = 1, wb: int | None = None, rb: int | None = None,
        wait: tuple[int, ...] = (), guard: str | None = None) -> tuple:
    return (opcode, operands, stall, wb, rb, wait, guard)


def listing(*items, labels: dict[int, str] | None = None, arch: str = "sm_89", name: str = "k") -> SassListing:
    """A one-function listing; ``labels`` maps an instruction index to a label name."""
    out = []
    label_map = {}
    for i, (opcode, operands, stall, wb, rb, wait, guard) in enumerate(items):
        mask = sum(1 << b for b in wait)
        control = Control(stall=stall, yield_flag=0, write_barrier=NB if wb is None else wb,
                          read_barrier=NB if rb is None else rb, wait_mask=mask, reuse=0)
        out.append(SassInstruction(function=name, offset=16 * i, guard=guard, opcode=opcode, operands=operands,
                                   low=0, high=control.to_high_word_bits(), control=control, symbol=name))
        if labels and i in labels:
            label_map[(name, 16 * i)] = (labels[i],)
    return SassListing(arch, tuple(out), label_map)


def run(*items, **kw):
    labels = kw.pop("labels", None)
    return simulate(listing(*items, labels=labels), None, **kw)


# ---------------------------------------------------------------------------
# fixed latency: the stall counts alone


def test_dependent_fixed_latency_chain_is_sum_of_stalls():
    stalls = [2, 4, 4, 4, 5]
    r = run(ins("MOV", "R0, c[0x0][0x160]", stall=2),
            ins("FFMA", "R1, R0, R0, RZ", stall=4),
            ins("FFMA", "R2, R1, R0, RZ", stall=4),
            ins("FFMA", "R3, R2, R1, RZ", stall=4),
            ins("EXIT", stall=5))
    # EXIT issues after the stalls of everything before it; cycles = its issue cycle + 1.
    assert r.cycles == sum(stalls[:-1]) + 1
    assert r.issued_instructions == 5
    assert r.estimate is True and r.backend == "sim" and r.fallback is None


def test_stall_zero_still_costs_one_issue_cycle():
    r = run(ins("NOP", stall=0), ins("NOP", stall=0), ins("EXIT"))
    assert r.cycles == 3


# ---------------------------------------------------------------------------
# variable latency: barriers


def test_load_then_dependent_use_waits_for_l2_then_l1():
    r = run(ins("MOV", "R4, c[0x0][0x160]"),                 # t=0
            ins("LDG.E", "R2, [R4.64]", wb=0),                # t=1: first touch of the sector -> L2
            ins("FFMA", "R3, R2, R2, RZ", wait=(0,)),         # waits until 1 + l2
            ins("LDG.E", "R5, [R4.64+0x4]", wb=1),            # same sector, data already in L1
            ins("FFMA", "R6, R5, R5, RZ", wait=(1,)),
            ins("EXIT"), explain=True)
    t = [e.issue for e in r.timeline]
    assert t[2] == 1 + LAT.l2_hit
    assert t[4] == t[3] + LAT.l1_hit
    assert r.timeline[1].source.startswith("global L2") and r.timeline[3].source == "global L1"
    assert "SB0" in r.timeline[2].waited_on[0]


def test_second_load_of_a_sector_in_flight_waits_for_the_fill():
    r = run(ins("LDG.E", "R2, [R4.64]", wb=0),       # t=0, fill at l2
            ins("LDG.E", "R3, [R4.64+0x1c]", wb=1),  # t=1, same 32-byte sector: completes with the fill
            ins("FFMA", "R6, R3, R3, RZ", wait=(1,)),
            ins("LDG.E", "R7, [R4.64+0x20]", wb=2),  # next sector: first touch again
            ins("FFMA", "R8, R7, R7, RZ", wait=(2,)),
            ins("EXIT"), explain=True)
    t = [e.issue for e in r.timeline]
    assert t[2] == LAT.l2_hit
    assert t[4] == t[3] + LAT.l2_hit


def test_rewritten_base_register_is_a_new_address():
    r = run(ins("LDG.E", "R2, [R4.64]", wb=0),
            ins("FFMA", "R3, R2, R2, RZ", wait=(0,)),
            ins("IMAD.WIDE", "R4, R3, 0x4, R4"),          # R4:R5 overwritten
            ins("LDG.E", "R6, [R4.64]", wb=1),
            ins("FFMA", "R7, R6, R6, RZ", wait=(1,)),
            ins("EXIT"), explain=True)
    t = [e.issue for e in r.timeline]
    assert t[4] == t[3] + LAT.l2_hit


def test_copied_or_spilled_base_address_keeps_its_sectors():
    r = run(ins("MOV", "R4, c[0x0][0x160]"),
            ins("MOV", "R5, c[0x0][0x164]"),
            ins("LDG.E", "R2, [R4.64]", wb=0),
            ins("FFMA", "R3, R2, R2, RZ", wait=(0,)),
            ins("STL.64", "[R1+0x8], R4"),                # spill the base pair
            ins("MOV", "R8, R4"), ins("MOV", "R9, R5"),    # and copy it
            ins("IADD3", "R4, R3, 0x1, RZ"),               # clobber R4
            ins("LDG.E", "R6, [R8.64+0x4]", wb=1),         # copy: same sector -> L1
            ins("FFMA", "R7, R6, R6, RZ", wait=(1,)),
            ins("LDL.64", "R10, [R1+0x8]", wb=2),          # reload into other registers
            ins("LDG.E", "R12, [R10.64+0x8]", wb=3, wait=(2,)),  # same sector again -> L1
            ins("FFMA", "R13, R12, R12, RZ", wait=(3,)),
            ins("LDG.E", "R14, [R4.64]", wb=4),            # clobbered register: a new address -> L2
            ins("FFMA", "R15, R14, R14, RZ", wait=(4,)),
            ins("EXIT"), explain=True)
    t = [e.issue for e in r.timeline]
    assert t[9] - t[8] == LAT.l1_hit
    assert t[12] - t[11] == LAT.l1_hit
    assert t[14] - t[13] == LAT.l2_hit


def test_two_producers_on_one_barrier_release_when_both_are_done():
    r = run(ins("LDG.E", "R2, [R4.64]", wb=0),         # t=0 -> 0 + l2
            ins("LDL", "R3, [R1+0x10]", wb=0),         # t=1 -> 1 + local (earlier)
            ins("FFMA", "R6, R3, R3, RZ", wait=(0,)),  # must wait for the slower of the two
            ins("EXIT"), explain=True)
    assert r.timeline[2].issue == max(0 + LAT.l2_hit, 1 + LAT.local)
    # once waited on, the barrier is free: a later wait costs nothing extra
    r2 = run(ins("LDL", "R3, [R1+0x10]", wb=0),
             ins("FFMA", "R6, R3, R3, RZ", wait=(0,)),
             ins("FFMA", "R7, R3, R3, RZ", wait=(0,)),
             ins("EXIT"), explain=True)
    assert r2.timeline[2].issue == r2.timeline[1].issue + 1


def test_depbar_waits_until_at_most_n_producers_are_outstanding():
    items = (ins("LDS", "R2, [R8]", wb=0),                 # t=0 -> shared
             ins("LDL", "R3, [R1+0x10]", wb=0),            # t=1 -> 1 + local
             ins("LDG.E", "R4, [R10.64]", wb=0),           # t=2 -> 2 + l2
             ins("DEPBAR.LE", "SB0, 0x1"),                 # 1 may stay outstanding: the 2nd-latest release
             ins("DEPBAR.LE", "SB0, 0x0"),                 # all of them
             ins("EXIT"))
    r = run(*items, explain=True)
    releases = sorted([0 + LAT.shared, 1 + LAT.local, 2 + LAT.l2_hit])
    assert r.timeline[3].issue == releases[1]
    assert r.timeline[4].issue == releases[2]


def test_depbar_with_three_outstanding_and_n2_waits_for_the_earliest():
    r = run(ins("LDS", "R2, [R8]", wb=0),
            ins("LDL", "R3, [R1+0x10]", wb=0),
            ins("LDG.E", "R4, [R10.64]", wb=0),
            ins("DEPBAR.LE", "SB0, 0x2"),
            ins("EXIT"), explain=True)
    assert r.timeline[3].issue == min(0 + LAT.shared, 1 + LAT.local)


def test_read_barrier_releases_after_operand_read():
    r = run(ins("STG.E", "[R4.64], R2", rb=0),
            ins("MOV", "R2, RZ", wait=(0,)),   # may overwrite R2 once the store has read it
            ins("EXIT"), explain=True)
    assert r.timeline[1].issue == LAT.operand_read


def test_never_executed_instruction_sets_no_barrier():
    r = run(ins("LDS", "RZ, [RZ]", wb=0, guard="!PT"),
            ins("FFMA", "R6, R3, R3, RZ", wait=(0,)),
            ins("EXIT"), explain=True)
    assert r.timeline[1].issue == 1


# ---------------------------------------------------------------------------
# where the data comes from


def test_cg_load_of_reused_sector_is_slower_than_default():
    def kernel(op):
        return (ins(op, "R2, [R4.64]", wb=0),
                ins("FFMA", "R3, R2, R2, RZ", wait=(0,)),
                ins(op, "R5, [R4.64+0x4]", wb=1),       # same sector, issued after the first returned
                ins("FFMA", "R6, R5, R5, RZ", wait=(1,)),
                ins("EXIT"))
    default = run(*kernel("LDG.E"), explain=True)
    cg = run(*kernel("LDG.E.STRONG.GPU"), explain=True)
    cv = run(*kernel("LDG.E.STRONG.SYS"), explain=True)
    assert default.timeline[3].issue - default.timeline[2].issue == LAT.l1_hit
    assert cg.timeline[3].issue - cg.timeline[2].issue == LAT.l2_hit
    assert cv.cycles == cg.cycles > default.cycles
    # a single first touch costs the same either way (the data is L2-warm)
    one = lambda op: run(ins(op, "R2, [R4.64]", wb=0), ins("FFMA", "R3, R2, R2, RZ", wait=(0,)), ins("EXIT"))
    assert one("LDG.E").cycles == one("LDG.E.STRONG.GPU").cycles == LAT.l2_hit + 2  # EXIT at l2 + 1


def test_no_allocate_load_does_not_fill_l1():
    r = run(ins("LDG.E.NA.CONSTANT", "R2, [R4.64]", wb=0),
            ins("FFMA", "R3, R2, R2, RZ", wait=(0,)),
            ins("LDG.E", "R5, [R4.64+0x4]", wb=1),
            ins("FFMA", "R6, R5, R5, RZ", wait=(1,)),
            ins("EXIT"), explain=True)
    assert r.timeline[3].issue - r.timeline[2].issue == LAT.l2_hit


def test_prefetch_to_l1_starts_the_fill_of_its_own_sector():
    r = run(ins("CCTL.E.PF1", "[R4+0x40]"),                     # t=0, sector 2 of the line
            ins("NOP", stall=15), ins("NOP", stall=15),
            ins("LDG.E", "R5, [R4.64+0x44]", wb=1),             # t=31, same sector: waits for the fill
            ins("FFMA", "R6, R5, R5, RZ", wait=(1,)),
            ins("EXIT"), explain=True)
    assert r.timeline[4].issue == max(LAT.l2_hit, 31 + LAT.l1_hit)


def test_prefetch_to_l1_does_not_fill_the_other_sectors_of_its_line():
    # Sectored L1: a PF1 fills one 32-byte sector (latency.prefetch_fill_bytes), so a
    # load of another sector of the same 128-byte line is still a first touch (L2).
    assert LAT.prefetch_fill_bytes == LAT.sector_bytes
    r = run(ins("CCTL.E.PF1", "[R4]"),                          # t=0, sector 0
            ins("NOP", stall=15), ins("NOP", stall=15),
            ins("LDG.E", "R5, [R4.64+0x60]", wb=1),             # t=31, sector 3 of that line
            ins("FFMA", "R6, R5, R5, RZ", wait=(1,)),
            ins("EXIT"), explain=True)
    assert r.timeline[4].issue == 31 + LAT.l2_hit
    assert "global L2 (first touch)" in r.waits


def test_spill_reload_uses_local_latency():
    r = run(ins("STL", "[R1+0x10], R2", rb=0),
            ins("LDL.LU", "R3, [R1+0x10]", wb=1),
            ins("FFMA", "R6, R3, R3, RZ", wait=(1,)),
            ins("EXIT"), explain=True)
    assert r.timeline[2].issue == 1 + LAT.local
    assert r.waits == {"local": LAT.local - 1}


def test_cache_operator_classification():
    assert _latency_class("LDG", ("E",)) == K_GLOBAL
    assert _latency_class("LDG", ("E", "STRONG", "SM")) == K_GLOBAL  # .ca
    assert _latency_class("LDG", ("E", "EF")) == K_GLOBAL  # .cs
    assert _latency_class("LDG", ("E", "CONSTANT")) == K_GLOBAL  # .nc
    assert _latency_class("LDG", ("E", "STRONG", "GPU")) == K_GLOBAL_L2  # .cg
    assert _latency_class("LDG", ("E", "STRONG", "SYS")) == K_GLOBAL_L2  # .cv
    assert _latency_class("LDG", ("E", "NA", "CONSTANT")) == K_GLOBAL_NA


CACHE_PTX = """
.version 8.8
.target {arch}
.address_size 64
.visible .entry k(.param .u64 a, .param .u64 c)
{{
  .reg .b64 %rd<4>; .reg .f32 %f<8>;
  ld.param.u64 %rd1, [a]; ld.param.u64 %rd2, [c];
  cvta.to.global.u64 %rd1, %rd1; cvta.to.global.u64 %rd2, %rd2;
  ld.global.f32 %f1, [%rd1];
  ld.global.cg.f32 %f2, [%rd1+4];
  ld.global.cv.f32 %f3, [%rd1+8];
  ld.global.ca.f32 %f4, [%rd1+12];
  ld.global.cs.f32 %f5, [%rd1+16];
  add.f32 %f1, %f1, %f2; add.f32 %f1, %f1, %f3; add.f32 %f1, %f1, %f4; add.f32 %f1, %f1, %f5;
  st.global.f32 [%rd2], %f1;
  ret;
}}
"""


@pytest.mark.parametrize("arch", ["sm_89", "sm_90"])
def test_ptxas_cache_operator_mapping(arch):
    """The SASS modifiers ptxas emits per PTX cache operator, as documented in ptxopt.sim.sass_decode."""
    from ptxopt.toolchain import compile_ptx, disassemble

    lst = disassemble(compile_ptx(CACHE_PTX.format(arch=arch), arch).cubin)
    by_offset = {}
    for i in lst:
        if i.base_opcode == "LDG":
            off = i.operands.rsplit("+", 1)[-1].rstrip("]") if "+0x" in i.operands else "0x0"
            by_offset[int(off, 16)] = i.opcode
    assert by_offset == {0: "LDG.E", 4: "LDG.E.STRONG.GPU", 8: "LDG.E.STRONG.SYS",
                         12: "LDG.E.STRONG.SM", 16: "LDG.E.EF"}


# ---------------------------------------------------------------------------
# control flow


LOOP = (ins("MOV", "R0, RZ"),                       # 0
        ins("IADD3", "R0, R0, 0x1, RZ", stall=4),   # 1  <- .L0
        ins("ISETP.GE.AND", "P0, PT, R0, 0x10, PT", stall=5),
        ins("@P0 BRA", "`(.L0)"),                   # 3: backward, conditional
        ins("EXIT"))


def _loop(**kw):
    items = list(LOOP)
    items[3] = ins("BRA", "`(.L0)", guard="!P0", stall=5)
    return run(*items, labels={1: ".L0"}, **kw)


def test_static_loop_fallback_is_reported():
    r = _loop()
    assert r.fallback == "static:N=8"
    assert any("back edges taken 8 times" in n for n in r.notes)
    # body (3 instructions) runs N+1 = 9 times, plus MOV and EXIT
    assert r.issued_instructions == 1 + 9 * 3 + 1
    assert r.cycles == 1 + 9 * (4 + 5 + 5) + 1
    r4 = _loop(loop_trips=4)
    assert r4.fallback == "static:N=4" and r4.issued_instructions == 1 + 5 * 3 + 1


def test_trip_counts_replace_the_fallback():
    r = _loop(trip_counts={0x30: 2})            # key: byte offset of the back edge in the kernel
    assert r.fallback is None
    assert r.issued_instructions == 1 + 3 * 3 + 1
    r2 = _loop(trip_counts={("k", 0x30): 0})
    assert r2.issued_instructions == 1 + 3 + 1
    with pytest.raises(KeyError):
        _loop(trip_counts={0x10: 2})            # not a branch


def test_nested_loops_reset_per_entry():
    items = (ins("MOV", "R0, RZ"),                         # 0
             ins("MOV", "R1, RZ"),                         # 1 <- .Louter
             ins("IADD3", "R1, R1, 0x1, RZ"),              # 2 <- .Linner
             ins("BRA", "`(.Linner)", guard="P1"),         # 3 inner back edge
             ins("IADD3", "R0, R0, 0x1, RZ"),              # 4
             ins("BRA", "`(.Louter)", guard="P0"),         # 5 outer back edge
             ins("EXIT"))
    r = run(*items, labels={1: ".Louter", 2: ".Linner"}, trip_counts={0x30: 2, 0x50: 1})
    # outer runs 2 times; each time the inner body runs 3 times
    assert r.issued_instructions == 1 + 2 * (1 + 3 * 2 + 2) + 1
    loops = sass_loops(listing(*items, labels={1: ".Louter", 2: ".Linner"}))
    assert [(lp.header_offset, lp.depth) for lp in loops] == [(0x10, 1), (0x20, 2)]


def test_forward_branch_fallback_and_fractions():
    items = (ins("MOV", "R0, RZ"),                      # 0 <- .Ltop
             ins("BRA", "`(.Lskip)", guard="P0"),       # 1 forward
             ins("FFMA", "R1, R0, R0, RZ", stall=4),    # 2 skipped when taken
             ins("NOP"),                                # 3 <- .Lskip
             ins("BRA", "`(.Ltop)", guard="P1"),        # 4 back edge
             ins("EXIT"))
    labels = {0: ".Ltop", 3: ".Lskip"}
    r = run(*items, labels=labels, trip_counts={0x40: 3})
    assert r.fallback == "static:N=8"  # the forward branch had no count: not taken
    assert r.issued_instructions == 4 * 5 + 1
    r2 = run(*items, labels=labels, trip_counts={0x40: 3, 0x10: 0.5})
    assert r2.fallback is None
    assert r2.issued_instructions == 4 * 5 - 2 + 1  # taken on every second visit: FFMA skipped twice


def test_unconditional_back_edge_leaves_through_its_exit():
    items = (ins("MOV", "R0, RZ"),                     # 0 <- .L0
             ins("BRA", "`(.Lout)", guard="P0"),       # 1 loop exit
             ins("IADD3", "R0, R0, 0x1, RZ"),          # 2
             ins("BRA", "`(.L0)"),                     # 3 unconditional back edge
             ins("EXIT"))                              # 4 <- .Lout
    r = run(*items, labels={0: ".L0", 4: ".Lout"})
    assert r.fallback == "static:N=8"
    assert r.issued_instructions == 8 * 4 + 2 + 1
    kinds = {s.offset: s.kind for s in branch_sites(listing(*items, labels={0: ".L0", 4: ".Lout"}))}
    assert kinds == {0x10: "loop-exit"}


def test_call_and_return():
    items = (ins("MOV", "R0, RZ"),                           # 0
             ins("CALL.REL.NOINC", "`($sub)"),               # 1
             ins("EXIT"),                                    # 2
             ins("FFMA", "R1, R0, R0, RZ", stall=4),         # 3 <- $sub
             ins("RET.REL.NODEC", "R4 `(k)"))                # 4
    lst = listing(*items)
    lst = SassListing(lst.arch, tuple(
        SassInstruction(i.function, i.offset, i.guard, i.opcode, i.operands, i.low, i.high, i.control,
                        "$sub" if i.offset >= 0x30 else "k") for i in lst.instructions), {})
    r = simulate(lst, None, explain=True)
    assert [e.offset for e in r.timeline] == [0x0, 0x10, 0x30, 0x40, 0x20]
    assert r.fallback is None


def test_never_true_branch_is_not_taken():
    items = (ins("BRA", "`(.L1)", guard="!PT"), ins("FFMA", "R1, R0, R0, RZ"), ins("EXIT"))
    r = run(*items, labels={2: ".L1"})
    assert r.issued_instructions == 3 and r.fallback is None


def test_guarded_exit_not_taken_by_default():
    r = run(ins("ISETP.GE.AND", "P0, PT, R0, 0x10, PT"), ins("EXIT", guard="P0"),
            ins("FFMA", "R1, R0, R0, RZ"), ins("EXIT"))
    assert r.issued_instructions == 4 and r.fallback == "static:N=8"


def test_loop_profile_hook():
    lst = listing(*[ins(*t[:2], stall=t[2]) if t[6] is None else ins(t[0], t[1], stall=t[2], guard=t[6])
                    for t in LOOP[:3]],
                  ins("BRA", "`(.L0)", guard="!P0", stall=5), ins("EXIT"), labels={1: ".L0"})
    trips = trip_counts_from_loop_profile(lst, [LoopCount(entries=2, iterations=10)])
    assert trips == {("k", 0x30): 4.0}  # 5 iterations per entry: back edge taken 4 times
    r = simulate(lst, None, trips)
    assert r.fallback is None and r.issued_instructions == 1 + 5 * 3 + 1
    with pytest.raises(ValueError):
        trip_counts_from_loop_profile(lst, [LoopCount(1, 3), LoopCount(1, 3)])


# ---------------------------------------------------------------------------
# result, tables, warps


def test_many_warps_issue_bound():
    items = [ins("FFMA", "R1, R0, R0, RZ") for _ in range(9)] + [ins("EXIT")]
    r1 = run(*items)
    r4 = run(*items, warps=4)
    assert r1.cycles == 10
    assert r4.single_warp_cycles == 10 and r4.issue_bound_cycles == 40 and r4.cycles == 40


def test_resources_fill_the_result():
    res = KernelResources(registers=40, spill_store_bytes=8, spill_load_bytes=4)
    r = simulate(listing(ins("EXIT")), res)
    assert (r.registers, r.spill_store_bytes, r.spill_load_bytes, r.sass_instructions) == (40, 8, 4, 1)


def test_latency_tables_and_substitutes():
    for arch in ("sm_80", "sm_89", "sm_90"):
        t, note = latencies_for(arch)
        assert t.arch == arch and note is None
        assert t.l1_hit < t.l2_hit < t.dram and t.local <= t.l2_hit
    t, note = latencies_for("sm_86")
    assert t.arch == "sm_80" and "sm_80" in note
    t, note = latencies_for("sm_90a")
    assert t.arch == "sm_90" and note
    with pytest.raises(ValueError):
        latencies_for("sm_70")


def test_decode_is_reusable_and_deterministic():
    lst = listing(*LOOP[:3], ins("BRA", "`(.L0)", guard="!P0", stall=5), ins("EXIT"), labels={1: ".L0"})
    prog = decode(lst)
    a = simulate(prog, None)
    b = simulate(lst, None)
    assert a == b


# ---------------------------------------------------------------------------
# end to end through ptxas


def _gemm(shape: str) -> str:
    from ptxopt.kernels.corpus import get

    return get(f"gemm_tile_{shape}").ptx_text()


def test_estimate_is_deterministic_end_to_end():
    text = _gemm("4x4x4")
    a, b = estimate(text), estimate(text)
    assert a == b and a.cycles > 0 and a.estimate and a.registers == 40
    assert a.fallback is None  # straight-line code


def test_estimates_grow_with_more_fmas():
    cycles = [estimate(_gemm(s)).cycles for s in ("2x2x2", "4x4x4", "8x8x8")]
    assert cycles[0] < cycles[1] < cycles[2]
    along_k = [estimate(_gemm(s)).cycles for s in ("4x4x2", "4x4x4", "4x4x8")]
    assert along_k[0] < along_k[1] < along_k[2]


def test_loop_kernel_reports_static_fallback_end_to_end():
    from ptxopt.kernels.corpus import get

    r = estimate(get("cuda_saxpy").ptx_text())
    assert r.fallback == "static:N=8"
    from ptxopt.toolchain import compile_ptx, disassemble

    compiled = compile_ptx(get("cuda_saxpy").ptx_text())
    loops = sass_loops(disassemble(compiled.cubin))
    assert len(loops) == 1  # the grid-stride loop; the trap "BRA self" after EXIT is not a loop
    sites = branch_sites(disassemble(compiled.cubin))
    assert sorted(s.kind for s in sites) == ["back-edge", "exit"]


def test_toolchain_errors_propagate_unchanged():
    with pytest.raises(PtxasError):
        estimate(".version 8.8\n.target sm_89\n.address_size 64\n.visible .entry k() { bogus; }\n")


def test_sm80_and_sm90_estimates():
    text = _gemm("4x4x4")
    r80 = estimate(text.replace(".target sm_89", ".target sm_80"), "sm_80")
    r90 = estimate(text, "sm_90")
    assert r80.arch == "sm_80" and r90.arch == "sm_90" and r80.cycles > 0 and r90.cycles > 0
    assert not r80.notes and not r90.notes

