"""A Gymnasium environment whose actions are passes and whose reward is speed.

Observation: :meth:`ptxopt.search.State.observation` -- the current
module's kernel features, which pass families are active, and the step
count (names: :func:`ptxopt.search.observation_names`). Actions:
``Discrete(N_ACTIONS)`` in the order of :data:`ptxopt.search.actions.ACTIONS`,
the pass actions then ``stop``;
``info["action_mask"]`` marks the legal ones (the pass API's mask: no
conflict, legal, changes the module). Reward per pass:
``log(cycles_before / cycles_after) - 0.005`` from the evaluator (cached;
any backend); ``stop`` ends the episode with reward 0; an episode also ends
after ``max_steps`` passes.

A masked action raises ``ValueError`` (illegal actions are masked, never
rewarded). A legal pass whose candidate then fails in the evaluator (ptxas
error, mismatch, timeout) leaves the state unchanged, costs the step,
earns reward 0, and is masked from then on in that state;
``info["failed"]`` names the failure. A candidate that is ``ok`` but whose
equivalence with the original was not established (verdict
``inconclusive``) is treated the same way (``info["failed"]`` is
``"unchecked: inconclusive"``: no reward, no GRPO credit) unless the
options say ``allow_unchecked``.

Episodes convert to and from pipeline strings (:meth:`PipelineEnv.pipeline`,
:meth:`PipelineEnv.replay`), so any result replays with ``ptxopt run``.
"""

from __future__ import annotations

from typing import Sequence

import gymnasium as gym
import numpy as np

from ptxopt.evaluate import Candidate
from ptxopt.passes.pipeline import Pipeline
from ptxopt.search import EvalOptions, Meter, State, observation_names, reward
from ptxopt.search.actions import ACTIONS, N_ACTIONS, STOP, STOP_INDEX, action_index
from ptxopt.evaluate.move_memo import memo_beside


def as_kernel(k) -> Candidate:
    """A corpus id (``corpus:`` optional), KernelSpec or Candidate."""
    if isinstance(k, Candidate):
        return k
    if isinstance(k, str):
        return Candidate.from_corpus(k.removeprefix("corpus:"))
    return Candidate.from_corpus(k)


class PipelineEnv(gym.Env):
    metadata = {"render_modes": ["ansi"]}

    def __init__(self, kernels: Sequence, *, options: EvalOptions | None = None, max_steps: int = 6,
                 render_mode: str | None = None):
        if not kernels:
            raise ValueError("PipelineEnv needs at least one kernel")
        self.kernels = [as_kernel(k) for k in kernels]
        self.options = options or EvalOptions()
        self.max_steps = max_steps
        self.render_mode = render_mode
        n_obs = len(observation_names())
        self.observation_space = gym.spaces.Box(-np.inf, np.inf, shape=(n_obs,), dtype=np.float64)
        self.action_space = gym.spaces.Discrete(N_ACTIONS)
        self._memo = None
        self._roots: dict[str, State] = {}  # kernel label -> root (its explored subtree is kept)
        self._meters: dict[str, Meter] = {}  # kernel label -> evaluations (memo by module text)
        self.state: State | None = None
        self.cycles: float | None = None
        self.baseline: float | None = None
        self._failed: dict[str, set[int]] = {}  # state digest -> actions that failed in the evaluator
        self._done = True

    # -- kernels and measurement -------------------------------------------------
    def meter(self, kernel: Candidate) -> Meter:
        m = self._meters.get(kernel.label)
        if m is None:
            m = self._meters[kernel.label] = Meter(self.options)
        return m

    def root(self, kernel: Candidate) -> State:
        r = self._roots.get(kernel.label)
        if r is None:
            if self._memo is None:  # which passes change which modules, beside the evaluation cache
                self._memo = memo_beside(self.options.cache)
            r = self._roots[kernel.label] = State.root(kernel, memo=self._memo)
        return r

    def _pick(self, kernel) -> Candidate:
        if kernel is None:
            return self.kernels[int(self.np_random.integers(len(self.kernels)))]
        if isinstance(kernel, (int, np.integer)):
            return self.kernels[int(kernel)]
        if isinstance(kernel, str):
            for k in self.kernels:
                if k.label == kernel.removeprefix("corpus:"):
                    return k
        return as_kernel(kernel)

    # -- gymnasium API -----------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict | None = None):
        """``options={"kernel": id | index | Candidate}`` picks the kernel (default: random)."""
        super().reset(seed=seed)
        kernel = self._pick((options or {}).get("kernel"))
        self.state = self.root(kernel)
        r = self.meter(kernel).measure([self.state])[0]
        if r is None or not r.ok:
            raise RuntimeError(f"{kernel.label}: the unoptimised kernel fails to evaluate: "
                               f"{r.status if r else 'budget'}: {r.error if r else ''}")
        self.cycles = self.baseline = r.cycles
        self.steps, self._done = 0, False
        return self.state.observation(), self._info()

    def action_mask(self) -> np.ndarray:
        mask = self.state.action_mask()
        for a in self._failed.get(self.state.digest, ()):
            mask[a] = False
        return mask

    def _info(self, **extra) -> dict:
        meter = self.meter(self.state.kernel)
        return {"action_mask": self.action_mask(), "kernel": self.state.kernel.label,
                "pipeline": str(self.state.pipeline), "cycles": self.cycles, "baseline_cycles": self.baseline,
                "evaluations": meter.evaluations, "cache_hits": meter.cache_hits, **extra}

    def step(self, action):
        if self._done:
            raise RuntimeError("step() after the episode ended: call reset()")
        a = int(action)
        if not 0 <= a < N_ACTIONS:
            raise ValueError(f"action {a} outside Discrete({N_ACTIONS})")
        if not self.action_mask()[a]:
            raise ValueError(f"action {ACTIONS[a]!r} is masked in this state")
        if a == STOP_INDEX:
            self._done = True
            return self.state.observation(), 0.0, True, False, self._info()
        child = self.state.child(ACTIONS[a])
        meter = self.meter(self.state.kernel)
        r = meter.measure([child])[0]
        self.steps += 1
        truncated = self.steps >= self.max_steps
        if not meter.usable(r):
            self._failed.setdefault(self.state.digest, set()).add(a)
            self._done = truncated
            why = "budget" if r is None else r.status if not r.ok else f"unchecked: {r.equivalence}"
            return self.state.observation(), 0.0, False, truncated, self._info(failed=why)
        rew = reward(self.cycles, r.cycles)
        self.state, self.cycles = child, r.cycles
        self._done = truncated
        return self.state.observation(), rew, False, truncated, self._info()

    def render(self):
        if self.render_mode == "ansi":
            return f"{self.state.kernel.label} [{self.state.pipeline}] {self.cycles:.0f} cycles (estimate)"
        return None

    # -- pipelines ----------------------------------------------------------------
    def pipeline(self) -> str:
        """The current episode's pipeline (canonical string, replayable with ``ptxopt run``)."""
        return str(self.state.pipeline)

    def replay(self, pipeline: str, kernel=None) -> tuple[float, list[float]]:
        """Reset to ``kernel`` and take ``pipeline``'s passes; returns (total reward, rewards)."""
        self.reset(options={"kernel": kernel} if kernel is not None else None)
        rewards = []
        for p in Pipeline.parse(pipeline):
            _, r, term, trunc, info = self.step(action_index(str(p)))
            rewards.append(r)
            if info.get("failed") or term or trunc:
                break
        return sum(rewards), rewards


def actions_to_pipeline(actions: Sequence[int]) -> str:
    """Action indices to a pipeline string (``stop`` ends it)."""
    names = []
    for a in actions:
        if ACTIONS[a] == STOP:
            break
        names.append(ACTIONS[a])
    return ",".join(names)


def pipeline_to_actions(pipeline: str) -> list[int]:
    """A pipeline string to action indices, ``stop`` appended."""
    return [*(action_index(str(p)) for p in Pipeline.parse(pipeline)), STOP_INDEX]


def env_for(root: State, meter: Meter, *, max_steps: int = 6) -> PipelineEnv:
    """A one-kernel environment that measures through an existing ``meter``
    (so a search's budget and memo apply to the policy's rollouts)."""
    env = PipelineEnv([root.kernel], options=meter.options, max_steps=max_steps)
    env._roots[root.kernel.label] = root
    env._meters[root.kernel.label] = meter
    return env
