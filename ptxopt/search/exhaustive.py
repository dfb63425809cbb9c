"""Exhaustive search: every distinct module reachable with up to ``max_steps``
passes, measured -- the oracle for small kernels.

States are enumerated breadth first and de-duplicated by printed text (the
passes commute often, so the distinct modules are far fewer than the
pipelines). ``budget`` caps the measurements; the outcome says when it cut
the enumeration short, in which case the result is no longer an oracle.
"""

from __future__ import annotations

from ptxopt.search.meter import BudgetExhausted, Meter
from .outcome import Outcome, path_steps, start_steps
from .state import State, new_children
from .stepwise import Steps, drive


def exhaustive(root: State, meter: Meter, *, max_steps: int = 3, episode: int = 0, strategy: str = "exhaustive",
               **_) -> Outcome:
    return drive(exhaustive_steps(root, meter, max_steps=max_steps, episode=episode, strategy=strategy), meter)


def exhaustive_steps(root: State, meter: Meter, *, max_steps: int = 3, episode: int = 0,
                     strategy: str = "exhaustive", **_) -> Steps:
    out = yield from start_steps(root, meter)
    if not out.baseline.ok:
        return out
    level, visited = [root], {root.digest}
    for _depth in range(max_steps):
        nxt = new_children(level, visited)
        visited.update(s.digest for s in nxt)
        if not nxt:
            break
        try:
            results = yield nxt
        except BudgetExhausted:
            out.note = "budget exhausted: not an oracle"
            break
        level = [s for s, r in zip(nxt, results) if meter.usable(r)]  # failures, unchecked: not expanded
        for s, r in zip(nxt, results):
            if meter.better(r, out.best_result):
                out.best, out.best_result = s, r
        if any(r is None for r in results):
            out.note = "budget exhausted: not an oracle"
            break
    out.steps = path_steps(root, out.best, meter, max_steps=max_steps, strategy=strategy, episode=episode)
    return out
