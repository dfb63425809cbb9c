"""The hints-only shortcut (:func:`ptxopt.equivalence.prove.hints.hints_only_legal`):
a candidate that differs only in hints is equal by construction, *if* the
inserted or changed hint instructions are themselves well formed -- every
register they read is defined on every path before them, and vector
operands have elements of one register width."""

from __future__ import annotations

import pytest
from test_prove import kernel

from ptxopt import parse
from ptxopt.evaluate.stages import unchecked_verdict
from ptxopt.equivalence.observable import observable_form
from ptxopt.equivalence.prove.hints import hints_only_legal

ADDR = "\tadd.s64 %rd5, %rd4, 8;\n"
USE = "\tld.global.u32 %r1, [%rd5];\n\tst.global.u32 [%rd3], %r1;"
PF = "\tprefetch.global.L2 [%rd5];\n"
ORIGINAL = kernel(ADDR + USE)
DIAMOND = ("\tld.global.u32 %r2, [%rd4];\n\tsetp.eq.u32 %p1, %r2, 0;\n\t@%p1 bra $L1;\n" + ADDR
           + "\tbra.uni $L2;\n$L1:\n\tadd.s64 %rd5, %rd4, 16;\n$L2:\n")

ILLEGAL = {
    "prefetch_before_def": (ORIGINAL, kernel(PF + ADDR + USE)),
    "prefetch_of_a_param_never_written": (ORIGINAL, kernel(ADDR + "\tprefetch.global.L1 [%rd7];\n" + USE)),
    # defined on one arm of the diamond only
    "prefetch_in_one_arm_before_the_other_defines": (
        kernel(DIAMOND + USE),
        kernel(DIAMOND.replace("$L1:\n", "$L1:\n" + PF) + USE)),
    # a guarded definition may not execute
    "prefetch_after_a_guarded_def": (
        kernel("\tsetp.ne.u64 %p1, %rd4, 0;\n\t@%p1 add.s64 %rd5, %rd4, 8;\n" + USE),
        kernel("\tsetp.ne.u64 %p1, %rd4, 0;\n\t@%p1 add.s64 %rd5, %rd4, 8;\n" + PF + USE)),
    # a cache-operator change on a vector whose elements are 32- and 16-bit registers (what vec_ld
    # made of two ld.global.u16 into %r1 and %rs2; ptxas rejects it)
    "mixed_width_vector": (
        kernel("\tld.global.v2.u16 {%r1, %rs2}, [%rd4];\n\tst.global.u16 [%rd3], %rs2;"),
        kernel("\tld.global.cg.v2.u16 {%r1, %rs2}, [%rd4];\n\tst.global.u16 [%rd3], %rs2;")),
}
LEGAL = {
    "prefetch_after_def": (ORIGINAL, kernel(ADDR + PF + USE)),
    "prefetch_after_the_join": (kernel(DIAMOND + USE), kernel(DIAMOND + PF + USE)),
    "cache_operator": (ORIGINAL, kernel(ADDR + USE.replace("ld.global", "ld.global.cg"))),
    "vector_cache_operator": (
        kernel("\tld.global.v2.u16 {%rs1, %rs2}, [%rd4];\n\tst.global.u16 [%rd3], %rs2;"),
        kernel("\tld.global.cs.v2.u16 {%rs1, %rs2}, [%rd4];\n\tst.global.u16 [%rd3], %rs2;")),
    "maxnreg": (ORIGINAL, ORIGINAL.replace("\n{\n", "\n.maxnreg 64\n{\n", 1)),
}


@pytest.mark.parametrize("name", sorted(ILLEGAL))
def test_illegal_hints_are_not_hints_only(name):
    a, b = (parse(t) for t in ILLEGAL[name])
    assert observable_form(a) == observable_form(b), "the pair must look hints-only"
    why = hints_only_legal(a, b)
    assert why, name
    assert ("defined on every path" in why) or ("mixes registers" in why), why
    assert unchecked_verdict(a, b)[0] == "inconclusive"


@pytest.mark.parametrize("name", sorted(LEGAL))
def test_legal_hints_stay_hints_only(name):
    a, b = (parse(t) for t in LEGAL[name])
    assert observable_form(a) == observable_form(b)
    assert hints_only_legal(a, b) is None
    assert unchecked_verdict(a, b)[0] == "hints-only"


def test_reason_names_the_instruction_and_register():
    a, b = (parse(t) for t in ILLEGAL["prefetch_before_def"])
    why = hints_only_legal(a, b)
    assert "prefetch.global.L2 [%rd5]" in why and "%rd5" in why


def test_evaluator_does_not_take_the_shortcut_for_a_prefetch_before_its_address():
    from ptxopt.api import check_equivalence

    a, b = (parse(t) for t in ILLEGAL["prefetch_before_def"])
    verdict, note, _, _ = check_equivalence(a, b, prove=True)
    assert verdict == "inconclusive" and "before it is defined" in note


def test_the_evaluator_calls_an_ill_formed_hint_inconclusive_not_hints_only(tmp_path, monkeypatch):
    """prefetch_L1 made to put its prefetch at the top of the body, above the
    definition of its address: equal by the interpreter, which
    ignores prefetches, so the shortcut must not take it and nothing may call
    it trusted."""
    from ptxopt.evaluate import Candidate, evaluate
    from ptxopt.ptx.ir import Instruction
    from ptxopt.passes.registry import get_pass_class

    cls = get_pass_class("prefetch_L1")
    real = cls.run

    def run(self, module):
        report = real(self, module)
        for fn in module.functions:
            items = fn.body.items
            k = next(i for i, s in enumerate(items) if type(s) is Instruction and s.opcode == "prefetch")
            first = next(i for i, s in enumerate(items) if type(s) is Instruction)
            items.insert(first, items.pop(k))
        return report

    monkeypatch.setattr(cls, "run", run)
    r = evaluate(Candidate.from_corpus("gemm_tile_2x2x2", "prefetch_L1"), cache=tmp_path / "c.sqlite")
    assert r.changed and r.equivalence == "inconclusive", r
    assert "before it is defined" in r.equivalence_note
    assert not r.checked


def test_verify_each_never_trusts_a_pass_that_inserts_an_ill_formed_hint(monkeypatch, tmp_path):
    """run --verify-each: the interpreter ignores prefetches (equal), so the
    hint rule is what catches a prefetch above its address's definition: the
    check is inconclusive (exit 4 in the CLI), never equal."""
    from ptxopt.equivalence import VerifyEach
    from ptxopt.ptx.ir import Instruction
    from ptxopt.passes.registry import get_pass_class
    from ptxopt.passes.passmanager import PassManager
    from ptxopt.equivalence.interpret import Geometry

    a = ORIGINAL
    cls = get_pass_class("prefetch_L2")
    real = cls.run

    def run(self, module):
        report = real(self, module)
        items = module.entries[0].body.items
        k = next(i for i, s in enumerate(items) if type(s) is Instruction and s.opcode == "prefetch")
        first = next(i for i, s in enumerate(items) if type(s) is Instruction)
        items.insert(first, items.pop(k))
        return report

    ve = VerifyEach(contract=Geometry(grid=(1, 1, 1), block=(1, 1, 1)))
    PassManager("prefetch_L2", instruments=[ve]).run(parse(a))  # the real pass: fine
    monkeypatch.setattr(cls, "run", run)
    ve = VerifyEach(contract=Geometry(grid=(1, 1, 1), block=(1, 1, 1)))
    PassManager("prefetch_L2", instruments=[ve], reproducer_dir=tmp_path).run(parse(a))
    [c] = ve.checks
    assert c.status == "inconclusive" and "before it is defined" in c.line() and ve.inconclusive == [c]
