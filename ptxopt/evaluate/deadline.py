"""Per-candidate time limits in the evaluating thread: :func:`deadline` and :class:`CandidateTimeout`.

``Settings.timeout`` bounds each step of one candidate.  The passes, the
equivalence check and the measurement run under ``SIGALRM`` (when evaluating
on the main thread; elsewhere the interpreter polls :mod:`ptxopt.cancel`); ptxas and
nvdisasm get the limit as their own time limit; the interpreter and the
model also stop at their step budgets.  The worker pool
(:mod:`ptxopt.evaluate.parallel`) is the backstop: it kills a worker whose
current step overruns the limit and records ``timeout`` for the candidate.
"""

from __future__ import annotations

import signal
import threading
from contextlib import contextmanager

from ptxopt import cancel


class CandidateTimeout(BaseException):
    """Raised by the SIGALRM handler (a BaseException so that ``except
    Exception`` in passes or the interpreter cannot swallow it)."""


@contextmanager
def deadline(seconds: float | None):
    """Raise :class:`CandidateTimeout` after ``seconds``: by SIGALRM in the main
    thread; elsewhere from the interpreter's next poll (:mod:`ptxopt.cancel`)."""
    if not seconds:
        yield
        return
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "SIGALRM"):
        with cancel.limit(seconds, CandidateTimeout):  # no signal here: the interpreter's polls stop it
            yield
        return

    def _ring(signum, frame):
        raise CandidateTimeout()

    old = signal.signal(signal.SIGALRM, _ring)
    signal.setitimer(signal.ITIMER_REAL, max(seconds, 0.001))
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


__all__ = ["CandidateTimeout", "deadline"]
