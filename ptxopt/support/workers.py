"""Worker processes that die with their parent and leave Ctrl-C to it.

Every pool ptxopt starts (``search -j``, the evaluator's workers,
``roundtrip -j``) calls :func:`become_worker` first thing in each worker:

* **Dying with the parent.** A worker whose parent was killed (SIGKILL, out
  of memory) would otherwise be re-parented to init, finish its queue and
  sit idle for minutes. On Linux ``prctl(PR_SET_PDEATHSIG, SIGKILL)`` makes
  the kernel kill it at once (only asked for when the worker was started
  from the parent's main thread: the signal fires when the *thread* that
  started the child ends); everywhere, a daemon thread polls the parent's
  pid and leaves with ``os._exit`` when it changes.
* **Quiet on Ctrl-C.** The terminal sends SIGINT to the whole foreground
  process group. The parent handles it (one line, what finished is written,
  exit 130) and stops its workers; the workers ignore it, so none prints a
  ``KeyboardInterrupt`` traceback of its own. A spawned worker spends its
  first second importing (ptxopt, the caller's ``__main__``) before it can
  ignore anything, so the parent starts workers inside
  :func:`starting_workers`, with SIGINT blocked: the worker inherits the
  mask, a Ctrl-C in that second stays pending in it, and
  :func:`become_worker` discards it (ignore, then unblock).
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from contextlib import contextmanager

#: seconds between two looks at the parent's pid
POLL_S = 0.25

_PR_SET_PDEATHSIG = 1


def parent_info() -> tuple[int, bool]:
    """What a worker needs from its parent: ``(pid, started from the main thread)``;
    computed in the parent, passed to :func:`become_worker`."""
    return os.getpid(), threading.current_thread() is threading.main_thread()


def become_worker(parent_pid: int | None = None, from_main_thread: bool = False) -> None:
    """Make this process a well-behaved worker of ``parent_pid`` (default: its
    current parent); see the module doc. Safe to call more than once."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if hasattr(signal, "pthread_sigmask"):  # a Ctrl-C pending since starting_workers is discarded
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    parent = parent_pid if parent_pid is not None else os.getppid()
    if from_main_thread and sys.platform.startswith("linux"):
        _pdeathsig()
    if os.getppid() != parent:  # the parent died before we got here
        os._exit(1)
    t = threading.Thread(target=_watch, args=(parent,), name="ptxopt-parent-watch", daemon=True)
    t.start()


@contextmanager
def starting_workers():
    """Start worker processes inside this: SIGINT is blocked in the calling
    thread meanwhile, and so in every process it starts (see the module doc).
    A Ctrl-C to the parent in the meantime is raised when the block ends."""
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def _pdeathsig() -> None:
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    except (OSError, AttributeError):
        pass  # the watchdog thread still covers it


def _watch(parent: int) -> None:
    while True:
        time.sleep(POLL_S)
        if os.getppid() != parent:
            os._exit(1)


__all__ = ["become_worker", "parent_info", "starting_workers", "POLL_S"]
