"""Running a strategy over many kernels: budgets, timing, worker processes.

:func:`search_kernel` runs one strategy on one kernel and never raises (a
kernel that cannot be parsed or whose baseline fails is a result with an
``error``). :func:`search_many` runs kernels through an executor
(:mod:`ptxopt.executor`: worker processes here, or a Ray cluster), reporting
each kernel as it finishes; the workers return their cache rows and this
process writes them.

Only candidates whose equivalence with the original was established (verdict
``identical``, ``hints-only``, ``proved`` or ``equal``) can be a kernel's best, unless
``EvalOptions.allow_unchecked``; the others are counted (``unchecked``) and
the note says why (see :mod:`ptxopt.search.meter`). Each result carries
the best pipeline's ``verdict``, its note, ``coverage`` and ``launch``, and the
``arch`` it was compiled for (the kernel's ``.target`` unless one was given).

``budget="greedy"`` gives every kernel the number of evaluations greedy
search spends on it (greedy is run first, and is all cache hits when it was
run before), which is how random search is compared with greedy fairly.
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, field
from typing import Callable, Sequence

from ptxopt.evaluate import BackendUnavailable, CacheError, Candidate

from .beam import beam, beam_steps
from .exhaustive import exhaustive, exhaustive_steps
from .greedy import greedy, greedy_steps
from .guided import guided, guided_steps
from ptxopt.search.meter import EvalOptions, Meter
from ptxopt.evaluate.move_memo import memo_beside
from .random_search import random_search, random_steps
from .state import State
from .stepwise import lockstep as run_lockstep
from .trajectory import Step

STRATEGIES: dict[str, Callable] = {"greedy": greedy, "beam": beam, "random": random_search, "exhaustive": exhaustive,
                                   "guided": guided}
#: The strategies' stepwise forms (:mod:`ptxopt.search.stepwise`): in one process, ``search_many``
#: searches kernels in lockstep with them (one evaluation per step for a group of kernels).
STEPWISE: dict[str, Callable] = {"greedy": greedy_steps, "beam": beam_steps, "exhaustive": exhaustive_steps,
                                 "random": random_steps, "guided": guided_steps}
#: Kernels searched in lockstep at most: their search trees are in memory together, and each
#: group's results are reported when its last kernel is done.
LOCKSTEP_KERNELS = 8


@dataclass
class SearchConfig:
    strategy: str = "greedy"
    max_steps: int = 6
    budget: int | str | None = None  # evaluations per kernel; "greedy": what greedy spends
    beam_width: int = 4
    seed: int = 0
    options: EvalOptions = field(default_factory=EvalOptions)
    policy: str | None = None  # strategy "policy": a checkpoint of the learning layer (rl/); "guided": a ranker
    top_k: int | None = None  # guided: actions measured per step in the ranker's order, + 1 random (None: the ranker's)
    threshold: float | None = None  # guided: the smallest predicted option value worth measuring (None: the ranker's)
    samples: int = 0  # policy: 0 = one greedy-decoded rollout, K = best of K (greedy-decoded + K-1 sampled)
    temperature: float = 0.5  # policy: sampling temperature of the K-1 samples
    #: pass actions explored besides the learning layer's (a user's plugin passes: ``--actions +name``);
    #: not for the policy, whose action list is fixed
    extra_actions: tuple[str, ...] = ()
    #: built-in pass actions left out of the search (``--actions -name``)
    dropped_actions: tuple[str, ...] = ()
    #: the smallest gain (percent of the baseline's cycles) reported as the kernel's pipeline;
    #: None: :data:`ptxopt.evaluate.pair.MIN_IMPROVEMENT_PCT`
    min_improvement: float | None = None

    def __post_init__(self):
        if self.strategy == "policy":
            if not self.policy:
                raise ValueError("strategy 'policy' needs a checkpoint (policy=PATH)")
        elif self.strategy == "guided" and not self.policy:
            raise ValueError("strategy 'guided' needs a ranker (policy=PATH or a committed ranker's name)")
        elif self.strategy not in STRATEGIES:
            raise ValueError(f"unknown strategy {self.strategy!r}: use one of {', '.join(STRATEGIES)}")
        if self.extra_actions:
            from ptxopt.passes.pipeline import Pipeline, PipelineError

            if self.strategy == "policy":
                raise ValueError("extra actions are not for --policy: its action list is the one it was trained on")
            for a in self.extra_actions:
                try:
                    one = len(Pipeline.parse(a)) == 1
                except PipelineError as e:
                    raise ValueError(f"action {a!r}: {e}") from None
                if not one:
                    raise ValueError(f"action {a!r} is not one pass")
        if self.dropped_actions:
            from ptxopt.search.actions import PASS_ACTIONS

            if self.strategy == "policy":
                raise ValueError("dropped actions are not for --policy: its action list is the one it was trained on")
            unknown = [a for a in self.dropped_actions if a not in PASS_ACTIONS]
            if unknown:
                raise ValueError(f"cannot drop {', '.join(map(repr, unknown))}: not a built-in action "
                                 f"(actions: {', '.join(PASS_ACTIONS)})")
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
    #: throughput: the DRAM floor's input of the baseline and of the best pipeline
    #: (``{"source": counts|exact|extrapolated|unknown, "floor_bytes"}``; floor_bytes None: no DRAM floor,
    #: the gain may be below what DRAM allows)
    footprint_before: dict | None = None
    footprint_after: dict | None = None
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


#: Rankers loaded in this process, by the name or path they were asked for.
_RANKERS: dict = {}


def ranker_for(name: str):
    """The ranker ``name`` (a path or a committed ranker's name), loaded once per process;
    :class:`ptxopt.search.ranker.RankerError` when it is not one."""
    if name not in _RANKERS:
        from .ranker import resolve

        _RANKERS[name] = resolve(name)
    return _RANKERS[name]


def _kw(strategy: str, config: SearchConfig) -> dict:
    kw = dict(max_steps=config.max_steps, width=config.beam_width, seed=config.seed)
    if strategy == "guided":
        kw.update(ranker=ranker_for(config.policy), top_k=config.top_k, threshold=config.threshold)
    return kw


def _run(strategy: str, root: State, meter: Meter, config: SearchConfig):
    kw = _kw(strategy, config)
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
        root, meter = _prepare(kernel, config, res)
        out = _run(config.strategy, root, meter, config)
    except _FATAL:  # not this kernel's problem: the whole search stops
        raise
    except Exception as e:  # one kernel never kills a search
        return _failed(res, e, time.perf_counter() - t0)
    return _report(res, root, meter, out, config, time.perf_counter() - t0)


#: Errors that stop a whole search (an unusable cache or backend), not one kernel's.
_FATAL = (CacheError, BackendUnavailable)


def _prepare(kernel: Candidate, config: SearchConfig, res: KernelResult) -> tuple[State, Meter]:
    """The root state (parsed) and the meter a kernel's search runs with (its budget resolved)."""
    root = State.root(kernel, memo=memo_beside(config.options.cache), extra_actions=config.extra_actions,
                      dropped_actions=config.dropped_actions, timeout=config.options.timeout)
    budget = config.budget
    if isinstance(budget, str):
        ref = Meter(config.options)
        _run(budget, root, ref, config)
        budget = ref.evaluations
    res.budget = budget
    return root, Meter(config.options, budget=budget)


def _failed(res: KernelResult, e: BaseException, seconds: float) -> KernelResult:
    res.error = f"{type(e).__name__}: {e}".splitlines()[0]
    res.wall_s = seconds
    return res


def _below_min_improvement(out, config: SearchConfig) -> str | None:
    """Why the best pipeline is not worth reporting (its gain under the minimum), else None."""
    from ptxopt.evaluate.stages import MIN_IMPROVEMENT_PCT, worth_making

    floor = MIN_IMPROVEMENT_PCT if config.min_improvement is None else config.min_improvement
    before, after = out.baseline.cycles, out.best_result.cycles
    if not out.baseline.ok or not out.best.pipeline or not before or after is None:
        return None
    change = after / before - 1.0
    if worth_making(change, floor):
        return None
    return (f"no change worth making: the best pipeline {out.best.pipeline} gains {-100 * change:.3g}% "
            f"({before:g} -> {after:g} cycles), below --min-improvement {floor:g}%")


def _report(res: KernelResult, root: State, meter: Meter, out, config: SearchConfig, seconds: float) -> KernelResult:
    """Fill ``res`` from a strategy's outcome."""
    guard = None
    if out.baseline.ok and not meter.usable(out.best_result):  # never ship what was not checked
        guard = (f"the {config.strategy} strategy proposed {out.best.pipeline} "
                 f"({out.best_result.status}, {out.best_result.equivalence}): refused, baseline reported")
        out.best, out.best_result = root, out.baseline
    small = _below_min_improvement(out, config)
    if small:
        guard = "; ".join(filter(None, [guard, small]))
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
    res.footprint_before, res.footprint_after = out.baseline.footprint, out.best_result.footprint
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
    res.wall_s = seconds
    return res


def _groups(kernels: Sequence[tuple[Candidate, str | None]]) -> list[list[int]]:
    """Consecutive groups of at most :data:`LOCKSTEP_KERNELS` kernels, no two with the same text
    (searched one after the other, the second would read the first's results from the cache)."""
    groups: list[list[int]] = []
    texts: set[str] = set()
    for i, (k, _) in enumerate(kernels):
        if not groups or len(groups[-1]) >= LOCKSTEP_KERNELS or k.ptx in texts:
            groups.append([])
            texts = set()
        groups[-1].append(i)
        texts.add(k.ptx)
    return groups


def _search_lockstep(kernels: Sequence[tuple[Candidate, str | None]], config: SearchConfig) -> list[KernelResult]:
    """:func:`search_kernel` for each kernel, the kernels advanced in lockstep. A kernel's ``wall_s``
    is its own Python time plus its share of each evaluation (by candidates)."""
    from ptxopt.evaluate import evaluate_many
    from ptxopt.evaluate.stream import Stream

    out, jobs, searched = [], [], []
    kw = _kw(config.strategy, config)
    for k, fam in kernels:
        t0 = time.perf_counter()
        res = KernelResult(k.label, fam, config.strategy, estimate=config.options.estimate)
        out.append(res)
        try:
            root, meter = _prepare(k, config, res)
        except _FATAL:
            raise
        except Exception as e:  # one kernel never kills a search
            _failed(res, e, time.perf_counter() - t0)
            continue
        jobs.append((STEPWISE[config.strategy](root, meter, **kw), meter))
        searched.append((res, root, meter, time.perf_counter() - t0))
    evaluate = lambda cands: evaluate_many(cands, workers=0, **config.options.kwargs())  # noqa: E731
    done_all = []
    if jobs:  # (no stream, no cache opened, when every kernel failed before its search)
        with Stream(**config.options.kwargs()) as stream:
            done_all = run_lockstep(jobs, evaluate, stream=stream, fatal=_FATAL)
    for (res, root, meter, prep), done in zip(searched, done_all):
        if done.error is not None:
            _failed(res, done.error, prep + done.seconds)
        else:
            _report(res, root, meter, done.outcome, config, prep + done.seconds)
    return out


def _job(args):
    """One kernel in a worker (any executor): searched against a private cache seeded with the
    driver's rows for it; returns the result and the rows the driver is to write (ptxopt.evaluate.journal)."""
    from dataclasses import replace

    from ptxopt.evaluate.journal import Rows, new_rows, private_cache

    kernel, config, family, seed = args
    if config.options.cache is None:
        return search_kernel(kernel, config, family), Rows()
    with private_cache(seed) as path:
        res = search_kernel(kernel, replace(config, options=replace(config.options, cache=str(path))), family)
        return res, new_rows(path, seed)


def search_many(kernels: Sequence[tuple[Candidate, str | None]], config: SearchConfig, *, workers: int = 0,
                on_result: Callable[[KernelResult], None] | None = None, executor=None,
                lockstep: bool = True) -> list[KernelResult]:
    """Search every ``(kernel, family)``; results in input order. ``on_result``
    is called as each finishes.

    In this process (no executor, ``workers=0``) and in the one worker of
    ``workers=1``, a strategy with a stepwise form (:data:`STEPWISE`; no
    budget named after a strategy) searches up to :data:`LOCKSTEP_KERNELS`
    kernels at a time in lockstep (:func:`ptxopt.search.stepwise.lockstep`):
    their candidates share one evaluation stream. The results are those of
    searching them one after the other (``lockstep=False``); each group's are
    reported, in input order, when the group is done. (With ``workers=1``, a
    group whose task fails or whose worker dies twice is searched again one
    kernel per task, so that the usual rules below apply per kernel.)

    ``executor`` (:func:`ptxopt.executor.make_executor`: None/``"local"``,
    ``"ray"``, ``"ray:ADDRESS"`` or an :class:`~ptxopt.executor.Executor`)
    with ``workers`` tasks at a time; with neither (``workers=0``) every kernel
    is searched in this process. Through an executor, each kernel is searched
    against a private cache seeded with this process's rows for it, and this
    process -- the only writer of the cache and the move memo -- stores the
    rows each worker returns, as each kernel finishes (:mod:`ptxopt.evaluate.journal`).

    The executor's rules (:mod:`ptxopt.executor.interface`): a kernel whose
    search raises is a result with an ``error``; a worker that dies (SIGKILL,
    out of memory, a segfault, a lost node) gets the kernels it held retried
    once, each alone in a fresh worker, failing only if their worker dies
    again; an unusable cache or backend stops the whole search."""
    results: list[KernelResult | None] = [None] * len(kernels)

    def record(i: int, r: KernelResult) -> None:
        results[i] = r
        if on_result:
            on_result(r)

    if executor is None and workers <= 0:
        if lockstep and config.strategy in STEPWISE and not isinstance(config.budget, str):
            for group in _groups(kernels):
                for i, r in zip(group, _search_lockstep([kernels[i] for i in group], config)):
                    record(i, r)
        else:
            for i, (k, fam) in enumerate(kernels):
                record(i, search_kernel(k, config, fam))
        return results  # type: ignore[return-value]
    from ptxopt.executor import make_executor
    from ptxopt.evaluate.journal import cache_file, merge_rows, seed_rows

    cache = cache_file(config.options.cache)
    db = None
    if cache is not None:  # the driver's one connection; an unusable cache stops the search before any worker starts
        from ptxopt.evaluate.cache import EvalCache

        db = EvalCache(cache)
    args = [(k, config, fam, seed_rows(cache, k.label)) for k, fam in kernels]

    def outcome(o, i: int | None = None) -> None:
        i = o.index if i is None else i
        k, fam = kernels[i]
        if o.ok:
            r, rows = o.value
            merge_rows(cache, rows, cache=db)
        elif o.died:
            r = KernelResult(k.label, fam, config.strategy,
                             error="the worker process died while searching this kernel (retried once in a fresh worker)")
        else:  # the kernel's job itself failed
            r = KernelResult(k.label, fam, config.strategy, error=f"worker failed: {o.error}")
        record(i, r)

    todo = list(range(len(kernels)))
    ex = make_executor(executor, workers)
    try:
        if lockstep and executor is None and workers == 1 and config.strategy in STEPWISE \
                and not isinstance(config.budget, str):
            todo = _in_groups(ex, kernels, args, config, record, cache, db)
        # largest kernels first, so the long ones do not trail at the end
        order = sorted(range(len(todo)), key=lambda j: -len(kernels[todo[j]][0].ptx))
        if todo:
            ex.run(_job, [args[i] for i in todo], fatal=_FATAL, on_outcome=lambda o: outcome(o, todo[o.index]),
                   order=order)
    finally:
        if ex is not executor:  # made here: closed here (a caller's executor is the caller's)
            ex.close()
        if db is not None:
            db.close()
    return results  # type: ignore[return-value]


def _group_job(args):
    """Several kernels searched in lockstep in one worker, against one private cache seeded with the
    driver's rows for all of them; returns their results and the rows the driver is to write."""
    from dataclasses import replace

    from ptxopt.evaluate.journal import Rows, new_rows, private_cache

    items, config = args
    kernels = [(k, fam) for k, fam, _ in items]
    if config.options.cache is None:
        return _search_lockstep(kernels, config), Rows()
    seed = Rows(list(dict.fromkeys(r for _, _, s in items for r in s.results)),
                list(dict.fromkeys(p for _, _, s in items for p in s.pipelines)))
    with private_cache(seed) as path:
        res = _search_lockstep(kernels, replace(config, options=replace(config.options, cache=str(path))))
        return res, new_rows(path, seed)


def _in_groups(ex, kernels, args, config: SearchConfig, record, cache, db) -> list[int]:
    """``-j 1``: the one worker searches the kernels in lockstep groups (:func:`_groups`), one task
    per group; the kernels of a group whose task failed or whose worker died (twice) are returned,
    to be searched one per task (the executor's usual rules: only the culprit fails)."""
    from ptxopt.evaluate.journal import merge_rows

    groups = _groups(kernels)
    retry: list[int] = []

    def outcome(o) -> None:
        members = groups[o.index]
        if not o.ok:
            retry.extend(members)
            return
        rs, rows = o.value
        merge_rows(cache, rows, cache=db)
        for i, r in zip(members, rs):
            record(i, r)

    tasks = [([(kernels[i][0], kernels[i][1], args[i][3]) for i in g], config) for g in groups]
    ex.run(_group_job, tasks, fatal=_FATAL, on_outcome=outcome)
    return retry


def summarize(results: Sequence[KernelResult]) -> dict:
    """Mean/median/best/worst improvement, pass frequency, evaluations, hit rate."""
    import statistics
    from collections import Counter

    from ptxopt.passes.pipeline import Pipeline

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
