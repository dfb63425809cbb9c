"""SIGTERM takes the Ctrl-C path.

``timeout``, batch schedulers and ``docker stop`` end a run with SIGTERM,
whose default action kills the process on the spot: no ``--json``, no
``policy.pt``, exit 143 that no table explains. :func:`install` (called by
the CLI's entry point) turns SIGTERM in the main thread into
:class:`Terminated`, a ``KeyboardInterrupt``: every place that writes what
finished on Ctrl-C does so on SIGTERM too, and :func:`interrupted_code`
gives the exit code to report -- 143 (``terminated``) after a SIGTERM, 130
(``interrupted``) after a Ctrl-C.

Helper threads get neither signal: both handlers also call
:func:`ptxopt.support.cancel.stop`, so an interpreter running in a helper thread
(the measure thread's loop profile) ends at its next poll instead of
holding the process's exit (which joins those threads) until it finishes.
"""

from __future__ import annotations

import signal
import threading

from ptxopt.support import cancel
from ptxopt.cli.exitcodes import INTERRUPTED, TERMINATED

_received = False


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where a Ctrl-C's ``KeyboardInterrupt`` would be."""


def _on_sigterm(signum, frame) -> None:
    global _received
    if _received:  # a second SIGTERM while what finished is written: that clean-up goes on
        return
    _received = True
    cancel.stop()
    raise Terminated("terminated (SIGTERM)")


def _on_sigint(signum, frame) -> None:
    cancel.stop()
    signal.default_int_handler(signum, frame)


def install() -> None:
    """Handle SIGTERM as described above (main thread only; idempotent)."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _on_sigterm)
        if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            signal.signal(signal.SIGINT, _on_sigint)


def received() -> bool:
    """Did this process get a SIGTERM?"""
    return _received


def interrupted_code() -> int:
    """143 after a SIGTERM, else 130 (Ctrl-C)."""
    return TERMINATED if _received else INTERRUPTED


def word() -> str:
    """How the run was stopped, for the one-line message."""
    return "terminated (SIGTERM)" if _received else "interrupted"


__all__ = ["Terminated", "install", "received", "interrupted_code", "word"]
