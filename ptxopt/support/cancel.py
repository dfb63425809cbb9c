"""Cooperative stops for long loops that run outside the main thread.

``SIGALRM`` (:func:`ptxopt.evaluate.deadline.deadline`) and ``SIGTERM``
(:mod:`ptxopt.cli.termination`) raise only in the main thread, but the
interpreter also runs in helper threads (the ``sim`` backend's loop profile
runs in the ``ptxopt-measure`` thread).  Such a thread would run on past the
candidate's time limit, and the process's exit would wait for it (the
thread pool joins its threads at exit).  Long loops therefore call
:func:`check` now and then (the interpreter: every :data:`POLL_STEPS` steps,
on its slow path), which raises

* the exception the thread's :func:`limit` was armed with once its time is
  up (the evaluator arms it with its ``CandidateTimeout``), or
* :class:`Stopped` in every thread once :func:`stop` was called (the CLI's
  SIGTERM and Ctrl-C handling: the process is ending).

Neither is an ``Exception``, so that ``except Exception`` in a step cannot
swallow them.
"""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager

#: Interpreter steps between two calls of :func:`check` (a call costs about a
#: microsecond; a step tens of microseconds: the poll is free, and a stop is
#: seen within a fraction of a second).
POLL_STEPS = 256

_stopping = False
_local = threading.local()


class Stopped(KeyboardInterrupt):
    """The process is stopping (SIGTERM, Ctrl-C): a helper thread's loop ends now
    (a ``KeyboardInterrupt``: where it reaches the main thread, the CLI's
    interrupt handling reports it, exit 130 or 143)."""


def stop() -> None:
    """Make :func:`check` raise :class:`Stopped` in every thread from now on."""
    global _stopping
    _stopping = True


def stopping() -> bool:
    return _stopping


def resume() -> None:
    """Undo :func:`stop`: for a process that goes on after an interrupt (a library
    host that caught it, a test); the CLI never does."""
    global _stopping
    _stopping = False


@contextmanager
def limit(seconds: float | None, error: type[BaseException]):
    """In this thread, make :func:`check` raise ``error()`` once ``seconds`` have
    passed (None or 0: no limit).  Nested limits: the earliest wins."""
    if not seconds:
        yield
        return
    old = getattr(_local, "until", None)
    until = time.monotonic() + seconds
    if old is not None and old[0] <= until:
        yield
        return
    _local.until = (until, error)
    try:
        yield
    finally:
        _local.until = old


def check() -> None:
    """Raise :class:`Stopped` or this thread's limit's error when due (cheap)."""
    if _stopping:
        raise Stopped("stopped: the process is ending")
    until = getattr(_local, "until", None)
    if until is not None and time.monotonic() >= until[0]:
        raise until[1]()


__all__ = ["POLL_STEPS", "Stopped", "stop", "stopping", "resume", "limit", "check"]
