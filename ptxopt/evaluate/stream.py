"""Evaluating groups of candidates that arrive over time, in this process: :class:`Stream`.

:func:`ptxopt.evaluate.evaluate_many` takes every candidate at once and
returns when the last is measured: between two calls, ptxas and nvdisasm
have nothing to do.  A caller whose next candidates depend on earlier
results -- several kernels searched in lockstep
(:mod:`ptxopt.search.stepwise`), each kernel's next step waiting only for
its own candidates -- instead :meth:`~Stream.submit`\\ s each group as it
is known and takes groups back with :meth:`~Stream.next` as they complete.
Meanwhile the helper threads keep working: ptxas compiles what was
submitted while this thread runs the next group's passes and equivalence
checks (and the caller's own Python work), and the measure thread measures
one chunk while ptxas compiles the next.

Each candidate is evaluated exactly as :func:`evaluate_many` with
``workers=0`` evaluates it (the same :class:`~ptxopt.evaluate.batch.Batcher`
steps: pipeline-key lookup, preparation, ptxas, measurement in chunks of up to
``batch`` candidates, each result committed to the cache as its chunk
completes), so its result and cache rows are the same; only which
candidates share an nvdisasm run differs.  A chunk is launched when it is
full, or when the caller waits and nothing else is under way.

Chunks hold up to :data:`STREAM_BATCH` candidates unless ``batch`` is given:
more than :func:`evaluate_many`'s default, because a stream keeps ptxas busy
while a chunk waits to fill (greedy on 8 gemm tiles in lockstep: 18 nvdisasm
runs with 32, 10 with 64; nvdisasm's CPU 4.8 -> 3.3 s, the search's 20.1 -> 18.7 s).
"""

from __future__ import annotations

from collections import deque
from typing import Any, Hashable, Iterable

from .batch import Batcher
from .cache import EvalCache
from .candidate import as_candidate
from ptxopt.evaluate.prepare import lookup
from .result import EvalResult
from .session import EvaluationSession
from .work import Work

#: Candidates per chunk (one nvdisasm run) when the caller does not say.
STREAM_BATCH = 64


class Stream:
    """Groups of candidates evaluated in this process as they are submitted (see the module doc).

    ``cache``, ``session`` and ``options`` are :func:`~ptxopt.evaluate.evaluate_many`'s (the
    session: the one active when the stream is made, by default). Use as a context
    manager (it holds the cache's connection)."""

    def __init__(self, *, cache: Any = "default", session: EvaluationSession | None = None, **options) -> None:
        from . import _cache_path, _settings

        self.session = session or EvaluationSession.current()
        options.setdefault("batch", STREAM_BATCH)
        self.settings = _settings(**options)
        path = _cache_path(cache)
        self.cache = EvalCache(path) if path is not None else None
        try:
            self._batcher = Batcher(self.settings, self.cache, on_result=self._result)
        except BaseException:
            self.close()
            raise
        self._groups: dict[Hashable, list] = {}  # tag -> [results (None until known), how many unknown]
        self._where: dict[int, tuple[Hashable, int]] = {}  # work index -> (tag, position)
        self._ready: deque = deque()  # tags whose results are all known, in completion order
        self._next_index = 0

    def __enter__(self) -> "Stream":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        if self.cache is not None:
            self.cache.close()
            self.cache = None

    def submit(self, tag: Hashable, items: Iterable) -> None:
        """Start evaluating a group (the candidates' front halves run now, in this thread)."""
        with self.session.active():
            self._submit(tag, items)

    def _submit(self, tag: Hashable, items: Iterable) -> None:
        if tag in self._groups:
            raise ValueError(f"group {tag!r} is still being evaluated")
        cands = [as_candidate(i) for i in items]
        group = self._groups[tag] = [[None] * len(cands), len(cands)]
        works = []
        for pos, c in enumerate(cands):
            hit = lookup(c, self.settings, self.cache) if self.cache is not None else None
            if hit is not None:
                group[0][pos] = hit
                group[1] -= 1
                continue
            w = Work(self._next_index, c, self.settings)
            self._where[w.index] = (tag, pos)
            self._next_index += 1
            works.append(w)
        if group[1] == 0:
            self._ready.append(tag)
        b = self._batcher
        size = max(1, self.settings.batch)
        for w in works:
            b.front([w])
            if len(b.open) >= size:
                b.launch()
        b.drain(block=False)

    def next(self) -> tuple[Hashable, list[EvalResult]]:
        """A group whose results are all known (the first to complete), waiting for one if needed."""
        with self.session.active():
            return self._next()

    def _next(self) -> tuple[Hashable, list[EvalResult]]:
        b = self._batcher
        while not self._ready:
            if b.inflight:
                b.drain(block=True, one=True)
            elif b.open:
                b.launch()
            else:
                raise RuntimeError("no group is being evaluated")
        tag = self._ready.popleft()
        return tag, self._groups.pop(tag)[0]

    @property
    def pending(self) -> int:
        """Groups submitted and not yet returned by :meth:`next`."""
        return len(self._groups)

    def _result(self, index: int, r: EvalResult) -> None:
        tag, pos = self._where.pop(index)
        group = self._groups[tag]
        group[0][pos] = r
        group[1] -= 1
        if group[1] == 0:
            self._ready.append(tag)


__all__ = ["Stream"]
