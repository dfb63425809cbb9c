"""unroll{factor=2|4} (exact form): the interpreter finds the unrolled loop equal to the
original, and catches wrongly unrolled loops (a dropped copy, an extra
copy, a branch kept on the wrong copy) -- none of which is ever proved."""

import pytest

from ptxopt import emit, parse
from ptxopt.equivalence.decision import decide
from ptxopt.equivalence.launch import Launch, Origin
from ptxopt.equivalence.verdict import Verdict
from ptxopt.passes.unroll import Unroll

KERNEL = """.version 8.0
.target sm_89
.address_size 64

.visible .entry k(.param .u64 out, .param .u64 in)
{
	.reg .pred %p<2>;
	.reg .f32 %f<4>;
	.reg .b32 %r<4>;
	.reg .b64 %rd<8>;
	ld.param.u64 %rd1, [out];
	ld.param.u64 %rd2, [in];
	cvta.to.global.u64 %rd3, %rd1;
	cvta.to.global.u64 %rd4, %rd2;
	mov.u32 %r2, %tid.x;
	mul.wide.u32 %rd5, %r2, 4;
	add.s64 %rd6, %rd4, %rd5;
	mov.f32 %f1, 0f00000000;
	mov.u32 %r1, 0;
L_top:
	ld.global.f32 %f2, [%rd6];
	fma.rn.f32 %f1, %f1, 0f3F000000, %f2;
	add.s64 %rd6, %rd6, 128;
	add.s32 %r1, %r1, 1;
	setp.lt.u32 %p1, %r1, 8;
	@%p1 bra L_top;
	add.s64 %rd7, %rd3, %rd5;
	st.global.f32 [%rd7], %f1;
	ret;
}
"""
LAUNCH = Launch((1, 1, 1), (32, 1, 1), origin=Origin.CONTRACT, source="test")
BODY = ("\tld.global.f32 %f2, [%rd6];\n\tfma.rn.f32 %f1, %f1, 0f3F000000, %f2;\n\tadd.s64 %rd6, %rd6, 128;\n"
        "\tadd.s32 %r1, %r1, 1;\n\tsetp.lt.u32 %p1, %r1, 8;\n")
BRANCH = "\t@%p1 bra L_top;\n"


def test_unrolled_loop_is_equal():
    m = parse(KERNEL)
    for f in (2, 4):
        out, rep = Unroll(factor=f).apply(m)
        assert len(rep.changed) == 1
        text = emit(out)
        assert text.count("ld.global.f32") == f and text.count("bra") == 1
        d = decide(m, out, "k", LAUNCH)
        assert d.verdict.trusted, d.note


STEP = "\tadd.s32 %r1, %r1, 1;\n"
TEST = "\tsetp.lt.u32 %p1, %r1, 8;\n"
MUTANTS = {
    # the unrolled loop is BODY BODY BRANCH; each of these is a plausible bug
    "extra-copy": BODY * 3 + BRANCH,
    "branch-on-first-copy": BODY + BRANCH + BODY,
    "wrong-bound": BODY + BODY.replace(TEST, "\tsetp.lt.u32 %p1, %r1, 10;\n") + BRANCH,
    "off-by-one-step": BODY + BODY.replace(STEP, "\tadd.s32 %r1, %r1, 2;\n") + BRANCH,
}


@pytest.mark.parametrize("name", list(MUTANTS))
def test_wrong_unrolling_is_caught(name):
    """Mutants of the 2x unrolled loop: never proved, and the interpreter
    finds the difference."""
    m = parse(KERNEL)
    bad = parse(KERNEL.replace(BODY + BRANCH, MUTANTS[name]))
    assert emit(bad) != emit(m)
    d = decide(m, bad, "k", LAUNCH)
    assert d.verdict is Verdict.DIFFER, d.note


def test_trip_count_not_a_multiple_gets_the_guarded_form():
    """6 iterations by 4: one trip of 4 copies, then two single iterations
    (the guard fails); equal in the interpreter, the copies counted."""
    m = parse(KERNEL.replace("setp.lt.u32 %p1, %r1, 8;", "setp.lt.u32 %p1, %r1, 6;"))
    out, rep = Unroll(factor=4).apply(m)
    assert rep.changed and "6 iterations -> 4 copies per trip" in rep.changed[0].what
    text = emit(out)
    assert text.count("ld.global.f32") == 4 and "L_top_last:" in text
    d = decide(m, out, "k", LAYOUT_LAUNCH, prove=False)
    assert d.verdict is Verdict.EQUAL, d.note
    assert decide(m, out, "k", LAYOUT_LAUNCH).verdict is Verdict.PROVED
    out, rep = Unroll(factor=2).apply(m)
    assert rep.changed and "3 x 2 copies" in rep.changed[0].what


LAYOUT_LAUNCH = LAUNCH
