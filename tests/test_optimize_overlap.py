"""optimize()'s estimate overlaps ptxas and the check, and a caller's parse is
reused (issue 32): the answers are the ones the sequential code gave."""

from __future__ import annotations

from pathlib import Path

import pytest

import ptxopt
from ptxopt.emit import emit
from ptxopt.evaluate.pair import estimate_pair
from ptxopt.parser import parse
from ptxopt.passmanager import InputRejected, PassManager

CORPUS = Path(__file__).resolve().parent.parent / "corpus"
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
