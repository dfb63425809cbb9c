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
