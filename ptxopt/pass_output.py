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

Cost: a flush, ``dup``/``dup2`` and two ``lseek``s per pass application
(microseconds against the pass's own hundreds), so every pass is captured,
not only plugins. Worker processes (``-j``) run passes the same way: the
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
    saved_fd: int | None = None  # fd 1 as it was
    saved_stdout = None  # sys.stdout as it was
    buffer: io.StringIO | None = None


_cap = _Capture()
_reported: set[str] = set()


def _begin() -> None:
    with _lock:
        _cap.depth += 1
        if _cap.depth > 1:
            return
        try:
            sys.stdout.flush()
        except Exception:  # noqa: BLE001  (a closed or odd stdout: nothing to flush)
            pass
        _cap.saved_stdout = sys.stdout
        _cap.buffer = sys.stdout = io.StringIO()
        try:
            _cap.saved_fd = os.dup(1)
        except OSError:  # no fd 1: only the Python level is captured
            _cap.saved_fd = None
            return
        if _cap.pid != os.getpid():  # made here, after any fork: a child never writes into its parent's
            fd, path = tempfile.mkstemp(prefix="ptxopt-pass-stdout-")
            os.unlink(path)
            _cap.tmp, _cap.pid = fd, os.getpid()
        os.dup2(_cap.tmp, 1)


def _end() -> str:
    with _lock:
        _cap.depth -= 1
        if _cap.depth > 0:
            return ""
        text = _cap.buffer.getvalue() if _cap.buffer is not None else ""
        sys.stdout, _cap.saved_stdout, _cap.buffer = _cap.saved_stdout, None, None
        if _cap.saved_fd is None:
            return text
        os.dup2(_cap.saved_fd, 1)
        os.close(_cap.saved_fd)
        _cap.saved_fd = None
        size = os.lseek(_cap.tmp, 0, os.SEEK_CUR)
        if not size:
            return text
        os.lseek(_cap.tmp, 0, os.SEEK_SET)
        data = b""
        while len(data) < size:
            chunk = os.read(_cap.tmp, size - len(data))
            if not chunk:
                break
            data += chunk
        os.ftruncate(_cap.tmp, 0)
        os.lseek(_cap.tmp, 0, os.SEEK_SET)
        return text + data.decode("utf-8", "replace")


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
    as coming from ``label`` (e.g. ``"pass 'noisy'"``)."""
    with _no_alarm():
        _begin()
    try:
        yield
    finally:
        with _no_alarm():
            text = _end()
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
