"""Search states (ptxopt.search.state) and the evaluation meter (ptxopt.search.meter).

States: the action mask (one slot per action of ptxopt.search.actions, stop always legal, unchanged and
conflicting passes masked with a reason), children, the transposition digest
and the observation vector. Meter: distinct modules counted once, budgets,
failures by status. The meter tests use a fake evaluator (monkeypatched into
ptxopt.search.meter) where the real one is not the point; the real one
always gets a temporary cache.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

import ptxopt.search.meter as measure_mod
from ptxopt.evaluate import Candidate, EvalResult
from ptxopt.ptx.parser import ParseError
from ptxopt.search import (ACTIONS, FAMILIES, N_ACTIONS, STOP, STOP_INDEX, BudgetExhausted, EvalOptions, Meter,
                           State, observation_names)
from ptxopt.search.actions import PASS_ACTIONS

SMALL = "gemm_tile_2x2x2"
SAXPY = "cuda_saxpy"


@pytest.fixture(scope="module")
def root() -> State:
    return State.root(Candidate.from_corpus(SMALL))


@pytest.fixture(scope="module")
def saxpy() -> State:
    return State.root(Candidate.from_corpus(SAXPY))


def idx(action: str) -> int:
    return ACTIONS.index(action)


# ---------------------------------------------------------------------------
# the action mask


def test_action_space_is_the_pass_actions_then_stop(root):
    assert N_ACTIONS == len(ACTIONS) == len(PASS_ACTIONS) + 1 and STOP_INDEX == N_ACTIONS - 1
    assert ACTIONS[STOP_INDEX] == STOP
    mask = root.action_mask()
    assert mask.shape == (N_ACTIONS,) and mask.dtype == bool
    assert [m.action for m in root.moves()] == list(PASS_ACTIONS)


def test_stop_is_always_legal(root):
    deep = root.child("cache_cg").child("maxnreg_64").child("reorder_cp")
    for s in (root, root.child("vec_st"), deep):
        assert s.action_mask()[STOP_INDEX]
    # even where every pass of a family is masked, stop stays legal
    assert not deep.action_mask()[idx("cache_ca")] and deep.action_mask()[-1]


def test_mask_agrees_with_moves(root):
    mask = root.action_mask()
    for i, m in enumerate(root.moves()):
        assert mask[i] == m.legal
        assert (m.child is None) == (m.reason is not None)
    assert [m.action for m in root.legal_moves()] == [m.action for m in root.moves() if m.legal]
    assert 0 < len(root.legal_moves()) < len(PASS_ACTIONS)


def test_pass_that_changes_nothing_is_masked(root, saxpy):
    # gemm_tile has no split loads; cuda_saxpy has nothing to vectorize
    for state, name in ((root, "split_ld"), (saxpy, "vec_ld"), (saxpy, "vec_st")):
        move = next(m for m in state.moves() if m.action == name)
        assert not move.legal and move.reason == "no change"
        assert not state.action_mask()[idx(name)]


def test_every_legal_move_changes_the_printed_module(root):
    for m in root.legal_moves():
        assert m.child.printed != root.printed
        assert m.child.digest != root.digest


def test_conflicting_pass_is_masked_after_one_of_its_family(root):
    before = root.action_mask()
    assert before[idx("cache_ca")] and before[idx("cache_cs")]
    s = root.child("cache_cg")
    mask = s.action_mask()
    for name in ("cache_ca", "cache_cs", "cache_cv", "cache_cg"):
        move = next(m for m in s.moves() if m.action == name)
        assert not move.legal and not mask[idx(name)]
        assert move.reason.startswith("conflict")
        assert "cache_cg" in move.reason and "load-cache-hint" in move.reason
    # other families stay open
    assert mask[idx("st_cache_wb")] and mask[idx("maxnreg_64")] and mask[idx("reorder_cp")]


@pytest.mark.parametrize("first,masked", [("maxnreg_64", "maxnreg_128"), ("reorder_cp", "reorder_il"),
                                          ("prefetch_L1", "prefetch_L2"), ("st_cache_wb", "st_cache_cs")])
def test_exclusive_families(root, first, masked):
    assert root.action_mask()[idx(masked)]
    move = next(m for m in root.child(first).moves() if m.action == masked)
    assert not move.legal and move.reason.startswith("conflict") and first in move.reason


def test_pair_conflict_outranks_no_change(root):
    # split_ld changes nothing on the root; after vec_ld it is refused as a conflict
    move = next(m for m in root.child("vec_ld").moves() if m.action == "split_ld")
    assert not move.legal and move.reason.startswith("conflict") and "vec_ld" in move.reason


# ---------------------------------------------------------------------------
# children


def test_child_of_a_masked_action_raises(root):
    with pytest.raises(ValueError, match="masked"):
        root.child("split_ld")
    with pytest.raises(ValueError, match="masked"):
        root.child("cache_cg").child("cache_ca")
    with pytest.raises(ValueError, match="unknown action"):
        root.child("no_such_pass")


def test_stop_child_is_the_state_itself(root):
    assert root.child(STOP) is root


def test_children_pipelines_are_parent_plus_pass(root):
    for m in root.legal_moves():
        assert str(m.child.pipeline) == m.action
        assert m.child.depth == 1
        assert root.child(m.action) is m.child  # computed once, kept
    s = root.child("vec_st")
    for m in s.legal_moves():
        assert str(m.child.pipeline) == f"vec_st,{m.action}"
        assert m.child.depth == 2
        assert [p.name for p in m.child.pipeline] == ["vec_st", m.action]
    assert root.depth == 0 and str(root.pipeline) == ""


def test_candidate_carries_the_pipeline(root):
    c = root.child("cache_cg").child("vec_ld").candidate()
    assert c.pipeline == "cache_cg,vec_ld" and c.ptx == root.kernel.ptx and c.label == SMALL
    assert root.candidate().pipeline == ""


def test_digest_equal_iff_same_printed_text(root):
    a = root.child("vec_ld").child("vec_st")
    b = root.child("vec_st").child("vec_ld")
    assert str(a.pipeline) != str(b.pipeline)
    assert a.printed == b.printed and a.digest == b.digest
    c = root.child("vec_ld")
    assert c.printed != a.printed and c.digest != a.digest
    assert root.digest != c.digest
    # a fresh root of the same kernel is the same state
    assert State.root(Candidate.from_corpus(SMALL)).digest == root.digest
    assert State.root(Candidate.from_corpus("gemm_tile_2x2x4")).digest != root.digest


def test_root_of_bad_ptx_raises_the_parse_error():
    with pytest.raises(ParseError):
        State.root(Candidate("this is not ptx\n", name="bad.ptx"))


# ---------------------------------------------------------------------------
# the observation


def test_observation_length_and_names(root):
    names = observation_names()
    assert len(names) == len(set(names))
    assert names[-1] == "step"
    assert [n for n in names if n.startswith("active:")] == [f"active:{f}" for f in FAMILIES]
    for s in (root, root.child("vec_st")):
        obs = s.observation()
        assert obs.shape == (len(names),)
        assert np.all(np.isfinite(obs))


def test_step_slot_is_the_depth(root):
    step = observation_names().index("step")
    s = root
    for depth, name in enumerate(["cache_cg", "vec_ld", "maxnreg_64", None]):
        assert s.observation()[step] == depth == s.depth
        if name:
            s = s.child(name)


def test_active_family_slots_reflect_the_pipeline(root):
    names = observation_names()
    slot = {f: names.index(f"active:{f}") for f in FAMILIES}
    assert not root.active_families().any()
    s = root.child("cache_cg").child("vec_ld")
    active = {f for f in FAMILIES if s.observation()[slot[f]] == 1.0}
    assert active == {"load-cache-hint", "vectorize"}
    s = s.child("reorder_cp")
    assert {f for f, v in zip(FAMILIES, s.active_families()) if v == 1.0} == {"load-cache-hint", "vectorize",
                                                                             "reorder"}
    assert set(np.unique(s.active_families())) <= {0.0, 1.0}


def test_features_follow_the_current_module(root):
    # vectorizing loads changes the module, so the feature part of the observation changes
    k = len(observation_names()) - len(FAMILIES) - 1
    assert not np.array_equal(root.observation()[:k], root.child("vec_ld").observation()[:k])


# ---------------------------------------------------------------------------
# the meter (fake evaluator)


class FakeEvaluator:
    """Stands in for evaluate_many: records what it is asked, answers by pipeline."""

    def __init__(self, status=lambda pipeline: "ok"):
        self.calls: list[list[str]] = []
        self.status = status

    def __call__(self, candidates, workers=0, **kw):
        self.calls.append([c.pipeline for c in candidates])
        out = []
        for c in candidates:
            st = self.status(c.pipeline)
            ok = st == "ok"
            out.append(EvalResult(kernel=c.label, pipeline=c.pipeline, status=st, backend="sim", arch="sm_89",
                                  estimate=True, cycles=100.0 - len(c.pipeline) if ok else None,
                                  equivalence="equal" if ok else "differ", error=None if ok else f"fake {st}"))
        return out

    @property
    def asked(self) -> list[str]:
        return [p for call in self.calls for p in call]


@pytest.fixture
def fake(monkeypatch):
    f = FakeEvaluator()
    monkeypatch.setattr(measure_mod, "evaluate_many", f)
    return f


def test_meter_counts_distinct_modules_only(root, fake, tmp_path):
    m = Meter(EvalOptions(cache=tmp_path / "c.sqlite"))
    r1, r2 = m.measure([root, root])
    assert m.evaluations == 1 and r1 is r2 and fake.asked == [""]
    assert m.measure([root])[0] is r1 and m.evaluations == 1 and len(fake.calls) == 1
    a = root.child("vec_ld").child("vec_st")
    b = root.child("vec_st").child("vec_ld")  # prints the same text
    ra, rb = m.measure([a, b])
    assert m.evaluations == 2 and ra is rb and len(fake.asked) == 2
    assert m.known(a) is ra and m.known(b) is ra and m.known(root.child("cache_cg")) is None


def test_meter_budget_cuts_the_list_then_raises(root, fake, tmp_path):
    m = Meter(EvalOptions(cache=tmp_path / "c.sqlite"), budget=3)
    assert m.remaining == 3
    kids = [mv.child for mv in root.legal_moves()[:4]]
    res = m.measure([root, *kids])
    assert [r is not None for r in res] == [True, True, True, False, False]
    assert m.evaluations == 3 and m.remaining == 0 and len(fake.asked) == 3
    with pytest.raises(BudgetExhausted):
        m.measure([kids[3]])
    with pytest.raises(BudgetExhausted):
        m.cycles(kids[2])
    assert m.evaluations == 3 and len(fake.asked) == 3
    # what was measured is still free when the budget is spent
    assert m.measure([root, kids[0]]) == res[:2]
    assert m.cycles(root) == 100.0


def test_meter_without_budget_has_no_remaining(root, fake, tmp_path):
    m = Meter(EvalOptions(cache=tmp_path / "c.sqlite"))
    assert m.remaining is None
    m.measure([mv.child for mv in root.legal_moves()])
    assert m.evaluations == len(root.legal_moves()) and m.remaining is None


def test_meter_counts_failures_by_status(root, monkeypatch, tmp_path):
    statuses = {"vec_ld": "mismatch", "vec_st": "mismatch", "cache_cg": "ptxas"}
    fake = FakeEvaluator(lambda p: statuses.get(p, "ok"))
    monkeypatch.setattr(measure_mod, "evaluate_many", fake)
    m = Meter(EvalOptions(cache=tmp_path / "c.sqlite"))
    states = [root, root.child("vec_ld"), root.child("vec_st"), root.child("cache_cg"), root.child("cache_ca")]
    res = m.measure(states)
    assert [r.status for r in res] == ["ok", "mismatch", "mismatch", "ptxas", "ok"]
    assert m.evaluations == 5  # failures cost an evaluation too
    assert m.failures == Counter({"mismatch": 2, "ptxas": 1})
    assert m.cycles(root.child("vec_ld")) is None and m.cycles(root) == 100.0
    m.measure(states)  # asking again neither re-counts nor re-evaluates
    assert m.failures == Counter({"mismatch": 2, "ptxas": 1}) and m.evaluations == 5 and len(fake.calls) == 1


# ---------------------------------------------------------------------------
# the meter (real evaluator, temporary cache)


def test_meter_real_evaluation_and_cache_hits(root, tmp_path):
    opts = EvalOptions(cache=tmp_path / "eval.sqlite")
    m = Meter(opts)
    r = m.measure([root, root])[0]
    assert r.ok and r.cycles > 0 and r.estimate
    assert m.evaluations == 1 and m.cache_hits == 0
    assert m.cycles(root) == r.cycles and m.evaluations == 1
    again = Meter(opts)  # a resumed search: same count, answered from the cache
    r2 = again.measure([root])[0]
    assert again.evaluations == 1 and again.cache_hits == 1 and r2.cycles == r.cycles
    assert (tmp_path / "eval.sqlite").exists()
