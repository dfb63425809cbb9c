"""The prover on ``ldmatrix`` (:data:`ptxopt.ptx.opcodes.WARP_ALIGNED_READS`).

An ``ldmatrix.sync.aligned`` is a read of shared memory whose rows other lanes
address, executed by the whole warp as one instruction: it may move among
loads, collectives and stores to other spaces (``reorder_*`` on Triton's
attention kernels), and never across a barrier or a store it may see. Each
rewrite below is written by hand from one small kernel; the illegal ones
tempt the model where it was relaxed (an ordering point before): a shared
store moved across the read at another offset (another lane's row may be
there), a read moved across the barrier, a dead read given another address
(it can fault), a changed guard."""

from __future__ import annotations

import re

import pytest

from ptxopt.equivalence.prove import clear_memo, prove
from ptxopt.equivalence.verdict import Verdict

KERNEL = """.version 8.0
.target sm_89
.address_size 64

.visible .entry k(.param .u64 out, .param .u64 in)
{
	.reg .pred %p<2>;
	.reg .b32 %r<20>;
	.reg .b64 %rd<8>;
	.shared .align 16 .b8 smem[1024];
	ld.param.u64 %rd1, [out];
	cvta.to.global.u64 %rd2, %rd1;
	ld.param.u64 %rd3, [in];
	cvta.to.global.u64 %rd4, %rd3;
	mov.u32 %r1, %tid.x;
	setp.lt.u32 %p1, %r1, 16;
	shl.b32 %r2, %r1, 4;
	mov.u32 %r3, smem;
	add.s32 %r4, %r3, %r2;
	ld.global.u32 %r5, [%rd4];
	st.shared.u32 [%r4], %r5;
	bar.sync 0;
	ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%r6}, [%r4];
	ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16 {%r7}, [%r4];
	ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%r10}, [%r4+256];
	ld.global.u32 %r8, [%rd4+4];
	st.shared.u32 [%r4+512], %r8;
	shfl.sync.bfly.b32 %r11, %r8, 1, 31, -1;
	st.global.u32 [%rd4+8], %r11;
	add.s32 %r9, %r6, %r7;
	add.s32 %r9, %r9, %r8;
	mul.wide.u32 %rd5, %r1, 4;
	add.s64 %rd6, %rd2, %rd5;
	st.global.u32 [%rd6], %r9;
	ret;
}
"""

L1 = "\tldmatrix.sync.aligned.m8n8.x1.shared.b16 {%r6}, [%r4];\n"
L2 = "\tldmatrix.sync.aligned.m8n8.x1.trans.shared.b16 {%r7}, [%r4];\n"
DEAD = "\tldmatrix.sync.aligned.m8n8.x1.shared.b16 {%r10}, [%r4+256];\n"
GLD = "\tld.global.u32 %r8, [%rd4+4];\n"
SST = "\tst.shared.u32 [%r4+512], %r8;\n"
SHFL = "\tshfl.sync.bfly.b32 %r11, %r8, 1, 31, -1;\n"
GST = "\tst.global.u32 [%rd4+8], %r11;\n"
BAR = "\tbar.sync 0;\n"


def _moved(text: str, line: str, before: str) -> str:
    """``text`` with ``line`` taken out and put back just before ``before``."""
    assert line in text and before in text
    return text.replace(line, "", 1).replace(before, line + before, 1)


LEGAL = {
    "two reads swapped": _moved(KERNEL, L2, L1),
    "a dead read first": _moved(KERNEL, DEAD, L1),
    "a global load moved above the reads": _moved(KERNEL, GLD, L1),
    "a shuffle and the global store moved above the reads": _moved(_moved(KERNEL, GLD, L1), SHFL + GST, L1),
    # the same rows of the same memory read twice: nothing more can fault, nothing else changes
    "an identical dead read added": KERNEL.replace(DEAD, DEAD + DEAD.replace("%r10", "%r12")),
}

ILLEGAL = {
    "a shared store moved above a read (another lane's row)": _moved(_moved(KERNEL, GLD, L1), SST, L1),
    "a read moved below a shared store it sees": _moved(KERNEL, L1, SHFL),
    "a read moved above the barrier": _moved(KERNEL, L1, BAR),
    "a dead read at another address": KERNEL.replace("[%r4+256]", "[%r4+260]"),
    "a dead read dropped": KERNEL.replace(DEAD, ""),
    "a dead read added at a new address":
        KERNEL.replace(DEAD, DEAD + DEAD.replace("%r10", "%r12").replace("256", "768")),
    "a read at another address": KERNEL.replace(L1, L1.replace("[%r4]", "[%r4+16]")),
    "a read guarded": KERNEL.replace(L2, "\t@%p1 " + L2.lstrip("\t")),
    "trans dropped": KERNEL.replace(L2, L2.replace(".trans", "")),
}


@pytest.mark.parametrize("name", list(LEGAL))
def test_warp_reads_move_among_loads_collectives_and_other_spaces(name):
    clear_memo()
    assert LEGAL[name] != KERNEL
    r = prove(KERNEL, LEGAL[name])
    assert r.verdict == Verdict.PROVED, r.reason


@pytest.mark.parametrize("name", list(ILLEGAL))
def test_warp_reads_never_cross_what_they_see(name):
    clear_memo()
    assert ILLEGAL[name] != KERNEL
    r = prove(KERNEL, ILLEGAL[name])
    assert r.verdict != Verdict.PROVED, name


@pytest.mark.parametrize("name", list(LEGAL) + list(ILLEGAL))
def test_the_smt_encoding_agrees(name):
    """The SMT block check (:mod:`ptxopt.equivalence.prove.smt.check`: the
    prover's fallback and its independent re-check) models the read the same
    way: the legal rewrites are shown equal, the others never are."""
    from ptxopt.equivalence.prove.smt import solver
    from ptxopt.equivalence.prove.smt.check import recheck

    if not solver.available():
        pytest.skip("no SMT solver installed")
    r = recheck(KERNEL, LEGAL.get(name) or ILLEGAL[name])
    assert (r.status == "equal") == (name in LEGAL), r.reason


def test_the_kernel_and_its_rewrites_are_ptx():
    """ptxas accepts the kernel and every rewrite the legal half proves (the
    model reasons about real PTX, not about a form nothing emits)."""
    from ptxopt.toolchain import compile_ptx

    for text in (KERNEL, *LEGAL.values()):
        compile_ptx(text, "sm_89")


def test_an_unaligned_form_stays_an_ordering_point():
    """Only the ``.sync.aligned`` form is a warp-wide read (what the ISA
    guarantees executes as one instruction); another spelling keeps the old
    model, an ordering point that nothing moves across."""
    plain = KERNEL.replace(".sync.aligned.", ".")
    clear_memo()
    r = prove(plain, _moved(plain, GLD, L1.replace(".sync.aligned.", ".")))
    assert r.verdict != Verdict.PROVED


# -- the same rules inside a loop with a runtime trip count: the inductive loop simulation (prove.loop_sim,
# SMT) on an unrolled candidate written by hand (the guarded form, two copies per trip)

LOOP_HEAD = KERNEL.split("\tld.param.u64 %rd1")[0].replace(".param .u64 in)", ".param .u64 in, .param .u32 n)") \
    .replace("%r<20>", "%r<24>")
LOOP_PRE = """	ld.param.u64 %rd1, [out];
	cvta.to.global.u64 %rd2, %rd1;
	ld.param.u64 %rd3, [in];
	cvta.to.global.u64 %rd4, %rd3;
	ld.param.u32 %r20, [n];
	mov.u32 %r1, %tid.x;
	setp.lt.u32 %p1, %r1, 16;
	shl.b32 %r2, %r1, 4;
	mov.u32 %r3, smem;
	add.s32 %r4, %r3, %r2;
	mov.u32 %r6, 0;
	mov.u32 %r9, 0;
	mov.u32 %r21, 0;
$L_loop:
"""
LOOP_BODY = [
    "ld.global.u32 %r5, [%rd4];",
    "st.shared.u32 [%r4], %r5;",
    "bar.sync 0;",
    "ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%r6}, [%r4];",
    "ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16 {%r7}, [%r4];",
    "ld.global.u32 %r8, [%rd4+4];",
    "add.s32 %r9, %r9, %r6;",
    "add.s32 %r9, %r9, %r7;",
    "add.s32 %r9, %r9, %r8;",
    "bar.sync 0;",
    "add.s64 %rd4, %rd4, 8;",
    "add.s32 %r21, %r21, 1;",
    "setp.lt.u32 %p2, %r21, %r20;",
]
LOOP_TAIL = """	@%p2 bra $L_loop;
	mul.wide.u32 %rd5, %r1, 4;
	add.s64 %rd6, %rd2, %rd5;
	st.global.u32 [%rd6], %r9;
	ret;
}
"""
CHECK = ["add.u32 %t0, %r21, 1;", "setp.lt.u32 %q0, %t0, %r20;", "setp.ge.u32 %q1, %t0, %r21;",
         "and.pred %q0, %q0, %q1;", "@!%q0 bra $L_loop_last;"]


def _lines(xs: list[str]) -> str:
    return "".join(x + "\n" if x.endswith(":") else f"\t{x}\n" for x in xs)


def _unrolled(first: list[str], last: list[str] = LOOP_BODY) -> str:
    """The loop unrolled twice, guarded: ``first`` is the first copy's body."""
    head = LOOP_HEAD.replace("\t.reg .pred %p<2>;", "\t.reg .pred %p<3>;\n\t.reg .pred %q<2>;\n\t.reg .b32 %t<1>;")
    return head + LOOP_PRE + _lines(CHECK + first + ["$L_loop_last:"] + last) + LOOP_TAIL


LOOP = LOOP_HEAD.replace("%p<2>", "%p<3>") + LOOP_PRE + _lines(LOOP_BODY) + LOOP_TAIL


def _edit(body: list[str], *, move: int | None = None, to: int | None = None,
          at: int | None = None, new: str | None = None, insert: bool = False) -> list[str]:
    """``body`` with line ``move`` put before line ``to`` (indices of ``body``), or line ``at``
    replaced by (``insert``: preceded by) ``new``."""
    out = list(body)
    if move is not None:
        line = body[move]
        out.pop(move)
        out.insert(to if to < move else to - 1, line)
    if at is not None:
        out[at:at + (0 if insert else 1)] = [new]
    return out


B = LOOP_BODY
LDM, LDM_T, SST_L, BAR_1 = 3, 4, 1, 2
LOOP_LEGAL = {
    "the unrolled loop": _unrolled(B),
    "a copy's two reads swapped": _unrolled(_edit(B, move=LDM_T, to=LDM)),
    "a copy's global load moved above its reads (reorder_cp's move)": _unrolled(_edit(B, move=5, to=LDM)),
    "the last copy's reads swapped": _unrolled(B, _edit(B, move=LDM_T, to=LDM)),
}
LOOP_ILLEGAL = {
    "a read moved above the barrier": _unrolled(_edit(B, move=LDM, to=BAR_1)),
    "the last copy's read moved above the barrier": _unrolled(B, _edit(B, move=LDM_T, to=BAR_1)),
    "a read moved below the shared store it sees": _unrolled(_edit(B, move=SST_L, to=LDM_T)),
    "trans dropped in a copy": _unrolled(_edit(B, at=LDM_T, new=B[LDM_T].replace(".trans", ""))),
    "a read at another address in a copy": _unrolled(_edit(B, at=LDM, new=B[LDM].replace("[%r4]", "[%r4+16]"))),
    "a read guarded in a copy": _unrolled(_edit(B, at=LDM, new="@%p1 " + B[LDM])),
    "a dead read at a new address in a copy": _unrolled(_edit(B, at=LDM, insert=True,
                                                              new=B[LDM].replace("%r6", "%r10").replace("[%r4]", "[%r4+512]"))),
    "a read dropped in the last copy (its register keeps the last trip's)": _unrolled(B, _edit(B, at=LDM, new="")),
}


@pytest.mark.parametrize("name", list(LOOP_LEGAL))
def test_the_loop_simulation_moves_warp_reads_as_the_block_prover_does(name):
    clear_memo()
    r = prove(LOOP, LOOP_LEGAL[name])
    assert r.verdict == Verdict.PROVED, r.reason
    assert "inductive simulation" in r.reason


@pytest.mark.parametrize("name", list(LOOP_ILLEGAL))
def test_the_loop_simulation_never_moves_a_warp_read_across_what_it_sees(name):
    clear_memo()
    r = prove(LOOP, LOOP_ILLEGAL[name])
    assert r.verdict != Verdict.PROVED, name
    assert "warp-wide ldmatrix" in r.reason, r.reason


def test_the_loop_kernels_are_ptx():
    from ptxopt.toolchain import compile_ptx

    for text in (LOOP, *LOOP_LEGAL.values()):
        compile_ptx(text, "sm_89")


# -- the trap the naming avoids: two warp-wide instructions whose operands are equal in SOME lanes. In lane t
# (even) the two reads below take the same address, but the rows come from all 32 lanes, and the odd lanes'
# addresses differ: the two results differ. A model whose result is a function of one lane's operands (an
# uninterpreted function of the address) would prove the candidate, which picks one result for the other
# wherever its own operands agree; results named by operand *terms* never equate the two.

TRAP = """.version 8.0
.target sm_89
.address_size 64

.visible .entry k(.param .u64 out, .param .u32 n)
{
	.reg .pred %p<4>;
	.reg .f32 %f<9>;
	.reg .b32 %r<24>;
	.reg .b64 %rd<8>;
	.shared .align 16 .b8 smem[1024];
	ld.param.u64 %rd1, [out];
	cvta.to.global.u64 %rd2, %rd1;
	ld.param.u32 %r20, [n];
	mov.u32 %r1, %tid.x;
	shl.b32 %r2, %r1, 4;
	and.b32 %r3, %r2, -32;
	mov.u32 %r4, smem;
	add.s32 %r5, %r4, %r2;
	add.s32 %r6, %r4, %r3;
	mov.f32 %f1, 0f00000000;
	mov.f32 %f2, 0f00000000;
	mov.f32 %f3, 0f00000000;
	mov.f32 %f4, 0f00000000;
	mov.u32 %r9, 0;
	mov.u32 %r21, 0;
$L_loop:
	ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%r7}, [%r5];
	ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%r8}, [%r6];
	PICK_READ
	add.s32 %r9, %r9, %r10;
	mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%f5, %f6, %f7, %f8}, {%r7, %r7}, {%r1}, {%f1, %f2, %f3, %f4};
	mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%f1, %f2, %f3, %f4}, {%r8, %r8}, {%r1}, {%f1, %f2, %f3, %f4};
	PICK_MMA
	add.s32 %r21, %r21, 1;
	setp.lt.u32 %p1, %r21, %r20;
	@%p1 bra $L_loop;
	mul.wide.u32 %rd5, %r1, 16;
	add.s64 %rd6, %rd2, %rd5;
	st.global.v4.f32 [%rd6], {%f1, %f2, %f3, %f4};
	st.global.u32 [%rd6+4096], %r9;
	ret;
}
"""
KEEP_READ = "mov.b32 %r10, %r8;"
KEEP_MMA = "mov.f32 %f1, %f1;"
# where this lane's two addresses agree, take the first read's value (the odd lanes' rows differ)
PICK_READ = "setp.eq.u32 %p2, %r5, %r6;\n\tselp.b32 %r10, %r7, %r8, %p2;"
# where this lane's A fragments agree, take the first product (the other lanes' fragments differ)
PICK_MMA = "setp.eq.u32 %p3, %r7, %r8;\n\tselp.f32 %f1, %f5, %f1, %p3;"


def _trap(read: str = KEEP_READ, mma: str = KEEP_MMA) -> str:
    return TRAP.replace("PICK_READ", read).replace("PICK_MMA", mma)


@pytest.mark.parametrize("which", ["ldmatrix", "mma"])
def test_two_warp_wide_results_are_never_equated_where_one_lanes_operands_agree(which):
    """The block prover and the loop simulation (the SMT path that models ``mma``) both refuse."""
    from ptxopt.equivalence.prove import loop_sim
    from ptxopt.equivalence.prove.smt import solver
    from ptxopt.ptx.parser import parse

    original = _trap()
    candidate = _trap(read=PICK_READ) if which == "ldmatrix" else _trap(mma=PICK_MMA)
    clear_memo()
    assert prove(original, candidate).verdict != Verdict.PROVED
    if not solver.available():
        pytest.skip("no SMT solver installed")
    fo, fc = parse(original).functions[0], parse(candidate).functions[0]
    r = loop_sim.prove_by_simulation(fo, fc)
    assert r.verdict != Verdict.PROVED
    assert "the solver found a state" in r.reason, r.reason  # refused on the value, not on the shape
    # (the kernel against itself is proved: the trap is in the pick, not in the kernel's shape)
    assert loop_sim.prove_by_simulation(fo, parse(original).functions[0]).verdict == Verdict.PROVED


def test_the_trap_kernels_are_ptx():
    from ptxopt.toolchain import compile_ptx

    for text in (_trap(), _trap(read=PICK_READ), _trap(mma=PICK_MMA)):
        compile_ptx(text, "sm_89")


# -- the warp must stay together at a .sync.aligned instruction (prove.convergence) -----------------------------

def _versioned_despite_the_mma(monkeypatch) -> tuple[str, str]:
    """tests/adversarial/loop_version_mma.ptx, and loop_version_4's result on it had the loop analysis not
    counted the mma as needing the whole warp (the pass applied it before that rule)."""
    from pathlib import Path

    from ptxopt.analysis import loops
    from ptxopt.passes.passmanager import run_passes_unchecked

    text = (Path(__file__).parents[1] / "adversarial" / "loop_version_mma.ptx").read_text()
    assert not re.search(r"bra\s+L_top_slow", run_passes_unchecked(text, "loop_version_4", allow_unchecked=True))
    monkeypatch.setattr(loops, "needs_whole_warp", lambda ins: False)
    cand = run_passes_unchecked(text, "loop_version_4", allow_unchecked=True)
    assert re.search(r"bra\s+L_top_slow", cand)
    return text, cand


def test_a_new_branch_on_a_per_thread_value_is_never_proved_around_an_mma(monkeypatch):
    """Each thread runs the same mma on the same operands in both kernels -- what the per-thread proof
    checks, and proved before this rule -- but the versioning test reads each thread's own row addresses,
    so the warp's threads split between the fast copy's mma and the slow copy's: the interpreter reports
    the divergent warp collective."""
    from ptxopt.equivalence.interpret import Geometry, verify

    text, cand = _versioned_despite_the_mma(monkeypatch)
    clear_memo()
    r = prove(text, cand)
    assert r.verdict == Verdict.INCONCLUSIVE, r.reason
    assert "a branch the original does not have, on a predicate that may differ between the threads" in r.reason
    res = verify(text, cand, "loop_version_mma", trials=1, geometry=Geometry(grid=(1, 1, 1), block=(32, 1, 1)))
    assert res.status == "error" and "divergent warp collective" in (res.error or ""), (res.status, res.error)


def test_a_uniform_new_branch_around_an_mma_is_still_proved():
    """unroll_2's guard tests the trip count, a parameter: the same in every thread, so the warp stays
    together and the loop proof stands."""
    from pathlib import Path

    from ptxopt.passes.passmanager import run_passes_unchecked

    text = (Path(__file__).parents[1] / "adversarial" / "loop_version_mma.ptx").read_text()
    cand = run_passes_unchecked(text, "unroll_2", allow_unchecked=True)
    assert "L_top_last" in cand
    clear_memo()
    r = prove(text, cand)
    assert r.verdict == Verdict.PROVED, r.reason


_MMA = ("\tmma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%f0, %f1, %f2, %f3}, {%r4, %r4, %r4, %r4}, "
        "{%r4, %r4}, {%f0, %f1, %f2, %f3};\n")


def _split_kernel(index: str | None) -> str:
    """An mma kernel; with ``index``, a ``brx.idx`` on it first picks one of two copies of the mma."""
    jump = ("\tts: .branchtargets L_a, L_b;\n\tbrx.idx %r2, ts;\nL_a:\n" + _MMA + "\tbra L_end;\nL_b:\n"
            if index else "")
    return (".version 8.0\n.target sm_89\n.address_size 64\n"
            ".visible .entry k(.param .u64 out, .param .u32 n)\n{\n"
            "\t.reg .b32 %r<8>;\n\t.reg .f32 %f<8>;\n\t.reg .b64 %rd<3>;\n"
            "\tld.param.u64 %rd1, [out];\n\tld.param.u32 %r3, [n];\n\tmov.u32 %r1, %tid.x;\n"
            "\tmov.b32 %r4, %r1;\n\tmov.f32 %f0, 0f00000000;\n\tmov.f32 %f1, 0f00000000;\n"
            "\tmov.f32 %f2, 0f00000000;\n\tmov.f32 %f3, 0f00000000;\n"
            + (f"\tand.b32 %r2, {index}, 1;\n" if index else "") + jump + _MMA
            + "L_end:\n\tst.global.f32 [%rd1], %f0;\n\tret;\n}\n")


@pytest.mark.parametrize("index, splits", [("%r1", True), ("%r3", False)], ids=["thread id", "parameter"])
def test_an_indirect_branch_splits_the_warp_by_its_index(index, splits):
    """A ``brx.idx`` has no guard: what decides it is its index (the thread id may differ between the
    threads of a warp; a parameter may not)."""
    from ptxopt.equivalence.prove.convergence import warp_split
    from ptxopt.ptx.parser import parse

    fo, fc = parse(_split_kernel(None)).entries[0], parse(_split_kernel(index)).entries[0]
    why = warp_split(fo, fc)
    assert (why is not None) == splits, why
    if splits:
        assert "brx.idx" in why
