"""Answers about immutable IR objects, remembered by identity.

Instructions are frozen and shared by every copy of a module (a pass
replaces only what it rewrites), so the ~20 candidate modules of a search
state ask the same questions (printed text, role, registers read and
written) about the same objects again and again. Hashing a frozen dataclass
walks its fields, so the memo is keyed by ``id`` instead, and each entry
keeps its object alive: an id cannot be reused while it is remembered. When
full, it starts afresh (the working set is one kernel's instructions).
"""

from __future__ import annotations

import weakref
from typing import Callable, Generic, TypeVar

T = TypeVar("T")
V = TypeVar("V")


_ALL: "weakref.WeakSet[IdentityMemo]" = weakref.WeakSet()


class IdentityMemo(Generic[T, V]):
    __slots__ = ("_entries", "_max", "__weakref__")

    def __init__(self, max_entries: int = 1 << 18):
        self._entries: dict[int, tuple[T, V]] = {}
        self._max = max_entries
        _ALL.add(self)

    def get(self, obj: T, compute: Callable[[T], V]) -> V:
        """``compute(obj)``, remembered for this very object."""
        hit = self._entries.get(id(obj))
        if hit is not None and hit[0] is obj:
            return hit[1]
        value = compute(obj)
        if len(self._entries) >= self._max:
            self._entries.clear()
        self._entries[id(obj)] = (obj, value)
        return value

    def clear(self) -> None:
        self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)


def clear_all() -> None:
    """Empty every :class:`IdentityMemo` of the process."""
    for memo in list(_ALL):
        memo.clear()


__all__ = ["IdentityMemo", "clear_all"]
