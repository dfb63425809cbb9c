"""Greedy search: at each step measure every legal pass, keep the best if it
lowers cycles, stop when none does or after ``max_steps``.

The trajectory is the path taken: one step per pass kept, then ``stop``,
each with the cycles of every candidate measured from that state (the
behaviour-cloning dataset is these trajectories).

:func:`greedy_steps` is the strategy as a generator (see
:mod:`ptxopt.search.stepwise`): ``search_many`` advances several kernels'
greedy searches in lockstep with it, one evaluation per step for all of them.
"""

from __future__ import annotations

from ptxopt.search.actions import STOP

from ptxopt.search.meter import BudgetExhausted, Meter
from .outcome import Outcome, start_steps
from .state import State
from .stepwise import Steps, drive
from .trajectory import make_step


def greedy(root: State, meter: Meter, *, max_steps: int = 6, episode: int = 0, strategy: str = "greedy",
           **_) -> Outcome:
    return drive(greedy_steps(root, meter, max_steps=max_steps, episode=episode, strategy=strategy), meter)


def greedy_steps(root: State, meter: Meter, *, max_steps: int = 6, episode: int = 0, strategy: str = "greedy",
                 **_) -> Steps:
    out = yield from start_steps(root, meter)
    if not out.baseline.ok:
        return out
    state, result = root, out.baseline
    for i in range(max_steps):  # after max_steps passes the episode ends without a stop step
        moves = state.legal_moves()
        try:
            results = yield [m.child for m in moves]
        except BudgetExhausted:
            out.note, moves, results = "budget exhausted", [], []
        candidates = {m.action: (r.cycles if meter.usable(r) else None) for m, r in zip(moves, results)}
        best_i = None
        for j, r in enumerate(results):
            if meter.better(r, result) and (best_i is None or meter.better(r, results[best_i])):
                best_i = j
        kw = dict(kernel=root.kernel.label, strategy=strategy, episode=episode, index=i,
                  candidates=candidates, options=meter.options, result=result, measured=list(zip(moves, results)))
        if best_i is None:
            out.steps.append(make_step(state, STOP, result.cycles, result.cycles, **kw))
            break
        out.steps.append(make_step(state, moves[best_i].action, result.cycles, results[best_i].cycles, **kw))
        state, result = moves[best_i].child, results[best_i]
    out.best, out.best_result = state, result
    return out
