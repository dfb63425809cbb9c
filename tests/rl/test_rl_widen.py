"""A policy trained on the action list before issue 31's actions (20 passes
and stop, 81 observation slots: the committed one) still loads and acts: it
is widened (:func:`rl.checkpoint.widen`) to the current list, computing the
same logits for its old actions and never choosing a new one."""

from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from ptxopt.search import ACTIONS, STOP, observation_names
from ptxopt_rl.checkpoint import CheckpointError, load_policy, widen
from ptxopt_rl.policy import NEG_INF, Policy, PolicyConfig

COMMITTED = Path(__file__).resolve().parents[2] / "corpus" / "policies" / "gemm_elementwise_sm_89.pt"


def _old(doc) -> Policy:
    p = Policy(PolicyConfig(**doc["config"]))
    p.load_state_dict(doc["state_dict"])
    return p.eval()


def test_the_committed_policy_is_for_an_older_list_and_is_widened():
    doc = torch.load(COMMITTED, weights_only=True)
    assert len(doc["action_names"]) < len(ACTIONS)  # trained before the new actions: this test is live
    policy, _ = load_policy(COMMITTED)
    assert (policy.config.n_actions, policy.config.obs_dim) == (len(ACTIONS), len(observation_names()))
    names = observation_names()
    x = np.random.default_rng(0).normal(size=(64, len(names))) * 50
    old_x = x[:, [names.index(n) for n in doc["observation_names"]]]
    rows = [ACTIONS.index(a) for a in doc["action_names"]]
    new_rows = [i for i in range(len(ACTIONS)) if i not in rows]
    assert [ACTIONS[i] for i in new_rows] == ["launch_bounds_2", "launch_bounds{minblocks=4}", "nc_ld",
                                               "unroll_2", "unroll_4", "unroll{factor=8}",
                                               "loop_version_2", "loop_version_4", "swp_ld_1", "swp_ld_2"]
    with torch.no_grad():
        got = policy.forward(x, np.ones((64, len(ACTIONS)), bool))
        want = _old(doc).forward(old_x, np.ones((64, len(rows)), bool))
    assert torch.allclose(got[:, rows], want, atol=1e-4)
    assert (got[:, new_rows] <= NEG_INF / 2).all()  # never chosen, even with every action legal
    assert (got.argmax(1) == torch.tensor(rows)[want.argmax(1)]).all()


def test_widened_policy_acts_on_a_state():
    from ptxopt.evaluate import Candidate
    from ptxopt.search import State

    policy, _ = load_policy(COMMITTED)
    root = State.root(Candidate.from_corpus("gemm_tile_4x4x4"))
    a, lp = policy.act(root.observation(), root.action_mask(), greedy=True)
    assert ACTIONS[a] in doc_actions() and np.isfinite(lp)


def doc_actions() -> list[str]:
    return list(torch.load(COMMITTED, weights_only=True)["action_names"])


def test_widen_refuses_nothing_it_cannot_map(tmp_path):
    """Actions out of order (or renamed) are refused, not mapped."""
    doc = torch.load(COMMITTED, weights_only=True)
    doc["action_names"] = [*doc["action_names"][:-1][::-1], STOP]
    p = tmp_path / "reordered.pt"
    torch.save(doc, p)
    with pytest.raises(CheckpointError, match="retrain"):
        load_policy(p)


def test_widen_is_exact_for_a_small_policy():
    """Any old subset/order-preserving layout: the same logits on the old columns."""
    names = observation_names()
    old_obs = names[::3]
    old_actions = [a for i, a in enumerate(ACTIONS) if i % 2 == 0 or a == STOP]
    torch.manual_seed(0)
    old = Policy(PolicyConfig(obs_dim=len(old_obs), n_actions=len(old_actions), hidden=16, layers=1)).eval()
    new = widen(old, old_actions, old_obs).eval()
    x = np.random.default_rng(1).normal(size=(8, len(names)))
    with torch.no_grad():
        got = new.forward(x, np.ones((8, len(ACTIONS)), bool))
        want = old.forward(x[:, [names.index(n) for n in old_obs]], np.ones((8, len(old_actions)), bool))
    rows = [ACTIONS.index(a) for a in old_actions]
    assert torch.allclose(got[:, rows], want, atol=1e-5)
