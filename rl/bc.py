"""Behaviour cloning: imitate greedy search's choices from its trajectories.

Data: the JSON Lines :mod:`ptxopt.search.trajectory` records
(``ptxopt search --strategy greedy --record F``); one sample per step: the
observation, the action mask, and the action greedy took (``stop`` when no
pass lowered cycles). Loss: cross-entropy over the *masked* logits, so the
model never spends probability on illegal actions and is never rewarded for
ruling them out.

Evaluation: leave-one-kernel-out -- for each kernel, train on every other
kernel's steps and predict this kernel's -- for the MLP and for a
scikit-learn random forest on the same features (its probabilities masked
the same way), plus the majority legal action as a floor.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np
import torch

from ptxopt.search import N_ACTIONS, observation_names, read_jsonl

from .policy import Policy, PolicyConfig


@dataclass
class Dataset:
    obs: np.ndarray  # (n, obs_dim)
    masks: np.ndarray  # (n, N_ACTIONS) bool
    actions: np.ndarray  # (n,) int
    kernels: np.ndarray  # (n,) str
    values: np.ndarray | None = None  # (n, N_ACTIONS): each measured action's step reward (nan: not measured)

    def __len__(self) -> int:
        return len(self.actions)

    def subset(self, idx) -> "Dataset":
        return Dataset(self.obs[idx], self.masks[idx], self.actions[idx], self.kernels[idx],
                       None if self.values is None else self.values[idx])


def step_values(step) -> np.ndarray:
    """The reward each measured action would have earned from this state
    (``stop``: 0; unmeasured or failed: nan) -- what greedy chose among."""
    from ptxopt.search import N_ACTIONS, STOP, STOP_INDEX, reward
    from ptxopt.search.actions import action_index

    v = np.full(N_ACTIONS, np.nan)
    v[STOP_INDEX] = 0.0
    for name, cycles in step.candidates.items():
        if cycles:
            v[action_index(name)] = reward(step.cycles_before, cycles)
    if step.action != STOP:  # the action taken is always known, candidates or not
        v[step.action_index] = step.reward
    return v


def soft_targets(data: Dataset, temperature: float) -> np.ndarray:
    """Target distributions ``softmax(value / temperature)`` over the measured
    legal actions: near-ties share the probability instead of one of them
    taking it all (temperature -> 0 gives greedy's own choice back)."""
    v = np.where(data.masks & ~np.isnan(data.values), data.values, -np.inf)
    z = v / temperature
    z -= z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


def family_of(kernel: str) -> str | None:
    from ptxopt.kernels.corpus import CorpusError, get

    try:
        return get(kernel).family
    except CorpusError:
        return None


def load_dataset(paths: Iterable[str | Path], *, strategies: Sequence[str] = ("greedy",),
                 families: Sequence[str] | None = None, kernels: Sequence[str] | None = None) -> Dataset:
    """Steps of ``strategies`` from trajectory files, optionally only some families/kernels."""
    n_obs = len(observation_names())
    paths = list(paths)
    rows = []
    fam_cache: dict[str, str | None] = {}
    for p in paths:
        for s in read_jsonl(p):
            if s.strategy not in strategies:
                continue
            if kernels is not None and s.kernel not in kernels:
                continue
            if families is not None:
                fam = fam_cache.setdefault(s.kernel, family_of(s.kernel))
                if fam not in families:
                    continue
            if len(s.observation) != n_obs:
                raise ValueError(f"{p}: observation of {len(s.observation)} slots, this ptxopt has {n_obs}; "
                                 "re-record the trajectories")
            if len(s.action_mask) != N_ACTIONS:  # recorded for another action list
                raise ValueError(f"{p}: action mask of {len(s.action_mask)} slots, this ptxopt has "
                                 f"{N_ACTIONS} actions; re-record the trajectories")
            rows.append(s)
    if not rows:
        where = ", ".join("<stdin>" if str(p) == "-" else str(p) for p in paths)
        only = "".join(f" of {what} {', '.join(sel)}" for what, sel in (("families", families), ("kernels", kernels))
                       if sel is not None)
        raise ValueError(f"{where}: no trajectory steps of strategy {', '.join(strategies)}{only}")
    return Dataset(np.array([s.observation for s in rows], dtype=np.float64),
                   np.array([s.action_mask for s in rows], dtype=bool),
                   np.array([s.action_index for s in rows], dtype=np.int64),
                   np.array([s.kernel for s in rows]),
                   np.array([step_values(s) for s in rows], dtype=np.float64))


def train_bc(data: Dataset, *, epochs: int = 300, lr: float = 3e-3, weight_decay: float = 1e-4,
             hidden: int = 128, seed: int = 0, policy: Policy | None = None, label_temperature: float = 0.0) -> Policy:
    """Full-batch Adam on the masked cross-entropy (the datasets are small).

    ``label_temperature`` 0: the targets are greedy's choices. Above 0: soft
    targets from the rewards greedy measured for every legal action
    (:func:`soft_targets`), so the policy also learns which alternatives
    are nearly as good -- what best-of-K sampling needs."""
    torch.manual_seed(seed)
    policy = policy or Policy(PolicyConfig(obs_dim=data.obs.shape[1], hidden=hidden))
    opt = torch.optim.Adam(policy.parameters(), lr=lr, weight_decay=weight_decay)
    y = torch.as_tensor(data.actions)
    if label_temperature > 0:
        if data.values is None:
            raise ValueError("soft labels need the measured candidates of each step")
        y = torch.as_tensor(soft_targets(data, label_temperature), dtype=torch.float32)
    policy.train()
    for _ in range(epochs):
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(policy(data.obs, data.masks), y)
        loss.backward()
        opt.step()
    policy.eval()
    return policy


@torch.no_grad()
def predict(policy: Policy, data: Dataset) -> np.ndarray:
    policy.eval()
    return policy(data.obs, data.masks).argmax(dim=-1).numpy()


def accuracy(policy: Policy, data: Dataset) -> float:
    return float((predict(policy, data) == data.actions).mean())


def _masked_argmax(proba: np.ndarray, classes: np.ndarray, masks: np.ndarray) -> np.ndarray:
    full = np.full(masks.shape, -1.0)
    full[:, classes] = proba
    full[~masks] = -2.0  # below any probability and below "class never seen" (-1)
    return full.argmax(axis=1)


def leave_one_kernel_out(data: Dataset, *, epochs: int = 300, seed: int = 0, rf_trees: int = 200,
                         progress=None) -> dict:
    """Accuracy of the MLP, a random forest and the majority action, each
    predicting every kernel's steps from a model trained on the others."""
    from sklearn.ensemble import RandomForestClassifier

    from .policy import scale

    kernels = sorted(set(data.kernels))
    hits = {"mlp": 0, "random_forest": 0, "majority": 0}
    per_kernel = {}
    for i, k in enumerate(kernels):
        test_i = data.kernels == k
        train, test = data.subset(~test_i), data.subset(test_i)
        pol = train_bc(train, epochs=epochs, seed=seed)
        mlp = predict(pol, test)
        rf = RandomForestClassifier(n_estimators=rf_trees, random_state=seed, n_jobs=1)
        rf.fit(scale(train.obs).numpy(), train.actions)
        rfp = _masked_argmax(rf.predict_proba(scale(test.obs).numpy()), rf.classes_, test.masks)
        counts = np.bincount(train.actions, minlength=data.masks.shape[1]).astype(float)
        maj = _masked_argmax(np.tile(counts, (len(test), 1)), np.arange(len(counts)), test.masks)
        for name, pred in (("mlp", mlp), ("random_forest", rfp), ("majority", maj)):
            hits[name] += int((pred == test.actions).sum())
        per_kernel[k] = {"steps": len(test), "mlp": float((mlp == test.actions).mean()),
                         "random_forest": float((rfp == test.actions).mean())}
        if progress:
            progress(i + 1, len(kernels))
    n = len(data)
    return {"steps": n, "kernels": len(kernels), **{f"{k}_accuracy": v / n for k, v in hits.items()},
            "per_kernel": per_kernel}
