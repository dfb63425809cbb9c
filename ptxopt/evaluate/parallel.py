"""``evaluate_many``: many candidates, in this process or in a pool of workers.

Candidates are processed largest kernel first (results are still returned
in the caller's order; ``on_result`` sees them as they complete).

A backend that is not ``pipelined`` (hardware timings, e.g. ``gpu``) gets at
most one worker, so that no two measurements run at the same time.

The parent first answers every candidate it can from the cache by its
pipeline key (no parsing, no worker), then hands the rest out in batches.

The pool is a set of worker processes (``fork`` where available, as the
rest of ptxopt's pools; a worker never touches the parent's database
connection or threads).  Each worker opens its own read connection to the
SQLite cache (WAL) and runs :func:`ptxopt.evaluate.batch.run_batch` on the
batches it is sent; what it would write (a result, a pipeline alias) it
sends to the parent instead, ahead of the result itself, and the parent --
the one writer of the cache, as with every executor (:mod:`ptxopt.executor`)
-- commits it before reporting the result.  A worker tells the parent which
candidates it is working on; the parent

* kills a worker whose current step overruns the per-candidate ``timeout``
  (plus a grace period: the worker's own ``SIGALRM`` limit normally fires
  first) and records ``timeout`` for that candidate;
* retries the candidate a worker was on when it died (segfault, out of
  memory, SIGKILL) once, alone, in a fresh worker, and records ``internal``
  ("worker process died") only when that worker dies too;
* in both cases re-queues the batch's other unfinished candidates one by one
  (when the worker was measuring several at once, each is retried alone, so
  only the culprit fails) and starts a replacement worker.

Workers die with the parent and ignore Ctrl-C (:mod:`ptxopt.support.workers`): the
parent, interrupted, kills them at once (what they committed stays in the
cache) instead of waiting for their batches.
"""

from __future__ import annotations

import math
import time
from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Sequence

from ptxopt.measure.backend import BackendUnavailable, is_pipelined
from ptxopt.measure.backend_registry import get_backend

from .batch import run_batch
from .cache import CacheError, EvalCache
from .candidate import Candidate, Settings
from ptxopt.evaluate.prepare import lookup
from .result import EvalResult
from .session import EvaluationSession

if TYPE_CHECKING:
    import multiprocessing as mp

#: Seconds a worker may run past the per-candidate limit before it is killed.
GRACE = 10.0


def run_many(candidates: Sequence[Candidate], settings: Settings, cache_path, *, workers: int = 0,
             on_result: Callable[[int, EvalResult], None] | None = None, executor=None) -> list[EvalResult]:
    """See :func:`ptxopt.evaluate.evaluate_many`."""
    backend = get_backend(settings.backend)  # BackendUnavailable before any work
    if not is_pipelined(backend):
        workers = min(workers, 1)  # one hardware measurement at a time: parallel kernels disturb timings
        if executor is not None and executor != "local":
            workers = 1  # on a cluster too (0 would mean every CPU); GPUs in parallel: ptxopt.executor.gpu_actors
    results: list[EvalResult | None] = [None] * len(candidates)

    def emit(i: int, r: EvalResult) -> None:
        results[i] = r
        if on_result is not None:
            on_result(i, r)

    cache = EvalCache(cache_path) if cache_path is not None else None
    try:
        todo = []
        for i, c in enumerate(candidates):
            hit = lookup(c, settings, cache) if cache is not None else None
            if hit is not None:
                emit(i, hit)
            else:
                todo.append(i)
        if not todo:
            return results  # type: ignore[return-value]
        # largest kernels first: their long ptxas and nvdisasm runs overlap the
        # small ones instead of trailing at the end (and the pool balances better);
        # a stable sort keeps each kernel's candidates together, in order
        todo.sort(key=lambda i: -len(candidates[i].ptx))
        if executor is not None and executor != "local":  # a Ray cluster, or a caller's executor
            size = max(1, min(settings.batch, math.ceil(len(todo) / (2 * max(1, workers or 4)))))
            _on_executor(executor, workers, candidates, settings, cache_path, list(_batches(todo, size)), emit,
                         cache)
        elif workers <= 0:  # one stream: run_batch chunks and pipelines it itself
            run_batch([candidates[i] for i in todo], settings, cache, indices=todo, on_result=emit)
        else:
            size = max(1, min(settings.batch, math.ceil(len(todo) / (2 * workers))))
            _Pool(candidates, settings, cache_path, cache, min(workers, len(todo)), emit).run(
                list(_batches(todo, size)))
    finally:
        if cache is not None:
            cache.close()
    return results  # type: ignore[return-value]


def _batches(items: list[int], size: int):
    size = max(1, size)
    for i in range(0, len(items), size):
        yield items[i: i + size]


# ---------------------------------------------------------------------------
# through an executor (ptxopt.executor): a batch per task, rows back to this process


def _batch_task(args):
    """One batch in a worker anywhere: evaluated against a private cache seeded with the
    driver's rows for its kernels; returns the results and the rows for the driver to write."""
    from ptxopt.evaluate.journal import Rows, new_rows, private_cache

    indices, batch, settings, seed = args
    if seed is None:  # no cache
        return run_batch(batch, settings, None, indices=indices), Rows()
    with private_cache(seed) as path:
        cache = EvalCache(path)
        try:
            out = run_batch(batch, settings, cache, indices=indices)
        finally:
            cache.close()
        return out, new_rows(path, seed)


def _on_executor(spec, workers: int, candidates, settings: Settings, cache_path, batches, emit,
                 cache: EvalCache | None = None) -> None:
    from ptxopt.executor import make_executor
    from ptxopt.evaluate.journal import Rows, merge_rows, seed_rows

    from .work import Work

    def seed(batch):
        if cache_path is None:
            return None
        rows = Rows()
        for label in dict.fromkeys(candidates[i].label for i in batch):
            part = seed_rows(cache_path, label)
            rows.results += part.results
            rows.pipelines += part.pipelines
        return rows

    suspects: list[int] = []

    def outcome(o, batches, alone: bool) -> None:
        if o.ok:
            results, rows = o.value
            merge_rows(cache_path, rows, cache=cache)  # written before the results are reported
            for i, r in zip(batches[o.index], results):
                emit(i, r)
        elif o.died and not alone:  # a batch's worker died twice: which candidate? each alone, once more
            suspects.extend(batches[o.index])
        else:  # the task raised, or one candidate's worker died on it every time: that candidate fails
            for i in batches[o.index]:
                why = o.error or o.died
                emit(i, Work(i, candidates[i], settings).finish("internal", error=f"evaluation task failed: {why}",
                                                                 cacheable=False))

    ex = make_executor(spec, workers)
    try:
        def run(group: list[list[int]], alone: bool) -> None:
            ex.run(_batch_task, [(b, [candidates[i] for i in b], settings, seed(b)) for b in group],
                   fatal=(BackendUnavailable, CacheError), on_outcome=lambda o: outcome(o, group, alone))

        run(batches, False)
        if suspects:
            run([[i] for i in suspects], True)
    finally:
        if ex is not spec:
            ex.close()


# ---------------------------------------------------------------------------
# the worker side


def _worker_main(conn, settings: Settings, cache_path, parent=None) -> None:
    from ptxopt.support.workers import become_worker

    become_worker(*(parent or ()))
    cache = EvalCache(cache_path) if cache_path is not None else None
    try:
        with EvaluationSession().active():  # the worker's own memos, for its whole life
            _serve(conn, settings, cache)
    except (EOFError, KeyboardInterrupt, BrokenPipeError):
        pass
    finally:
        if cache is not None:
            cache.close()


def _serve(conn, settings: Settings, cache: EvalCache | None) -> None:
    """A worker's loop: batches from ``conn`` until None."""
    while True:
        msg = conn.recv()
        if msg is None:
            break
        batch = [i for i, _ in msg]
        run_batch([c for _, c in msg], settings, _Forwarding(cache, conn) if cache is not None else None,
                  indices=batch,
                  on_start=lambda idx: conn.send(("start", idx)),
                  on_result=lambda i, r: conn.send(("result", i, r)))
        conn.send(("done",))


class _Forwarding:
    """A worker's view of the cache: reads from the file, writes sent to the parent (the one writer)."""

    def __init__(self, cache: EvalCache, conn):
        self._cache, self._conn = cache, conn

    def get(self, key):
        return self._cache.get(key)

    def resolve(self, pipeline_key):
        return self._cache.resolve(pipeline_key)

    def put(self, result: EvalResult, pipeline_key=None, ptx_sha256=None) -> None:
        self._conn.send(("put", result, pipeline_key, ptx_sha256))

    def alias(self, pipeline_key: str, result_key: str) -> None:
        self._conn.send(("alias", pipeline_key, result_key))


# ---------------------------------------------------------------------------
# the parent side


@dataclass
class _Worker:
    proc: mp.Process
    conn: object
    batch: list[int] | None = None
    unfinished: set[int] = field(default_factory=set)
    current: list[int] = field(default_factory=list)
    since: float = 0.0


class _Pool:
    def __init__(self, candidates, settings: Settings, cache_path, cache: EvalCache | None, n: int, emit):
        self.candidates = candidates
        self.settings = settings
        self.cache_path = cache_path
        self.cache = cache
        self.n = max(1, n)
        self.emit = emit
        # imported here: one stream (-j 0/1, the usual one-off eval) starts no process
        import multiprocessing as mp

        # fork (like the rest of ptxopt's pools): no re-import of the caller's
        # __main__, workers start in milliseconds with everything imported
        self.ctx = mp.get_context("fork" if "fork" in mp.get_all_start_methods() else "spawn")
        self.workers: list[_Worker] = []
        self.queue: deque[list[int]] = deque()
        self.retried: set[int] = set()

    def _spawn(self) -> _Worker:
        parent, child = self.ctx.Pipe()
        from ptxopt.support.workers import parent_info, starting_workers

        proc = self.ctx.Process(target=_worker_main, args=(child, self.settings, self.cache_path, parent_info()),
                                daemon=True, name="ptxopt-eval-worker")
        with starting_workers():
            proc.start()
        child.close()
        w = _Worker(proc, parent)
        self.workers.append(w)
        return w

    def _give(self, w: _Worker) -> None:
        if self.queue:
            w.batch = self.queue.popleft()
            w.unfinished = set(w.batch)
            w.current, w.since = [], time.monotonic()
            w.conn.send([(i, self.candidates[i]) for i in w.batch])
        else:
            w.batch = None
            try:
                w.conn.send(None)
            except (BrokenPipeError, OSError):
                pass

    def run(self, batches: list[list[int]]) -> None:
        from multiprocessing.connection import wait

        self.queue.extend(batches)
        finished = False
        try:
            for _ in range(min(self.n, len(self.queue))):
                self._spawn()
            for w in list(self.workers):
                self._give(w)
            while any(w.batch is not None for w in self.workers):
                busy = [w for w in self.workers if w.batch is not None]
                ready = wait([w.conn for w in busy], timeout=0.5)
                for w in busy:
                    if w.conn in ready:
                        self._drain(w)
                self._check(busy)
            finished = True
        finally:
            if not finished:  # interrupted or failed: stop now, do not wait for whole batches
                for w in self.workers:
                    if w.proc.is_alive():
                        w.proc.kill()
            for w in self.workers:
                if w.proc.is_alive():
                    try:
                        w.conn.send(None)
                    except (BrokenPipeError, OSError):
                        pass
            for w in self.workers:
                w.proc.join(timeout=5)
                if w.proc.is_alive():
                    w.proc.kill()
                    w.proc.join()

    def _drain(self, w: _Worker) -> None:
        while w.batch is not None and w.conn.poll():
            try:
                msg = w.conn.recv()
            except (EOFError, OSError):
                self._lost(w, died=True)
                return
            kind = msg[0]
            if kind == "put":  # the parent writes the cache (before the result it belongs to is reported)
                if self.cache is not None:
                    self.cache.put(*msg[1:])
            elif kind == "alias":
                if self.cache is not None:
                    self.cache.alias(*msg[1:])
            elif kind == "start":
                w.current, w.since = list(msg[1]), time.monotonic()
            elif kind == "result":
                _, i, r = msg
                w.unfinished.discard(i)
                if i in w.current:
                    w.current.remove(i)
                self.emit(i, r)
            elif kind == "done":
                self._give(w)

    def _check(self, busy: list[_Worker]) -> None:
        now = time.monotonic()
        limit = self.settings.timeout
        for w in busy:
            if w.batch is None:
                continue
            if not w.proc.is_alive():
                self._drain(w)  # it may have said everything before dying
                if w.batch is not None:
                    self._lost(w, died=True)
                continue
            if limit is not None and w.current:
                allowed = limit * len(w.current) + GRACE
                if now - w.since > allowed:
                    w.proc.kill()
                    w.proc.join()
                    self._lost(w, died=False)

    def _lost(self, w: _Worker, *, died: bool) -> None:
        """``w`` died or was killed: fail its culprit, re-queue the rest, replace it."""
        if w.proc.is_alive():
            w.proc.kill()
        w.proc.join()  # one read of the exit code, after it is known (no is_alive() race)
        code = w.proc.exitcode
        culprits = [i for i in w.current if i in w.unfinished]
        # a death may be the machine's (the OOM killer, a stray SIGKILL): the candidate it held is retried
        # once, alone, in a fresh worker, and fails only if its worker dies again; a time-out is not retried
        if culprits and (not died or all(i in self.retried for i in culprits)):
            for i in culprits:
                self._fail(i, died, code)
                w.unfinished.discard(i)
        requeue = sorted(w.unfinished)
        for i in reversed(requeue):
            self.retried.add(i)
            self.queue.appendleft([i])
        w.batch, w.unfinished, w.current = None, set(), []
        try:
            w.conn.close()
        except OSError:
            pass
        self.workers.remove(w)
        if self.queue:
            nw = self._spawn()
            self._give(nw)

    def _fail(self, i: int, died: bool, code) -> None:
        from .keys import request_key
        from .work import Work  # the one place results are built

        c = self.candidates[i]
        w = Work(i, c, self.settings)
        w.pkey = request_key(c, w.settings)  # the settings resolved for c: the key lookup() asks for
        if died:
            sig = f"signal {-code}" if isinstance(code, int) and code < 0 else f"exit status {code}"
            r = w.finish("internal", error=f"the worker process died ({sig}) while evaluating this candidate "
                                           "(retried once in a fresh worker)", cacheable=False)
        else:
            w.timings["limit"] = self.settings.timeout or 0
            r = w.finish("timeout", error=f"the candidate took longer than {self.settings.timeout:g} s; "
                                          "its worker process was killed")
            if self.cache is not None:
                self.cache.put(r, w.pkey)
        self.emit(i, r)


__all__ = ["run_many", "GRACE"]
