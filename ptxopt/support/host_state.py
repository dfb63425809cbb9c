"""A library call leaves the host program's process state as it found it.

:func:`ptxopt.optimize`, :func:`ptxopt.evaluate.evaluate` (and
``evaluate_many``) and the Triton hook's rewrite of a kernel run inside
:func:`preserved`, which restores on return (or raise):

* the handlers of ``SIGALRM``, ``SIGTERM`` and ``SIGINT``;
* the host's ``ITIMER_REAL``: stopped for the call (so the host's handler
  never fires in the middle of ptxopt, where a time limit of ptxopt's own
  uses the same timer), then re-armed with what it had left minus the time
  the call took; when that time ran out during the call, the host's
  ``SIGALRM`` handler is given the signal on return (:func:`resume_alarm`);
* ``sys.stdout`` and ``sys.stderr`` (the objects), the garbage collector's
  state (enabled, thresholds) and ``os.environ``.

Signals and timers belong to the main thread: called from another thread,
only the rest is restored and the host's timer runs on undisturbed (ptxopt's
own time limits are not enforced there either, :mod:`ptxopt.evaluate.deadline`).
Calls nest: only the outermost saves and restores.
"""

from __future__ import annotations

import functools
import gc
import os
import signal
import sys
import threading
import time
from contextlib import contextmanager

#: the signals whose handlers a call restores
SIGNALS = tuple(getattr(signal, n) for n in ("SIGALRM", "SIGTERM", "SIGINT") if hasattr(signal, n))

_local = threading.local()  # .depth: nested preserved() calls in this thread


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread() and hasattr(signal, "setitimer")


def suspend_alarm() -> tuple[float, float, float] | None:
    """Stop the host's ``ITIMER_REAL``: ``(left, interval, when)`` to give to
    :func:`resume_alarm`, or None when it was not armed (or not the main thread)."""
    if not _main_thread():
        return None
    when = time.monotonic()  # before stopping it: the time left is never overstated
    left, interval = signal.setitimer(signal.ITIMER_REAL, 0)
    return (left, interval, when) if left > 0 else None


def resume_alarm(saved: tuple[float, float, float] | None) -> None:
    """Re-arm a timer :func:`suspend_alarm` stopped with its time left minus the
    time since (not counting a preemption between reading the clock and
    re-arming); when none is left, raise ``SIGALRM`` now (the handler in place
    runs as if the timer had just rung), then re-arm a periodic timer with its
    interval. Call it after the host's ``SIGALRM`` handler is back."""
    if saved is None:
        return
    left, interval, when = saved
    rest = left - (time.monotonic() - when)
    if rest > 0:
        signal.setitimer(signal.ITIMER_REAL, rest, interval)
        return
    if interval > 0:
        signal.setitimer(signal.ITIMER_REAL, interval, interval)
    signal.raise_signal(signal.SIGALRM)


class _Saved:
    def __init__(self, main: bool) -> None:
        self.main = main
        self.handlers = {s: signal.getsignal(s) for s in SIGNALS}
        self.alarm = suspend_alarm() if main else None
        self.stdout, self.stderr = sys.stdout, sys.stderr
        self.gc_enabled, self.gc_threshold = gc.isenabled(), gc.get_threshold()
        self.environ = dict(os.environ)

    def restore(self) -> None:
        if sys.stdout is not self.stdout:
            sys.stdout = self.stdout
        if sys.stderr is not self.stderr:
            sys.stderr = self.stderr
        if gc.get_threshold() != self.gc_threshold:
            gc.set_threshold(*self.gc_threshold)
        if gc.isenabled() != self.gc_enabled:
            (gc.enable if self.gc_enabled else gc.disable)()
        _restore_environ(self.environ)
        if not self.main:
            return
        for sig, handler in self.handlers.items():
            if handler is not None and signal.getsignal(sig) is not handler:
                signal.signal(sig, handler)
        if self.alarm is None:
            signal.setitimer(signal.ITIMER_REAL, 0)  # a timer ptxopt left armed is not the host's
        resume_alarm(self.alarm)


def _restore_environ(saved: dict[str, str]) -> None:
    now = os.environ
    if dict(now) == saved:
        return
    for k in [k for k in now if k not in saved]:
        del now[k]
    for k, v in saved.items():
        if now.get(k) != v:
            now[k] = v


@contextmanager
def preserved():
    """The block runs as a library call: see the module doc."""
    depth = getattr(_local, "depth", 0)
    if depth or threading.current_thread().name.startswith("ptxopt-"):
        # nested, or in one of ptxopt's own helper threads (ptxopt.evaluate.prepare.tools: an estimate
        # overlapping optimize() may outlive the call that started it): the process-wide state is the
        # caller's call to restore; a helper putting back its snapshot would undo what the host changed since
        _local.depth = depth + 1
        try:
            yield
        finally:
            _local.depth -= 1
        return
    saved = _Saved(_main_thread())
    _local.depth = 1
    try:
        yield
    finally:
        _local.depth = 0
        saved.restore()


def library_call(fn):
    """Decorator: ``fn`` runs inside :func:`preserved`."""
    @functools.wraps(fn)
    def call(*args, **kwargs):
        with preserved():
            return fn(*args, **kwargs)

    return call


__all__ = ["SIGNALS", "preserved", "library_call", "suspend_alarm", "resume_alarm"]
