"""Policy rollouts through the environment: for GRPO and for ``ptxopt search --policy``.

An :class:`Episode` keeps what GRPO needs (observations, masks, actions,
log-probabilities under the sampling policy, rewards) and what a search
reports (the pipeline, cycles, trajectory steps).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from ptxopt.search import ACTIONS, BudgetExhausted, Meter, State
from ptxopt.search.outcome import Outcome, start
from ptxopt.search.trajectory import Step, make_step

from .env import PipelineEnv, env_for
from .policy import Policy

#: Sampling temperatures (BRIEF section 5): exploring (GRPO) and exploiting (search).
EXPLORE_T, EXPLOIT_T = 1.5, 0.5


@dataclass
class Episode:
    kernel: str
    baseline: float
    cycles: float = 0.0
    pipeline: str = ""
    obs: list = field(default_factory=list)
    masks: list = field(default_factory=list)
    actions: list = field(default_factory=list)
    logps: list = field(default_factory=list)
    rewards: list = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)
    state: State | None = None
    budget_exhausted: bool = False  # the meter's budget ended the rollout early

    @property
    def ret(self) -> float:
        return float(sum(self.rewards))

    @property
    def improvement_pct(self) -> float:
        return 100.0 * (1.0 - self.cycles / self.baseline)


def rollout(policy: Policy, env: PipelineEnv, kernel, *, temperature: float = EXPLORE_T, greedy: bool = False,
            generator: torch.Generator | None = None, episode: int = 0, strategy: str = "policy") -> Episode:
    obs, info = env.reset(options={"kernel": kernel})
    ep = Episode(info["kernel"], info["baseline_cycles"], info["cycles"], state=env.state)
    done = False
    while not done:
        mask = info["action_mask"]
        a, lp = policy.act(obs, mask, temperature=temperature, greedy=greedy, generator=generator)
        before_state, before = env.state, env.cycles
        try:
            obs2, r, term, trunc, info = env.step(a)
        except BudgetExhausted:  # the rollout keeps what it measured so far
            ep.budget_exhausted = True
            break
        ep.obs.append(obs), ep.masks.append(mask), ep.actions.append(a), ep.logps.append(lp), ep.rewards.append(r)
        if not info.get("failed"):
            ep.steps.append(make_step(before_state, ACTIONS[a], before, env.cycles, kernel=ep.kernel,
                                      strategy=strategy, episode=episode, index=len(ep.steps),
                                      options=env.options))
        obs, done = obs2, term or trunc
    ep.cycles, ep.pipeline, ep.state = env.cycles, env.pipeline(), env.state
    return ep


#: best-of-K sampling ends once this many rollouts in a row only repeat pipelines already seen:
#: a policy that is sure of itself (one that stops at once with p >= 0.9) has nothing more to offer
REPEATS_BEFORE_STOP = 3


def policy_search(root: State, meter: Meter, *, checkpoint: str, samples: int = 0, max_steps: int = 6,
                  seed: int = 0, temperature: float = EXPLOIT_T, **_) -> Outcome:
    """``samples=0``: one greedy-decoded rollout; ``K``: the best of K
    rollouts -- the greedy-decoded one, then K-1 sampled at ``temperature``
    (default: the exploiting one, 0.5), so best-of-K is never worse than
    greedy decoding and the samples spend their budget on alternatives. Every pipeline is
    measured (and verified) by the evaluator through ``meter``."""
    from ptxopt.search.random_search import kernel_rng

    from .checkpoint import load_policy

    policy, _meta = load_policy(checkpoint)
    out = start(root, meter)
    if not out.baseline.ok:
        return out
    env = env_for(root, meter, max_steps=max_steps)
    gen = torch.Generator().manual_seed(int(kernel_rng(seed, root.kernel.label).integers(2**62)))
    seen, repeats = set(), 0
    for i in range(max(1, samples)):
        ep = rollout(policy, env, root.kernel.label, temperature=temperature, greedy=i == 0, generator=gen,
                     episode=i)
        if ep.budget_exhausted:
            out.note = "budget exhausted"
        out.steps.extend(ep.steps)
        r = meter.known(ep.state)
        if meter.better(r, out.best_result):
            out.best, out.best_result = ep.state, r
        if out.note:
            break
        key = str(ep.state.pipeline)
        repeats = repeats + 1 if key in seen else 0
        seen.add(key)
        if repeats >= REPEATS_BEFORE_STOP and i + 1 < samples:
            out.note = (f"sampling stopped after {i + 1} of {samples} rollouts: the policy repeated "
                        f"itself {repeats} times in a row (pipelines seen: {len(seen)})")
            break
    return out


def batch_tensors(episodes: list[Episode]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Stack every step of ``episodes``: (obs, masks, actions, old log-probs)."""
    obs = np.array([o for e in episodes for o in e.obs], dtype=np.float64)
    masks = np.array([m for e in episodes for m in e.masks], dtype=bool)
    acts = np.array([a for e in episodes for a in e.actions], dtype=np.int64)
    logps = np.array([lp for e in episodes for lp in e.logps], dtype=np.float64)
    return obs, masks, acts, logps


__all__ = ["Episode", "rollout", "policy_search", "batch_tensors", "EXPLORE_T", "EXPLOIT_T"]
