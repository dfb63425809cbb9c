"""Loop facts from def-use (ptxopt.analysis.loops): which value the exit test
reads -- through copies, before or after the update, written later in the
body -- and ``unroll`` on those shapes, checked by running the interpreter on
the original and the unrolled kernel."""

import numpy as np
import pytest

from ptxopt import emit, parse
from ptxopt.analysis.loops import loops_of
from ptxopt.interp import run_kernel
from ptxopt.passes.unroll import Unroll

HEAD = ".version 8.0\n.target sm_89\n.address_size 64\n"


def kernel(loop: str, pre: str = "") -> str:
    """``out[0] = sum of i after each iteration's update, out[1] = iterations``; ``a`` is an input word."""
    return (HEAD + ".visible .entry k(.param .u64 out, .param .u32 a)\n{\n"
            "\t.reg .pred %p<4>;\n\t.reg .b32 %r<16>;\n\t.reg .b64 %rd<4>;\n"
            "\tld.param.u64 %rd1, [out];\n\tld.param.u32 %r9, [a];\n\tcvta.to.global.u64 %rd2, %rd1;\n"
            "\tmov.u32 %r1, 0;\n\tmov.u32 %r5, 0;\n\tmov.u32 %r6, 0;\n" + pre + "L_top:\n" + loop +
            "\t@%p1 bra L_top;\n\tst.global.u32 [%rd2], %r5;\n\tst.global.u32 [%rd2+4], %r6;\n\tret;\n}\n")


# (a) x = old i + 1, tested after i's update: 9 iterations (old i = 0..8), sum of new i = 45
CASE_A = kernel("\tadd.s32 %r2, %r1, 1;\n\tadd.s32 %r1, %r1, 1;\n\tadd.s32 %r5, %r5, %r1;\n"
                "\tadd.s32 %r6, %r6, 1;\n\tsetp.lt.s32 %p1, %r2, 9;\n")
# (b) LLVM's phi copy: x = i + 1; i = x; the test on x (= the new i): 9 iterations
CASE_B = kernel("\tadd.s32 %r2, %r1, 1;\n\tmov.b32 %r1, %r2;\n\tadd.s32 %r5, %r5, %r1;\n"
                "\tadd.s32 %r6, %r6, 1;\n\tsetp.lt.s32 %p1, %r2, 9;\n")
# (c) the test reads x before the body writes it: the previous iteration's i + 1, and on the
# first iteration x's value from before the loop -- 16 for one input word, 1 otherwise
CASE_C = kernel("\tsetp.lt.s32 %p1, %r2, 16;\n\tadd.s32 %r5, %r5, %r1;\n\tadd.s32 %r6, %r6, 1;\n"
                "\tadd.s32 %r2, %r1, 1;\n\tadd.s32 %r1, %r1, 1;\n",
                pre="\tmov.u32 %r2, 1;\n\tsetp.eq.u32 %p3, %r9, 0x5EED;\n\t@%p3 mov.u32 %r2, 16;\n")
# (c) with a pre-loop value the analysis can relate (x = i + 1 before the loop, as in every later iteration)
CASE_C_FITS = kernel("\tsetp.lt.s32 %p1, %r2, 16;\n\tadd.s32 %r5, %r5, %r1;\n\tadd.s32 %r6, %r6, 1;\n"
                     "\tadd.s32 %r2, %r1, 1;\n\tadd.s32 %r1, %r1, 1;\n", pre="\tmov.b32 %r2, %r1;\n")

INPUTS = (0, 1, 0x5EED)


def run(module, a: int) -> list[int]:
    out = np.zeros(2, dtype=np.uint32)
    return [int(v) for v in run_kernel(module, "k", 1, 1, {"out": out, "a": a}).buffers[0]]


def facts(text: str):
    _, info = loops_of(parse(text).entries[0])
    (lp,) = info.loops
    return lp


@pytest.mark.parametrize("text, trips, base", [(CASE_A, 9, 1), (CASE_B, 9, 1), (CASE_C_FITS, 17, 0)],
                         ids=["a_old_plus_1", "b_phi_copy", "c_previous_fits"])
def test_the_tested_value_comes_from_its_reaching_definitions(text, trips, base):
    lp = facts(text)
    assert run(parse(text), 0)[1] == trips  # the interpreter's count
    assert lp.trip.kind == "constant" and lp.trip.value == trips, lp.trip
    assert lp.test.base == base and lp.test.off == base and lp.test.updated_first is False


def test_a_previous_value_with_an_unrelated_start_is_refused_with_the_reason():
    lp = facts(CASE_C)
    assert lp.trip.kind == "unknown" and "before the loop" in lp.trip.why, lp.trip
    assert run(parse(CASE_C), 0) != run(parse(CASE_C), 0x5EED)  # the input word matters
    for f in (2, 4, 8):
        out, rep = Unroll(factor=f).apply(parse(CASE_C))
        assert not rep.changed and emit(out) == emit(parse(CASE_C))
        assert any("before the loop" in s.what for s in rep.refused), rep.refused


@pytest.mark.parametrize("text", [CASE_A, CASE_B, CASE_C, CASE_C_FITS], ids=["a", "b", "c", "c_fits"])
@pytest.mark.parametrize("factor", [2, 4, 8])
def test_unroll_keeps_what_the_loop_stores(text, factor):
    module = parse(text)
    out, rep = Unroll(factor=factor).apply(module)
    cand = parse(emit(out))
    for a in INPUTS:
        assert run(cand, a) == run(module, a), (factor, a, rep.changed)


FORMS = {  # loop body -> (the tested value's offset from i at the top of the iteration, or None: refused)
    "setp i; add i": ("setp.lt.s32 %p1, %r1, 9;\n\tadd.s32 %r1, %r1, 1;", 0),
    "add i; setp i": ("add.s32 %r1, %r1, 1;\n\tsetp.lt.s32 %p1, %r1, 9;", 1),
    "add x,i,3; add i; setp x": ("add.s32 %r2, %r1, 3;\n\tadd.s32 %r1, %r1, 1;\n\tsetp.lt.s32 %p1, %r2, 9;", 3),
    "add i; add x,i,3; setp x": ("add.s32 %r1, %r1, 1;\n\tadd.s32 %r2, %r1, 3;\n\tsetp.lt.s32 %p1, %r2, 9;", 4),
    "add x,i,2; mov i,x; setp i": ("add.s32 %r2, %r1, 2;\n\tmov.b32 %r1, %r2;\n\tsetp.lt.s32 %p1, %r1, 9;", 2),
    "add x,i,2; setp i; mov i,x": ("add.s32 %r2, %r1, 2;\n\tsetp.lt.s32 %p1, %r1, 9;\n\tmov.b32 %r1, %r2;", 0),
    "sub i,1; sub x,i,2; setp x": ("sub.s32 %r1, %r1, 1;\n\tsub.s32 %r2, %r1, 2;\n\tsetp.gt.s32 %p1, %r2, -9;",
                                   -3),
    "guarded update": ("setp.ne.u32 %p2, %r9, 0;\n\t@%p2 add.s32 %r1, %r1, 1;\n\tsetp.lt.s32 %p1, %r1, 9;",
                       None),
    "i+1 via mul": ("mul.lo.s32 %r2, %r1, 1;\n\tadd.s32 %r1, %r1, 1;\n\tsetp.lt.s32 %p1, %r2, 9;", None),
    "x unrelated before the loop": ("setp.lt.s32 %p1, %r3, 9;\n\tadd.s32 %r1, %r1, 1;\n\tadd.s32 %r3, %r1, 0;",
                                    None),
}


@pytest.mark.parametrize("name", list(FORMS))
def test_forms_table(name):
    """Each form's tested value as the analysis derives it, against the
    interpreter's iteration count; a form not understood has no counted test."""
    body, base = FORMS[name]
    text = kernel("\t" + body + "\n\tadd.s32 %r6, %r6, 1;\n", pre="\tld.param.u32 %r3, [a];\n")
    lp = facts(text)
    if base is None:
        assert lp.trip.kind == "unknown" and lp.trip.why, lp.trip
        assert lp.test is None
        return
    assert lp.test is not None and lp.test.base == base, (lp.trip, lp.test)
    assert lp.trip.kind == "constant" and lp.trip.value == run(parse(text), 1)[1]


def nested(pre_inner: str, after_inner: str, start: str = "\tmov.b32 %r1, %r8;\n") -> str:
    """An outer loop of 3 (``%r8`` grows by 5 each time) around an inner loop from ``start``, whose
    test reads ``%r2`` = the previous inner iteration's ``i + 1``."""
    return kernel("\tadd.s32 %r8, %r8, 5;\n" + start + pre_inner +
                  "L_in:\n\tsetp.lt.s32 %p2, %r2, %r10;\n\tadd.s32 %r5, %r5, %r1;\n\tadd.s32 %r6, %r6, 1;\n"
                  "\tadd.s32 %r2, %r1, 1;\n\tadd.s32 %r1, %r1, 1;\n\t@%p2 bra L_in;\n" + after_inner +
                  "\tadd.s32 %r7, %r7, 1;\n\tsetp.lt.s32 %p1, %r7, 3;\n",
                  pre="\tmov.u32 %r7, 0;\n\tand.b32 %r8, %r9, 7;\n\tadd.s32 %r10, %r8, 20;\n")


def inner(text: str):
    cfg, info = loops_of(parse(text).entries[0])
    return next(lp for lp in info.loops if cfg.blocks[lp.header].label == "L_in")


def test_a_start_set_in_the_outer_loop_before_the_inner_one_fits():
    text = nested("\tmov.b32 %r2, %r1;\n", "", start="\tand.b32 %r1, %r9, 7;\n")
    lp = inner(text)
    assert lp.trip.kind == "parametric" and lp.test.reads_previous and lp.test.base == 0, lp.trip
    for f in (2, 4):
        # the facts understand it; the pass refuses it because the unrolled loop cannot be proved yet
        out, rep = Unroll(factor=f).apply(parse(text))
        assert not rep.changed and any("previous iteration's value" in s.what for s in rep.refused)


def test_a_start_set_after_the_inner_loop_is_from_the_previous_outer_iteration():
    # %r2 reaches L_in from the end of the outer body: the previous outer iteration's start, not this one's
    lp = inner(nested("", "\tmov.b32 %r2, %r8;\n"))
    assert lp.trip.kind == "unknown" and "before the loop" in lp.trip.why, lp.trip
