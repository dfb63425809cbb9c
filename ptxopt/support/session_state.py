"""The memos of an evaluation session, reached from the code that fills them.

The evaluator remembers answers across candidates: parsed originals and the
modules of their pipelines, ptxas compiles, SASS listings, estimates, proofs,
interpreter runs of originals, loop-control slices, key fingerprints and
action-mask facts. They belong to an *evaluation session*
(:class:`ptxopt.evaluate.session.EvaluationSession`, one field per memo):
``evaluate_many``, each worker process and each search meter hold one, and a
cold start is a new session rather than a walk over module tables.

The code that fills a memo sits on floors below the evaluator (toolchain,
measure, equivalence) and cannot import it, so each such module declares a
:class:`Slot` (a name, and how to make the empty memo) and asks the slot for
the memo of the *active* state: the :class:`SessionState` a ``with
state.active():`` block installed in this context (a
:class:`contextvars.ContextVar`, so a helper thread given a copy of the
context, :func:`in_context`, sees the same one), else the process's default
state (what a caller that never opened a session uses, as before).
"""

from __future__ import annotations

import contextvars
import threading
from contextlib import contextmanager
from typing import Any, Callable, Iterator

_ACTIVE: contextvars.ContextVar["SessionState | None"] = contextvars.ContextVar("ptxopt_session", default=None)


class Slot:
    """One memo a session owns: ``name`` (the module's dotted path and what
    it holds) and ``make`` (a zero-argument factory of the empty memo)."""

    __slots__ = ("name", "make")

    def __init__(self, name: str, make: Callable[[], Any]) -> None:
        self.name, self.make = name, make

    def get(self) -> Any:
        """This slot's memo in the active session state (made on first use)."""
        return current().memo(self)

    def __repr__(self) -> str:
        return f"Slot({self.name!r})"


class SessionState:
    """The memos of one session, by slot name, each made on first use."""

    def __init__(self) -> None:
        self._memos: dict[str, Any] = {}
        self._lock = threading.Lock()

    def memo(self, slot: Slot) -> Any:
        m = self._memos.get(slot.name)
        if m is None:
            with self._lock:
                m = self._memos.get(slot.name)
                if m is None:
                    m = self._memos[slot.name] = slot.make()
        return m

    def names(self) -> list[str]:
        """The slots whose memo this state has made so far."""
        return sorted(self._memos)

    def enter(self) -> "SessionState":
        """Make this the active state of this context from now on (a script's
        top level, which has no block to leave; :meth:`active` otherwise)."""
        _ACTIVE.set(self)
        return self

    @contextmanager
    def active(self) -> Iterator["SessionState"]:
        """Make this the state slots answer from in this context while the block runs."""
        token = _ACTIVE.set(self)
        try:
            yield self
        finally:
            _ACTIVE.reset(token)


_DEFAULT = SessionState()  # the process's session: what callers outside any session share


def current() -> SessionState:
    """The active session state of this context, else the process's default one."""
    return _ACTIVE.get() or _DEFAULT


def in_context(fn: Callable, *args, **kw):
    """``fn(*args, **kw)`` in a copy of the caller's context: what a helper
    thread runs so that it answers from the submitting caller's session."""
    ctx = contextvars.copy_context()
    return lambda: ctx.run(fn, *args, **kw)


__all__ = ["Slot", "SessionState", "current", "in_context"]
