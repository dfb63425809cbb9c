"""SQLite files opened before a ``fork()`` are left alone by the child.

A connection is process state: its locks are the parent's (POSIX locks are
not inherited), its page cache and WAL index describe the parent's view.
A child that commits through it, checkpoints it or closes it (``close()``,
``del``, the interpreter's own clean-up at ``sys.exit``) acts on the parent's
file with state it does not own -- and may lose rows the parent wrote.

So every owner of such a connection (:class:`ptxopt.evaluate.cache.EvalCache`,
:class:`ptxopt.evaluate.move_memo.MoveMemo`) calls :func:`track` once; right
after a fork, in the child, each is told to :meth:`abandon_inherited`: it
hands its connection to :func:`abandon` (kept alive, never closed, never
used again) and opens a fresh connection of its own the next time it needs
one, exactly as a worker process that opens the cache itself does.
"""

from __future__ import annotations

import ctypes
import os
import weakref

_OWNERS: "weakref.WeakSet" = weakref.WeakSet()
#: connections inherited from the parent: referenced for good, so that nothing closes them in this process
_ABANDONED: list = []


def track(owner) -> None:
    """Call ``owner.abandon_inherited()`` in the child after every fork."""
    _OWNERS.add(owner)


def abandon(conn) -> None:
    """Never close ``conn`` in this process: not by ``close()``, not when the
    last reference goes, not at interpreter exit (which clears module globals,
    so a list alone would not do: one reference is leaked on purpose)."""
    if conn is None:
        return
    _ABANDONED.append(conn)
    try:
        ctypes.pythonapi.Py_IncRef(ctypes.py_object(conn))
    except (AttributeError, OSError):
        pass  # no C API access (not CPython): the list still holds it until exit


def _after_fork_in_child() -> None:
    for owner in list(_OWNERS):
        owner.abandon_inherited()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)

__all__ = ["track", "abandon"]
