"""A bounded, least-recently-used-out-first memo, and the registry that
lets a cold start clear the process's memos without reaching into their
modules' private names.

:class:`BoundedMemo` is an ``OrderedDict`` (callers and tests keep using
``len``, ``values``, ``clear``, ``in``) with the two operations every memo
of the process repeated by hand: :meth:`~BoundedMemo.lookup` (a hit becomes
the most recently used) and :meth:`~BoundedMemo.remember` (insert, then drop
the least recently used entries beyond the capacity). The capacity may be a
zero-argument callable, read at each insertion, so that a module constant
(and a test's ``monkeypatch`` of it) stays the one place it is set.

The memo takes no lock itself: a memo shared between threads is guarded by
its owner's lock, as before (``lock=`` names it, so that :func:`clear_group`
holds it while clearing a registered memo).

:func:`register` records a memo (or anything with ``clear()`` /
``cache_clear()``: a plain dict, an ``lru_cache`` function) under a group;
:func:`clear_group` empties a group at once (``front_end``: what a benchmark
of a cold first look forgets).
"""

from __future__ import annotations

import contextlib
from collections import OrderedDict
from typing import Any, Callable, Hashable

_MISSING = object()


class BoundedMemo(OrderedDict):
    """At most ``capacity`` entries (an int or a callable returning one);
    with ``weight`` and ``max_weight`` also at most that total weight of
    values (weight recounted at each insertion), keeping at least the newest
    entry."""

    def __init__(self, capacity: int | Callable[[], int] = 0, *, weight: Callable[[Any], int] | None = None,
                 max_weight: int | Callable[[], int] | None = None, lock=None) -> None:
        super().__init__()
        self._capacity = capacity
        self._weight = weight
        self._max_weight = max_weight
        self.lock = lock

    @property
    def capacity(self) -> int:
        c = self._capacity
        return c() if callable(c) else c

    def lookup(self, key: Hashable, default: Any = None) -> Any:
        """The value for ``key`` (now the most recently used), or ``default``."""
        v = OrderedDict.get(self, key, _MISSING)
        if v is _MISSING:
            return default
        self.move_to_end(key)
        return v

    def remember(self, key: Hashable, value: Any, *, touch: bool = True) -> None:
        """Store ``value`` (the most recently used unless ``touch`` is False and
        ``key`` was present), then evict beyond the bounds."""
        OrderedDict.__setitem__(self, key, value)
        if touch:
            self.move_to_end(key)
        self.evict()

    def evict(self) -> None:
        """Drop least recently used entries until within the bounds."""
        cap = self.capacity
        if self._weight is None:
            while len(self) > cap:
                self.popitem(last=False)
            return
        limit = self._max_weight() if callable(self._max_weight) else self._max_weight
        total = sum(self._weight(v) for v in self.values())
        while len(self) > 1 and (len(self) > cap or total > limit):
            _, old = self.popitem(last=False)
            total -= self._weight(old)


_GROUPS: dict[str, dict[str, Any]] = {}


def register(group: str, name: str, memo: Any) -> Any:
    """Record ``memo`` under ``group`` as ``name`` (a module's dotted path and
    variable); returns ``memo``. Registering a name again replaces it."""
    _GROUPS.setdefault(group, {})[name] = memo
    return memo


def registered(group: str) -> dict[str, Any]:
    """``name -> memo`` of ``group`` (a copy)."""
    return dict(_GROUPS.get(group, {}))


def clear_group(group: str) -> None:
    """Empty every memo registered under ``group`` (holding its ``lock``, if any)."""
    for memo in list(_GROUPS.get(group, {}).values()):
        clear = getattr(memo, "cache_clear", None) or memo.clear
        # a BoundedMemo's clear takes no lock; anything else locks itself if it needs to
        with (memo.lock if isinstance(memo, BoundedMemo) else None) or contextlib.nullcontext():
            clear()


__all__ = ["BoundedMemo", "register", "registered", "clear_group"]
