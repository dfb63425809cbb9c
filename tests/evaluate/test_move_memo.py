"""The move memo (:mod:`ptxopt.evaluate.move_memo`): a mask computed from
remembered facts is exactly the mask computed by applying every pass, it
costs no pass application, and a damaged or lying memo never yields a wrong
state."""

from __future__ import annotations

import sqlite3

import numpy as np
import pytest

from ptxopt.evaluate import Candidate
from ptxopt.passes.base import Pass
from ptxopt.search.actions import ACTIONS, PASS_ACTIONS
from ptxopt.evaluate import move_memo
from ptxopt.evaluate.move_memo import MoveMemo
from ptxopt.search.state import State

KERNELS = ["gemm_tile_2x2x4", "cuda_softmax_row", "triton_vector_add"]
PIPELINES = [(), ("cache_cg",), ("vec_ld", "maxnreg_128"), ("reorder_cp", "cache_cs", "prefetch_L2")]


@pytest.fixture(autouse=True)
def _fresh():
    move_memo.clear_memo()
    yield
    move_memo.clear_memo()


def _walk(kernel: str, pipeline, memo: MoveMemo | None) -> State | None:
    s = State.root(Candidate.from_corpus(kernel, ""), memo=memo)
    for a in pipeline:
        if not s.action_mask()[ACTIONS.index(a)]:
            return None
        s = s.child(a)
    return s


def _reference_mask(s: State) -> np.ndarray:
    """Every pass applied (what the mask meant before the memo)."""
    plain = State(s.kernel, s.pipeline, s.module, s.printed, memo=MoveMemo(None))
    plain.moves()
    return plain.action_mask()


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("pipeline", PIPELINES, ids=lambda p: ",".join(p) or "root")
def test_memo_mask_equals_applying_every_pass(kernel, pipeline, tmp_path):
    path = tmp_path / "moves.sqlite"
    first = _walk(kernel, pipeline, MoveMemo(path))
    if first is None:
        pytest.skip(f"{pipeline} is not legal on {kernel}")
    expected = _reference_mask(first)
    assert (first.action_mask() == expected).all()
    move_memo.clear_memo()  # a new process: only the file remains
    again = _walk(kernel, pipeline, MoveMemo(path))
    assert again.printed == first.printed
    assert (again.action_mask() == expected).all()


def test_a_remembered_mask_applies_no_pass(tmp_path, monkeypatch):
    path = tmp_path / "moves.sqlite"
    State.root(Candidate.from_corpus("gemm_tile_2x2x4", ""), memo=MoveMemo(path)).action_mask()
    move_memo.clear_memo()
    applied = []
    real = Pass.apply

    def counting(self, module):
        applied.append(self.name)
        return real(self, module)

    monkeypatch.setattr(Pass, "apply", counting)
    s = State.root(Candidate.from_corpus("gemm_tile_2x2x4", ""), memo=MoveMemo(path))
    mask = s.action_mask()
    assert applied == []
    action = ACTIONS[int(np.flatnonzero(mask[:-1])[0])]
    child = s.child(action)
    assert applied == [action] and child.printed != s.printed
    assert s._moves is None  # the other children were never built


def test_the_key_names_the_front_end_code(monkeypatch):
    k1 = move_memo.state_key("x")
    monkeypatch.setattr(move_memo, "front_digest", lambda: "another passes/ version")
    assert move_memo.state_key("x") != k1


def test_a_lying_memo_is_overruled_by_the_pass(tmp_path):
    """A memo that claims every pass changes the module (a stale or damaged
    entry) cannot produce a child equal to its parent: the pass is applied
    and its own answer stands."""
    s = State.root(Candidate.from_corpus("gemm_tile_2x2x4", ""), memo=MoveMemo(tmp_path / "m.sqlite"))
    s.moves()
    truth = {m.action: m.reason for m in s.moves()}
    unchanged = next(a for a, r in truth.items() if r == "no change")  # split_ld: no vector loads here
    move_memo.clear_memo()
    lie = MoveMemo(tmp_path / "lie.sqlite")
    lie.put(s.digest, {a: None for a in PASS_ACTIONS})
    t = State.root(Candidate.from_corpus("gemm_tile_2x2x4", ""), memo=lie)
    assert t.action_mask()[:-1].all()  # what the memo says...
    with pytest.raises(ValueError, match="no change"):
        t.child(unchanged)  # ...but the pass decides
    assert not t.action_mask()[ACTIONS.index(unchanged)]


@pytest.mark.parametrize("damage", ["garbage", "foreign", "bad row"])
def test_a_damaged_memo_file_is_only_a_miss(tmp_path, damage):
    path = tmp_path / "moves.sqlite"
    s = State.root(Candidate.from_corpus("cuda_softmax_row", ""))
    expected = _reference_mask(s)
    if damage == "garbage":
        path.write_bytes(b"not a database at all" * 50)
    elif damage == "foreign":
        db = sqlite3.connect(path)
        db.execute("CREATE TABLE users (name TEXT)")
        db.commit()
        db.close()
    else:
        MoveMemo(path).put(s.digest, {"vec_ld": None})
        move_memo.clear_memo()
        db = sqlite3.connect(path)
        db.execute("UPDATE moves SET value = '{not json'")
        db.commit()
        db.close()
    before = path.read_bytes()
    t = State.root(Candidate.from_corpus("cuda_softmax_row", ""), memo=MoveMemo(path))
    assert (t.action_mask() == expected).all()
    if damage != "bad row":
        assert path.read_bytes() == before  # never written to


@pytest.mark.parametrize("kernel", KERNELS)
def test_remembered_features_are_the_computed_ones(kernel, tmp_path):
    from ptxopt.analysis.features import feature_vector

    path = tmp_path / "moves.sqlite"
    s = _walk(kernel, ("cache_cg",), MoveMemo(path))
    expected = feature_vector(s.module, s.entry)
    assert np.array_equal(s.features, expected, equal_nan=True)
    move_memo.clear_memo()  # a new process: read back from the file
    t = _walk(kernel, ("cache_cg",), MoveMemo(path))
    assert np.array_equal(t.features, expected, equal_nan=True)
    assert np.array_equal(t.observation(), s.observation(), equal_nan=True)


def test_features_are_keyed_by_entry_too(tmp_path):
    memo = MoveMemo(tmp_path / "m.sqlite")
    a = memo.features("same text", "k1", lambda: np.array([1.0, 2.0]))
    b = memo.features("same text", "k2", lambda: np.array([3.0, float("inf")]))
    move_memo.clear_memo()
    memo2 = MoveMemo(tmp_path / "m.sqlite")
    never = lambda: pytest.fail("recomputed")  # noqa: E731
    assert np.array_equal(memo2.features("same text", "k1", never), a)
    assert np.array_equal(memo2.features("same text", "k2", never), b)
