"""The equivalence package: one Verdict order, one Launch with its origin,
the origin table, and one decide() that goes cheap to expensive.

The adversarial case: a deliberately wrong user pass (``mul.lo.s32 x, 128``
-> ``shl.b32 x, 6``) on a kernel nobody gave a launch for must not come back
``equal`` from ``optimize()`` (a guessed one-thread launch whose outputs do not
depend on the change proves nothing), and ``run --verify-each`` must not exit 0.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import ClassVar

import pytest

import ptxopt
from cli_helpers import run_cli as run
from ptxopt import parse
from ptxopt.equivalence import Launch, Origin, Verdict
from ptxopt.equivalence.decision import Reference, decide
from ptxopt.equivalence.infer import infer_launch
from ptxopt.equivalence.launch import CEILING, ceiling, guessed
from ptxopt.equivalence.verdict import ACCEPTED, TRUSTED, weakest
from ptxopt.passes.base import ChangeReport, Pass
from ptxopt.passes.pipeline import Pipeline

SCALE = """.version 8.0
.target sm_89
.address_size 64

.visible .entry scale(.param .u64 out, .param .u64 in, .param .u32 n)
{
	.reg .pred %p<2>;
	.reg .b32 %r<8>;
	.reg .b64 %rd<8>;
	ld.param.u64 %rd1, [out];
	ld.param.u64 %rd2, [in];
	ld.param.u32 %r1, [n];
	mov.u32 %r2, %ctaid.x;
	mov.u32 %r3, %ntid.x;
	mov.u32 %r4, %tid.x;
	mad.lo.s32 %r5, %r2, %r3, %r4;
	setp.ge.s32 %p1, %r5, %r1;
	@%p1 bra DONE;
	cvta.to.global.u64 %rd3, %rd2;
	cvta.to.global.u64 %rd4, %rd1;
	mul.wide.s32 %rd5, %r5, 4;
	add.s64 %rd6, %rd3, %rd5;
	ld.global.u32 %r6, [%rd6];
	mul.lo.s32 %r7, %r6, 128;
	add.s64 %rd7, %rd4, %rd5;
	st.global.u32 [%rd7], %r7;
DONE:
	ret;
}
"""


@dataclass(frozen=True)
class _ShlSix(Pass):
    """A user's strength reduction with a bug: x * 128 -> x << 6 (should be 7)."""

    name: ClassVar[str] = "mul_pow2_wrong"
    family: ClassVar[str] = "test"

    def run(self, module):
        rep = ChangeReport(self.name)
        fn = module.entries[0]
        text = re.sub(r"mul\.lo\.s32\s+%r7, %r6, 128;", "shl.b32 %r7, %r6, 6;", ptxopt.emit(module))
        assert text != ptxopt.emit(module)
        module.items[:] = parse(text).items
        rep.change(fn.name, 0, "mul by 128 -> shl 6")
        return rep


def test_the_verdict_order_and_the_trusted_set_are_defined_once():
    assert [v.value for v in sorted(Verdict, key=lambda v: v.rank)] == [
        "differ", "inconclusive", "unchecked", "equal", "proved", "hints-only", "identical"]
    assert TRUSTED == {Verdict.EQUAL, Verdict.PROVED, Verdict.HINTS_ONLY, Verdict.IDENTICAL}
    assert ACCEPTED == TRUSTED | {Verdict.UNCHECKED}
    assert weakest(["proved", "equal", "inconclusive"]) is Verdict.INCONCLUSIVE
    assert Verdict.EQUAL == "equal" and json.dumps(Verdict.EQUAL) == '"equal"' and f"{Verdict.EQUAL}" == "equal"
    assert all(v.meaning for v in Verdict)


def test_the_origin_table_never_lets_a_guess_say_equal():
    assert CEILING[Origin.GUESSED] is Verdict.INCONCLUSIVE
    for origin in (Origin.MANIFEST, Origin.CONTRACT, Origin.OPTIONS, Origin.TRITON):
        assert ceiling(Verdict.EQUAL, Launch(origin=origin), fully_covered=False) == (Verdict.EQUAL, "")
    v, why = ceiling(Verdict.EQUAL, guessed(), fully_covered=True)
    assert v is Verdict.INCONCLUSIVE and why.startswith("inconclusive (guessed launch)")
    inferred = Launch(origin=Origin.INFERRED)
    assert ceiling(Verdict.EQUAL, inferred, fully_covered=True) == (Verdict.EQUAL, "")
    v, why = ceiling(Verdict.EQUAL, inferred, fully_covered=False)
    assert v is Verdict.INCONCLUSIVE and "inferred launch" in why
    # a counterexample stands on any launch
    assert ceiling(Verdict.DIFFER, guessed(), fully_covered=False)[0] is Verdict.DIFFER


def test_an_inferred_launch_respects_the_launch_bounds():
    fn = parse(SCALE).entries[0]
    got = infer_launch(fn)
    assert got.origin is Origin.INFERRED and got.grid == (2, 1, 1) and got.block == (32, 1, 1)
    assert "inferred" in got.describe()
    bounded = parse(SCALE.replace("{\n\t.reg .pred", ".maxntid 16, 1, 1\n{\n\t.reg .pred", 1)).entries[0]
    assert infer_launch(bounded).block == (16, 1, 1)
    required = parse(SCALE.replace("{\n\t.reg .pred", ".reqntid 8, 4, 1\n{\n\t.reg .pred", 1)).entries[0]
    assert infer_launch(required).block == (8, 4, 1)


def test_decide_goes_cheap_to_expensive():
    m = parse(SCALE)
    assert decide(m, parse(SCALE), "scale").verdict is Verdict.IDENTICAL
    hinted = parse(SCALE.replace("ld.global.u32 %r6", "ld.global.cg.u32 %r6"))
    assert decide(m, hinted, "scale").verdict is Verdict.HINTS_ONLY
    wrong = parse(SCALE.replace("mul.lo.s32 %r7, %r6, 128;", "shl.b32 %r7, %r6, 6;"))
    d = decide(Reference(m, key="t"), wrong, "scale", infer_launch(m.entries[0]))
    assert d.verdict is Verdict.DIFFER and "prover" in d.note and d.finish == "mismatch"
    g = decide(m, wrong, "scale", guessed("scale"), prove=False)  # one thread: n=1 is the only element
    assert g.verdict in (Verdict.DIFFER, Verdict.INCONCLUSIVE)
    if g.verdict is Verdict.INCONCLUSIVE:
        assert "guessed launch" in g.note


def test_a_wrong_user_pass_is_caught_without_a_contract():
    res = ptxopt.optimize(SCALE, Pipeline((_ShlSix(),)))
    assert res.verdict == "differ" and res.ptx is SCALE and not res.changed
    assert "inferred" in res.contract


def test_under_a_guessed_launch_nothing_interpreted_is_trusted():
    """A correct rewrite checked only by the interpreter on a guessed launch
    is not used (the inferred launch would have shown it equal); the
    translation validator needs no launch."""
    res = ptxopt.optimize(SCALE, "reorder_cp", contract=guessed(), prove=False)
    assert res.verdict == "inconclusive" and "guessed launch" in res.verdict_note
    assert res.ptx is SCALE and not res.changed
    res = ptxopt.optimize(SCALE, "reorder_cp", prove=False, min_improvement=0)  # 344 -> 344 cycles
    assert res.verdict == "equal" and res.changed and "inferred" in res.contract
    assert "100% of the written buffers' bytes stored" in res.verdict_note


def test_verify_each_fails_the_wrong_pass_and_never_trusts_a_guess():
    from ptxopt.equivalence.instrument import VerifyEach
    from ptxopt.passes.passmanager import PassFailure, PassManager

    with pytest.raises(PassFailure, match="computes something else"):
        PassManager(Pipeline((_ShlSix(),)), instruments=[VerifyEach()]).run(parse(SCALE))
    ve = VerifyEach(contract=guessed(), prove=False)
    try:  # one thread: a counterexample if its element shows it, else inconclusive -- never equal
        PassManager(Pipeline((_ShlSix(),)), instruments=[ve]).run(parse(SCALE))
        [c] = ve.checks
        assert c.verdict is Verdict.INCONCLUSIVE and "guessed launch" in c.line()
    except PassFailure:
        pass


def test_run_verify_each_infers_a_launch_when_none_is_given(tmp_path):
    from ptxopt.cli.exitcodes import OK

    src = tmp_path / "scale.ptx"
    src.write_text(SCALE)
    r = run("run", "--verify-each", "--no-prove", "--passes", "reorder_cp", str(src))
    assert r.exit_code == OK and "inferred from the PTX of scale" in r.stderr, r.stderr
    # a one-thread launch given by the user (options) is the user's: trusted
    r = run("run", "--verify-each", "--no-prove", "--passes", "reorder_cp", "--grid", "1", "--block", "1",
            str(src))
    assert r.exit_code == OK and "(from options)" in r.stderr


def test_a_check_launch_the_hardware_would_refuse_decides_nothing():
    """The interpreter ignores .reqntid/.maxntid; a verdict on a launch that
    breaks them is about a launch that never happens."""
    bounded = SCALE.replace("{\n\t.reg .pred", ".reqntid 64, 1, 1\n{\n\t.reg .pred", 1)
    m, wrong = parse(bounded), parse(bounded.replace("mul.lo.s32 %r7, %r6, 128;", "shl.b32 %r7, %r6, 6;"))
    d = decide(m, wrong, "scale", Launch((2, 1, 1), (32, 1, 1), origin="options"), prove=False)
    assert d.verdict is Verdict.INCONCLUSIVE and ".reqntid (64, 1, 1)" in d.note
    assert decide(m, wrong, "scale", infer_launch(m.entries[0]), prove=False).verdict is Verdict.DIFFER
    capped = parse(SCALE.replace("{\n\t.reg .pred", ".maxntid 16, 1, 1\n{\n\t.reg .pred", 1))
    d = decide(capped, parse(SCALE), "scale", Launch(block=(32, 1, 1), origin="options"), prove=False)
    assert d.verdict is Verdict.INCONCLUSIVE and ".maxntid" in d.note


def test_an_inferred_launch_gives_dynamic_shared_memory_to_a_kernel_that_declares_it():
    from ptxopt.kernels.corpus import get
    from ptxopt.equivalence.infer import DYNAMIC_SHARED_BYTES

    m = parse(get("triton_softmax_row").ptx_text())  # .extern .shared .align 16 .b8 global_smem[]
    got = infer_launch(m.entries[0], m)
    assert got.shared_bytes == DYNAMIC_SHARED_BYTES and "dynamic shared" in got.describe()
    assert got.block == (128, 1, 1)  # its .reqntid
    assert infer_launch(parse(SCALE).entries[0], parse(SCALE)).shared_bytes == 0
