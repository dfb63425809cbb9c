"""Pipeline prefixes: each candidate's passes start from the module its pipeline's longest evaluated prefix built.

A search evaluates ``P+[p]`` for every action ``p`` right after it evaluated
``P`` itself (greedy's next step extends the best of the last one; beam and
the RL environment likewise). Built from the original each time, step ``k``
of a greedy search runs ``k`` passes per candidate where one would do. So
each :class:`~ptxopt.evaluate.prepare.Original` keeps a :class:`PrefixMemo`:
the module after every pipeline the evaluator ran on it, with the pass
records, and :func:`run_pipeline` runs only the passes after the longest
remembered prefix.

Why the result is the one the whole pipeline gives:

* the key is the tuple of *bound* passes (after
  :meth:`~ptxopt.passes.pipeline.Pipeline.with_launch`): frozen dataclasses
  compared by class and every field, so a pass that depends on the launch
  (``launch_bounds`` takes the block, shared bytes and entry) is a
  different key under another launch; the original is the memo's owner
  (one per original text), and a pass reads nothing else: the arch it needs
  comes from the module's ``.target``. Each pass's methods as its class
  holds them now are part of the key too (:func:`key_of`): a method
  replaced at run time is another pass;
* the pass manager never changes the module it is given (the first pass
  that runs gets a copy), so a remembered module is never changed by the
  passes that extend it; the evaluator and the backends only read the
  module a candidate ends with (tests check that every remembered module
  still prints what it printed when it was built);
* a pass that refused the module as a whole (``illegal``) is one of the
  remembered records, so an extended pipeline is refused with the same
  message; a run that raised is not remembered.

Bounded: :data:`ENTRIES` pipelines per original, least recently used out
first: a greedy step's ~25 candidates all stay until the next step picks
one (a beam of width 4 keeps only part of its ~100; a pipeline whose prefix
was dropped starts from a shorter one, or from the original). A remembered
module shares every unchanged instruction with its prefix: about 130 KB
each on gemm_tile_16x16x16 (5,127 instructions), so the 16 originals of
:data:`~ptxopt.evaluate.prepare._MEMO_SIZE` hold at most ~140 MB of them on
the corpus's largest kernel, a few MB on typical ones.
Owned by its original, which the evaluation session owns
(:mod:`ptxopt.evaluate.session`): a cold measurement (a new session) starts
without any.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from types import FunctionType

from ptxopt.support.bounded_memo import BoundedMemo

#: pipelines remembered per original
ENTRIES = 64

_CODE = (FunctionType, property, classmethod, staticmethod)


@dataclass(frozen=True)
class Built:
    """The module after ``passes`` and the pass manager's records of it."""

    passes: tuple
    module: object  # ptxopt.ptx.ir.Module; never changed after it is remembered
    records: tuple


class PrefixMemo:
    """:func:`key_of` a pass tuple -> :class:`Built`, least recently used out first."""

    __slots__ = ("_entries", "_lock", "hits", "misses")

    def __init__(self, max_entries: int = ENTRIES):
        self._entries: BoundedMemo = BoundedMemo(max_entries)
        self._lock = threading.Lock()
        self.hits = self.misses = 0  # lookups that found a non-empty prefix / none

    def longest(self, key: tuple) -> tuple[int, Built | None]:
        """``(k, built)``: the longest remembered ``key[:k]`` (``k`` may be
        ``len(key)``), or ``(0, None)``."""
        with self._lock:
            for k in range(len(key), 0, -1):
                hit = self._entries.get(key[:k])
                if hit is not None:
                    self._entries.move_to_end(key[:k])
                    self.hits += 1
                    return k, hit
            self.misses += 1
            return 0, None

    def put(self, key: tuple, built: Built) -> None:
        if not key:
            return
        with self._lock:
            self._entries.remember(key, built)

    def items(self) -> list[tuple[tuple, Built]]:
        """``(passes, built)`` for every remembered pipeline, least recently used first."""
        with self._lock:
            return [(b.passes, b) for b in self._entries.values()]

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self.hits = self.misses = 0

    def __len__(self) -> int:
        return len(self._entries)


def key_of(passes: tuple) -> tuple | None:
    """The memo key of ``passes``: each pass (its class and every field) with
    the methods its class and bases hold now, so a method replaced in place
    (a test's monkeypatch of ``run`` or ``check_legal``) is another key;
    None when a pass cannot be hashed (a plugin pass with a list field)."""
    key = tuple((p, tuple((n, v) for c in type(p).__mro__[:-1] for n, v in vars(c).items() if isinstance(v, _CODE)))
                for p in passes)
    try:
        hash(key)
    except TypeError:
        return None
    return key


def run_pipeline(memo: PrefixMemo | None, module, pipeline, built: Built | None = None):
    """:meth:`PassManager(pipeline).run(module) <ptxopt.passes.passmanager.PassManager.run>`,
    starting from the module of the longest prefix of ``pipeline`` that
    ``memo`` remembers (``module`` is the original's; ``memo`` None: no memo).
    ``built``: the module of ``pipeline`` as the caller built it (a search
    state's child, from the same original), taken as it is when its passes
    are ``pipeline``'s (by :func:`key_of`): passes are deterministic, so it
    is the module the pass manager would build, and the passes do not run twice.
    Raises what the pass manager raises; remembers the result otherwise."""
    from ptxopt.passes.passmanager import PassManager, RunResult
    from ptxopt.passes.pipeline import Pipeline

    passes = tuple(pipeline.passes)
    if built is not None and passes:
        key = key_of(passes)
        if key is not None and key_of(tuple(built.passes)) == key:
            if memo is not None:
                memo.put(key, built)
            return RunResult(built.module, pipeline, list(built.records))
    key = key_of(passes) if memo is not None and passes else None
    if key is None:
        return PassManager(pipeline).run(module)
    k, hit = memo.longest(key)
    if hit is None:
        run = PassManager(pipeline).run(module)
    else:
        try:
            rest = PassManager(Pipeline(passes[k:])).run(hit.module)
        except Exception:  # again from the original: the failure and its reproducer are the whole pipeline's
            return PassManager(pipeline).run(module)
        run = RunResult(rest.module, pipeline, [*hit.records, *rest.records])
    if k < len(passes):
        memo.put(key, Built(passes, run.module, tuple(run.records)))
    return run


__all__ = ["PrefixMemo", "Built", "ENTRIES", "key_of", "run_pipeline"]
