"""Per-candidate time limits in the evaluating thread: :func:`deadline` and :class:`CandidateTimeout`.

``Settings.timeout`` bounds each step of one candidate.  The passes, the
equivalence check and the measurement run under ``SIGALRM`` (when evaluating
on the main thread; elsewhere the interpreter polls :mod:`ptxopt.support.cancel`); ptxas and
nvdisasm get the limit as their own time limit; the interpreter and the
model also stop at their step budgets.  The worker pool
(:mod:`ptxopt.evaluate.parallel`) is the backstop: it kills a worker whose
current step overruns the limit and records ``timeout`` for the candidate.

A timer that was already armed (the host program's, or an enclosing
deadline's) is stopped meanwhile and re-armed afterwards with its time left;
if that ran out meanwhile, its handler gets the signal on exit
(:func:`ptxopt.support.host_state.resume_alarm`).
"""

from __future__ import annotations

import signal
import threading
import time
from contextlib import contextmanager

from ptxopt.support import cancel
from ptxopt.support.host_state import resume_alarm, suspend_alarm


class CandidateTimeout(BaseException):
    """Raised by the SIGALRM handler (a BaseException so that ``except
    Exception`` in passes or the interpreter cannot swallow it)."""


@contextmanager
def deadline(seconds: float | None):
    """Raise :class:`CandidateTimeout` after ``seconds``: by SIGALRM in the main
    thread; elsewhere from the interpreter's next poll (:mod:`ptxopt.support.cancel`)."""
    if not seconds:
        yield
        return
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "SIGALRM"):
        with cancel.limit(seconds, CandidateTimeout):  # no signal here: the interpreter's polls stop it
            yield
        return

    if signal.getsignal(signal.SIGALRM) is _ring:  # inside another deadline: swap the timers (one call)
        old, when = None, time.monotonic()
        left, interval = signal.setitimer(signal.ITIMER_REAL, max(seconds, 0.001))
        outer = (left, interval, when) if left > 0 else None
    else:  # the host's timer stopped before the handler is ours: it never rings into ptxopt
        outer = suspend_alarm()
        old = signal.signal(signal.SIGALRM, _ring)
        signal.setitimer(signal.ITIMER_REAL, max(seconds, 0.001))
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        if old is not None:
            signal.signal(signal.SIGALRM, old)
        resume_alarm(outer)


def _ring(signum, frame):
    raise CandidateTimeout()


class StepClock:
    """The time limit of one step in a loop of steps (:func:`per_step`)."""

    def __init__(self, seconds: float | None) -> None:
        self.seconds = max(seconds, 0.001) if seconds else None

    def start(self) -> None:
        """The next step has ``seconds`` from now (:class:`CandidateTimeout` after)."""
        if self.seconds:
            signal.setitimer(signal.ITIMER_REAL, self.seconds)

    def stop(self) -> None:
        if self.seconds:
            signal.setitimer(signal.ITIMER_REAL, 0)


@contextmanager
def per_step(seconds: float | None):
    """:func:`deadline` for a loop whose every step may take ``seconds``: the
    handler is installed once, and each step costs one timer call to start
    and one to stop (:class:`StepClock`; main thread only, else a no-op)."""
    if not seconds or threading.current_thread() is not threading.main_thread() or not hasattr(signal, "SIGALRM"):
        yield StepClock(None)
        return
    with deadline(seconds):
        signal.setitimer(signal.ITIMER_REAL, 0)  # no step running yet
        yield StepClock(seconds)


__all__ = ["CandidateTimeout", "deadline", "per_step", "StepClock"]
