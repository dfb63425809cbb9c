"""Strategies as generators, so that one evaluation can serve several kernels.

A *stepwise* strategy is a generator function ``f(root, meter, **kw)`` that,
wherever a strategy would call ``meter.measure(states)``, yields ``states``
and receives what :meth:`Meter.measure` would have returned (or has
:class:`BudgetExhausted` thrown in where ``measure`` would raise it); it
returns its :class:`~ptxopt.search.outcome.Outcome`.

* :func:`drive` runs one such generator against its meter, one
  ``measure`` per request: exactly the strategy written as a plain function
  (``greedy(root, meter)`` is ``drive(greedy_steps(root, meter), meter)``).
* :func:`lockstep` runs several kernels' generators together.  With a
  :class:`ptxopt.evaluate.stream.Stream`, each kernel's request is submitted
  as soon as it is known and the kernel advances as soon as its own
  candidates are measured: ptxas compiles one kernel's candidates while this
  thread runs the passes and checks of the next and the strategies' own
  Python (action masks, trajectory features), and nvdisasm runs once per
  chunk of candidates of any kernels.  Without a stream, the kernels advance
  in rounds, one ``evaluate_many`` per round for all of them.  Each kernel's
  meter plans, counts and answers its own part (:meth:`Meter.plan`,
  :meth:`Meter.absorb`, :meth:`Meter.answer`) exactly as its ``measure``
  would, so outcomes, trajectories, evaluation counts and cache rows are
  those of the kernels searched one after the other -- provided no two
  kernels of one lockstep share a module (the caller keeps identical kernels
  apart: the second would have read the first's results from the cache).

Why: a greedy step of one small kernel is a dozen ptxas runs of a few
milliseconds between two barriers (the first candidate's passes before
ptxas has anything to do; nvdisasm's ~0.2 s start-up and the model after
it is done).  Searched in lockstep, the kernels fill each other's gaps.

Failure rules are the sequential ones: a kernel whose generator raises gets
that exception as its result and the others go on; when a round's shared
evaluation raises, each kernel's part is evaluated again alone, so that the
exception lands on the kernel whose candidates raise it (as it would have
searched alone); a stream that raises hands the kernels still searching to
the rounds; an exception of a ``fatal`` class (an unusable cache or backend)
stops everything.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, Generator, Sequence

from ptxopt.search.meter import BudgetExhausted, Meter
from .state import State

#: What a stepwise strategy is: yields requests, receives answers, returns an Outcome.
Steps = Generator[list[State], Any, Any]


def drive(gen: Steps, meter: Meter):
    """Run one stepwise strategy to its outcome, measuring each request with ``meter``."""
    send: Any = None
    throw: BaseException | None = None
    while True:
        try:
            req = gen.throw(throw) if throw is not None else gen.send(send)
        except StopIteration as stop:
            return stop.value
        try:
            send, throw = meter.measure(req), None
        except BudgetExhausted as e:
            send, throw = None, e


@dataclass
class Searched:
    """One kernel's lockstep search: its outcome, or the exception its generator (or its part of an
    evaluation) raised, and the seconds it is charged (its own Python time plus its share of each
    evaluation, by candidates)."""

    outcome: Any = None
    error: BaseException | None = None
    seconds: float = 0.0


@dataclass
class _Run:
    gen: Steps
    meter: Meter
    done: Searched = field(default_factory=Searched)
    request: list[State] | None = None  # the states asked for, waiting for the next evaluation
    new: list[State] = field(default_factory=list)  # of those, what the meter will have evaluated


def lockstep(jobs: Sequence[tuple[Steps, Meter]], evaluate: Callable[[list], list], *, stream: Any = None,
             fatal: tuple[type[BaseException], ...] = ()) -> list[Searched]:
    """Run every ``(generator, meter)`` to its end; results in ``jobs`` order.

    ``evaluate(candidates)`` is :func:`ptxopt.evaluate.evaluate_many` with the meters' options: with it
    alone the kernels advance in rounds, one evaluation per round for all of them. With ``stream`` (a
    :class:`ptxopt.evaluate.stream.Stream` with the same options), each kernel's request is submitted
    as soon as it is known and each kernel advances as soon as its own candidates are measured, while
    ptxas works on the others' (a stream that fails -- a bug -- leaves the kernels still searching to
    the rounds; their pending candidates are evaluated again, from the cache where it has them)."""
    runs = [_Run(g, m) for g, m in jobs]
    live = [run for run in runs if _advance(run, None, None, fatal)]
    if stream is not None and live:
        live = _streamed(live, stream, fatal)
    _rounds(live, evaluate, fatal)
    return [run.done for run in runs]


def _streamed(live: list[_Run], stream, fatal) -> list[_Run]:
    """Drive ``live`` through ``stream`` to their ends; the runs left waiting if the stream fails."""
    waiting: dict[int, _Run] = {id(run): run for run in live}
    try:
        for run in live:
            _submit(run, stream)
        while waiting:
            t = time.perf_counter()
            tag, results = stream.next()
            run = waiting.pop(tag)
            run.done.seconds += time.perf_counter() - t
            run.meter.absorb(run.new, results)
            if _advance(run, run.meter.answer(run.request), None, fatal):
                waiting[id(run)] = run
                _submit(run, stream)
    except fatal:
        raise
    except Exception:
        return list(waiting.values())
    return []


def _submit(run: _Run, stream) -> None:
    t = time.perf_counter()
    stream.submit(id(run), [s.candidate() for s in run.new])
    run.done.seconds += time.perf_counter() - t


def _rounds(live: list[_Run], evaluate, fatal) -> None:
    """Drive ``live`` to their ends in rounds: every pending request of a round in one evaluation."""
    while live:
        batch = [(run, s) for run in live for s in run.new]
        t = time.perf_counter()
        parts = _evaluate_all(live, batch, evaluate, fatal)
        share = (time.perf_counter() - t) / max(1, len(batch))
        nxt = []
        for run, results in zip(live, parts):
            run.done.seconds += share * len(run.new)
            if isinstance(results, BaseException):
                run.gen.close()
                run.done.error = results
                continue
            run.meter.absorb(run.new, results)
            if _advance(run, run.meter.answer(run.request), None, fatal):
                nxt.append(run)
        live = nxt


def _advance(run: _Run, send: Any, throw: BaseException | None, fatal) -> bool:
    """Step ``run``'s generator until it asks for a module not measured yet (True) or ends (False)."""
    t = time.perf_counter()
    try:
        while True:
            try:
                req = run.gen.throw(throw) if throw is not None else run.gen.send(send)
            except StopIteration as stop:
                run.done.outcome = stop.value
                return False
            try:
                new = run.meter.plan(req)
            except BudgetExhausted as e:
                send, throw = None, e
                continue
            if not new:  # everything asked for is known: answered at once, as measure() does
                send, throw = run.meter.answer(req), None
                continue
            run.request, run.new = req, new
            return True
    except fatal:
        raise
    except Exception as e:  # one kernel never kills a search
        run.done.error = e
        return False
    finally:
        run.done.seconds += time.perf_counter() - t


def _evaluate_all(live: list[_Run], batch: list[tuple[_Run, State]], evaluate, fatal) -> list:
    """Per live run, its new states' results: one evaluation for all; when that raises, one per run
    (its results, or the exception its own candidates raise)."""
    try:
        results = evaluate([s.candidate() for _, s in batch])
    except fatal:
        raise
    except Exception:
        return [_evaluate_one(run, evaluate, fatal) for run in live]
    parts, i = [], 0
    for run in live:
        parts.append(results[i: i + len(run.new)])
        i += len(run.new)
    return parts


def _evaluate_one(run: _Run, evaluate, fatal):
    try:
        return evaluate([s.candidate() for s in run.new])
    except fatal:
        raise
    except Exception as e:
        return e


__all__ = ["drive", "lockstep", "Searched", "Steps"]
