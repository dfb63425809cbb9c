"""optimize()'s estimate overlaps ptxas and the check, and a caller's parse is
reused, to save wall time: the answers are the ones the sequential code gave."""

from __future__ import annotations

from pathlib import Path

import pytest

import ptxopt
from ptxopt.ptx.emit import emit
from ptxopt.evaluate.pair import estimate_pair
from ptxopt.ptx.parser import parse
from ptxopt.passes.passmanager import InputRejected, PassManager

CORPUS = Path(__file__).resolve().parents[2] / "corpus"
GEMM = (CORPUS / "gemm_tile/gemm_tile_4x4x4.ptx").read_text()


@pytest.mark.parametrize("pipeline", ["vec_st", "cache_cg", "reorder_cp"])
def test_estimate_is_the_sequential_one(pipeline):
    res = ptxopt.optimize(GEMM, pipeline)
    text = emit(PassManager(pipeline).run(parse(GEMM)).module)
    alone = estimate_pair(GEMM, text, entry=parse(GEMM).entries[0].name, arch=res.arch, cache=None)
    assert (res.estimate.before, res.estimate.after, res.estimate.objective) == \
        (alone.before, alone.after, alone.objective)
    assert res.seconds["estimate"] > 0 and "estimate_wait" in res.seconds


def test_a_callers_parse_is_used_and_left_alone():
    module = parse(GEMM, "g.ptx")
    before = emit(module)
    mine = ptxopt.optimize(GEMM, "vec_ld,maxnreg_128", parsed=module, filename="g.ptx", prove=False)
    theirs = ptxopt.optimize(GEMM, "vec_ld,maxnreg_128", filename="g.ptx", prove=False)
    assert emit(module) == before
    assert (mine.ptx, mine.changed, mine.verdict, mine.registers, mine.estimate) == \
        (theirs.ptx, theirs.changed, theirs.verdict, theirs.registers, theirs.estimate)


def test_ptxas_rejection_of_the_input_still_comes_first():
    """The passes now run before ptxas judges the input: a rejected input is
    still InputRejected, whatever the passes did."""
    bad = GEMM.replace(".address_size 64", ".address_size 64\n.global .u32 dup;\n.global .u32 dup;", 1)
    with pytest.raises(InputRejected):
        ptxopt.optimize(bad, "vec_ld,reorder_cp")


def _counting_compile(calls: list):
    from ptxopt.toolchain import compile_ptx

    def run(ptx, arch):
        calls.append(ptx)
        return compile_ptx(ptx, arch, memo=False)

    return run


@pytest.mark.parametrize("pipeline", ["vec_st", "reorder_cp"])
def test_with_the_callers_ptxas_the_estimate_reads_its_two_cubins(pipeline, monkeypatch):
    """A caller's ``compile`` (the Triton hook: Triton's binary and flags) runs
    once on each text, the input's run overlapping the passes and the result's;
    the estimate is of exactly those two cubins, and no other ptxas runs."""
    import ptxopt.toolchain.ptxas as tp
    from ptxopt.evaluate.stages import SAME_CODE
    from ptxopt.evaluate.pair import estimate_compiled
    from ptxopt.measure.sim import clear_memo

    from ptxopt.evaluate.prepare import tools

    for kind in ("estimate", "ptxas", "measure"):  # an earlier test's abandoned estimate finishes first
        tools(kind).submit(lambda: None).result()
    clear_memo()
    calls, runs = [], []
    real = tp._compile
    monkeypatch.setattr(tp, "_compile", lambda *a: runs.append(a[0]) or real(*a))
    res = ptxopt.optimize(GEMM, pipeline, compile=_counting_compile(calls))
    text = emit(PassManager(pipeline).run(parse(GEMM)).module)
    assert res.changed and sorted(calls) == sorted([GEMM, text])
    assert len(runs) == 2  # the caller's two runs: the estimate compiled nothing of its own
    from ptxopt.toolchain import compile_ptx

    alone = estimate_compiled(GEMM, text, compile_ptx(GEMM, res.arch), compile_ptx(text, res.arch),
                              entry=parse(GEMM).entries[0].name, arch=res.arch)
    if res.estimate.note == SAME_CODE:  # reorder_cp: ptxas schedules the same code, nothing estimated ...
        assert res.estimate.before is None and res.estimate.objective == alone.objective and not res.estimate.slower
        assert alone.before == alone.after  # ... and the model would indeed have seen no difference
        return
    assert (res.estimate.before, res.estimate.after, res.estimate.objective) == \
        (alone.before, alone.after, alone.objective)
    # the same cubins as the evaluator's compiles here (no flags): the same figures as estimate_pair
    pair = estimate_pair(GEMM, text, entry=parse(GEMM).entries[0].name, arch=res.arch, cache=None)
    assert alone.objective == pair.objective and alone.before == pytest.approx(pair.before, rel=0.05)


def test_with_the_callers_ptxas_a_rejected_input_still_comes_first():
    bad = GEMM.replace(".address_size 64", ".address_size 64\n.global .u32 dup;\n.global .u32 dup;", 1)
    with pytest.raises(InputRejected):
        ptxopt.optimize(bad, "vec_ld,reorder_cp", compile=_counting_compile([]))


def test_overlap_compiles_off_is_the_order_before():
    calls = []
    res = ptxopt.optimize(GEMM, "vec_st", compile=_counting_compile(calls), overlap_compiles=False)
    text = emit(PassManager("vec_st").run(parse(GEMM)).module)
    assert calls == [GEMM, text]  # one after the other, the input first
    alone = estimate_pair(GEMM, text, entry=parse(GEMM).entries[0].name, arch=res.arch, cache=None)
    assert (res.estimate.before, res.estimate.after) == (alone.before, alone.after)
