"""What one strategy returns for one kernel (before timing and bookkeeping)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ptxopt.evaluate import EvalResult
from ptxopt.search.actions import STOP

from .state import State
from .stepwise import drive
from .trajectory import Step, make_step


@dataclass
class Outcome:
    """The best state a strategy found (the root when nothing beat it), its
    result, the baseline's result, and the recorded trajectory steps."""

    best: State
    best_result: EvalResult
    baseline: EvalResult
    steps: list[Step] = field(default_factory=list)
    note: str | None = None  # e.g. "budget exhausted"


def start(root: State, meter) -> Outcome:
    """Measure the baseline: the outcome every strategy begins from. When the
    baseline fails, the outcome says so and the strategy returns it as is."""
    return drive(start_steps(root, meter), meter)


def start_steps(root: State, meter):
    """:func:`start` as a stepwise strategy (:mod:`ptxopt.search.stepwise`): ``yield from`` it."""
    base = (yield [root])[0]
    out = Outcome(root, base, base)
    if not base.ok:
        out.note = f"baseline failed: {base.status}"
    return out


def path_steps(root: State, best: State, meter, *, max_steps: int, strategy: str, episode: int = 0) -> list[Step]:
    """Trajectory steps along ``best``'s pipeline from ``root`` (each prefix's
    cycles from the meter's memo; a prefix never measured ends the path)."""
    steps, state = [], root
    res = meter.known(root)
    for i, p in enumerate(best.pipeline):
        nxt = state.child(str(p))  # each pass was appended by an action, which prints as itself
        nres = meter.known(nxt)
        if res is None or not meter.usable(nres):
            return steps
        steps.append(make_step(state, str(p), res.cycles, nres.cycles, kernel=root.kernel.label,
                               strategy=strategy, episode=episode, index=i, options=meter.options))
        state, res = nxt, nres
    if len(best.pipeline) < max_steps:
        steps.append(make_step(state, STOP, res.cycles, res.cycles, kernel=root.kernel.label, strategy=strategy,
                               episode=episode, index=len(steps), options=meter.options))
    return steps
