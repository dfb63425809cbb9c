"""Running a strategy over many kernels: budgets, timing, worker processes.

:func:`search_kernel` runs one strategy on one kernel and never raises (a
kernel that cannot be parsed or whose baseline fails is a result with an
``error``). :func:`search_many` runs kernels in parallel worker processes
(each evaluates in-process; all share the SQLite cache), reporting each
kernel as it finishes.

Only candidates whose equivalence with the original was established (verdict
``identical``, ``hints-only``, ``proved`` or ``equal``) can be a kernel's best, unless
``EvalOptions.allow_unchecked``; the others are counted (``unchecked``) and
the note says why (see :mod:`ptxopt.search.measure`). Each result carries
the best pipeline's ``verdict``, its note, ``coverage`` and ``launch``, and the
``arch`` it was compiled for (the kernel's ``.target`` unless one was given).

``budget="greedy"`` gives every kernel the number of evaluations greedy
search spends on it (greedy is run first, and is all cache hits when it was
run before), which is how random search is compared with greedy fairly.
"""

from __future__ import annotations

import math
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field
from multiprocessing import get_context
from pathlib import Path
from typing import Callable, Sequence

from ptxopt.evaluate import BackendUnavailable, CacheError, Candidate
from ptxopt.workers import become_worker, parent_info, starting_workers

from .beam import beam
from .exhaustive import exhaustive
from .greedy import greedy
from .measure import EvalOptions, Meter
from .move_memo import memo_beside
from .random_search import random_search
from .state import State
from .trajectory import Step

STRATEGIES: dict[str, Callable] = {"greedy": greedy, "beam": beam, "random": random_search, "exhaustive": exhaustive}


@dataclass
class SearchConfig:
    strategy: str = "greedy"
    max_steps: int = 6
    budget: int | str | None = None  # evaluations per kernel; "greedy": what greedy spends
    beam_width: int = 4
    seed: int = 0
    options: EvalOptions = field(default_factory=EvalOptions)
    policy: str | None = None  # strategy "policy": a checkpoint of the learning layer (rl/)
    samples: int = 0  # policy: 0 = one greedy-decoded rollout, K = best of K (greedy-decoded + K-1 sampled)
    temperature: float = 0.5  # policy: sampling temperature of the K-1 samples
    #: pass actions explored besides the learning layer's (a user's plugin passes: ``--actions +name``);
    #: not for the policy, whose action list is fixed
    extra_actions: tuple[str, ...] = ()

    def __post_init__(self):
        if self.strategy == "policy":
            if not self.policy:
                raise ValueError("strategy 'policy' needs a checkpoint (policy=PATH)")
        elif self.strategy not in STRATEGIES:
            raise ValueError(f"unknown strategy {self.strategy!r}: use one of {', '.join(STRATEGIES)}")
        if self.extra_actions:
            from ptxopt.pipeline import Pipeline, PipelineError

            if self.strategy == "policy":
                raise ValueError("extra actions are not for --policy: its action list is the one it was trained on")
            for a in self.extra_actions:
                try:
                    one = len(Pipeline.parse(a)) == 1
                except PipelineError as e:
                    raise ValueError(f"action {a!r}: {e}") from None
                if not one:
                    raise ValueError(f"action {a!r} is not one pass")
        if isinstance(self.budget, str) and self.budget not in STRATEGIES:
            raise ValueError(f"budget must be a number or a strategy name, not {self.budget!r}")


@dataclass
class KernelResult:
    """One kernel's search, as reported (``steps``: its trajectory, not in :meth:`to_json`)."""

    kernel: str
    family: str | None
    strategy: str
    pipeline: str = ""
    baseline_cycles: float | None = None
    best_cycles: float | None = None
    evaluations: int = 0
    cache_hits: int = 0
    failures: dict = field(default_factory=dict)
    unchecked: int = 0  # ok candidates whose equivalence was not established (never best unless allowed)
    verdict: str | None = None  # the best pipeline's equivalence verdict (the baseline: identical)
    verdict_note: str | None = None  # its trials and launch, or why it is inconclusive
    coverage: float | None = None
    launch: str | None = None  # the launch the equivalence check used
    objective: str | None = None  # what the cycles are: latency (one warp) or throughput (the whole launch)
    performance: str | None = None  # the performance launch a throughput figure is for
    arch: str | None = None  # the architecture compiled for (resolved)
    budget: int | None = None
    wall_s: float = 0.0
    estimate: bool = True
    registers_before: int | None = None
    registers_after: int | None = None
    #: the spread of repeated measurements (the gpu backend's interquartile range, cycles) of the
    #: baseline and of the best pipeline; None for estimates (one deterministic model run)
    baseline_spread: float | None = None
    best_spread: float | None = None
    note: str | None = None
    error: str | None = None
    bad_input: bool = False  # the error is the input's (ptxas rejects the original), not the search's
    toolchain: bool = False  # ptxas/nvdisasm failed on their own (crash, out of memory, hang): nothing cached
    steps: list[Step] = field(default_factory=list, repr=False)

    @property
    def improvement_pct(self) -> float | None:
        """Cycles saved, in percent of the baseline's."""
        if not self.baseline_cycles or self.best_cycles is None:
            return None
        return 100.0 * (1.0 - self.best_cycles / self.baseline_cycles)

    @property
    def speedup(self) -> float | None:
        if not self.baseline_cycles or not self.best_cycles:
            return None
        return self.baseline_cycles / self.best_cycles

    def to_json(self) -> dict:
        d = asdict(self)
        del d["steps"]
        d["improvement_pct"] = self.improvement_pct
        d["speedup"] = self.speedup
        d["cycles_kind"] = "ESTIMATE" if self.estimate else "MEASUREMENT"
        return d


def _run(strategy: str, root: State, meter: Meter, config: SearchConfig):
    kw = dict(max_steps=config.max_steps, width=config.beam_width, seed=config.seed)
    if strategy == "policy":  # the learning layer drives the rollouts (torch is imported only there)
        from ptxopt import plugins

        policy_search = plugins.strategy("policy")  # rl.plugin registers it; ImportError without rl/torch
        return policy_search(root, meter, checkpoint=config.policy, samples=config.samples,
                             temperature=config.temperature, **kw)
    return STRATEGIES[strategy](root, meter, **kw)


def search_kernel(kernel: Candidate, config: SearchConfig, family: str | None = None) -> KernelResult:
    t0 = time.perf_counter()
    res = KernelResult(kernel.label, family, config.strategy, estimate=config.options.estimate)
    try:
        root = State.root(kernel, memo=memo_beside(config.options.cache), extra_actions=config.extra_actions)
        budget = config.budget
        if isinstance(budget, str):
            ref = Meter(config.options)
            _run(budget, root, ref, config)
            budget = ref.evaluations
        res.budget = budget
        meter = Meter(config.options, budget=budget)
        out = _run(config.strategy, root, meter, config)
    except (CacheError, BackendUnavailable):  # not this kernel's problem: the whole search stops
        raise
    except Exception as e:  # one kernel never kills a search
        res.error = f"{type(e).__name__}: {e}".splitlines()[0]
        res.wall_s = time.perf_counter() - t0
        return res
    guard = None
    if out.baseline.ok and not meter.usable(out.best_result):  # never ship what was not checked
        guard = (f"the {config.strategy} strategy proposed {out.best.pipeline} "
                 f"({out.best_result.status}, {out.best_result.equivalence}): refused, baseline reported")
        out.best, out.best_result = root, out.baseline
    res.pipeline = str(out.best.pipeline)
    res.baseline_cycles = out.baseline.cycles
    res.best_cycles = out.best_result.cycles
    res.registers_before, res.registers_after = out.baseline.registers, out.best_result.registers
    res.baseline_spread, res.best_spread = out.baseline.spread, out.best_result.spread
    res.evaluations, res.cache_hits, res.failures = meter.evaluations, meter.cache_hits, dict(meter.failures)
    res.steps = out.steps
    best = out.best_result
    res.unchecked, res.arch = meter.unchecked_total, best.arch
    res.objective, res.performance = out.baseline.objective, out.baseline.performance
    if best.ok:
        res.verdict, res.verdict_note = best.equivalence, best.equivalence_note
        res.coverage, res.launch = best.coverage, best.launch
    res.note = "; ".join(filter(None, [out.note, guard, meter.unchecked_note()])) or None
    transient = res.failures.get("toolchain", 0)
    if transient and out.baseline.ok:  # the search may have missed a better pipeline: say so, exit 5
        res.toolchain = True
        res.note = "; ".join(filter(None, [res.note, f"{transient} candidate(s) hit a toolchain failure (a crash, "
                                                       "out of memory, a hang); not cached: run again"]))
    if not out.baseline.ok:
        res.bad_input = bool(out.baseline.bad_input)
        res.toolchain = out.baseline.status == "toolchain"
        res.error = (f"bad input: {out.baseline.error}" if out.baseline.bad_input
                     else f"baseline {out.baseline.status}: {out.baseline.error}")
    res.wall_s = time.perf_counter() - t0
    return res


def _job(args) -> KernelResult:
    kernel, config, family, *started = args
    if started:  # a worker that dies from now on held this kernel (search_many retries it alone)
        Path(started[0]).touch()
    return search_kernel(kernel, config, family)


def search_many(kernels: Sequence[tuple[Candidate, str | None]], config: SearchConfig, *, workers: int = 0,
                on_result: Callable[[KernelResult], None] | None = None) -> list[KernelResult]:
    """Search every ``(kernel, family)``; results in input order. ``workers``
    processes (0: in this process); ``on_result`` is called as each finishes.

    A worker that dies (SIGKILL, out of memory, a segfault) breaks its pool:
    the kernels it and its siblings held are retried once, each alone in a
    fresh worker, and fail only if their worker dies again; kernels no worker
    had started yet go to a rebuilt pool, untouched."""
    jobs = [(k, config, fam) for k, fam in kernels]
    results: list[KernelResult | None] = [None] * len(jobs)

    def record(i: int, r: KernelResult) -> None:
        results[i] = r
        if on_result:
            on_result(r)

    if workers <= 0:
        for i, j in enumerate(jobs):
            record(i, _job(j))
        return results  # type: ignore[return-value]
    # largest kernels first, so the long ones do not trail at the end
    queue = sorted(range(len(jobs)), key=lambda i: -len(jobs[i][0].ptx))
    retried: set[int] = set()
    with tempfile.TemporaryDirectory(prefix="ptxopt-search-") as marks:
        while queue:
            fresh = [i for i in queue if i not in retried]
            again = [i for i in queue if i in retried]
            queue = []
            if fresh:
                broken = _round(fresh, jobs, workers, marks, record)
                held = [i for i in broken if Path(marks, str(i)).exists()]
                if broken and not held and len(broken) == len(fresh):  # no worker ever started: do not loop
                    held = broken
                retried.update(held)
                queue += broken
            for i in again:  # each suspect alone, in a fresh worker: only the culprit dies twice
                if _round([i], jobs, 1, marks, record):
                    k, _, fam = jobs[i]
                    record(i, KernelResult(k.label, fam, config.strategy,
                                           error="the worker process died while searching this kernel "
                                                 "(retried once in a fresh worker)"))
    return results  # type: ignore[return-value]


def _round(indices: list[int], jobs, workers: int, marks: str, record) -> list[int]:
    """Search ``indices`` in a pool of ``workers``; the indices whose pool broke (a worker died)."""
    from concurrent.futures.process import BrokenProcessPool

    # workers die with this process and leave Ctrl-C to it (ptxopt.workers)
    pool = ProcessPoolExecutor(max_workers=min(workers, len(indices)), mp_context=get_context("spawn"),
                               initializer=become_worker, initargs=parent_info())
    broken: list[int] = []
    finished = False
    try:
        with starting_workers():  # submit starts the workers
            futures = {pool.submit(_job, (*jobs[i], str(Path(marks, str(i))))): i for i in indices}
        for fut in as_completed(futures):
            i = futures[fut]
            try:
                r = fut.result()
            except BrokenProcessPool:  # a worker died: retried (search_many), not failed here
                broken.append(i)
                continue
            except (CacheError, BackendUnavailable):  # not one kernel's problem: stop the search
                raise
            except Exception as e:  # the kernel's job itself failed
                k, config, fam = jobs[i]
                r = KernelResult(k.label, fam, config.strategy, error=f"worker failed: {e!r}")
            record(i, r)
        finished = True
    finally:
        if not finished or broken:  # interrupted, or a worker died: kill the rest now (commits stay in the cache)
            for proc in list((getattr(pool, "_processes", None) or {}).values()):
                proc.kill()
        pool.shutdown(wait=finished and not broken, cancel_futures=not finished or bool(broken))
    return sorted(broken, key=indices.index)


def summarize(results: Sequence[KernelResult]) -> dict:
    """Mean/median/best/worst improvement, pass frequency, evaluations, hit rate."""
    import statistics
    from collections import Counter

    from ptxopt.pipeline import Pipeline

    ok = [r for r in results if r.error is None and r.improvement_pct is not None]
    imps = [r.improvement_pct for r in ok]
    freq: Counter = Counter()
    for r in ok:
        for p in Pipeline.parse(r.pipeline, allow_conflicts=True):  # maxnreg{n=96,override=True} holds a comma
            freq[p.name] += 1  # the alias or kind{params}, without options
    evals = sum(r.evaluations for r in results)
    hits = sum(r.cache_hits for r in results)
    failures: Counter = Counter()
    for r in results:
        failures.update(r.failures)
    verdicts = Counter(r.verdict for r in results if r.error is None and r.verdict)
    objectives = Counter(r.objective for r in results if r.objective)
    geo = [math.log(r.speedup) for r in ok if r.speedup]
    return {
        "kernels": len(results),
        "searched": len(ok),
        "errors": len(results) - len(ok),
        "improvement_pct": {
            "mean": statistics.fmean(imps) if imps else None,
            "median": statistics.median(imps) if imps else None,
            "best": max(imps) if imps else None,
            "worst": min(imps) if imps else None,
        },
        "geomean_speedup": math.exp(statistics.fmean(geo)) if geo else None,
        "improved": sum(1 for i in imps if i > 0),
        "pass_frequency": dict(freq.most_common()),
        "evaluations": evals,
        "evaluations_per_kernel": evals / len(results) if results else None,
        "cache_hits": hits,
        "cache_hit_rate": hits / evals if evals else None,
        "failures": dict(failures),
        "unchecked": sum(r.unchecked for r in results),
        "verdicts": dict(verdicts),
        "objectives": dict(objectives),
        "wall_s": sum(r.wall_s for r in results),
    }
