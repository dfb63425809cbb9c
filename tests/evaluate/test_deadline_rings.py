"""A candidate's time limit is never lost where Python swallows its exception.

The deadline's SIGALRM handler raises :class:`CandidateTimeout` wherever the
signal lands; inside a garbage-collector callback, a ``__del__`` or a weakref
finaliser Python prints "Exception ignored" and goes on. A flaky
``test_timeout_is_a_result`` showed it: hypothesis's gc callback took the ring,
the passes ran on, and ptxas, killed at its own copy of the limit, made the
candidate a ``toolchain`` fault. Each case below makes the ring land in such a
place for certain (the callback sleeps past the limit) and asserts the timeout
still surfaces: on leaving the deadline, at the end of a :func:`per_step` step,
and as the evaluator's ``timeout`` result.
"""

from __future__ import annotations

import gc
import signal
import time
from dataclasses import replace

import pytest

from ptxopt.evaluate.deadline import CandidateTimeout, deadline, per_step

pytestmark = [
    pytest.mark.skipif(not hasattr(signal, "SIGALRM"), reason="no SIGALRM on this platform"),
    # the swallowed exceptions are this file's premise: Python reports each as unraisable
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
]


class _SleepsWhenFreed:
    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    def __del__(self):
        time.sleep(self.seconds)  # the limit rings in here: Python ignores the exception


def _ring_in_del(seconds: float = 0.05):
    x = _SleepsWhenFreed(seconds)
    del x  # refcount zero: __del__ runs now, and swallows the ring


def _ring_in_gc_callback():
    def slow(phase, info):
        if phase == "start":
            time.sleep(0.05)

    gc.callbacks.append(slow)
    try:
        gc.collect()
    finally:
        gc.callbacks.remove(slow)


SWALLOWERS = {"__del__": _ring_in_del, "gc callback": _ring_in_gc_callback}


@pytest.mark.parametrize("where", list(SWALLOWERS))
def test_a_swallowed_ring_raises_when_the_body_ends(where):
    ran_on = []
    with pytest.raises(CandidateTimeout):
        with deadline(0.01):
            SWALLOWERS[where]()
            ran_on.append(True)
    assert ran_on == [True]  # the ring was swallowed (the body went on), and still the limit held
    assert signal.getsignal(signal.SIGALRM) is not None and signal.getitimer(signal.ITIMER_REAL)[0] == 0


def test_a_swallowed_ring_ends_its_step_not_the_next():
    with per_step(0.01) as clock:
        clock.start()
        with pytest.raises(CandidateTimeout):
            try:
                _ring_in_del()
            finally:
                clock.stop()
        clock.start()  # the next step starts clean and ends in time
        clock.stop()


def test_a_ring_that_raises_is_not_raised_twice_and_an_inner_timeout_caught_inside_stays_inside():
    with deadline(5):
        with pytest.raises(CandidateTimeout):
            with deadline(0.01):
                time.sleep(0.2)
        # the inner deadline's ring belongs to it: the outer one, left in time, raises nothing
    assert signal.getitimer(signal.ITIMER_REAL)[0] == 0


def test_the_evaluator_reports_a_swallowed_ring_as_a_timeout(tmp_path, monkeypatch):
    """The passes' limit runs out inside a ``__del__`` (the limit is 0.3 s, the
    ``__del__`` sleeps 0.6 s, after a warm-up so that the passes are reached
    well inside the limit): the old code went on to ptxas and the check and
    reported whatever they said; the candidate took longer than its limit."""
    from ptxopt.evaluate import Candidate, evaluate
    from ptxopt.evaluate import prepare as frontend

    cache = tmp_path / "eval.sqlite"
    c = Candidate.from_corpus("gemm_tile_8x8x8", "reorder_il")
    evaluate(c, cache=cache)  # imports and memos warm: the timed run reaches the passes in milliseconds
    slow, reached = frontend.run_pipeline, []

    def run_pipeline(*a, **k):
        reached.append(True)
        _ring_in_del(0.6)
        return slow(*a, **k)

    monkeypatch.setattr(frontend, "run_pipeline", run_pipeline)
    c = replace(c, ptx=c.ptx + f"\n// {__name__} {time.time_ns()}\n")
    r = evaluate(c, cache=cache, timeout=0.3)
    assert reached, "the limit ran out before the passes: this test's premise does not hold"
    assert r.status == "timeout" and "0.3" in r.error, (r.status, r.error)
