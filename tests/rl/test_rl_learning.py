"""rl: the masked policy, checkpoints, behaviour cloning, GRPO, policy rollouts
and the evaluation protocol's summary.

Most tests are pure torch/numpy on synthetic data. The ones that evaluate
kernels (GRPO, policy_search) use the smallest corpus kernels, a couple of
epochs and a temporary SQLite cache shared by the rl test modules of this
session (never ~/.cache).
"""

from __future__ import annotations

import csv
import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("gymnasium")

from ptxopt.evaluate import Candidate  # noqa: E402
from ptxopt.search import (ACTIONS, N_ACTIONS, STOP, EvalOptions, Meter, SearchConfig, State, Step, episodes,  # noqa: E402
                           observation_names, read_jsonl, reward, search_kernel, write_jsonl)
from ptxopt.search import STOP_INDEX  # noqa: E402
from ptxopt_rl.bc import Dataset, _masked_argmax, accuracy, leave_one_kernel_out, load_dataset, predict, train_bc  # noqa: E402
from ptxopt_rl.checkpoint import FORMAT, CheckpointError, load_policy, save_policy  # noqa: E402
from ptxopt_rl.env import PipelineEnv, env_for  # noqa: E402
from ptxopt_rl.grpo import GRPOConfig, GRPOTrainer, group_advantages, grpo_update, masked_kl  # noqa: E402
from ptxopt_rl.policy import NEG_INF, Policy, PolicyConfig, scale  # noqa: E402
from ptxopt_rl.protocol import summarize as protocol_summary  # noqa: E402
from ptxopt_rl.rollout import Episode, policy_search, rollout  # noqa: E402

N_OBS = len(observation_names())
N_ACT = N_ACTIONS
K2, K4 = "gemm_tile_2x2x2", "gemm_tile_2x2x4"


@pytest.fixture(scope="module")
def options(rl_options) -> EvalOptions:
    return rl_options  # one cache for every rl test module of the session (tests/conftest.py)


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


def make_policy(obs_dim: int = N_OBS, **kw) -> Policy:
    torch.manual_seed(kw.pop("seed", 0))
    return Policy(PolicyConfig(obs_dim=obs_dim, **kw)).eval()


def random_masks(rng, n: int, p_legal: float = 0.3) -> np.ndarray:
    m = rng.random((n, N_ACT)) < p_legal
    m[:, STOP_INDEX] = True
    return m


@pytest.fixture(scope="module")
def saved_policy(tmp_path_factory):
    """A randomly initialised policy checkpoint for the real observation layout."""
    return save_policy(tmp_path_factory.mktemp("ckpt") / "random.pt", make_policy(seed=1))


# -- policy ----------------------------------------------------------------------------------------


def test_masked_actions_get_zero_probability():
    rng = np.random.default_rng(0)
    pol = make_policy(obs_dim=7, hidden=16)
    obs = rng.normal(size=(64, 7)) * 100
    masks = random_masks(rng, 64)
    for t in (0.5, 1.0, 1.5):
        p = pol.log_probs(obs, masks, temperature=t).exp().detach().numpy()
        assert np.all(p[~masks] < 1e-12)
        assert np.allclose(p.sum(axis=1), 1.0, atol=1e-5)
        assert np.all(p[masks] > 0)
    logits = pol(obs, masks).detach().numpy()
    assert np.all(logits[~masks] == NEG_INF)
    # the unmasked logits are left alone
    all_legal = pol(obs, np.ones_like(masks)).detach().numpy()
    assert np.array_equal(logits[masks], all_legal[masks])


def test_scale_is_signed_log1p():
    x = np.array([-1000.0, -1.0, 0.0, 1.0, 1000.0])
    assert np.allclose(scale(x).numpy(), np.sign(x) * np.log1p(np.abs(x)), atol=1e-6)


def test_greedy_act_is_the_legal_argmax():
    rng = np.random.default_rng(1)
    pol = make_policy(obs_dim=7, hidden=16)
    for _ in range(20):
        obs = rng.normal(size=7)
        with torch.no_grad():
            raw = pol(obs[None], np.ones((1, N_ACT), bool))[0].numpy()
        order = np.argsort(-raw)
        mask = np.ones(N_ACT, bool)
        mask[order[:3]] = False  # mask the three best: the answer must be the fourth
        mask[STOP_INDEX] = True
        expected = int(np.argmax(np.where(mask, raw, -np.inf)))
        a, lp = pol.act(obs, mask, greedy=True)
        assert a == expected and mask[a]
        with torch.no_grad():
            ref = pol.log_probs(obs[None], mask[None])[0, a].item()
        assert lp == pytest.approx(ref, abs=1e-5)


def test_sampling_never_returns_a_masked_action():
    rng = np.random.default_rng(2)
    pol = make_policy(obs_dim=7, hidden=16)
    gen = torch.Generator().manual_seed(0)
    obs = rng.normal(size=7)
    mask = np.zeros(N_ACT, bool)
    mask[[1, 4, 9, STOP_INDEX]] = True
    seen = set()
    for t in (0.5, 1.5, 5.0):
        for _ in range(400):
            a, lp = pol.act(obs, mask, temperature=t, generator=gen)
            assert mask[a] and lp <= 0
            seen.add(a)
    assert seen == {1, 4, 9, STOP_INDEX}  # and every legal action does get sampled


def test_sampling_is_reproducible_with_a_generator():
    pol = make_policy(obs_dim=5, hidden=8)
    obs, mask = np.ones(5), np.ones(N_ACT, bool)
    draws = [[pol.act(obs, mask, generator=g)[0] for _ in range(30)]
             for g in (torch.Generator().manual_seed(3), torch.Generator().manual_seed(3))]
    assert draws[0] == draws[1]


def test_act_restores_the_training_mode():
    pol = make_policy(obs_dim=5, hidden=8)
    pol.train()
    pol.act(np.zeros(5), np.ones(N_ACT, bool))
    assert pol.training
    pol.eval()
    pol.act(np.zeros(5), np.ones(N_ACT, bool))
    assert not pol.training


# -- checkpoints ------------------------------------------------------------------------------------


def test_checkpoint_round_trip(tmp_path):
    rng = np.random.default_rng(3)
    pol = make_policy(hidden=32, layers=3, seed=4)
    path = save_policy(tmp_path / "sub" / "p.pt", pol, meta={"stage": "test", "n": 3})
    assert path.exists() and not path.with_suffix(".pt.tmp").exists()
    loaded, meta = load_policy(path)
    assert meta == {"stage": "test", "n": 3}
    assert not loaded.training and loaded.config == pol.config
    obs, masks = rng.normal(size=(16, N_OBS)) * 50, random_masks(rng, 16, 0.6)
    with torch.no_grad():
        assert torch.equal(loaded(obs, masks), pol(obs, masks))
    for o, m in zip(obs, masks):
        assert loaded.act(o, m, greedy=True) == pol.act(o, m, greedy=True)


def test_checkpoint_loads_with_weights_only(tmp_path):
    path = save_policy(tmp_path / "p.pt", make_policy(hidden=8))
    doc = torch.load(path, map_location="cpu", weights_only=True)
    assert doc["format"] == FORMAT
    assert doc["action_names"] == list(ACTIONS)
    assert doc["observation_names"] == observation_names()
    assert doc["config"]["obs_dim"] == N_OBS and doc["config"]["hidden"] == 8
    assert all(isinstance(v, torch.Tensor) for v in doc["state_dict"].values())


def _edited(tmp_path, name, edit):
    src = save_policy(tmp_path / "orig.pt", make_policy(hidden=8))
    doc = torch.load(src, weights_only=True)
    edit(doc)
    path = tmp_path / name
    torch.save(doc, path)
    return path


def test_checkpoint_for_other_actions_is_refused(tmp_path):
    def swap(doc):
        names = list(doc["action_names"])
        names[0], names[1] = names[1], names[0]
        doc["action_names"] = names

    with pytest.raises(CheckpointError, match="actions") as e:
        load_policy(_edited(tmp_path, "swapped.pt", swap))
    assert "retrain" in str(e.value)

    def extra(doc):
        doc["action_names"] = [*doc["action_names"][:-1], "new_pass", STOP]

    with pytest.raises(CheckpointError, match="new_pass"):
        load_policy(_edited(tmp_path, "extra.pt", extra))


def test_checkpoint_for_other_observations_is_refused(tmp_path):
    def drop(doc):
        doc["observation_names"] = doc["observation_names"][:-1]

    # a slot list that is this layout minus one could be widened (rl.checkpoint.widen), but it does not
    # fit the weights (trained on N_OBS inputs): refused as damaged
    with pytest.raises(CheckpointError, match="do not fit"):
        load_policy(_edited(tmp_path, "short.pt", drop))

    def move(doc):
        names = list(doc["observation_names"])
        doc["observation_names"] = names[1:] + names[:1]

    with pytest.raises(CheckpointError, match="observation") as e:
        load_policy(_edited(tmp_path, "moved.pt", move))
    assert f"{N_OBS} slots" in str(e.value) and "retrain" in str(e.value)

    def rename(doc):
        doc["observation_names"] = ["x_" + n for n in doc["observation_names"]]

    with pytest.raises(CheckpointError, match="observation"):
        load_policy(_edited(tmp_path, "renamed.pt", rename))


def test_checkpoint_with_another_format_is_refused(tmp_path):
    def fmt(doc):
        doc["format"] = "something-else/9"

    with pytest.raises(CheckpointError, match="something-else/9"):
        load_policy(_edited(tmp_path, "fmt.pt", fmt))
    torch.save(torch.zeros(3), tmp_path / "tensor.pt")
    with pytest.raises(CheckpointError, match="not a ptxopt policy checkpoint"):
        load_policy(tmp_path / "tensor.pt")


def test_garbage_and_missing_checkpoints_are_refused(tmp_path):
    bad = tmp_path / "garbage.pt"
    bad.write_bytes(b"\x00not a checkpoint at all\xff" * 10)
    with pytest.raises(CheckpointError, match="garbage.pt"):
        load_policy(bad)
    txt = tmp_path / "text.pt"
    txt.write_text("hello\n")
    with pytest.raises(CheckpointError):
        load_policy(txt)
    with pytest.raises(CheckpointError, match="missing.pt"):
        load_policy(tmp_path / "missing.pt")
    with pytest.raises(CheckpointError):
        load_policy(tmp_path)  # a folder


def test_truncated_checkpoint_is_refused(tmp_path):
    path = save_policy(tmp_path / "p.pt", make_policy(hidden=8))
    data = path.read_bytes()
    cut = tmp_path / "cut.pt"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(CheckpointError):
        load_policy(cut)


def _drop_key(doc):
    del doc["action_names"]


def _wrong_shapes(doc):
    doc["config"]["hidden"] = 16  # the weights are for hidden=8


@pytest.mark.parametrize("edit", [_drop_key, _wrong_shapes], ids=["missing-key", "wrong-shapes"])
def test_malformed_checkpoint_dict_is_a_checkpoint_error(tmp_path, edit):
    with pytest.raises(CheckpointError):
        load_policy(_edited(tmp_path, "malformed.pt", edit))


# -- behaviour cloning ------------------------------------------------------------------------------


def synthetic(n: int = 240, obs_dim: int = 6, kernels=("ka", "kb", "kc"), seed: int = 0) -> Dataset:
    """Label = which of the first three features is largest (actions 0, 1, 2), or stop when all are
    negative; the label is always legal, other actions are randomly masked."""
    rng = np.random.default_rng(seed)
    obs = rng.normal(size=(n, obs_dim)) * 3
    lab = np.argmax(obs[:, :3], axis=1)
    lab[(obs[:, :3] < 0).all(axis=1)] = STOP_INDEX
    masks = random_masks(rng, n, 0.5)
    masks[np.arange(n), lab] = True
    return Dataset(obs, masks, lab.astype(np.int64), np.array([kernels[i % len(kernels)] for i in range(n)]))


def test_bc_learns_a_simple_rule():
    data = synthetic()
    pol = train_bc(data, epochs=150, hidden=32, lr=1e-2)
    assert not pol.training
    assert accuracy(pol, data) >= 0.95
    untrained = make_policy(obs_dim=6, hidden=32)
    assert accuracy(untrained, data) < 0.7  # (the accuracy measure can tell them apart)
    fresh = synthetic(n=200, seed=1)
    assert accuracy(pol, fresh) >= 0.8  # it learned the rule, not the rows


def test_bc_is_seeded():
    data = synthetic(n=60)
    a = train_bc(data, epochs=5, hidden=16, seed=3)
    b = train_bc(data, epochs=5, hidden=16, seed=3)
    for x, y in zip(a.state_dict().values(), b.state_dict().values()):
        assert torch.equal(x, y)


def test_bc_predictions_are_always_legal():
    rng = np.random.default_rng(5)
    data = synthetic(n=100)
    pol = train_bc(data, epochs=20, hidden=16)
    for masks in (data.masks, random_masks(rng, 100, 0.1)):
        d = Dataset(data.obs, masks, data.actions, data.kernels)
        for p in (pol, make_policy(obs_dim=6, hidden=16)):
            pred = predict(p, d)
            assert pred.shape == (100,) and masks[np.arange(100), pred].all()


def test_dataset_subset():
    data = synthetic(n=30)
    sub = data.subset(data.kernels == "kb")
    assert len(sub) == 10 and set(sub.kernels) == {"kb"}
    assert np.array_equal(sub.obs, data.obs[data.kernels == "kb"])


def _steps(kernel: str, strategy: str, n: int, *, obs_len: int = N_OBS, start: int = 0) -> list[Step]:
    out = []
    for i in range(n):
        mask = [0] * N_ACT
        mask[i % 3] = mask[STOP_INDEX] = 1
        action = ACTIONS[i % 3] if i < n - 1 else STOP
        out.append(Step(kernel=kernel, strategy=strategy, episode=0, step=i, pipeline="",
                        observation=[float(start + i)] * obs_len, action_mask=mask, action=action,
                        cycles_before=100.0, cycles_after=100.0 if action == STOP else 90.0,
                        reward=0.0 if action == STOP else reward(100.0, 90.0)))
    return out


@pytest.fixture
def traj_file(tmp_path):
    path = tmp_path / "t.jsonl"
    write_jsonl(_steps(K2, "greedy", 3) + _steps(K4, "greedy", 4, start=10) + _steps(K2, "random", 5, start=20), path)
    return path


def test_load_dataset_filters_by_strategy_and_kernel(traj_file):
    d = load_dataset([traj_file])
    assert len(d) == 7 and set(d.kernels) == {K2, K4}
    assert d.obs.shape == (7, N_OBS) and d.masks.dtype == np.bool_ and d.masks.shape == (7, N_ACT)
    assert list(d.actions) == [0, 1, STOP_INDEX, 0, 1, 2, STOP_INDEX]
    assert d.masks[np.arange(7), d.actions].all()
    assert list(d.obs[:, 0]) == [0, 1, 2, 10, 11, 12, 13]
    r = load_dataset([traj_file], strategies=("random",))
    assert len(r) == 5 and set(r.kernels) == {K2} and r.obs[0, 0] == 20
    assert len(load_dataset([traj_file], strategies=("greedy", "random"))) == 12
    k = load_dataset([traj_file], kernels=[K4])
    assert len(k) == 4 and set(k.kernels) == {K4}
    assert len(load_dataset([traj_file, traj_file], kernels=[K2])) == 6  # several files concatenate
    assert len(load_dataset([traj_file], families=["gemm_tile"])) == 7
    with pytest.raises(ValueError, match="no trajectory steps"):
        load_dataset([traj_file], families=["no_such_family"])
    with pytest.raises(ValueError, match="no trajectory steps"):
        load_dataset([traj_file], kernels=["nope"])


def test_load_dataset_rejects_a_wrong_observation_length(tmp_path):
    path = tmp_path / "old.jsonl"
    write_jsonl(_steps(K2, "greedy", 2, obs_len=N_OBS - 3), path)
    with pytest.raises(ValueError, match=f"{N_OBS - 3} slots"):
        load_dataset([path])
    # a filtered-out strategy is not checked
    with pytest.raises(ValueError, match="no trajectory steps"):
        load_dataset([path], strategies=("beam",))


def test_load_dataset_rejects_masks_of_another_action_list(tmp_path):
    path = tmp_path / "old.jsonl"
    steps = _steps(K2, "greedy", 2)
    for s in steps:
        s.action_mask = s.action_mask + [0]  # recorded with one more action
    write_jsonl(steps, path)
    with pytest.raises(ValueError, match=f"action mask of {N_ACT + 1} slots, this ptxopt has {N_ACT} actions"):
        load_dataset([path])


def test_leave_one_kernel_out_reports_accuracies():
    data = synthetic(n=90)
    calls = []
    r = leave_one_kernel_out(data, epochs=30, rf_trees=10, progress=lambda i, n: calls.append((i, n)))
    assert r["steps"] == 90 and r["kernels"] == 3
    for k in ("mlp_accuracy", "random_forest_accuracy", "majority_accuracy"):
        assert 0.0 <= r[k] <= 1.0
    assert set(r["per_kernel"]) == {"ka", "kb", "kc"}
    assert all(v["steps"] == 30 and 0 <= v["mlp"] <= 1 and 0 <= v["random_forest"] <= 1
               for v in r["per_kernel"].values())
    assert calls == [(1, 3), (2, 3), (3, 3)]
    # the rule is learnable from the other kernels: the forest beats the majority floor
    assert r["random_forest_accuracy"] > r["majority_accuracy"]
    # the pooled accuracy is the step-weighted mean of the per-kernel ones
    assert r["mlp_accuracy"] == pytest.approx(np.mean([v["mlp"] for v in r["per_kernel"].values()]))


def test_masked_argmax_never_picks_a_masked_action():
    rng = np.random.default_rng(7)
    for _ in range(50):
        classes = np.sort(rng.choice(N_ACT, size=rng.integers(1, N_ACT), replace=False))
        proba = rng.random((20, len(classes)))
        masks = random_masks(rng, 20, rng.random())
        pred = _masked_argmax(proba, classes, masks)
        assert masks[np.arange(20), pred].all()
    classes = np.array([0, 1, 5])
    proba = np.array([[0.7, 0.2, 0.1], [0.7, 0.2, 0.1], [0.7, 0.2, 0.1]])
    masks = np.zeros((3, N_ACT), bool)
    masks[0, [0, 1]] = True  # the best class is legal: it wins
    masks[1, [1, 5]] = True  # the best class is masked: the best legal one
    masks[2, [7]] = True  # only a class never seen is legal: still legal
    assert list(_masked_argmax(proba, classes, masks)) == [0, 1, 7]


# -- GRPO -------------------------------------------------------------------------------------------


def test_group_advantages_by_hand():
    # centred: [-1, 0, 1] and [0, 0, 0]; batch mean 0, std sqrt(2/6)
    a, b = group_advantages([[1.0, 2.0, 3.0], [10.0, 10.0, 10.0]])
    s = math.sqrt(2 / 6)
    assert a == pytest.approx([-1 / s, 0, 1 / s]) and b == pytest.approx([0, 0, 0])
    # centred [-1, 0, 2]: mean 1/3, std sqrt(42/27)
    [c] = group_advantages([[1.0, 2.0, 4.0]])
    s = math.sqrt(42 / 27)
    assert c == pytest.approx([(-1 - 1 / 3) / s, (0 - 1 / 3) / s, (2 - 1 / 3) / s])
    # an even group's median is the middle of the two
    [d] = group_advantages([[1.0, 3.0]])
    assert d == pytest.approx([-1.0, 1.0])
    # the median, not the mean, centres a group: [0, 1, 9] -> [-1, 0, 8] (mean 7/3)
    [e] = group_advantages([[0.0, 1.0, 9.0]])
    c = np.array([-1.0, 0.0, 8.0])
    assert e == pytest.approx((c - c.mean()) / c.std())
    # each group is centred on its own median: shifting one group changes nothing
    x = group_advantages([[1.0, 2.0, 4.0], [0.0, 5.0, 6.0]])
    y = group_advantages([[101.0, 102.0, 104.0], [0.0, 5.0, 6.0]])
    assert np.allclose(np.concatenate(x), np.concatenate(y))


def test_group_advantages_equal_returns_are_zero():
    out = group_advantages([[5.0, 5.0], [3.0, 3.0, 3.0]])  # groups differ, but nothing within a group
    assert [list(g) for g in out] == [[0.0, 0.0], [0.0, 0.0, 0.0]]
    assert [list(g) for g in group_advantages([[0.7]])] == [[0.0]]
    assert group_advantages([]) == []


def test_masked_kl():
    rng = np.random.default_rng(8)
    masks = torch.as_tensor(random_masks(rng, 10, 0.5))
    lp = torch.log_softmax(torch.randn(10, N_ACT).masked_fill(~masks, NEG_INF), -1)
    lq = torch.log_softmax(torch.randn(10, N_ACT).masked_fill(~masks, NEG_INF), -1)
    assert torch.allclose(masked_kl(lp, lp, masks), torch.zeros(10), atol=1e-6)
    kl = masked_kl(lp, lq, masks)
    assert kl.shape == (10,) and (kl > 0).all()
    P, Q, M = lp.double().numpy(), lq.double().numpy(), masks.numpy()
    by_hand = [sum(math.exp(P[i, j]) * (P[i, j] - Q[i, j]) for j in range(N_ACT) if M[i, j]) for i in range(10)]
    assert kl.tolist() == pytest.approx(by_hand, rel=1e-4, abs=1e-6)
    # entries of masked actions are ignored, whatever they hold
    junk_p, junk_q = lp.clone(), lq.clone()
    junk_p[~masks] = 3.0
    junk_q[~masks] = -50.0
    assert torch.allclose(masked_kl(junk_p, junk_q, masks), kl)
    assert torch.allclose(masked_kl(junk_p, lp.masked_fill(~masks, 7.0), masks), torch.zeros(10), atol=1e-6)


def _episodes(pol, obs, mask, action, n=3, temperature=1.5):
    with torch.no_grad():
        lp = pol.log_probs(obs[None], mask[None], temperature)[0, action].item()
    return [Episode("k", 100.0, obs=[obs], masks=[mask], actions=[action], logps=[lp], rewards=[0.0])
            for _ in range(n)]


def _prob(pol, obs, mask, a):
    with torch.no_grad():
        return pol.log_probs(obs[None], mask[None])[0, a].exp().item()


@pytest.mark.parametrize("sign", [+1.0, -1.0])
def test_grpo_update_moves_probability_with_the_advantage(sign):
    rng = np.random.default_rng(9)
    obs = rng.normal(size=5)
    mask = np.zeros(N_ACT, bool)
    mask[[0, 3, 6, STOP_INDEX]] = True
    pol = make_policy(obs_dim=5, hidden=16)
    ref = make_policy(obs_dim=5, hidden=16)
    ref.load_state_dict(pol.state_dict())
    cfg = GRPOConfig(lr=1e-2, updates_per_epoch=4)
    opt = torch.optim.Adam(pol.parameters(), lr=cfg.lr)
    before = _prob(pol, obs, mask, 3)
    stats = grpo_update(pol, ref, opt, _episodes(pol, obs, mask, 3), [sign] * 3, cfg)
    after = _prob(pol, obs, mask, 3)
    assert (after > before) if sign > 0 else (after < before)
    assert set(stats) == {"loss", "kl", "entropy", "clip_fraction"}
    assert stats["kl"] > 0 and 0 <= stats["clip_fraction"] <= 1 and stats["entropy"] > 0
    # masked actions stay impossible; the reference is untouched
    with torch.no_grad():
        p = pol.log_probs(obs[None], mask[None])[0].exp().numpy()
        assert np.all(p[~mask] < 1e-12)
        assert torch.equal(ref(obs[None], mask[None]), make_policy(obs_dim=5, hidden=16)(obs[None], mask[None]))


def test_grpo_update_with_zero_advantage_and_no_kl_changes_nothing():
    rng = np.random.default_rng(10)
    obs = rng.normal(size=5)
    mask = np.ones(N_ACT, bool)
    pol = make_policy(obs_dim=5, hidden=16)
    ref = make_policy(obs_dim=5, hidden=16)
    cfg = GRPOConfig(lr=1e-2, kl_beta=0.0, updates_per_epoch=2)
    opt = torch.optim.SGD(pol.parameters(), lr=cfg.lr)
    before = {k: v.clone() for k, v in pol.state_dict().items()}
    grpo_update(pol, ref, opt, _episodes(pol, obs, mask, 4), [0.0] * 3, cfg)
    for k, v in pol.state_dict().items():
        assert torch.equal(v, before[k]), k


GRPO_COLUMNS = ["epoch", "mean_return", "mean_improvement_pct", "best_of_group_improvement_pct",
                "greedy_improvement_pct", "kl", "entropy", "clip_fraction", "loss", "evaluations", "cache_hits",
                "rollout_s", "update_s", "wall_s"]


def test_grpo_trainer_writes_log_curves_and_checkpoints(tmp_path, options):
    pol = make_policy(seed=2)
    pol.train()
    env = PipelineEnv([K2, K4], options=options, max_steps=2)
    cfg = GRPOConfig(epochs=2, group_size=2, max_steps=2, checkpoint_every=1, seed=0)
    lines = []
    trainer = GRPOTrainer(pol, env, [K2, K4], cfg, tmp_path / "run", log=lines.append)
    path = trainer.train(meta={"note": "unit"})
    out = tmp_path / "run"
    assert path == out / "policy.pt"
    with open(out / "grpo_log.csv") as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0]) == GRPO_COLUMNS == GRPOTrainer.FIELDS
    assert [int(r["epoch"]) for r in rows] == [1, 2]
    for r in rows:
        assert float(r["kl"]) >= 0 and float(r["entropy"]) >= 0 and 0 <= float(r["clip_fraction"]) <= 1
        assert int(r["evaluations"]) >= 0 and int(r["cache_hits"]) >= 0
        assert float(r["best_of_group_improvement_pct"]) >= float(r["mean_improvement_pct"]) - 1e-9
        assert r["greedy_improvement_pct"] != ""  # eval_every=1
        assert float(r["wall_s"]) >= float(r["rollout_s"])
    assert len(lines) == 2 and lines[0].startswith("epoch 1/2")
    png = out / "grpo_curves.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    for p in (path, out / "grpo_epoch001.pt", out / "grpo_epoch002.pt"):
        loaded, meta = load_policy(p)
        assert meta["stage"] == "grpo" and meta["note"] == "unit" and meta["kernels"] == [K2, K4]
    assert load_policy(path)[1]["epoch"] == 2 and load_policy(out / "grpo_epoch001.pt")[1]["epoch"] == 1
    assert load_policy(path)[1]["grpo"]["group_size"] == 2
    # the saved policy is the trained one
    obs = np.stack([env.reset(options={"kernel": k})[0] for k in (K2, K4)])
    masks = np.ones((2, N_ACT), bool)
    with torch.no_grad():
        pol.eval()
        assert torch.equal(load_policy(path)[0](obs, masks), pol(obs, masks))
    # rows kept in memory match the file
    assert len(trainer.rows) == 2 and trainer.rows[1]["epoch"] == 2


# -- rollouts and policy search ---------------------------------------------------------------------


def check_steps(steps: list[Step], kernel: str):
    names = ACTIONS
    assert steps
    for s in steps:
        assert isinstance(s, Step)
        assert s.kernel == kernel and s.strategy == "policy"
        assert s.action in names and s.action_mask[s.action_index] == 1 and s.action_mask[STOP_INDEX] == 1
        assert len(s.observation) == N_OBS and len(s.action_mask) == N_ACT
        if s.action == STOP:
            assert s.reward == 0.0 and s.cycles_after == s.cycles_before
        else:
            assert s.reward == pytest.approx(reward(s.cycles_before, s.cycles_after))
        assert s.estimate is True and s.backend == "sim"
    for ep in episodes(steps):
        assert [s.step for s in ep] == list(range(len(ep)))
        assert ep[0].pipeline == ""
        for a, b in zip(ep, ep[1:]):
            assert a.action != STOP
            assert b.pipeline == (f"{a.pipeline},{a.action}" if a.pipeline else a.action)
            assert b.cycles_before == a.cycles_after


def test_rollout_through_the_env(options):
    pol = make_policy(seed=5)
    env = PipelineEnv([K2], options=options, max_steps=3)
    ep = rollout(pol, env, K2, greedy=True)
    assert ep.kernel == K2 and len(ep.actions) == len(ep.obs) == len(ep.masks) == len(ep.logps) == len(ep.rewards)
    assert all(m[a] for m, a in zip(ep.masks, ep.actions))
    assert ep.pipeline == env.pipeline() and ep.cycles == env.cycles
    assert ep.ret == pytest.approx(sum(ep.rewards))
    n_passes = len(ep.pipeline.split(",")) if ep.pipeline else 0
    assert ep.ret == pytest.approx(math.log(ep.baseline / ep.cycles) - 0.005 * n_passes)
    assert ep.improvement_pct == pytest.approx(100 * (1 - ep.cycles / ep.baseline))
    check_steps(ep.steps, K2)
    # greedy decoding is deterministic
    again = rollout(pol, env, K2, greedy=True)
    assert again.actions == ep.actions and again.pipeline == ep.pipeline


def test_policy_search_greedy_decoded(saved_policy, options):
    root = State.root(Candidate.from_corpus(K2))
    meter = Meter(options)
    out = policy_search(root, meter, checkpoint=str(saved_policy), samples=0)
    assert out.baseline.ok and out.best_result.ok
    assert out.best_result.cycles <= out.baseline.cycles
    assert meter.known(out.best) is out.best_result
    check_steps(out.steps, K2)
    assert {s.episode for s in out.steps} == {0}
    assert meter.evaluations >= 1


def test_policy_search_best_of_k(saved_policy, options, tmp_path):
    root = State.root(Candidate.from_corpus(K2))
    meter = Meter(options)
    out = policy_search(root, meter, checkpoint=str(saved_policy), samples=3, max_steps=3, seed=1)
    check_steps(out.steps, K2)
    assert {s.episode for s in out.steps} == {0, 1, 2}
    finals = [ep[-1].cycles_after for ep in episodes(out.steps)]
    assert out.best_result.cycles == min([out.baseline.cycles, *finals])
    assert out.best_result.cycles <= out.baseline.cycles
    assert all(len([s for s in ep if s.action != STOP]) <= 3 for ep in episodes(out.steps))
    # distinct modules only: never more evaluations than rollout steps plus the baseline
    assert 1 <= meter.evaluations <= 1 + sum(1 for s in out.steps if s.action != STOP)
    path = tmp_path / "p.jsonl"
    write_jsonl(out.steps, path)
    assert [s.to_json() for s in read_jsonl(path)] == [s.to_json() for s in out.steps]


def test_best_of_k_stops_when_the_policy_repeats_itself(saved_policy, options):
    """Samples at a near-zero temperature are the greedy rollout again: no point in eight of them."""
    from ptxopt_rl.rollout import REPEATS_BEFORE_STOP

    root = State.root(Candidate.from_corpus(K2))
    out = policy_search(root, Meter(options), checkpoint=str(saved_policy), samples=8, max_steps=3, seed=1,
                        temperature=1e-4)
    assert {s.episode for s in out.steps} == set(range(1 + REPEATS_BEFORE_STOP))
    assert "the policy repeated itself" in out.note


@pytest.mark.parametrize("budget", [1, 2, 4])
def test_policy_search_never_exceeds_the_meter_budget(saved_policy, tmp_path, budget):
    """(A fresh cache per budget: evaluations count modules, cached or not.)"""
    root = State.root(Candidate.from_corpus(K2))
    meter = Meter(EvalOptions(cache=tmp_path / "eval.sqlite"), budget=budget)
    policy_search(root, meter, checkpoint=str(saved_policy), samples=4, seed=2)
    assert 1 <= meter.evaluations <= budget


def test_policy_search_finishes_when_the_budget_runs_out(saved_policy, options):
    root = State.root(Candidate.from_corpus(K2))
    meter = Meter(options, budget=2)
    out = policy_search(root, meter, checkpoint=str(saved_policy), samples=4, seed=2)
    assert meter.evaluations <= 2 and out.best_result.ok
    r = search_kernel(Candidate.from_corpus(K2),
                      SearchConfig("policy", policy=str(saved_policy), samples=4, budget=2, options=options))
    assert r.error is None and r.evaluations <= 2


def test_search_kernel_with_the_policy_strategy(saved_policy, options):
    r = search_kernel(Candidate.from_corpus(K2), SearchConfig("policy", policy=str(saved_policy), options=options),
                      "gemm_tile")
    assert r.error is None and r.strategy == "policy"
    assert r.best_cycles <= r.baseline_cycles and r.evaluations >= 1
    check_steps(r.steps, K2)
    with pytest.raises(ValueError, match="checkpoint"):
        SearchConfig("policy")


def test_env_for_measures_through_the_given_meter(options):
    root = State.root(Candidate.from_corpus(K2))
    meter = Meter(options)
    env = env_for(root, meter, max_steps=2)
    env.reset()
    assert env.state is root and meter.evaluations == 1
    a = int(np.flatnonzero(root.action_mask())[0])
    env.step(a)
    assert meter.evaluations == 2 and meter.known(env.state) is not None


# -- the evaluation protocol's summary --------------------------------------------------------------


def _row(imp, ev):
    return {"pipeline": "", "improvement_pct": imp, "evaluations": ev, "error": None}


def test_protocol_summary_by_hand():
    rows = [{"greedy": _row(10.0, 40), "policy": _row(9.0, 5), "policy@4": _row(12.0, 16),
             "random@policy": _row(6.0, 16), "greedy@policy": _row(8.0, 16)},
            {"greedy": _row(20.0, 60), "policy": _row(18.0, 7), "policy@4": _row(16.0, 14),
             "random@policy": _row(10.0, 14), "greedy@policy": _row(12.0, 14)}]
    s = protocol_summary(rows, 4)
    assert s["greedy"] == {"mean_improvement_pct": 15.0, "median_improvement_pct": 15.0, "mean_evaluations": 50.0}
    assert s["policy@4"]["mean_improvement_pct"] == 14.0 and s["policy@4"]["mean_evaluations"] == 15.0
    t = s["targets"]
    assert t["best_of_k_vs_greedy_improvement"] == pytest.approx(14 / 15)
    assert t["best_of_k_vs_greedy_evaluations"] == pytest.approx(15 / 50)
    assert t["greedy_decoded_vs_greedy_improvement"] == pytest.approx(13.5 / 15)
    assert t["best_of_k_beats_random_at_equal_budget"] is True
    assert "targets" not in protocol_summary([], 4)
