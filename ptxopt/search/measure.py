"""The strategies' one door to the evaluator, for one kernel.

:class:`Meter` counts what a strategy spends so that strategies can be
compared at equal budgets: an *evaluation* is one distinct module the
strategy asked to have measured (the baseline included). Asking again for a
module already measured in this search -- by another pipeline that prints
the same text, or the same one twice -- is free and not counted; whether
the evaluator then computed the result or read it from its SQLite cache is
counted separately (``cache_hits``), so a resumed search spends the same
number of evaluations as the interrupted one, only faster.

Failed candidates (ptxas error, mismatch, timeout, ...) count as
evaluations, are recorded by category and are otherwise ignored: nothing a
candidate does raises out of :meth:`Meter.measure`.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Sequence

from ptxopt.evaluate import EvalResult, evaluate_many

from .state import State


@dataclass
class EvalOptions:
    """How candidates are measured (passed through to :func:`evaluate_many`)."""

    arch: str = "sm_89"
    backend: str = "sim"
    cache: object = "default"  # a path, "default", or None
    trials: int | None = None
    timeout: float = 600.0

    @property
    def estimate(self) -> bool:
        """Cycles are the backend's estimate (sim), not a measurement (gpu)."""
        from ptxopt.evaluate.core import is_estimate

        return is_estimate(self.backend)

    def kwargs(self) -> dict:
        return dict(arch=self.arch, backend=self.backend, cache=self.cache, trials=self.trials,
                    timeout=self.timeout)


class BudgetExhausted(Exception):
    """The strategy's evaluation budget is spent (strategies catch it and finish)."""


@dataclass
class Meter:
    """Measures states of one kernel, memoised by printed text, within a budget."""

    options: EvalOptions
    budget: int | None = None
    evaluations: int = 0
    cache_hits: int = 0
    failures: Counter = field(default_factory=Counter)
    seen: dict = field(default_factory=dict)  # state digest -> EvalResult

    @property
    def remaining(self) -> int | None:
        return None if self.budget is None else max(0, self.budget - self.evaluations)

    def known(self, state: State) -> EvalResult | None:
        return self.seen.get(state.digest)

    def measure(self, states: Sequence[State]) -> list[EvalResult | None]:
        """Results for ``states``, in order. When the budget cannot pay for
        every new module, the first ones are measured and the rest get None;
        when it is already spent, :class:`BudgetExhausted` is raised."""
        todo: dict[str, State] = {}
        for s in states:
            if s.digest not in self.seen:
                todo.setdefault(s.digest, s)
        new = list(todo.values())
        if new and self.remaining is not None:
            if self.remaining == 0:
                raise BudgetExhausted()
            new = new[: self.remaining]
        if new:
            results = evaluate_many([s.candidate() for s in new], workers=0, **self.options.kwargs())
            for s, r in zip(new, results):
                self.evaluations += 1
                self.cache_hits += bool(r.cache_hit)
                if not r.ok:
                    self.failures[r.status] += 1
                self.seen[s.digest] = r
        return [self.seen.get(s.digest) for s in states]

    def cycles(self, state: State) -> float | None:
        """The cycles of one state (measuring it if needed); None when it failed."""
        r = self.measure([state])[0]
        return r.cycles if r is not None and r.ok else None


def better(a: EvalResult | None, b: EvalResult | None) -> bool:
    """Is ``a`` a strictly better ok result than ``b`` (fewer cycles)?"""
    if a is None or not a.ok or a.cycles is None:
        return False
    if b is None or not b.ok or b.cycles is None:
        return True
    return a.cycles < b.cycles
