"""Evaluating a batch of candidates in one process: :func:`run_batch`.

Per candidate, the preparation (:mod:`ptxopt.evaluate.prepare`): pipeline
and cache lookups, parse, passes, print, ptxas in a helper thread and the
equivalence check.  Then, per chunk of ``Settings.batch`` candidates: the
backend measures every candidate still ``ok``
(:func:`ptxopt.measure.backend.measure_many`; the ``sim`` backend disassembles
the whole chunk with one nvdisasm run), and each result is committed to the
cache in its own transaction as soon as it is final.  :func:`run_batch`
pipelines this over helper threads when the backend is ``pipelined`` (see
there).  Time limits: :mod:`ptxopt.evaluate.deadline`.
"""

from __future__ import annotations

import time
from typing import Any, Callable, Sequence

from ptxopt.measure.backend import BackendUnavailable, MeasureError, MeasureJob, Measurement, is_pipelined, measure_many
from ptxopt.measure.backend_registry import get_backend
from ptxopt.support.session_state import in_context

from .cache import EvalCache
from .candidate import Candidate, Settings
from .deadline import CandidateTimeout, deadline
from ptxopt.evaluate.prepare import assumed_blocks, collect_compile, front, tools
from .keys import fingerprint
from .result import OK, EvalResult
from .work import Work, one_line


def run_batch(candidates: Sequence[Candidate], settings: Settings, cache: EvalCache | None, *,
              indices: Sequence[int] | None = None,
              on_start: Callable[[list[int]], None] | None = None,
              on_result: Callable[[int, EvalResult], None] | None = None) -> list[EvalResult]:
    """Evaluate ``candidates`` in this process; see the module doc.  Never raises
    for a candidate's failure (BackendUnavailable for an unusable backend is
    raised before any work).

    The work is pipelined over three threads: this one parses, runs the
    passes and checks equivalence, candidate after candidate; a helper runs
    ptxas (a subprocess) for each candidate as soon as it is printed; a second
    helper measures each chunk of ``settings.batch`` candidates once their
    ptxas runs are done (one nvdisasm run, then the model).  Results are
    committed here, as their chunk completes.  A backend that is not
    ``pipelined`` (hardware timings) measures in this thread, chunk after chunk.
    """
    b = Batcher(settings, cache, on_start=on_start, on_result=on_result)
    idx = list(indices) if indices is not None else list(range(len(candidates)))
    works = [Work(i, c, settings) for i, c in zip(idx, candidates)]
    size = max(1, settings.batch)
    for start in range(0, len(works), size):
        b.front(works[start: start + size])
        b.launch()
        b.drain(block=False)
    b.drain(block=True)
    return [w.result for w in works]


class Batcher:
    """The steps of :func:`run_batch`, for a caller that decides when candidates
    arrive and when a chunk is measured (:func:`run_batch`; the lockstep search's
    :class:`ptxopt.evaluate.stream.Stream`).

    :meth:`front` runs each candidate's preparation here (its ptxas run starts in
    the helper thread) and keeps the ones waiting for ptxas in the *open* chunk;
    :meth:`launch` hands the open chunk to the measure thread (a backend that is
    not ``pipelined``: collects and measures it here, at once); :meth:`drain`
    settles launched chunks in order -- commits each result to the cache and
    calls ``on_result(index, result)`` -- those already done, or all of them."""

    def __init__(self, settings: Settings, cache: EvalCache | None, *,
                 on_start: Callable[[list[int]], None] | None = None,
                 on_result: Callable[[int, EvalResult], None] | None = None) -> None:
        self.backend = get_backend(settings.backend)
        fingerprint(settings)
        self.settings, self.cache = settings, cache
        self.on_start, self.on_result = on_start, on_result
        self.overlap = is_pipelined(self.backend)
        self.open: list[Work] = []  # fronted, waiting for ptxas, not launched yet
        self.inflight: list[tuple[list[Work], Any]] = []  # chunks whose ptxas runs / measurement is under way

    def front(self, works: Sequence[Work]) -> None:
        for w in works:
            if self.on_start is not None:
                self.on_start([w.index])
            self._guarded(w, lambda w: front(w, self.cache), "passes and equivalence check")
            if w.ptxas_future is not None:
                self.open.append(w)
            elif w.result is not None:
                self._done(w)

    def launch(self) -> None:
        ready, self.open = self.open, []
        if not ready:
            return
        if self.overlap:
            self.inflight.append((ready, tools("measure").submit(in_context(_collect_and_measure, self.backend,
                                                                            ready, self.settings))))
            return
        if self.on_start is not None:
            self.on_start([w.index for w in ready])
        for w in ready:
            self._guarded(w, collect_compile, "ptxas")
        self._settle(ready, *_collect_and_measure(self.backend, ready, self.settings))

    def drain(self, block: bool, *, one: bool = False) -> int:
        """Settle launched chunks, oldest first: those done (``block``: all, or the oldest with ``one``)."""
        n = 0
        while self.inflight and (block or self.inflight[0][1].done()):
            chunk, fut = self.inflight.pop(0)
            if self.on_start is not None:
                self.on_start([w.index for w in chunk])
            out, seconds = fut.result()
            self._settle(chunk, out, seconds)
            n += 1
            if one:
                break
        return n

    def _done(self, w: Work) -> None:
        r = w.result
        if self.cache is not None and not w.from_cache and r.cacheable and r.key is not None:
            self.cache.put(r, w.pipeline_key(), w.ptx_sha)
        if self.on_result is not None:
            self.on_result(w.index, r)

    def _guarded(self, w: Work, step, what: str) -> None:
        settings = self.settings
        try:
            with deadline(settings.timeout):
                step(w)
        except CandidateTimeout:
            w.timings["limit"] = settings.timeout or 0
            w.finish("timeout", error=f"the candidate took longer than {settings.timeout:g} s ({what})")
        except Exception as e:  # a bug in the evaluator: a result, not a crash of the search
            from ptxopt.toolchain import is_transient

            if is_transient(e):  # ptxas crashed or hung inside a check: the tool's failure, never cached
                w.finish("toolchain", error=f"{what}: {one_line(e)}", cacheable=False)
                return
            w.finish("internal", error=f"evaluator error: {type(e).__name__}: {one_line(e)}", cacheable=False)

    def _settle(self, chunk: list[Work], out: list, seconds: float) -> None:
        measured = [w for w in chunk if w.result is None]
        _settle(measured, out, seconds / max(1, len(measured)), self.settings)
        for w in chunk:
            self._done(w)


def _collect_and_measure(backend, chunk: list[Work], settings: Settings) -> tuple[list, float]:
    """Wait for the chunk's ptxas runs, then measure the candidates still ``ok``."""
    for w in chunk:
        if w.ptxas_future is not None:
            try:
                collect_compile(w)
            except Exception as e:
                w.finish("internal", error=f"evaluator error: {type(e).__name__}: {one_line(e)}", cacheable=False)
    measured = [w for w in chunk if w.result is None]
    t = time.perf_counter()
    out = _measure(backend, measured, settings) if measured else []
    return out, time.perf_counter() - t


def _job(w: Work, settings: Settings) -> MeasureJob:
    """What the backend is given: the corpus entry when there is one, else the check launch."""
    given = w.check.interp_kwargs()
    spec = w.spec if w.spec is not None else given.get("spec")
    return MeasureJob(w.printed, w.settings.arch, spec, w.entry, w.compiled, w.module, given.get("geometry"),
                      settings.profile_loops, objective=w.settings.objective or "latency",
                      performance=w.performance, blocks=assumed_blocks(w), check_block=w.check.block,
                      l2=settings.l2, original=w.cand.rewritten_from or (w.cand.ptx if w.changed else None))


def _measure(backend, chunk: list[Work], settings: Settings) -> list:
    """The backend's verdicts for ``chunk`` (Measurements or exceptions); never raises."""
    jobs = [_job(w, settings) for w in chunk]
    try:
        with deadline(settings.timeout * len(chunk) if settings.timeout else None):
            out = list(measure_many(backend, jobs))
    except (CandidateTimeout, Exception) as e:
        out = [e] * len(chunk)
    need = [k for k, (w, m) in enumerate(zip(chunk, out))
            if isinstance(m, Measurement) and m.sass_instructions is None and w.compiled is not None]
    if need:
        out = _with_sass_counts(out, chunk, need)
    return out


def _settle(chunk: list[Work], out: list, share: float, settings: Settings) -> None:
    for w, m in zip(chunk, out):
        w.timings["backend"] = share
        if isinstance(m, Measurement):
            w.finish(OK, m=m)
        else:
            _backend_failure(w, m)


def _with_sass_counts(out: list, chunk: list[Work], need: list[int]) -> list:
    """Fill in the SASS instruction count a backend did not report, from one
    batched nvdisasm run for the chunk (cubins seen before: none,
    :func:`ptxopt.measure.cubin_memo.listings`)."""
    from dataclasses import replace

    from ptxopt.measure.cubin_memo import listings

    try:
        got = listings([chunk[k].compiled.cubin for k in need])
    except Exception:
        return out
    out = list(out)
    for k, lst in zip(need, got):
        if not isinstance(lst, Exception):
            out[k] = replace(out[k], sass_instructions=len(lst.functions.get(chunk[k].entry, ())))
    return out


def _backend_failure(w: Work, e: BaseException) -> None:
    from ptxopt.toolchain import ToolchainError, is_transient

    if is_transient(e):  # nvdisasm crashed, ran out of memory or hung: never cached, never 'unsupported'
        w.finish("toolchain", error=f"measuring: {one_line(e)}", cacheable=False)
    elif isinstance(e, CandidateTimeout):
        w.timings["limit"] = w.settings.timeout or 0
        w.finish("timeout", error=f"measuring took longer than {w.settings.timeout:g} s")
    elif isinstance(e, MeasureError):
        w.finish(e.category, error=one_line(e))
    elif isinstance(e, BackendUnavailable):
        w.finish("unsupported", error=one_line(e), cacheable=False)
    elif isinstance(e, ToolchainError):
        w.finish("unsupported", error=f"{w.settings.backend} backend: {one_line(e)}")
    else:
        w.finish("internal", error=f"{w.settings.backend} backend failed: {type(e).__name__}: {one_line(e)}",
                 cacheable=False)



__all__ = ["run_batch", "Batcher"]
