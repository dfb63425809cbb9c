"""Measuring a candidate: the reward of the search and RL layers.

One candidate = one kernel (its unoptimised PTX) + one pass pipeline.
:func:`evaluate` runs::

    passes (PassManager) -> print -> ptxas -> equivalence with the original
    (interpreter) -> cycles from a backend (sim: an ESTIMATE; gpu: a MEASUREMENT)

and returns an :class:`EvalResult` -- for failures too: ``status`` is ``ok``
or one of ``parse``, ``illegal``, ``ptxas``, ``mismatch``, ``fault``,
``timeout``, ``unsupported``, ``internal`` (see :mod:`ptxopt.evaluate.result`).
Nothing a candidate does raises out of :func:`evaluate` or
:func:`evaluate_many`; only a backend that cannot run at all does
(:class:`BackendUnavailable`, before any work).

Library use::

    from ptxopt.evaluate import Candidate, evaluate, evaluate_many

    r = evaluate(Candidate.from_corpus("gemm_tile_4x4x4", "vec_ld,maxnreg_128"))
    r.status, r.cycles, r.estimate, r.registers, r.spill_bytes, r.sass_instructions
    r.equivalence, r.cache_hit, r.timings        # {"pass", "ptxas", "verify", "backend", "total"}
    r.checked                                    # equivalence established: identical, hints-only, proved or equal

    evaluate(open("k.ptx").read(), "reorder_cp")  # outside the corpus: a one-thread launch
    results = evaluate_many([("corpus:gemm_tile_2x2x2", p) for p in pipelines], workers=2)

Options (keyword arguments of both functions): ``arch`` (default None: each
kernel's own ``.target``, else ``DEFAULT_ARCH``; see :func:`ptxopt.toolchain.arch.resolve_arch`),
``backend`` (``sim``; ``gpu`` when :mod:`ptxopt.gpu`, CuPy and a GPU are
there), ``cache`` (a path, an :class:`EvalCache`'s path, or None for no
cache; default :func:`default_cache_path`), ``trials`` (interpreter
launches compared), ``timeout`` (seconds per candidate), ``batch``
(candidates per nvdisasm run), ``profile_loops`` (sim: loop trip counts from
the interpreter), ``min_coverage`` (default :data:`ptxopt.equivalence.interpret.DEFAULT_MIN_COVERAGE`:
an ``equal`` below it is ``inconclusive``; None: never), ``prove`` (default True: try the
translation validator :mod:`ptxopt.equivalence.prove` first; a ``proved`` candidate is not interpreted; False:
the interpreter decides every changed candidate); ``evaluate_many`` also takes ``workers`` and
``on_result(index, result)``.

Cache: :mod:`ptxopt.evaluate.cache` (SQLite, WAL; key and schema documented
there).  Backends: :mod:`ptxopt.measure` (the :class:`Backend`
protocol, :func:`register_backend`; re-exported here).  The evaluation
itself: :mod:`ptxopt.evaluate.prepare` (passes, printing, ptxas,
equivalence; the passes from the longest evaluated prefix of the pipeline,
:mod:`ptxopt.evaluate.prefix`), :mod:`ptxopt.evaluate.batch` (measuring and committing a
batch), :mod:`ptxopt.evaluate.stream` (groups of candidates submitted over time,
for searches in lockstep), :mod:`ptxopt.evaluate.keys` (cache keys),
:mod:`ptxopt.evaluate.parallel` (worker processes).
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Iterable

from ptxopt.measure.backend import Backend, BackendUnavailable, MeasureError, MeasureJob, Measurement
from ptxopt.measure.backend_registry import backend_names, get_backend, register_backend
from ptxopt.measure.sim import SimBackend

from ptxopt.support.host_state import library_call

from .cache import SCHEMA, SCHEMA_VERSION, CacheError, EvalCache, default_cache_path
from .candidate import DEFAULT_BATCH, DEFAULT_TIMEOUT, Candidate, Settings, as_candidate
from .keys import module_key, pipeline_key
from .result import EQUIVALENCE, FAILURES, OK, STATUSES, TRUSTED, VERDICTS, EvalResult
from .session import EvaluationSession

#: ``cache=DEFAULT_CACHE`` (the default) means :func:`default_cache_path`.
DEFAULT_CACHE = "default"


def _settings(arch=None, backend="sim", trials=None, timeout=DEFAULT_TIMEOUT, batch=DEFAULT_BATCH,
              profile_loops=True, min_coverage=Settings.min_coverage, prove=True, objective=None,
              l2="cold") -> Settings:
    from ptxopt.equivalence.trial_budget import DEFAULT_TRIALS

    from .candidate import OBJECTIVES

    if objective is not None and objective not in OBJECTIVES:
        raise ValueError(f"unknown objective {objective!r} (one of: {', '.join(OBJECTIVES)})")
    if l2 not in ("cold", "warm"):
        raise ValueError(f"unknown L2 state {l2!r} (cold or warm)")
    return Settings(arch=arch, backend=backend, trials=trials or DEFAULT_TRIALS, timeout=timeout,
                    batch=batch, profile_loops=profile_loops, min_coverage=min_coverage, prove=prove,
                    objective=objective, l2=l2)


def _cache_path(cache) -> Path | None:
    if cache is None or cache is False:
        return None
    if cache == DEFAULT_CACHE:
        return default_cache_path()
    if isinstance(cache, EvalCache):
        return cache.path
    return Path(cache).expanduser()


@library_call
def evaluate(candidate, pipeline: str | None = None, *, cache=DEFAULT_CACHE, **options) -> EvalResult:
    """Evaluate one candidate in this process.

    ``candidate``: a :class:`Candidate`, PTX text (then ``pipeline`` is the
    pipeline string), ``corpus:ID``, or a corpus KernelSpec.
    The caller's signal handlers, ``ITIMER_REAL``, ``sys.stdout``, GC state
    and environment are as they were on return (:mod:`ptxopt.support.host_state`).
    """
    if not isinstance(candidate, Candidate):
        candidate = as_candidate((candidate, pipeline or ""))
    elif pipeline is not None:
        from dataclasses import replace

        candidate = replace(candidate, pipeline=pipeline)
    return evaluate_many([candidate], workers=0, cache=cache, **options)[0]


@library_call
def evaluate_many(items: Iterable, *, workers: int = 0, cache=DEFAULT_CACHE,
                  on_result: Callable[[int, EvalResult], None] | None = None, executor=None,
                  session: EvaluationSession | None = None, **options) -> list[EvalResult]:
    """Evaluate candidates (see :func:`as_candidate` for the accepted item
    forms) and return their results in order.  ``workers=0`` runs in this
    process; ``N >= 1`` uses N worker processes (this process writes the cache).
    ``executor`` (``"ray"``, ``"ray:ADDRESS"``, a :class:`ptxopt.executor.Executor`):
    batches of candidates as tasks there instead (:mod:`ptxopt.executor`).
    ``session``: the :class:`EvaluationSession` whose memos this call uses
    and fills (default: the active one; worker processes use their own)."""
    from .parallel import run_many

    candidates = [as_candidate(i) for i in items]
    with (session or EvaluationSession.current()).active():
        return run_many(candidates, _settings(**options), _cache_path(cache), workers=workers,
                        on_result=on_result, executor=executor)


__all__ = [
    "evaluate", "evaluate_many", "Candidate", "Settings", "EvalResult", "Measurement", "Backend", "SimBackend",
    "BackendUnavailable", "MeasureError", "MeasureJob", "register_backend", "get_backend", "backend_names",
    "EvalCache", "CacheError", "SCHEMA", "SCHEMA_VERSION", "default_cache_path", "DEFAULT_CACHE",
    "DEFAULT_TIMEOUT", "DEFAULT_BATCH", "OK", "FAILURES", "STATUSES", "EQUIVALENCE",
    "VERDICTS", "TRUSTED",
    "module_key", "pipeline_key", "as_candidate", "EvaluationSession",
]
