"""The evaluation session owns the evaluator's memos, and a search state's module is the one measured.

* memos: an evaluation fills the memos of the session it runs in -- also
  from the evaluator's helper threads (ptxas, the measurement) -- and no
  other session's; a meter holds the session it was made in;
* one application: a state's candidate carries its module (not pickled to
  worker processes), and every pass is deterministic, which both the
  transposition keys (a state's digest) and measuring the state's module
  in place of the pass manager's rely on.
"""

from __future__ import annotations

import hashlib
import json
import pickle

import pytest

from ptxopt.evaluate import Candidate, EvaluationSession, evaluate_many
from ptxopt.evaluate.candidate import bind_launch
from ptxopt.kernels.corpus import get
from ptxopt.passes.passmanager import PassManager
from ptxopt.passes.pipeline import Pipeline
from ptxopt.ptx.emit import emit
from ptxopt.ptx.parser import parse
from ptxopt.search.actions import PASS_ACTIONS, action_pass
from ptxopt.search.meter import EvalOptions, Meter
from ptxopt.search.state import State
from ptxopt.toolchain.locate import installed_ptxas

needs_ptxas = pytest.mark.skipif(not installed_ptxas(), reason="no ptxas installed")


def _sizes(s: EvaluationSession) -> dict:
    return {"originals": len(s.originals), "compiles": len(s.compiles), "fingerprints": len(s.fingerprints)}


@pytest.mark.slow
@needs_ptxas
def test_an_evaluation_fills_its_own_session_only():
    cand = Candidate.from_corpus(get("gemm_tile_2x2x2"), "vec_ld")
    a, b = EvaluationSession(), EvaluationSession()
    outside = _sizes(EvaluationSession.current())
    [r] = evaluate_many([cand], cache=None, session=a)
    assert r.ok, r.error
    # the compile ran in the evaluator's ptxas thread: it answers from the caller's session too
    assert all(_sizes(a).values())
    assert _sizes(b) == {"originals": 0, "compiles": 0, "fingerprints": 0}
    assert _sizes(EvaluationSession.current()) == outside
    [again] = evaluate_many([cand], cache=None, session=b)
    assert (again.key, again.cycles, again.equivalence) == (r.key, r.cycles, r.equivalence)
    assert _sizes(b) == _sizes(a)
    with a.active():
        assert EvaluationSession.current() == a
    assert EvaluationSession.current() != a


def test_a_meter_holds_the_session_it_was_made_in():
    s = EvaluationSession()
    with s.active():
        inside = Meter(EvalOptions(cache=None))
    assert inside.session == s and Meter(EvalOptions(cache=None)).session != s


def test_a_cold_session_is_new():
    assert EvaluationSession.cold() != EvaluationSession.cold()


def test_a_state_candidate_carries_its_module_but_not_into_a_pickle():
    root = State.root(Candidate.from_corpus(get("cuda_saxpy")))
    child = root.child("cache_cg")
    cand = child.candidate()
    assert cand.built is not None and cand.built.module is child.module
    assert [str(p) for p in cand.built.passes] == [str(p) for p in child.pipeline]
    assert root.candidate().built is None  # nothing applied: nothing to hand over
    copy = pickle.loads(pickle.dumps(cand))
    assert copy == cand and copy.built is None  # a worker process applies the passes itself


def _digest(module, report) -> str:
    return hashlib.sha256((emit(module) + json.dumps(report.to_json(), sort_keys=True)).encode()).hexdigest()


@pytest.mark.parametrize("kernel", ["cuda_saxpy", "gemm_tile_2x4x2", "triton_softmax_row",
                                    pytest.param("gen_softmax_rows_01", marks=pytest.mark.slow),
                                    pytest.param("gen_conv1d_00", marks=pytest.mark.slow)])
def test_every_pass_is_deterministic(kernel):
    """Each action's pass applied twice to the same module, and once more to a
    new parse of the same text, prints the same module with the same report;
    and the pass manager builds what the action mask built."""
    spec = get(kernel)
    text = spec.ptx_text()
    m, fresh = parse(text, kernel), parse(text, kernel)
    state = State.root(Candidate.from_corpus(spec))
    for name in PASS_ACTIONS:
        p = bind_launch(action_pass(name), *state.binding)  # as the action mask and the evaluator bind it
        try:
            first = _digest(*p.apply(m))
        except Exception as e:  # a refusal must be the same every time, too
            for again in (m, fresh):
                with pytest.raises(type(e)):
                    p.apply(again)
            continue
        assert _digest(*p.apply(m)) == first, name
        assert _digest(*p.apply(fresh)) == first, name
        assert emit(PassManager(Pipeline([p])).run(fresh).module) == emit(p.apply(m)[0]), name
