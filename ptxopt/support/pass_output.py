"""Stdout belongs to ptxopt's output, not to a pass: what a pass prints is captured.

``search --json -``, ``eval --json -`` and ``run`` write their document to
stdout, and a pass from outside ptxopt (a plugin) may print. While a pass
runs (:meth:`ptxopt.passes.base.Pass.apply`, the pass manager's loop, the
import of a plugin), :func:`captured` points both ``sys.stdout`` and file
descriptor 1 elsewhere: ``print`` lands in a string buffer, ``os.write(1,
...)`` and child processes in an unlinked temporary file of this process.
Afterwards both are put back and what was printed is reported as one
warning per pass and process on stderr (:func:`report`), or handed to the
caller that asked with :func:`collecting` (:func:`ptxopt.optimize` puts it
in its result's ``warnings``).

Cost: switching costs ``dup``/``dup2`` and a signal mask (~50 us on this
machine), so an action mask switches once and each pass inside only looks at
two offsets (~6 us) to tell what it printed; a pipeline (the pass manager)
switches per pass, so that its instruments' output (``--print-changed``...)
is never captured. Every pass is captured, not only plugins. Worker processes (``-j``) run passes the same way: the
temporary file is made per process (a forked child never shares its
parent's). The capture is process-wide and counted: passes running in two
threads at once share one capture, and anything another thread prints to
stdout meanwhile is reported with them. Output a C library buffers in its
own ``stdout`` and flushes later is not seen.
"""

from __future__ import annotations

import io
import os
import signal
import sys
import tempfile
import threading
from contextlib import contextmanager

#: the longest part of a pass's output quoted in a warning
QUOTE = 200

_lock = threading.Lock()
_local = threading.local()  # .collectors: the lists :func:`collecting` opened in this thread


class _Capture:
    depth = 0
    pid = -1
    tmp: int | None = None  # this process's temporary file
    saved_fd: int | None = None  # fd 1 as it was (None: fd 1 is not redirected)
    saved_stdout = None  # sys.stdout as it was
    buffer: io.StringIO | None = None
    claimed = (0, 0)  # how much of (buffer, temporary file) was already reported


_cap = _Capture()
_reported: set[str] = set()


def _begin() -> None:
    """Point sys.stdout and fd 1 at the capture (the outermost :func:`captured`)."""
    try:
        sys.stdout.flush()
    except Exception:  # noqa: BLE001  (a closed or odd stdout: nothing to flush)
        pass
    _cap.saved_stdout = sys.stdout
    _cap.buffer = sys.stdout = io.StringIO()
    _cap.claimed = (0, 0)
    try:
        _cap.saved_fd = os.dup(1)
    except OSError:  # no fd 1: only the Python level is captured
        _cap.saved_fd = None
        return
    if _cap.pid != os.getpid():  # made here, after any fork: a child never writes into its parent's
        fd, path = tempfile.mkstemp(prefix="ptxopt-pass-stdout-")
        os.unlink(path)
        _cap.tmp, _cap.pid = fd, os.getpid()
    os.ftruncate(_cap.tmp, 0)
    os.lseek(_cap.tmp, 0, os.SEEK_SET)
    os.dup2(_cap.tmp, 1)


def _ends() -> tuple[int, int]:
    """How much the capture holds now: (characters in the buffer, bytes in the file)."""
    py = _cap.buffer.tell() if _cap.buffer is not None else 0
    return py, (os.lseek(_cap.tmp, 0, os.SEEK_CUR) if _cap.saved_fd is not None else 0)


def _claim() -> str:
    """What was printed since the last claim (and claim it)."""
    (py0, fd0), (py1, fd1) = _cap.claimed, _ends()
    text = _cap.buffer.getvalue()[py0:py1] if py1 > py0 else ""
    if fd1 > fd0:
        text += os.pread(_cap.tmp, fd1 - fd0, fd0).decode("utf-8", "replace")
    _cap.claimed = (py1, fd1)
    return text


def _end() -> str:
    """Put sys.stdout and fd 1 back; what was printed and not yet claimed."""
    text = _claim()
    sys.stdout, _cap.saved_stdout, _cap.buffer = _cap.saved_stdout, None, None
    if _cap.saved_fd is not None:
        os.dup2(_cap.saved_fd, 1)
        os.close(_cap.saved_fd)
        _cap.saved_fd = None
    return text


@contextmanager
def _no_alarm():
    """SIGALRM held back while the capture is switched (a deadline that rings
    then is raised once stdout is whole again)."""
    main = threading.current_thread() is threading.main_thread() and hasattr(signal, "pthread_sigmask")
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM}) if main else None
    try:
        yield
    finally:
        if old is not None:
            signal.pthread_sigmask(signal.SIG_SETMASK, old)


@contextmanager
def captured(label: str):
    """Run the block with stdout captured; what it printed is :func:`report`-ed
    as coming from ``label`` (e.g. ``"pass 'noisy'"``). Inside another
    :func:`captured` block (a pipeline, an action mask around each pass) it
    costs a look at two offsets: it reports what its block printed and the
    outer block what is left."""
    with _lock:
        outer = _cap.depth == 0
        _cap.depth += 1
        if outer:
            with _no_alarm():
                _begin()
    try:
        yield
    finally:
        with _lock:
            if outer:
                _cap.depth = 0
                with _no_alarm():
                    text = _end()
            elif _cap.buffer is None:  # the outer block (another thread's) has ended
                _cap.depth, text = max(0, _cap.depth - 1), ""
            else:
                _cap.depth -= 1
                if sys.stdout is not _cap.buffer:  # the pass replaced it: the capture's again
                    sys.stdout = _cap.buffer
                text = _claim()
        if text:
            report(label, text)


@contextmanager
def collecting():
    """Collect the reports of passes run by this thread in the block (a list of
    warning lines) instead of writing them to stderr."""
    stack = getattr(_local, "collectors", None)
    if stack is None:
        stack = _local.collectors = []
    out: list[str] = []
    stack.append(out)
    try:
        yield out
    finally:
        stack.pop()


def report(label: str, text: str) -> None:
    """One warning: to the innermost :func:`collecting` list of this thread,
    else to stderr (once per ``label`` and process: a pass that prints on every
    application is reported once)."""
    quoted = repr(text[:QUOTE]) + ("..." if len(text) > QUOTE else "")
    line = (f"{label} wrote {len(text)} characters to stdout, which is reserved for ptxopt's output; "
            f"not passed on: {quoted}")
    stack = getattr(_local, "collectors", None)
    if stack:
        stack[-1].append(line)
        return
    if label in _reported:
        return
    _reported.add(label)
    try:
        sys.stderr.write(f"ptxopt: warning: {line}\n")
        sys.stderr.flush()
    except Exception:  # noqa: BLE001  (no stderr to warn on)
        pass


__all__ = ["captured", "collecting", "report", "QUOTE"]
