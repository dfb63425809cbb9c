"""Beam search: keep the ``width`` best pipelines of each length.

Depth by depth, every legal child of every beam member is measured (modules
already measured -- another order of the same passes that prints the same
text -- are not measured twice), and the ``width`` fastest distinct
children form the next beam. The best state seen at any depth wins. Stops at
``max_steps``, when the beam is empty, or when the budget is spent.

The trajectory recorded is the path to the best state (every prefix of a
beam member was measured, so each step has its cycles).
"""

from __future__ import annotations

from ptxopt.search.meter import BudgetExhausted, Meter
from .outcome import Outcome, path_steps, start_steps
from .state import State, new_children
from .stepwise import Steps, drive


def beam(root: State, meter: Meter, *, max_steps: int = 6, width: int = 4, episode: int = 0,
         strategy: str = "beam", **_) -> Outcome:
    return drive(beam_steps(root, meter, max_steps=max_steps, width=width, episode=episode, strategy=strategy),
                 meter)


def beam_steps(root: State, meter: Meter, *, max_steps: int = 6, width: int = 4, episode: int = 0,
               strategy: str = "beam", **_) -> Steps:
    out = yield from start_steps(root, meter)
    if not out.baseline.ok:
        return out
    frontier, expanded = [root], {root.digest}
    for _depth in range(max_steps):
        children = new_children(frontier, expanded)
        if not children:
            break
        try:
            results = yield children
        except BudgetExhausted:
            out.note = "budget exhausted"
            break
        scored = [(r.cycles, i, c, r) for i, (c, r) in enumerate(zip(children, results))
                  if meter.usable(r)]  # failures and unchecked candidates leave the beam
        scored.sort(key=lambda t: (t[0], t[1]))
        frontier = [c for _, _, c, _ in scored[:width]]
        expanded.update(c.digest for c in frontier)
        for _, _, c, r in scored[:1]:
            if meter.better(r, out.best_result):
                out.best, out.best_result = c, r
        if meter.remaining == 0:
            out.note = "budget exhausted"
            break
    out.steps = path_steps(root, out.best, meter, max_steps=max_steps, strategy=strategy, episode=episode)
    return out
