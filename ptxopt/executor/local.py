"""The default executor: worker processes on this machine (no Ray needed).

``workers=0`` runs every task in the driver's own process. Otherwise a
:class:`~concurrent.futures.ProcessPoolExecutor` of ``spawn``-ed workers
(a fresh interpreter: no inherited threads, locks or SQLite connections),
each made a well-behaved worker first (:func:`ptxopt.workers.become_worker`:
it dies with the driver and leaves Ctrl-C to it) and started inside
:func:`ptxopt.workers.starting_workers`.

A worker that dies breaks the whole pool (every pending future fails with
``BrokenProcessPool``), so each task touches a marker file as it starts: the
tasks whose marker exists were held by a worker and count as retried
(:class:`ptxopt.executor.base.Executor`); the others never started and simply
go to the next pool.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Callable, Sequence

from .base import Executor, Outcome, run_in_process, task_error


def _marked(job) -> object:
    fn, arg, mark = job
    Path(mark).touch()  # a worker that dies from now on held this task
    return fn(arg)


class LocalExecutor(Executor):
    kind = "local"
    same_host = True

    def __init__(self, workers: int = 0, *, start_method: str = "spawn"):
        self.workers = max(0, int(workers))
        self.start_method = start_method
        self._marks: tempfile.TemporaryDirectory | None = None

    def run(self, fn, args, **kw):
        self.close()  # markers are per run: indices restart at 0
        try:
            return super().run(fn, args, **kw)
        finally:
            self.close()

    def _round(self, fn: Callable, args: Sequence, indices: list[int], fatal: tuple,
               record: Callable[[Outcome], None], *, fresh_worker: bool = False) -> list[tuple[int, bool]]:
        if self.workers <= 0:
            run_in_process(fn, args, indices, fatal, record)
            return []
        from concurrent.futures import ProcessPoolExecutor, as_completed
        from concurrent.futures.process import BrokenProcessPool
        from multiprocessing import get_context

        from ptxopt.workers import become_worker, parent_info, starting_workers

        if self._marks is None:
            self._marks = tempfile.TemporaryDirectory(prefix="ptxopt-tasks-")
        marks = Path(self._marks.name)
        pool = ProcessPoolExecutor(max_workers=min(self.workers, len(indices)),
                                   mp_context=get_context(self.start_method),
                                   initializer=become_worker, initargs=parent_info())
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
            if not finished or broken:  # interrupted, or a worker died: kill the rest now
                for proc in list((getattr(pool, "_processes", None) or {}).values()):
                    proc.kill()
            pool.shutdown(wait=finished and not broken, cancel_futures=not finished or bool(broken))
        return [(i, (marks / str(i)).exists()) for i in sorted(broken, key=indices.index)]

    def close(self) -> None:
        if self._marks is not None:
            self._marks.cleanup()
            self._marks = None


__all__ = ["LocalExecutor"]
