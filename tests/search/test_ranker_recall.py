"""The ranker's measuring stick and its inputs: recall under ties, the order guided search measures in,
the bound context read from a sim result, and the prior of an action added later.

Recall is checked against brute force: every random tie-break of a small scored state is enumerated
(the orders guided search can take) and the top-k hit rate averaged, for generated states with many
ties -- the case where a ranker that scores everything alike must read as random, not as the action
list's alphabetical order.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from ptxopt.search.guided import choose, order
from ptxopt.search.ranker_replay import recall, replay, topk_hit
from ptxopt.search.trajectory import Step


class _M:
    def __init__(self, action):
        self.action = action


def _brute(keys: dict, hits: set, k: int) -> float:
    """The top-k hit rate averaged over every order consistent with ``keys`` (ties in every order)."""
    acts = list(keys)
    total = n = 0
    for perm in itertools.permutations(acts):
        pos = {a: i for i, a in enumerate(perm)}
        ranked = sorted(acts, key=lambda a: (tuple(-x for x in keys[a]) if isinstance(keys[a], tuple) else -keys[a],
                                             pos[a]))
        total += any(a in hits for a in ranked[:k])
        n += 1
    return total / n


@pytest.mark.parametrize("seed", range(40))
def test_topk_hit_is_the_hit_rate_over_every_random_tie_break(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 7))
    acts = [f"a{i}" for i in range(n)]
    keys = {a: (int(rng.integers(0, 3)), int(rng.integers(0, 2))) for a in acts}  # many ties
    hits = {a for a in acts if rng.random() < 0.3}
    k = int(rng.integers(1, 4))
    assert math.isclose(topk_hit(keys, hits, k), _brute(keys, hits, k))


def _state(cands: dict, action: str, kernel: str = "k") -> Step:
    return Step(kernel=kernel, strategy="greedy", episode=0, step=0, pipeline="", observation=[0.0],
                action_mask=[1], action=action, cycles_before=1000.0, cycles_after=min(c for c in cands.values() if c),
                reward=0.0, candidates=cands)


def test_a_ranker_that_scores_everything_alike_has_a_random_rankers_recall():
    # the near-best actions come last in the candidates' order: breaking ties by that order would miss them
    cands = {f"noop_{i}": 1000.0 for i in range(6)} | {"zz_best": 800.0, "zz_second": 800.5}
    s = _state(cands, "zz_best")
    alike = {id(s): (dict.fromkeys(cands, 0.5), dict.fromkeys(cands, 0.0))}
    hits, n = recall(alike, [[s]])
    random_hits, _ = recall(None, [[s]])
    assert n == 1
    expected = 1 - math.comb(6, 3) / math.comb(8, 3)
    assert math.isclose(hits, expected) and math.isclose(random_hits, expected)


def test_the_predicted_gain_breaks_ties_in_the_order_score():
    cands = {"a": 1000.0, "b": 1000.0, "c": 900.0, "d": 1000.0}
    s = _state(cands, "c")
    scored = {id(s): (dict.fromkeys(cands, 0.1), {"a": 0.0, "b": 0.0, "c": 0.05, "d": 0.0})}
    assert recall(scored, [[s]], k=1) == (1.0, 1)
    moves = [_M(a) for a in cands]
    first = {order(moves, scored[id(s)][0], scored[id(s)][1], np.random.default_rng(i))[0].action for i in range(10)}
    assert first == {"c"}


def test_guided_breaks_remaining_ties_at_random_not_by_the_action_list():
    moves = [_M(f"a{i}") for i in range(8)]
    scores = {m.action: 0.3 for m in moves}
    firsts = {choose(moves, scores, top_k=1, threshold=-1.0, rng=np.random.default_rng(seed))[0].action
              for seed in range(60)}
    assert len(firsts) == len(moves)  # every tied action is measured first for some seed


def test_recall_can_skip_states_with_nothing_to_gain():
    tiny = _state({"noop": 1000.0, "tiny": 999.9}, "tiny")  # greedy moved on a 0.01% gain
    real = _state({"noop": 1000.0, "good": 900.0}, "good")
    scored = {id(tiny): ({"noop": 1.0, "tiny": 0.0}, {}), id(real): ({"noop": 0.0, "good": 1.0}, {})}
    assert recall(scored, [[tiny], [real]], k=1) == (2.0, 2)  # noop is within 0.1% of tiny's best: a hit
    assert recall(scored, [[tiny], [real]], k=1, min_gain=0.001) == (1.0, 1)


NOTE = ("many warps (L4, 58 SMs): 24 blocks/SM fit (limited by blocks; 50% occupancy), 24 warps resident (6 per "
        "scheduler), 48 wave(s) (47 full + a tail of 2 blocks); per wave: LSU 32304, L1 50736, L2 16656 cycles; "
        "DRAM for the launch 228940 cycles (L2 cold; footprint 33667584 B, streamed from DRAM); DRAM floor: "
        "33,667,584 B (counts; cold L2) = 228,940 cycles; arithmetic floor: fp32 work over the L4's peak = 249,150 "
        "cycles (ptxopt.sim.floors; loops x the launch's trips)")


def test_bound_context_reads_the_bounds_and_what_binds_from_the_many_warp_note():
    from ptxopt.search.rank_features import bound_context

    b = bound_context(("loop trips ...", NOTE), 2428395.0)
    assert b["waves"] == 48
    assert b["bound_l1"] == pytest.approx(48 * 50736 / 2428395.0)
    assert b["bound_dram"] == pytest.approx(228940 / 2428395.0)
    assert b["bound_arithmetic"] == pytest.approx(249150 / 2428395.0)
    assert (b["binds_memory"], b["binds_arithmetic"], b["binds_latency_or_issue"]) == (1.0, 0.0, 0.0)
    slow = bound_context((NOTE,), 10 * 2428395.0)  # the estimate far above every bound: latency or issue binds
    assert (slow["binds_memory"], slow["binds_latency_or_issue"]) == (0.0, 1.0)
    assert bound_context(("latency: one warp's time",), 300.0) == {}  # unknown, not zero
    assert bound_context((NOTE.replace("per wave", "per kernel"),), 1.0) == {}


@pytest.mark.slow
def test_bound_context_reads_a_real_sim_result():
    """The note's format is the sim's: a sim result of a corpus kernel under its throughput launch parses."""
    from ptxopt.evaluate import Candidate, evaluate
    from ptxopt.search import State
    from ptxopt.search.rank_features import BOUND_NAMES, state_context

    cand = Candidate.from_corpus("cuda_vector_add")
    r = evaluate(cand, cache=None, backend="sim")
    ctx = state_context(State.root(cand), r)
    assert r.objective == "throughput"
    assert all(not math.isnan(ctx[n]) for n in BOUND_NAMES)
    assert max(ctx[n] for n in BOUND_NAMES) <= 1.0 + 1e-6  # every bound is inside the estimate
    assert ctx["binds_memory"] + ctx["binds_arithmetic"] + ctx["binds_latency_or_issue"] == 1.0


@pytest.mark.slow
def test_an_action_added_after_training_gets_a_prior_and_keeps_the_exploration_slot():
    from ptxopt.evaluate import Candidate
    from ptxopt.search import State
    from ptxopt.search.guided import predictions
    from ptxopt.search.ranker import Ranker

    class _Const:
        def predict(self, X):
            return np.full(len(X), 0.01)

    root = State.root(Candidate.from_corpus("gemm_tile_2x2x4"))
    moves = root.legal_moves()
    legal = [m.action for m in moves]
    rk = Ranker(_Const(), tuple(legal[1:]), gain_model=_Const())  # trained before legal[0] existed
    scores, gains, known = predictions(rk, root, None, moves)
    assert legal[0] in scores and legal[0] in gains  # scored by its prior
    assert legal[0] not in known
    # all tied: the unknown action is measured, in the top-k on its prior or else in the exploration slot
    for seed in range(5):
        pick = choose(moves, scores, top_k=2, threshold=0.0, rng=np.random.default_rng(seed), gains=gains,
                      known=known)
        assert legal[0] in {m.action for m in pick} and len(pick) == 3


def test_recall_counts_one_measurement_for_two_directives_asking_for_one_register_limit():
    cands = {"launch_bounds_2": 1000.0, "maxnreg_128": 1000.0, "unroll_4": 1001.0, "vec_ld": 900.0}
    s = _state(cands, "vec_ld")
    s.context = {"block_threads": 256.0, "registers": 40.0}  # launch_bounds_2 asks for 128 registers there
    scored = {id(s): ({"launch_bounds_2": 4.0, "maxnreg_128": 3.0, "unroll_4": 2.0, "vec_ld": 1.0}, {})}
    assert recall(scored, [[s]], k=3) == (1.0, 1)  # maxnreg_128 follows the others: vec_ld is third
    assert recall(scored, [[s]], k=3, classes=False) == (0.0, 1)
    s.context = {"block_threads": 512.0}  # there launch_bounds_2 asks for 64: two outcomes, vec_ld fourth
    assert recall(scored, [[s]], k=3) == (0.0, 1)


def test_recall_and_replay_put_a_passs_second_variant_after_every_passs_first():
    cands = {"maxnreg_255": 1000.0, "maxnreg_128": 1000.0, "maxnreg_64": 1000.0, "vec_st": 900.0}
    s = _state(cands, "vec_st")
    s.context = {"registers": 40.0}  # no launch: every cap its own outcome class
    scored = {id(s): ({"maxnreg_255": 4.0, "maxnreg_128": 3.0, "maxnreg_64": 2.0, "vec_st": 1.0}, {})}
    assert recall(scored, [[s]], k=2) == (1.0, 1)  # the other caps follow vec_st
    assert recall(scored, [[s]], k=2, kinds=False) == (0.0, 1)
    gain, evals = replay(scored, [s], top_k=2, threshold=0.0, explore=0)
    assert evals == 1 + 2 + 1 and gain == pytest.approx(10.0)  # explore 0 still gives one slot
    # without the rule vec_st is left to the random slot: some draws miss it
    assert {round(replay(scored, [s], top_k=2, threshold=0.0, explore=0, kinds=False, seed=i)[0], 6)
            for i in range(12)} == {0.0, 10.0}
