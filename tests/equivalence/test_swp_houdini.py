"""The pipelined-loop proof's Houdini at a loop's entry narrows its models with
hints (seeded input draws, loads reading distinct values: swp_sim._hints).
A hint may only make a failing claim fail sooner: the loop's answer is the
plain loop's, and only a check with every hint flag free ends it."""

from __future__ import annotations

import time

import pytest

from ptxopt.equivalence.prove.smt.terms import Query
from ptxopt.equivalence.prove.swp_sim import _SwpProof


def _houdini(claims: dict, hints) -> set:
    proof = object.__new__(_SwpProof)  # _houdini reads only the clock and the call count
    proof.t0, proof.solver_calls = time.perf_counter(), 0
    return proof._houdini(_QUERY, [], {k: c.format(x=_X) for k, c in claims.items()}, "test", hints)


_QUERY = Query()
_X = _QUERY.var("x", 8)
_IS_5 = _QUERY.define(f"(ite (= {_X} (_ bv5 8)) #b1 #b0)", 1)
_CLAIMS = {"x is 5": "(= {x} (_ bv5 8))", "x is x": "(= {x} {x})", "x below 200": "(bvult {x} (_ bv200 8))"}


@pytest.mark.parametrize("hints", [[], [[_IS_5]], [["#b0"]], [[_IS_5], ["#b0"], [_IS_5]]],
                         ids=["none", "a hint under which every claim holds", "a hint no model has", "several"])
def test_hints_never_keep_a_claim_that_fails(hints):
    """``x is 5`` holds in every model of the hint ``x = 5``: a loop that ended at
    the hinted check's unsat (or asserted the hints outright) would keep it."""
    assert _houdini(_CLAIMS, hints) == {"x is 5", "x below 200"}


@pytest.mark.slow
def test_a_conv2d_pipelined_two_ahead_is_proved():
    """gen_conv2d_03 with swp_ld_2: 750 claims at the loop's entry, 500 of them
    pairing a carried register with another load. Without the hints Houdini
    dropped about two per check and the proof ran out of its 30 s budget
    (inconclusive); with them it is proved (about 7 s here)."""
    from ptxopt import emit, parse
    from ptxopt.equivalence.prove import clear_memo, prove
    from ptxopt.kernels.corpus import load_manifest
    from ptxopt.passes.pipeline import Pipeline

    k = next(k for k in load_manifest() if k.id == "gen_conv2d_03")
    text = k.ptx_path.read_text()
    (swp,) = Pipeline.parse("swp_ld_2").passes
    out, rep = swp.apply(parse(text))
    assert rep.changed, rep.refused
    clear_memo()
    r = prove(text, emit(out))
    assert str(r.verdict) == "proved", r.reason
