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

**A ring is never lost.** The handler's exception surfaces wherever the
signal lands, and Python *ignores* an exception raised inside a garbage
collector callback, a ``__del__`` or a weakref finaliser (it prints
"Exception ignored in ..." and goes on): the candidate would run on past its
limit and then be reported as whatever stopped it later (ptxas killed at its
own copy of the limit: a ``toolchain`` fault, as a flaky test showed with
hypothesis's gc callback). So each ring is also recorded on the deadline that
armed the timer, and a body that finishes after its deadline rang raises
:class:`CandidateTimeout` on leaving it (a step of :func:`per_step` on
:meth:`StepClock.stop`); the interpreter's polls (:mod:`ptxopt.support.cancel`)
stop it at the limit as well, signal or not.
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
def deadline(seconds: float | None, *, poll: bool = True):
    """Raise :class:`CandidateTimeout` after ``seconds``: by SIGALRM in the main
    thread; elsewhere from the interpreter's next poll (:mod:`ptxopt.support.cancel`).
    ``poll=False``: no poll limit in the main thread (:func:`per_step`, whose
    ``seconds`` are each step's, not the whole body's)."""
    if not seconds:
        yield
        return
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "SIGALRM"):
        with cancel.limit(seconds, CandidateTimeout):  # no signal here: the interpreter's polls stop it
            yield
        return

    rang = [False]  # set by _ring while this deadline's timer is the armed one
    _armed.append(rang)
    if signal.getsignal(signal.SIGALRM) is _ring:  # inside another deadline: swap the timers (one call)
        old, when = None, time.monotonic()
        left, interval = signal.setitimer(signal.ITIMER_REAL, max(seconds, 0.001))
        outer = (left, interval, when) if left > 0 else None
    else:  # the host's timer stopped before the handler is ours: it never rings into ptxopt
        outer = suspend_alarm()
        old = signal.signal(signal.SIGALRM, _ring)
        signal.setitimer(signal.ITIMER_REAL, max(seconds, 0.001))
    late = False
    try:
        with cancel.limit(seconds if poll else None, CandidateTimeout):  # the interpreter's polls too
            yield
        late = rang[0]  # the body ran to its end after the ring: its exception was swallowed (module doc)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        _armed.pop()
        if old is not None:
            signal.signal(signal.SIGALRM, old)
        resume_alarm(outer)
    if late:
        raise CandidateTimeout()


#: the ring flags of the deadlines entered and not left, innermost last: the timer is the innermost's
_armed: list[list[bool]] = []


def _ring(signum, frame):
    if _armed:
        _armed[-1][0] = True
    raise CandidateTimeout()


class StepClock:
    """The time limit of one step in a loop of steps (:func:`per_step`)."""

    def __init__(self, seconds: float | None) -> None:
        self.seconds = max(seconds, 0.001) if seconds else None

    def start(self) -> None:
        """The next step has ``seconds`` from now (:class:`CandidateTimeout` after)."""
        if self.seconds:
            _armed[-1][0] = False
            signal.setitimer(signal.ITIMER_REAL, self.seconds)

    def stop(self) -> None:
        """The step is over; :class:`CandidateTimeout` if its time rang while
        the step went on (a swallowed ring: module doc)."""
        if self.seconds:
            signal.setitimer(signal.ITIMER_REAL, 0)
            if _armed[-1][0]:
                _armed[-1][0] = False
                raise CandidateTimeout()


@contextmanager
def per_step(seconds: float | None):
    """:func:`deadline` for a loop whose every step may take ``seconds``: the
    handler is installed once, and each step costs one timer call to start
    and one to stop (:class:`StepClock`; main thread only, else a no-op)."""
    if not seconds or threading.current_thread() is not threading.main_thread() or not hasattr(signal, "SIGALRM"):
        yield StepClock(None)
        return
    with deadline(seconds, poll=False):
        signal.setitimer(signal.ITIMER_REAL, 0)  # no step running yet
        yield StepClock(seconds)


__all__ = ["CandidateTimeout", "deadline", "per_step", "StepClock"]
