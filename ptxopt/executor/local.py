"""The default executor: worker processes on this machine (no Ray needed).

``workers=0`` runs every task in the driver's own process. Otherwise a
:class:`~concurrent.futures.ProcessPoolExecutor` of ``spawn``-ed workers
(a fresh interpreter: no inherited threads, locks or SQLite connections),
each made a well-behaved worker first (:func:`ptxopt.support.workers.become_worker`:
it dies with the driver and leaves Ctrl-C to it) and started inside
:func:`ptxopt.support.workers.starting_workers`.

``start_method=None`` takes the platform's default (``fork`` on Linux: no
re-import, for jobs that start no threads before forking).

A worker that dies breaks the whole pool (every pending future fails with
``BrokenProcessPool``), so each task touches a marker file as it starts: the
tasks whose marker exists were held by a worker and count as retried
(:class:`ptxopt.executor.interface.Executor`); the others never started and simply
go to the next pool.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Callable, Sequence

from ptxopt.executor.interface import Executor, Outcome, run_in_process, task_error


def _marked(job) -> object:
    fn, arg, mark = job
    Path(mark).touch()  # a worker that dies from now on held this task
    return fn(arg)


class LocalExecutor(Executor):
    kind = "local"
    same_host = True

    def __init__(self, workers: int = 0, *, start_method: str | None = "spawn"):
        self.workers = max(0, int(workers))
        self.start_method = start_method
        self._marks: tempfile.TemporaryDirectory | None = None
        self._pool = None

    def run(self, fn, args, **kw):
        self._new_marks()  # markers are per run: indices restart at 0
        try:
            return super().run(fn, args, **kw)
        finally:
            if self._marks is not None:
                self._marks.cleanup()
                self._marks = None

    def _new_marks(self) -> None:
        if self._marks is not None:
            self._marks.cleanup()
        self._marks = tempfile.TemporaryDirectory(prefix="ptxopt-tasks-")

    def _make_pool(self, n: int):
        from concurrent.futures import ProcessPoolExecutor
        from multiprocessing import get_context

        from ptxopt.support.workers import become_worker, parent_info

        return ProcessPoolExecutor(max_workers=n, mp_context=get_context(self.start_method),
                                   initializer=become_worker, initargs=parent_info())

    def _round(self, fn: Callable, args: Sequence, indices: list[int], fatal: tuple,
               record: Callable[[Outcome], None], *, fresh_worker: bool = False) -> list[tuple[int, bool]]:
        if self.workers <= 0:
            run_in_process(fn, args, indices, fatal, record)
            return []
        from concurrent.futures import as_completed
        from concurrent.futures.process import BrokenProcessPool

        from ptxopt.support.workers import starting_workers

        if self._marks is None:
            self._new_marks()
        marks = Path(self._marks.name)
        if fresh_worker:  # a suspect, alone, in a worker of its own
            pool = self._make_pool(1)
        else:  # the pool is kept between runs (a training epoch after another): workers start once
            if self._pool is None:
                self._pool = self._make_pool(self.workers)
            pool = self._pool
        broken: list[int] = []
        finished = False
        try:
            with starting_workers():  # submit starts the workers
                futures = {pool.submit(_marked, (fn, args[i], str(marks / str(i)))): i for i in indices}
            for fut in as_completed(futures):
                i = futures[fut]
                try:
                    value = fut.result()
                except BrokenProcessPool:  # a worker died: the base class retries, not failed here
                    broken.append(i)
                    continue
                except fatal:
                    raise
                except Exception as e:  # the task's own failure
                    record(Outcome(i, error=task_error(e)))
                    continue
                record(Outcome(i, value=value))
            finished = True
        finally:
            if not finished or broken or fresh_worker:  # interrupted, a worker died, or a one-off pool: end it
                _end(pool, kill=not finished or bool(broken))
                if pool is self._pool:
                    self._pool = None
        return [(i, (marks / str(i)).exists()) for i in sorted(broken, key=indices.index)]

    def close(self) -> None:
        if self._pool is not None:
            _end(self._pool, kill=False)
            self._pool = None
        if self._marks is not None:
            self._marks.cleanup()
            self._marks = None


def _end(pool, *, kill: bool) -> None:
    """Shut ``pool`` down; ``kill``: its workers now (interrupted, or one died: the rest are suspects too)."""
    # Taken before shutdown(), which drops the pool's reference to it.
    manager = getattr(pool, "_executor_manager_thread", None)
    if kill:
        for proc in list((getattr(pool, "_processes", None) or {}).values()):
            proc.kill()
    pool.shutdown(wait=not kill, cancel_futures=kill)
    if kill and manager is not None:
        # Let the pool's manager thread finish closing its wake-up pipe now. Left
        # running, it races CPython 3.11's exit hook (concurrent.futures.process.
        # _python_exit), which checks the pipe is open, then writes to it after the
        # thread closed it: "OSError: [Errno 9] Bad file descriptor" printed as a
        # traceback at exit on Ctrl-C or SIGTERM (seen under load). Its workers are
        # dead, so it ends at once; the bound only keeps a wedged thread from
        # holding exit.
        manager.join(timeout=5.0)


__all__ = ["LocalExecutor"]
