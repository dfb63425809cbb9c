"""``benchmarks/studies/loop_actions_report.py``: its "without" search explores exactly
the actions before issue 31, and its bound launch_bounds actions name the
performance block (no search is run here)."""

from __future__ import annotations

from dataclasses import replace

from ptxopt.kernels.corpus import get
from ptxopt.evaluate import Candidate
from ptxopt.search import State
from ptxopt.search.actions import PASS_ACTIONS
from tests.scripts import load_script


def _load():
    return load_script("benchmarks/studies/loop_actions_report.py")


def test_without_and_with_differ_exactly_by_the_new_actions():
    la = _load()
    assert set(la.NEW_ACTIONS) <= set(PASS_ACTIONS)
    # appended last: old indices keep their meaning (later appends, loop_version, come after both)
    assert la.OLD_ACTIONS + la.NEW_ACTIONS == PASS_ACTIONS[:len(la.OLD_ACTIONS) + len(la.NEW_ACTIONS)]
    # what search() does: the root's action list is inherited by every child, so no depth sees a new action
    root = replace(State.root(Candidate.from_corpus(get("cuda_saxpy"))), actions=la.OLD_ACTIONS)
    kids = [m.child for m in root.legal_moves()]
    assert kids and {m.action for m in root.moves()} == set(la.OLD_ACTIONS)
    assert all({m.action for m in k.moves()} == set(la.OLD_ACTIONS) for k in kids[:2])


def test_bound_launch_bounds_names_the_performance_block_and_applies():
    la = _load()
    spec = get("cuda_saxpy")  # nvcc: no .reqntid, so only a bound launch_bounds knows the block
    bound = la.bound_launch_bounds(spec)
    assert tuple(spec.performance.block) == (256, 1, 1)
    assert len(bound) == 2 and all(b.startswith("launch_bounds") and "block=256" in b for b in bound), bound
    root = State.root(Candidate.from_corpus(spec), extra_actions=bound)
    legal = {m.action for m in root.legal_moves()}
    assert set(bound) <= legal
    assert la.bound_launch_bounds(get("gemm_tile_2x2x2")) == ()  # no performance launch: latency only
