"""One executor interface for every parallel job, and the failure rules all executors share.

Why one: ``search -j`` over kernels, ``eval -j`` over candidates, Triton-cache
tuning (a ``search`` over a cache directory) and a cluster run are the same
job -- call a function on many arguments somewhere else and bring the
results back -- and the rules for what may go wrong must not differ between
them:

* **A task's own failure is a result.** A task that raises (anything but a
  *fatal* exception, see below) is reported as :attr:`Outcome.error` for its
  index; the other tasks go on. One failing candidate never kills a search.
* **A worker's death is retried once, alone.** A worker process that dies
  (SIGKILL, out of memory, a segfault; on Ray a crashed worker or a lost
  node) may be the machine's fault, so each task it held is run once more in
  a fresh worker, alone (so that only the culprit can die twice), and is
  reported as :attr:`Outcome.died` only when that worker dies too. Tasks that
  never started are run again without counting as a retry.
* **Fatal exceptions stop everything.** The caller names the exceptions that
  are not one task's problem (an unusable cache, a backend that cannot run):
  they propagate from :meth:`Executor.run` at once.
* **Workers run the driver's code.** A worker that started after ptxopt's
  source changed (a merge into the tree a long search runs from, another
  install on a cluster node) would evaluate with other code and key its rows
  by other digests than the driver's: equal cycles under other cache keys, or
  a search mixing two versions. Each task out of process first compares the
  worker's :func:`~ptxopt.support.digests.package_digest` with the driver's
  and raises :class:`CodeMismatch` (fatal: the run stops) when they differ.
* **Interrupts stop the workers now.** Ctrl-C or SIGTERM (a
  ``KeyboardInterrupt`` in the driver, :mod:`ptxopt.cli.termination`) makes
  the executor kill or cancel what runs and re-raise; the driver then writes
  what finished and exits 130 or 143.

An executor only moves arguments and return values. State on disk (the
SQLite evaluation cache, the move memo) belongs to the driver, the process
that called :meth:`Executor.run`: workers return the rows they would have
written (:mod:`ptxopt.evaluate.journal`) and the driver writes them.

Concrete executors implement :meth:`Executor._round`: run a set of tasks once
and say which died. :meth:`Executor.run` applies the rules above on top.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any, Callable, Iterable, Sequence

#: how the worker of a task that died twice is described when the executor says nothing better
DIED = "the worker process died while running this task (retried once in a fresh worker)"


@dataclass
class Outcome:
    """What became of one task: exactly one of ``value`` (it returned), ``error``
    (it raised: a one-line description) or ``died`` (its worker died twice)."""

    index: int
    value: Any = None
    error: str | None = None
    died: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None and self.died is None


class CodeMismatch(RuntimeError):
    """A worker runs other ptxopt code than its driver (see the module doc)."""


def same_code_call(fn: Callable, driver: str, arg):
    """``fn(arg)`` in a worker whose ptxopt source has the driver's digest ``driver``; else
    :class:`CodeMismatch`."""
    from ptxopt.support.digests import package_digest

    mine = package_digest()
    if mine != driver:
        raise CodeMismatch(f"a worker runs other ptxopt code than the driver (source digest {mine}, the driver's "
                           f"{driver}): ptxopt's source changed after the driver started, or the worker has "
                           f"another install; its results would be keyed by other digests. Run again from a "
                           f"tree that does not change during the run")
    return fn(arg)


class Executor:
    """Runs ``fn(arg)`` for many arguments; see the module doc for the rules.

    ``fn`` must be a module-level function and ``arg`` picklable (they travel
    to another process, or another machine)."""

    #: "local" or "ray"; what reports and ``--json`` say
    kind = "abstract"
    #: tasks run at the same time (0: in the driver's own process)
    workers = 0
    #: do the workers share this machine's file system with the driver?
    same_host = True

    def run(self, fn: Callable, args: Sequence, *, fatal: tuple[type[BaseException], ...] = (),
            on_outcome: Callable[[Outcome], None] | None = None, order: Sequence[int] | None = None) -> list[Outcome]:
        """Run ``fn(args[i])`` for every ``i``; outcomes in input order, each also
        passed to ``on_outcome`` as it is known. ``order``: the order in which to
        start tasks (default: input order)."""
        outcomes: list[Outcome | None] = [None] * len(args)
        if self.out_of_process:
            from ptxopt.support.digests import package_digest

            fn, fatal = partial(same_code_call, fn, package_digest()), (*fatal, CodeMismatch)

        def record(o: Outcome) -> None:
            outcomes[o.index] = o
            if on_outcome is not None:
                on_outcome(o)

        queue = list(order) if order is not None else list(range(len(args)))
        retried: set[int] = set()
        while queue:
            fresh = [i for i in queue if i not in retried]
            again = [i for i in queue if i in retried]
            queue = []
            if fresh:
                died = self._round(fn, args, fresh, fatal, record)
                held = [i for i, started in died if started]
                if died and not held and len(died) == len(fresh):  # nothing ever started: do not loop
                    held = [i for i, _ in died]
                retried.update(held)
                queue += [i for i, _ in died]
            for i in again:  # each suspect alone, in a fresh worker: only the culprit dies twice
                for j, _ in self._round(fn, args, [i], fatal, record, fresh_worker=True):
                    record(Outcome(j, died=DIED))
        return outcomes  # type: ignore[return-value]

    @property
    def out_of_process(self) -> bool:
        """Do the tasks run in other processes than the driver's?"""
        return self.workers > 0

    def _round(self, fn: Callable, args: Sequence, indices: list[int], fatal: tuple,
               record: Callable[[Outcome], None], *, fresh_worker: bool = False) -> list[tuple[int, bool]]:
        """Run ``indices`` once, calling ``record`` for each that returned or
        raised; return ``(index, started)`` for each whose worker died."""
        raise NotImplementedError

    def close(self) -> None:
        """Give back what the executor holds (worker processes, a cluster connection)."""

    def describe(self) -> str:
        return f"{self.kind} ({self.workers} workers)" if self.workers else f"{self.kind} (in process)"

    def __enter__(self) -> "Executor":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def task_error(e: BaseException) -> str:
    """One line for a task that raised."""
    return f"{type(e).__name__}: {e}".splitlines()[0]


def run_in_process(fn: Callable, args: Sequence, indices: Iterable[int], fatal: tuple,
                   record: Callable[[Outcome], None]) -> None:
    """The rules in the driver's own process (no worker can die but the driver)."""
    for i in indices:
        try:
            value = fn(args[i])
        except fatal:
            raise
        except Exception as e:  # the task's own failure: a result
            record(Outcome(i, error=task_error(e)))
            continue
        record(Outcome(i, value=value))


__all__ = ["Executor", "Outcome", "DIED", "CodeMismatch", "same_code_call", "task_error", "run_in_process"]
