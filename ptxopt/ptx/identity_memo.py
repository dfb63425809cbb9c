"""Answers about immutable IR objects, remembered by identity.

Instructions are frozen and shared by every copy of a module (a pass
replaces only what it rewrites), so the ~20 candidate modules of a search
state ask the same questions (printed text, role, registers read and
written) about the same objects again and again. Hashing a frozen dataclass
walks its fields, so the memo is keyed by ``id`` instead, and the memo keeps
every object it answered for alive: an id cannot be reused while it is
remembered, so an entry found under ``id(obj)`` is ``obj``'s own (no
per-entry ``(obj, value)`` pair to build, check and collect). When full, it
starts afresh (the working set is one kernel's instructions).
"""

from __future__ import annotations

import weakref
from typing import Callable, Generic, TypeVar

T = TypeVar("T")
V = TypeVar("V")


_ALL: "weakref.WeakSet[IdentityMemo]" = weakref.WeakSet()
_MISS = object()


class IdentityMemo(Generic[T, V]):
    __slots__ = ("_entries", "_keep", "_max", "__weakref__")

    def __init__(self, max_entries: int = 1 << 18):
        self._entries: dict[int, V] = {}  # id(obj) -> value
        self._keep: list[T] = []  # the objects, alive while remembered
        self._max = max_entries
        _ALL.add(self)

    def get(self, obj: T, compute: Callable[[T], V]) -> V:
        """``compute(obj)``, remembered for this very object."""
        value = self._entries.get(id(obj), _MISS)
        if value is not _MISS:
            return value
        value = compute(obj)
        self.put(obj, value)
        return value

    def put(self, obj: T, value: V) -> None:
        """Remember ``value`` for ``obj`` (not remembered yet)."""
        if len(self._entries) >= self._max:
            self.clear()
        self._entries[id(obj)] = value
        self._keep.append(obj)

    def clear(self) -> None:
        self._entries.clear()
        self._keep.clear()

    def __len__(self) -> int:
        return len(self._entries)


def clear_all() -> None:
    """Empty every :class:`IdentityMemo` of the process."""
    for memo in list(_ALL):
        memo.clear()


__all__ = ["IdentityMemo", "clear_all"]
