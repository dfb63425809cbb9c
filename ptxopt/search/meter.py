"""The strategies' one door to the evaluator, for one kernel.

:class:`Meter` counts what a strategy spends so that strategies can be
compared at equal budgets: an *evaluation* is one distinct module the
strategy asked to have measured (the baseline included). Asking again for a
module already measured in this search -- by another pipeline that prints
the same text, or the same one twice -- is free and not counted; whether
the evaluator then computed the result or read it from its SQLite cache is
counted separately (``cache_hits``), so a resumed search spends the same
number of evaluations as the interrupted one, only faster.

Failed candidates (ptxas error, mismatch, timeout, truncated, ...) count as
evaluations, are recorded by category and are otherwise ignored: nothing a
candidate does raises out of :meth:`Meter.measure`.

Unchecked candidates: a candidate that is ``ok`` but whose equivalence with
the original was not established (verdict ``inconclusive``: the original
cannot be interpreted under the launch, the interpreter lacks an
instruction, ...) is counted in :attr:`Meter.unchecked` with its reason and
is not *usable* (:meth:`Meter.usable`): no strategy keeps it as a step or
reports it as its best, and the RL environment gives it no reward -- unless
``EvalOptions.allow_unchecked`` (``--allow-unchecked``) says otherwise. The
unoptimised kernel (the root state) is ``identical`` by definition.
"""

from __future__ import annotations

from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Callable, Iterator, Sequence

from ptxopt.equivalence.verdict import Verdict
from ptxopt.evaluate import EvalResult, EvaluationSession, evaluate_many

from ptxopt.search.state import State


@dataclass
class EvalOptions:
    """How candidates are measured (passed through to :func:`evaluate_many`)."""

    arch: str | None = None  # None: each kernel's own .target (else DEFAULT_ARCH)
    backend: str = "sim"
    cache: object = "default"  # a path, "default", or None
    trials: int | None = None
    timeout: float = 600.0
    allow_unchecked: bool = False  # may a candidate whose equivalence was not established win?
    prove: bool = True  # the evaluator tries the translation validator before the interpreter
    objective: str | None = None  # latency / throughput; None: each kernel's default (evaluate.objective_for)
    l2: str = "cold"  # throughput: the L2 at the launch's start (cold / warm; ptxopt.sim.throughput)

    @property
    def estimate(self) -> bool:
        """Cycles are the backend's estimate (sim), not a measurement (gpu)."""
        from ptxopt.measure.backend_registry import is_estimate

        return is_estimate(self.backend)

    def kwargs(self) -> dict:  # what the evaluator takes (allow_unchecked is the search's)
        return dict(arch=self.arch, backend=self.backend, cache=self.cache, trials=self.trials,
                    timeout=self.timeout, prove=self.prove, objective=self.objective, l2=self.l2)


class BudgetExhausted(Exception):
    """The strategy's evaluation budget is spent (strategies catch it and finish)."""


#: Who hears of each evaluation of this process's meters (``search``'s progress bar); empty: nobody.
_LISTENERS: list[Callable[[State, EvalResult], None]] = []


@contextmanager
def evaluation_progress(listener: Callable[[State, EvalResult], None]) -> Iterator[None]:
    """Call ``listener(state, result)`` after each candidate a meter of this
    process evaluates, while the block runs (searches in worker processes
    report per kernel only)."""
    _LISTENERS.append(listener)
    try:
        yield
    finally:
        _LISTENERS.remove(listener)


@dataclass
class Meter:
    """Measures states of one kernel, memoised by printed text, within a budget."""

    options: EvalOptions
    budget: int | None = None
    evaluations: int = 0
    cache_hits: int = 0
    failures: Counter = field(default_factory=Counter)
    unchecked: Counter = field(default_factory=Counter)  # verdict -> ok candidates left unverified
    unchecked_reasons: dict = field(default_factory=dict)  # "verdict: why" -> pipelines (the first few)
    seen: dict = field(default_factory=dict)  # state digest -> EvalResult
    #: whose memos the measurements use and fill: the session active when the meter was made
    session: EvaluationSession = field(default_factory=EvaluationSession.current, repr=False)

    @property
    def remaining(self) -> int | None:
        return None if self.budget is None else max(0, self.budget - self.evaluations)

    def known(self, state: State) -> EvalResult | None:
        return self.seen.get(state.digest)

    def measure(self, states: Sequence[State]) -> list[EvalResult | None]:
        """Results for ``states``, in order. When the budget cannot pay for
        every new module, the first ones are measured and the rest get None;
        when it is already spent, :class:`BudgetExhausted` is raised.

        The same as :meth:`plan`, one :func:`evaluate_many` of what it
        returns, :meth:`absorb` and :meth:`answer`: the steps a driver that
        measures several kernels' states in one evaluation takes
        (:mod:`ptxopt.search.stepwise`)."""
        new = self.plan(states)
        if new:
            self.absorb(new, evaluate_many([s.candidate() for s in new], workers=0, session=self.session,
                                              **self.options.kwargs()))
        return self.answer(states)

    def plan(self, states: Sequence[State]) -> list[State]:
        """The states of ``states`` that :meth:`measure` would evaluate: each
        module not measured yet, once, in order, as many as the budget pays
        for; :class:`BudgetExhausted` when there is one and nothing is left."""
        todo: dict[str, State] = {}
        for s in states:
            if s.digest not in self.seen:
                todo.setdefault(s.digest, s)
        new = list(todo.values())
        if new and self.remaining is not None:
            if self.remaining == 0:
                raise BudgetExhausted()
            new = new[: self.remaining]
        return new

    def absorb(self, new: Sequence[State], results: Sequence[EvalResult]) -> None:
        """Count and remember the evaluator's results for :meth:`plan`'s states."""
        for s, r in zip(new, results, strict=True):
            self.evaluations += 1
            self.cache_hits += bool(r.cache_hit)
            if s.depth == 0:
                if r.ok and not r.checked:  # the empty pipeline: identical by definition
                    r = r.replace(equivalence=Verdict.IDENTICAL.value, equivalence_note=None)
            if not r.ok:
                self.failures[r.status] += 1
            elif not r.checked:
                self.unchecked[r.equivalence] += 1
                why = r.equivalence + (f": {r.equivalence_note}" if r.equivalence_note else "")
                self.unchecked_reasons.setdefault(why, []).append(r.pipeline or str(s.pipeline))
            self.seen[s.digest] = r
            for listener in tuple(_LISTENERS):
                listener(s, r)

    def answer(self, states: Sequence[State]) -> list[EvalResult | None]:
        """What is known of ``states``, in order (None: not measured)."""
        return [self.seen.get(s.digest) for s in states]

    def usable(self, r: EvalResult | None) -> bool:
        """May ``r`` be kept as a step or reported as a best? ``ok``, cycles
        known, and equivalence established (or ``allow_unchecked``)."""
        if r is None or not r.ok or r.cycles is None:
            return False
        return r.checked or bool(self.options.allow_unchecked)

    def better(self, a: EvalResult | None, b: EvalResult | None) -> bool:
        """Is ``a`` usable and strictly faster than ``b`` (or ``b`` not usable)?"""
        return better(a, b, self.usable)

    def cycles(self, state: State) -> float | None:
        """The cycles of one state (measuring it if needed); None when it is not usable."""
        r = self.measure([state])[0]
        return r.cycles if self.usable(r) else None

    @property
    def unchecked_total(self) -> int:
        return sum(self.unchecked.values())

    def unchecked_note(self) -> str | None:
        """What the per-kernel note says about unchecked candidates (None: there were none)."""
        n = self.unchecked_total
        if not n:
            return None
        what = "allowed (--allow-unchecked)" if self.options.allow_unchecked else "never taken"
        parts = []
        for why, pipelines in list(self.unchecked_reasons.items())[:3]:
            more = f", ... {len(pipelines) - 3} more" if len(pipelines) > 3 else ""
            parts.append(f"{why} [{', '.join(pipelines[:3])}{more}]")
        if len(self.unchecked_reasons) > 3:
            parts.append(f"{len(self.unchecked_reasons) - 3} other reasons")
        return f"{n} candidate{'s' if n != 1 else ''} with unestablished equivalence, {what}: " + "; ".join(parts)


def _checked(r: EvalResult) -> bool:
    return r is not None and r.ok and r.cycles is not None and r.checked


def better(a: EvalResult | None, b: EvalResult | None, usable=_checked) -> bool:
    """Is ``a`` a strictly better usable result than ``b`` (fewer cycles)?
    ``usable`` (default: ok with established equivalence) decides which results count."""
    if a is None or not usable(a):
        return False
    if b is None or not usable(b):
        return True
    return a.cycles < b.cycles
