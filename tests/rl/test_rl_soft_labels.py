"""Soft BC targets from the rewards greedy measured for every legal action."""

import math

import numpy as np
import pytest

pytest.importorskip("torch")

from ptxopt.search import ACTIONS  # noqa: E402
from ptxopt.search import Step, reward  # noqa: E402
from ptxopt_rl.bc import Dataset, soft_targets, step_values, train_bc  # noqa: E402

NAMES = ACTIONS


def _step(candidates, action, before=1000.0, after=None):
    mask = [0] * len(NAMES)
    for n in candidates:
        mask[NAMES.index(n)] = 1
    mask[-1] = 1
    after = before if after is None else after
    r = 0.0 if action == "stop" else reward(before, after)
    return Step(kernel="k", strategy="greedy", episode=0, step=0, pipeline="", observation=[1.0, 2.0],
                action_mask=mask, action=action, cycles_before=before, cycles_after=after, reward=r,
                candidates=candidates)


def test_step_values_are_rewards_with_stop_zero_and_unmeasured_nan():
    s = _step({"vec_ld": 800.0, "vec_st": 1000.0, "cache_cg": None}, "vec_ld", after=800.0)
    v = step_values(s)
    assert v[NAMES.index("vec_ld")] == pytest.approx(math.log(1000 / 800) - 0.005)
    assert v[NAMES.index("vec_st")] == pytest.approx(-0.005)
    assert math.isnan(v[NAMES.index("cache_cg")])  # failed candidate: not a target
    assert math.isnan(v[NAMES.index("maxnreg_32")])  # not measured
    assert v[-1] == 0.0


def _dataset(steps):
    return Dataset(np.array([s.observation for s in steps]), np.array([s.action_mask for s in steps], dtype=bool),
                   np.array([s.action_index for s in steps]), np.array([s.kernel for s in steps]),
                   np.array([step_values(s) for s in steps]))


def test_soft_targets_share_near_ties_and_sharpen_to_greedy():
    s = _step({"vec_ld": 800.0, "vec_st": 801.0, "maxnreg_32": 2000.0}, "vec_ld", after=800.0)
    d = _dataset([s])
    warm = soft_targets(d, 0.01)[0]
    assert warm.sum() == pytest.approx(1.0)
    assert warm[~d.masks[0]].sum() == 0.0  # masked actions get nothing
    assert warm[NAMES.index("vec_st")] > 0.4 * warm[NAMES.index("vec_ld")]  # a near-tie keeps real mass
    assert warm[NAMES.index("maxnreg_32")] < 1e-6  # a far worse action gets none
    cold = soft_targets(d, 1e-4)[0]
    assert int(np.argmax(cold)) == NAMES.index("vec_ld") and cold.max() > 0.99


def test_soft_label_training_raises_entropy_over_near_ties():
    import torch

    steps = [_step({"vec_ld": 800.0, "vec_st": 801.0}, "vec_ld", after=800.0) for _ in range(8)]
    d = _dataset(steps)
    hard = train_bc(d, epochs=150, label_temperature=0.0)
    soft = train_bc(d, epochs=150, label_temperature=0.01)
    with torch.no_grad():
        ph = hard.log_probs(d.obs[:1], d.masks[:1]).exp()[0]
        ps = soft.log_probs(d.obs[:1], d.masks[:1]).exp()[0]
    i_st = NAMES.index("vec_st")
    assert ps[i_st] > 0.25 and ph[i_st] < 0.1
