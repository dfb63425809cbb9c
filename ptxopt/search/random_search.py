"""Random search: random legal rollouts under an evaluation budget.

A rollout starts at the unoptimised kernel and, at each step, picks
uniformly among the legal passes and ``stop`` (``stop`` only after the
first pass), measuring every state it reaches -- exactly what a sampled
policy rollout costs, so the two compare at equal budgets. Rollouts repeat
until the budget is spent (or, without a budget, ``rollouts`` times). Each
rollout is a recorded episode. The generator is seeded from ``seed`` and the
kernel's name, so a search is reproducible and a resumed one walks the same
rollouts (from the cache).
"""

from __future__ import annotations

import hashlib

import numpy as np

from ptxopt.search.actions import STOP

from ptxopt.search.meter import BudgetExhausted, Meter
from .outcome import Outcome, start_steps
from .state import State
from .stepwise import Steps, drive
from .trajectory import make_step

#: Consecutive rollouts that reach only measured modules before giving up
#: (the reachable space is exhausted, or nearly).
MAX_STALE_ROLLOUTS = 64


def kernel_rng(seed: int, kernel: str) -> np.random.Generator:
    digest = hashlib.sha256(f"{seed}:{kernel}".encode()).digest()
    return np.random.default_rng(int.from_bytes(digest[:8], "little"))


def random_search(root: State, meter: Meter, *, max_steps: int = 6, seed: int = 0, rollouts: int = 16,
                  strategy: str = "random", **_) -> Outcome:
    return drive(random_steps(root, meter, max_steps=max_steps, seed=seed, rollouts=rollouts, strategy=strategy),
                 meter)


def random_steps(root: State, meter: Meter, *, max_steps: int = 6, seed: int = 0, rollouts: int = 16,
                 strategy: str = "random", **_) -> Steps:
    """:func:`random_search` as a stepwise strategy (:mod:`ptxopt.search.stepwise`)."""
    out = yield from start_steps(root, meter)
    if not out.baseline.ok:
        return out
    rng = kernel_rng(seed, root.kernel.label)
    episode, stale = 0, 0
    while stale < MAX_STALE_ROLLOUTS and (meter.budget is not None or episode < rollouts):
        before, steps = meter.evaluations, []
        try:
            yield from _rollout(root, out.baseline, meter, rng, max_steps, episode, strategy, out, steps)
        except BudgetExhausted:
            out.note = "budget exhausted"
            break
        finally:
            out.steps.extend(steps)  # a rollout cut short by the budget keeps the steps it paid for
        episode += 1
        stale = stale + 1 if meter.evaluations == before else 0
        if meter.remaining == 0:
            out.note = "budget exhausted"
            break
    return out


def _rollout(root, base, meter, rng, max_steps, episode, strategy, out, steps: list) -> Steps:
    state, res = root, base
    for i in range(max_steps):
        moves = state.legal_moves()
        choices = [m.action for m in moves] + ([STOP] if i > 0 else [])
        if not choices:
            break
        action = choices[int(rng.integers(len(choices)))]
        kw = dict(kernel=root.kernel.label, strategy=strategy, episode=episode, index=i, options=meter.options)
        if action == STOP:
            steps.append(make_step(state, STOP, res.cycles, res.cycles, **kw))
            break
        child = state.child(action)
        r = (yield [child])[0]
        if not meter.usable(r):
            break  # a failing or unchecked candidate ends the rollout (counted by the meter)
        steps.append(make_step(state, action, res.cycles, r.cycles, **kw))
        if meter.better(r, out.best_result):
            out.best, out.best_result = child, r
        state, res = child, r
