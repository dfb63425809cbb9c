"""What the ranker learns and how its settings are tuned, on synthetic trajectories (no ptxas, no sim).

The synthetic corpus has the shape that broke the previous ranker: most kernels have nothing to gain,
and the one action that wins where something gains (``WIN``) is *risky* -- it loses 30% everywhere
else. A model of the mean log gain ranks it below the no-ops; a per-row "among the best" classifier
sees 2% positives and collapses to a constant. The listwise order model (share of the state's best
gain, learned at the states that gain) must rank it first on held-out groups -- both its models, the
action prior and the trees --, and the tuner must keep
the learned order when it beats random on its folds, fall back to random when it does not, and never
give up at the root.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from ptxopt.analysis.features import FEATURE_NAMES
from ptxopt.search.guided import choose, order
from ptxopt.search.rank_features import ACTION_FEATURE_NAMES
from ptxopt.search.ranker import EXPLORE, ORDERS, THRESHOLD, TOP_K, relevance, train
from ptxopt.search.actions import PASS_ACTIONS, STOP
from ptxopt.search.ranker_replay import choose_setting, recall, replay, score_steps, tune
from ptxopt.search.trajectory import Step
from tests.scripts import load_script

#: 16 real action names (trajectories store them): WIN gains where anything does, two are slower, one fails,
#: the rest change nothing; greedy spends 17 evaluations per state.
WIN, SLOWER, SLOWER_2, FAILS = "split_ld", "maxnreg_32", "reorder_cp", "cache_cv"
ACTIONS = tuple(a for a in PASS_ACTIONS if a != STOP)[:16]


def _state(kernel: str, rng, gains: bool, noise: bool = True) -> Step:
    base = 1000.0
    cands = {a: base for a in ACTIONS}
    cands.update({SLOWER: base * 1.02, SLOWER_2: base * 1.1, FAILS: None, WIN: base * (0.8 if gains else 1.3)})
    if noise:  # features that say nothing (the trees must not read a winner into them)
        obs = list(rng.random(len(FEATURE_NAMES))) + [0.0]
        feats = {a: [1.0, *rng.normal(size=len(ACTION_FEATURE_NAMES) - 1)] for a in ACTIONS}
    else:  # every state alike: nothing tells a state that gains from one that does not
        obs = [0.5] * len(FEATURE_NAMES) + [0.0]
        feats = {a: [1.0, *[float(i)] * (len(ACTION_FEATURE_NAMES) - 1)] for i, a in enumerate(ACTIONS)}
    best = min((a for a in ACTIONS if cands[a] is not None), key=lambda a: cands[a])
    after = cands[best] if cands[best] < base else base
    return Step(kernel=kernel, strategy="greedy", episode=0, step=0, pipeline="", observation=obs,
                action_mask=[1] * len(ACTIONS), action=best if after < base else STOP, cycles_before=base,
                cycles_after=after, reward=0.0, candidates=cands, action_features=feats)


def _corpus(seed: int = 0, n_groups: int = 5, gaining: int = 2, noise: bool = True
            ) -> tuple[list[Step], dict[str, str]]:
    """One root state per kernel, 8 kernels per group; the first ``gaining`` of each group gain, by ``WIN``
    alone."""
    rng = np.random.default_rng(seed)
    steps, groups = [], {}
    for i in range(n_groups):
        for j in range(8):
            k = f"g{i}_k{j}"
            steps.append(_state(k, rng, gains=j < gaining, noise=noise))
            groups[k] = f"g{i}"
    return steps, groups


def test_relevance_is_the_share_of_the_states_best_gain_and_undefined_where_nothing_gains():
    y = np.array([0.2, 0.1, 0.0, -0.3, 0.0, -0.1, 0.0005])
    idx = [("k", 0, a) for a in "abcd"] + [("k", 1, a) for a in "efg"]
    rel = relevance(y, idx)
    assert list(rel[:4]) == pytest.approx([1.0, 0.5, 0.0, 0.0])
    assert all(math.isnan(r) for r in rel[4:])  # best gains < 0.1%: nothing there orders the actions


@pytest.mark.parametrize("order_model", ORDERS)
def test_the_ranker_ranks_the_risky_winner_first_on_held_out_groups_and_beats_random_recall(order_model):
    steps, groups = _corpus(n_groups=10, gaining=1)  # 1 kernel in 8 gains: 0.8% of the rows are the winner's
    for held in ("g0", "g1", "g2"):
        rk = train([s for s in steps if groups[s.kernel] != held], actions=ACTIONS, max_iter=20, order=order_model)
        test = [s for s in steps if groups[s.kernel] == held]
        scored = score_steps(rk, test)
        gaining = [s for s in test if s.action == WIN]
        assert gaining
        for s in gaining:
            first = order([_M(a) for a in s.candidates], *scored[id(s)], np.random.default_rng(0))[0].action
            assert first == WIN, (held, scored[id(s)][0])
        hits, n = recall(scored, [[s] for s in test], k=1)
        random_hits, _ = recall(None, [[s] for s in test], k=1)
        assert n == len(gaining) and hits / n == 1.0 > random_hits / n


def test_the_predicted_value_of_measuring_ranks_a_risky_winner_above_a_no_op():
    """A search keeps no slower child, so measuring WIN (+20% at one state in eight, -30% elsewhere) is worth
    more than measuring a no-op (0 everywhere). A model of the signed log gain says the opposite (its mean is
    negative): it broke the previous ranker's ties in favour of no-ops."""
    steps, groups = _corpus(n_groups=10, gaining=1, noise=False)
    rk = train([s for s in steps if groups[s.kernel] != "g0"], actions=ACTIONS, max_iter=20)
    noop = next(a for a in ACTIONS if a not in (WIN, SLOWER, SLOWER_2, FAILS))
    for s in (s for s in steps if groups[s.kernel] == "g0"):
        _, gains = score_steps(rk, [s])[id(s)]
        assert gains[WIN] > gains[noop] + 0.005


class _M:
    def __init__(self, action):
        self.action = action


def test_a_column_unknown_at_every_gaining_state_does_not_stop_training():
    """The order model sees only the states that gain: a context slot known elsewhere but never there (an old
    record among new ones) must not break the trees' binning (it did, for a learning-curve draw)."""
    steps, groups = _corpus()
    for s in steps:
        s.context = None if s.action == WIN else {"registers": 32.0}
    rk = train(steps, actions=ACTIONS, max_iter=5, order="trees")
    assert rk.trained_on["order"].startswith("trees: listwise")


def test_the_action_prior_is_each_actions_mean_share_shrunk_toward_the_mean():
    """WIN is the best at every gaining state (share 1), the no-ops share 0, an action legal at no gaining
    state sits at the mean share (one pseudo-observation of it), and an action the prior was not trained on
    (no one-hot column) gets the mean: ranked above the actions that were legal and never helped."""
    steps, groups = _corpus(n_groups=3, gaining=2)  # 6 gaining states
    rare = ACTIONS[-1]
    for s in steps:
        if s.action == WIN:
            del s.candidates[rare]
    rk = train(steps, actions=ACTIONS, order="prior")
    prior = rk.model
    mean = prior.mean
    assert 0 < mean < 1 and prior.states[WIN] == 6 and prior.states[rare] == 0
    assert prior.share[WIN] == pytest.approx((6 + mean) / 7)
    assert prior.share[rare] == pytest.approx(mean)
    noop = next(a for a in ACTIONS if a not in (WIN, SLOWER, SLOWER_2, FAILS, rare))
    assert prior.share[noop] == pytest.approx(mean / 7)
    gaining = next(s for s in steps if s.action == WIN)
    scores, _ = score_steps(rk, [gaining])[id(gaining)]
    assert max(scores, key=scores.get) == WIN
    from ptxopt.search.ranker import feature_names

    unknown_row = np.zeros((1, len(feature_names(ACTIONS))))  # an all-zero one-hot: an action not trained on
    assert prior.predict(unknown_row)[0] == pytest.approx(mean)
    with pytest.raises(ValueError, match="order"):
        train(steps, actions=ACTIONS, order="forest")


def test_the_root_is_never_given_up_on_a_prediction():
    moves = [_M(a) for a in ACTIONS]
    scores = {a: float(i) for i, a in enumerate(ACTIONS)}
    gains = dict.fromkeys(ACTIONS, -1.0)  # nothing predicted to gain
    rng = np.random.default_rng(0)
    assert choose(moves, scores, top_k=2, threshold=0.0, rng=rng, gains=gains) == []  # past the root: stop
    pick = choose(moves, scores, top_k=2, threshold=0.0, rng=rng, gains=gains, explore=3, at_root=True)
    assert len(pick) == 5 and [m.action for m in pick[:2]] == list(ACTIONS[::-1][:2])
    assert len({m.action for m in pick}) == 5
    every = choose(moves, scores, top_k=0, threshold=0.0, rng=rng, gains=gains, explore=3, at_root=True)
    assert len(every) == 3  # top_k 0: every slot random


def test_a_replay_measures_the_root_even_when_the_stop_rule_says_nothing_gains():
    steps, _ = _corpus()
    s = steps[0]  # gains 20% by WIN
    scored = {id(s): ({a: (1.0 if a == WIN else 0.0) for a in ACTIONS}, dict.fromkeys(ACTIONS, -1.0))}
    gain, evals = replay(scored, [s], top_k=1, threshold=0.01, explore=1)
    assert gain == pytest.approx(20.0) and evals == 3


def test_the_tuner_keeps_the_learned_order_when_it_beats_random_on_its_folds():
    steps, groups = _corpus()
    (o, k, x, t), table = tune(steps, groups, actions=ACTIONS, max_iter=20)
    assert o in ORDERS and k >= 1  # the order finds WIN first; random needs more of the budget
    g, e = table[f"{o}/{k}/{x}/{t:g}"][:2]
    assert g == pytest.approx(1.0)  # every fold kernel that gains gets greedy's gain


def test_choose_setting_falls_back_to_a_random_order_that_beats_the_learned_one():
    table = {("prior", 2, 1, -math.inf): (0.3, 0.2), ("prior", 0, 3, -math.inf): (0.6, 0.2),
             ("prior", 4, 2, -math.inf): (0.9, 0.5)}
    assert choose_setting(table) == ("prior", 0, 3, -math.inf)  # (4, 2) is over the evaluation cap
    table[("trees", 1, 2, -math.inf)] = (0.6, 0.2)
    assert choose_setting(table) == ("trees", 1, 2, -math.inf)  # a tie at equal cost: the learned order
    table[("prior", 1, 2, -math.inf)] = (0.6, 0.2)
    assert choose_setting(table) == ("prior", 1, 2, -math.inf)  # ... and of two learned orders, the first


def test_choose_setting_keeps_the_simpler_order_within_one_standard_error():
    table = {("prior", 2, 1, -math.inf): (0.80, 0.2), ("prior", 3, 1, -math.inf): (0.78, 0.25),
             ("trees", 2, 1, -math.inf): (0.86, 0.2), ("prior", 0, 3, -math.inf): (0.5, 0.2)}
    assert choose_setting(table) == ("trees", 2, 1, -math.inf)  # no spread: the most gain
    se = dict.fromkeys(table, 0.1)
    assert choose_setting(table, se) == ("prior", 2, 1, -math.inf)  # 0.80 >= 0.86 - 0.1: the prior, its best
    se[("trees", 2, 1, -math.inf)] = 0.05
    assert choose_setting(table, se) == ("trees", 2, 1, -math.inf)  # 0.80 < 0.81: the trees earned it
    table[("prior", 4, 1, -math.inf)] = (0.9, 0.5)  # over the cap: not a candidate for the floor
    assert choose_setting(table, se) == ("trees", 2, 1, -math.inf)
    # the random order is a baseline, not a simpler model: it does not win by the rule
    assert choose_setting({("trees", 2, 1, -math.inf): (0.86, 0.2), ("prior", 0, 3, -math.inf): (0.85, 0.2)},
                          {("trees", 2, 1, -math.inf): 0.1}) == ("trees", 2, 1, -math.inf)


def test_fold_spread_is_the_standard_error_over_the_gaining_folds():
    from ptxopt.search.ranker_replay import fold_spread

    s = ("prior", 1, 1, 0.0)
    gains = {0: {s: 1.0}, 1: {s: 3.0}, 2: {s: 0.0}}
    greedy = {0: 2.0, 1: 4.0, 2: 0.0}  # fractions 0.5 and 0.75; fold 2 gains nothing and says nothing
    assert fold_spread(gains, greedy)[s] == pytest.approx(np.std([0.5, 0.75], ddof=1) / math.sqrt(2))
    assert fold_spread({0: {s: 1.0}}, {0: 2.0}) == {}  # one gaining fold: no spread to estimate


def test_the_tuner_keeps_the_defaults_when_no_fold_kernel_gains():
    steps, groups = _corpus()
    flat = [s for s in steps if s.action == STOP]
    (o, k, x, t), _ = tune(flat, groups, actions=ACTIONS, max_iter=10)
    assert (o, k, x, t) == (ORDERS[0], TOP_K, EXPLORE, THRESHOLD)  # not "the cheapest", which would learn to give up


def test_the_ranker_report_is_strict_json(tmp_path):
    """``benchmarks/studies/ranker_report.py``'s --json parses with NaN and infinities refused (a threshold
    of -inf, never stop on a prediction, is written as null)."""
    from ptxopt.kernels.corpus import load_manifest
    from ptxopt.search.trajectory import write_jsonl

    rr = load_script("benchmarks/studies/ranker_report.py")
    by_group: dict[str, list[str]] = {}
    for k in load_manifest():
        by_group.setdefault(k.group, []).append(k.id)
    rng = np.random.default_rng(1)
    steps = [_state(k, rng, gains=j == 0) for g in sorted(by_group)[:3] for j, k in enumerate(by_group[g][:3])]
    write_jsonl(steps, tmp_path / "t.jsonl")
    out = tmp_path / "r.json"
    assert rr.main([str(tmp_path / "t.jsonl"), "--sizes", "", "--max-iter", "5", "--top-k", "1", "--threshold=-inf",
                    "--json", str(out)]) == 0

    def refuse(c):
        raise ValueError(f"non-standard JSON constant {c}")

    doc = json.loads(out.read_text(), parse_constant=refuse)
    runs = [r for g in doc["groups"].values() for r in g["curve"]["all-but-one"]]
    assert runs and all(r["threshold"] is None for r in runs)
    merged = tmp_path / "m.json"  # a merge reads the strict JSON back (null where NaN was) and writes it again
    assert rr.main(["--merge", str(out), "--json", str(merged)]) == 0
    assert json.loads(merged.read_text(), parse_constant=refuse)["groups"].keys() == doc["groups"].keys()
    assert rr.json_safe({"a": [float("nan"), -math.inf, 1.5, np.float64(2.0)]}) == {"a": [None, None, 1.5, 2.0]}
