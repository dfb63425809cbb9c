"""Pipeline prefixes: each candidate's passes start from the module its pipeline's longest evaluated prefix built.

A search evaluates ``P+[p]`` for every action ``p`` right after it evaluated
``P`` itself (greedy's next step extends the best of the last one; beam and
the RL environment likewise). Built from the original each time, step ``k``
of a greedy search runs ``k`` passes per candidate where one would do. So
each :class:`~ptxopt.evaluate.frontend.Original` keeps a :class:`PrefixMemo`:
the module after every pipeline the evaluator ran on it, with the pass
records, and :func:`run_pipeline` runs only the passes after the longest
remembered prefix.

Why the result is the one the whole pipeline gives:

* the key is the tuple of *bound* passes (after
  :meth:`~ptxopt.pipeline.Pipeline.with_launch`): frozen dataclasses
  compared by class and every field, so a pass that depends on the launch
  (``launch_bounds`` takes the block, shared bytes and entry) is a
  different key under another launch; the original is the memo's owner
  (one per original text), and a pass reads nothing else: the arch it needs
  comes from the module's ``.target``;
* the pass manager never changes the module it is given (the first pass
  that runs gets a copy), so a remembered module is never changed by the
  passes that extend it; the evaluator and the backends only read the
  module a candidate ends with (tests check that every remembered module
  still prints what it printed when it was built);
* a pass that refused the module as a whole (``illegal``) is one of the
  remembered records, so an extended pipeline is refused with the same
  message; a run that raised is not remembered.

Bounded: :data:`ENTRIES` pipelines per original, least recently used out
first (a greedy step over ~20 actions, a beam's few states of 20 each).
Emptied with its original (``frontend._MEMO.clear()``) and by
:func:`ptxopt.memos.clear_front_end` (:func:`clear_all`), so a cold
measurement starts without any.
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from dataclasses import dataclass

#: pipelines remembered per original
ENTRIES = 128

_ALL: "weakref.WeakSet[PrefixMemo]" = weakref.WeakSet()


@dataclass(frozen=True)
class Built:
    """The module after a pipeline and the pass manager's records of it."""

    module: object  # ptxopt.ir.Module; never changed after it is remembered
    records: tuple


class PrefixMemo:
    """Bound pass tuple -> :class:`Built`, least recently used out first."""

    __slots__ = ("_entries", "_max", "_lock", "hits", "misses", "__weakref__")

    def __init__(self, max_entries: int = ENTRIES):
        self._entries: OrderedDict[tuple, Built] = OrderedDict()
        self._max = max_entries
        self._lock = threading.Lock()
        self.hits = self.misses = 0  # lookups that found a non-empty prefix / none
        _ALL.add(self)

    def longest(self, passes: tuple) -> tuple[int, Built | None]:
        """``(k, built)``: the longest remembered ``passes[:k]`` (``k`` may be
        ``len(passes)``), or ``(0, None)``."""
        with self._lock:
            for k in range(len(passes), 0, -1):
                hit = self._entries.get(passes[:k])
                if hit is not None:
                    self._entries.move_to_end(passes[:k])
                    self.hits += 1
                    return k, hit
            self.misses += 1
            return 0, None

    def put(self, passes: tuple, built: Built) -> None:
        if not passes:
            return
        with self._lock:
            self._entries[passes] = built
            self._entries.move_to_end(passes)
            while len(self._entries) > self._max:
                self._entries.popitem(last=False)

    def items(self) -> list[tuple[tuple, Built]]:
        with self._lock:
            return list(self._entries.items())

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self.hits = self.misses = 0

    def __len__(self) -> int:
        return len(self._entries)


def hashable(passes: tuple) -> bool:
    """Whether ``passes`` can be a key (a plugin pass with a list field cannot)."""
    try:
        hash(passes)
    except TypeError:
        return False
    return True


def run_pipeline(memo: PrefixMemo | None, module, pipeline):
    """:meth:`PassManager(pipeline).run(module) <ptxopt.passmanager.PassManager.run>`,
    starting from the module of the longest prefix of ``pipeline`` that
    ``memo`` remembers (``module`` is the original's; ``memo`` None: no memo).
    Raises what the pass manager raises; remembers the result otherwise."""
    from ptxopt.passmanager import PassManager, RunResult
    from ptxopt.pipeline import Pipeline

    passes = tuple(pipeline.passes)
    if memo is None or not passes or not hashable(passes):
        return PassManager(pipeline).run(module)
    k, hit = memo.longest(passes)
    if hit is None:
        run = PassManager(pipeline).run(module)
    else:
        try:
            rest = PassManager(Pipeline(passes[k:])).run(hit.module)
        except Exception:  # again from the original: the failure and its reproducer are the whole pipeline's
            return PassManager(pipeline).run(module)
        run = RunResult(rest.module, pipeline, [*hit.records, *rest.records])
    if k < len(passes):
        memo.put(passes, Built(run.module, tuple(run.records)))
    return run


def clear_all() -> None:
    """Empty every :class:`PrefixMemo` of the process."""
    for memo in list(_ALL):
        memo.clear()


__all__ = ["PrefixMemo", "Built", "ENTRIES", "run_pipeline", "clear_all"]
