"""unroll{factor=2|4|8} on runtime trip counts (the guarded form), the
interpreter's launches at boundary trip counts, and the loop mutants
that must tell a wrong remainder or guard apart."""

import pytest

from ptxopt import emit, parse
from ptxopt.equivalence.boundary import trip_gap
from ptxopt.equivalence.decision import decide
from ptxopt.equivalence.interpret import verify
from ptxopt.equivalence.launch import Launch, Origin
from ptxopt.equivalence.verdict import Verdict
from ptxopt.interp import Program
from ptxopt.passes.unroll import Unroll
from ptxopt.testing.loop_mutants import LOOP_OPERATORS, loop_mutants

HEAD = ".version 8.0\n.target sm_89\n.address_size 64\n\n"
KERNEL = HEAD + """.visible .entry k(.param .u64 out, .param .u64 in, .param .u32 n)
{
	.reg .pred %p<3>;
	.reg .f32 %f<4>;
	.reg .b32 %r<5>;
	.reg .b64 %rd<8>;
	ld.param.u64 %rd1, [out];
	ld.param.u64 %rd2, [in];
	ld.param.u32 %r3, [n];
	cvta.to.global.u64 %rd3, %rd1;
	cvta.to.global.u64 %rd4, %rd2;
	mov.u32 %r2, %tid.x;
	mul.wide.u32 %rd5, %r2, 4;
	add.s64 %rd6, %rd4, %rd5;
	mov.f32 %f1, 0f00000000;
	mov.u32 %r1, 0;
	setp.lt.s32 %p2, %r3, 1;
	@%p2 bra L_end;
L_top:
	ld.global.f32 %f2, [%rd6];
	fma.rn.f32 %f1, %f1, 0f3F000000, %f2;
	add.s64 %rd6, %rd6, 128;
	add.s32 %r1, %r1, 1;
	setp.lt.s32 %p1, %r1, %r3;
	@%p1 bra L_top;
L_end:
	add.s64 %rd7, %rd3, %rd5;
	st.global.f32 [%rd7], %f1;
	ret;
}
"""
LAUNCH = Launch((1, 1, 1), (32, 1, 1), scalars={"n": 64}, origin=Origin.CONTRACT, source="test")


@pytest.fixture(scope="module")
def module():
    return parse(KERNEL)


@pytest.mark.parametrize("factor", [2, 4, 8])
def test_runtime_trip_count_is_unrolled_and_equal_at_boundary_trips(module, factor):
    from ptxopt.toolchain.ptxas import compile_ptx

    out, rep = Unroll(factor=factor).apply(module)
    assert len(rep.changed) == 1 and "trip count from n" in rep.changed[0].what
    text = emit(out)
    assert text.count("ld.global.f32") == factor and "L_top_last:" in text
    compile_ptx(text, "sm_89")
    assert decide(module, out, "k", LAUNCH).verdict is Verdict.PROVED  # the loop simulation, any trip count
    d = decide(module, out, "k", LAUNCH, prove=False)  # and the interpreter, at the boundary trip counts
    assert d.verdict is Verdict.EQUAL, d.note
    # the launches at the loop's boundary trip counts ran: n = 0, 1, k-1, k, k+1, 2k+1 among them
    ran = {l["scalars"]["n"] for l in d.result.launches if str(l.get("extra", "")).startswith("trip")
           and "skipped" not in l}
    assert {0, 1, factor - 1, factor, factor + 1, 2 * factor + 1} <= ran, ran
    assert "boundary trip counts run" in d.note


def test_an_unproved_loop_rewrite_needs_the_trip_launches(module):
    """Without launches at boundary trip counts an interpreter ``equal`` on a
    loop rewrite is not enough: trip_gap names the gap, and the dropped-guard
    mutant shows why (equal on the contract's n = 64, a multiple of 4)."""
    out, _ = Unroll(factor=4).apply(module)
    gap, _ = trip_gap(Program(module), Program(out), "k", [])
    assert gap and "no launch at a boundary trip count ran" in gap
    regular = [{"seed": 0, "trial": 0}]
    assert trip_gap(Program(module), Program(out), "k", regular)[0] == gap
    # a loop the rewrite did not touch needs nothing
    assert trip_gap(Program(module), Program(module), "k", [])[0] is None
    bad = next(mu for mu in loop_mutants(module, "k", 4) if mu.operator == "dropped_guard")
    assert verify(module, bad.module, "k", launch=LAUNCH, extra_launches=False).status == "equal"


@pytest.mark.parametrize("factor", [2, 4, 8])
def test_loop_mutants_differ_and_are_never_proved(module, factor):
    from ptxopt.equivalence.prove import prove

    ms = loop_mutants(module, "k", factor)
    assert {mu.operator for mu in ms} == {"remainder_bound", "dropped_guard", "off_by_one_step"}
    for mu in ms:
        assert emit(mu.module) != emit(module)
        assert prove(emit(module), emit(mu.module), entry="k").verdict != "proved", mu.what
        d = decide(module, mu.module, "k", LAUNCH)
        assert d.verdict is Verdict.DIFFER, (mu.operator, d.note)


def test_exact_form_mutants():
    """A constant trip count of 8 by 4: a dropped copy or a first copy that
    steps by 2 (8 -> 10 after two trips: still two trips) change what the body
    computes from the IV. (Where the IV only counts, the step mutant is an
    equivalent mutant: 2+1+1+1 per trip reaches 8 after two trips as well.)"""
    const = KERNEL.replace("setp.lt.s32 %p1, %r1, %r3;", "setp.lt.s32 %p1, %r1, 8;").replace(
        "fma.rn.f32 %f1, %f1, 0f3F000000, %f2;",
        "fma.rn.f32 %f1, %f1, 0f3F000000, %f2;\n\tcvt.rn.f32.u32 %f3, %r1;\n\tadd.f32 %f1, %f1, %f3;")
    m = parse(const)
    ms = loop_mutants(m, "k", 4)
    assert {mu.operator for mu in ms} == {"off_by_one_step", "dropped_copy"}
    assert set(LOOP_OPERATORS) >= {mu.operator for mu in ms}
    for mu in ms:
        assert decide(m, mu.module, "k", LAUNCH).verdict is Verdict.DIFFER, mu.what


REFUSED = {
    "runtime step": (("add.s32 %r1, %r1, 1;", "add.s32 %r1, %r1, %r3;"), "the step is not a nonzero constant"),
    "== test": (("setp.lt.s32 %p1, %r1, %r3;\n\t@%p1 bra L_top;", "setp.ne.s32 %p1, %r1, %r3;\n\t@!%p1 bra L_top;"),
                "goes on while its test is =="),
    "direction": (("add.s32 %r1, %r1, 1;", "add.s32 %r1, %r1, -1;"), "does not match the step's direction"),
    "nounroll": (("L_top:\n", 'L_top:\n\t.pragma "nounroll";\n'), '.pragma "nounroll" on the loop'),
    "barrier, tid bound": (("L_top:\n", "L_top:\n\tbar.sync 0;\n"), None),
}


@pytest.mark.parametrize("case", list(REFUSED))
def test_refusals_name_the_reason(case):
    (old, new), why = REFUSED[case]
    text = KERNEL.replace(old, new)
    if case == "barrier, tid bound":  # the bound depends on the thread: not block-uniform
        text = text.replace("mov.u32 %r1, 0;", "mov.u32 %r1, 0;\n\tadd.s32 %r4, %r3, %r2;").replace(
            "setp.lt.s32 %p1, %r1, %r3;", "setp.lt.s32 %p1, %r1, %r4;")
        why = "a barrier, warp collective or .sync.aligned instruction in a loop whose trip count is not uniform"
    out, rep = Unroll(factor=4).apply(parse(text))
    assert not rep.changed and rep.refused and why in rep.refused[0].what, rep.refused


def test_barrier_with_a_uniform_runtime_bound_is_unrolled():
    text = KERNEL.replace("L_top:\n", "L_top:\n\tbar.sync 0;\n")
    m = parse(text)
    out, rep = Unroll(factor=4).apply(m)
    assert rep.changed, rep.refused
    assert emit(out).count("bar.sync") == 4
    assert decide(m, out, "k", LAUNCH).verdict is Verdict.PROVED
    assert decide(m, out, "k", LAUNCH, prove=False).verdict is Verdict.EQUAL
