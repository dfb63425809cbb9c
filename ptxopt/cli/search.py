"""``ptxopt search TARGET``: find the fastest pass pipeline per kernel.

TARGET: a PTX file, a folder of them, ``-``, a Triton cache directory, or a
corpus selector (a family such as ``gemm_tile``, a compiler such as
``triton``, a kernel id, ``all``; ``corpus:`` in front is optional).

A Triton cache directory (``$TRITON_CACHE_DIR``: one folder per compiled
kernel with ``NAME.ptx`` and its metadata ``NAME.json``) is searched kernel
by kernel under launch contracts derived from Triton's metadata
(:mod:`ptxopt.triton.cache_dir`), and the best verified pipeline per kernel
(name and source hash) is written to ``--pipelines-out`` (default
``ptxopt-triton-pipelines.json``), the file
``ptxopt.triton.enable(pipelines=...)`` applies at the next compile. Cycles come from the evaluator (``sim``:
an ESTIMATE; ``gpu``: a MEASUREMENT) through its cache, so an interrupted
search re-run with the same options resumes from what it had measured.

Only a candidate whose equivalence with the original was established
(verdict ``identical``, ``hints-only``, ``proved`` or ``equal``) can be reported as a
kernel's best; ``--allow-unchecked`` lets ``inconclusive`` ones through. Each
kernel's JSON carries the best pipeline's ``verdict`` (with ``verdict_note``,
``coverage``, ``launch``), ``unchecked`` (candidates left out) and ``arch``.

Exit status (:mod:`ptxopt.cli.exitcodes`): 0 when every kernel was searched; 1
when a kernel could not be (its baseline failed); 2 on bad input -- a file
that does not parse, ``--kernel`` that names no entry, an original ptxas
rejects (or its ``.version``/``.target``/``--arch``), an unusable cache or
output path, all refused before any work where they can be known then --
which wins over 1; 130 when interrupted (what finished is still written).
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ptxopt.cli.common import (FiniteFloat, allow_unchecked_option, arch_option, backend_option, cache_option,
                               check_arch, check_backend, contract_options, fresh_cache_option, json_options,
                               json_target,
                               objective_option, output_file, prepare_cache, prove_option, report_unsaved, timeout_option,
                               trials_option,
                               perf_launch_options, with_contract, with_performance)
from ptxopt.cli.common import fail as _fail
from ptxopt.cli.output_rule import writes
from ptxopt.cli.exitcodes import BAD_INPUT, worst
from ptxopt.cli.executor_option import executor_option


def _budget(value: str | None):
    if value is None:
        return None
    from ptxopt.search import STRATEGIES

    if value in STRATEGIES:
        return value
    try:
        n = int(value)
    except ValueError:
        raise click.BadParameter(f"{value!r}: give a number of evaluations or a strategy name "
                                 f"({', '.join(STRATEGIES)})") from None
    if n < 1:
        raise click.BadParameter("the budget must be at least 1 evaluation")
    return n


def _is_path(target: str) -> bool:
    """An existing file or folder; False for what no file system can hold
    (a long comma list of kernel ids is ENAMETOOLONG, not an internal error)."""
    try:
        return Path(target).exists()
    except OSError:
        return False


def resolve_kernels(target: str, entry: str | None = None, rejected: list | None = None) -> list:
    """``[(Candidate, family)]`` for TARGET; raises InputError/CorpusError with a clear message.
    ``rejected``: a file that is not UTF-8 is added there as ``(name, message)`` instead (folder runs)."""
    from ptxopt.kernels.corpus import CorpusError, select
    from ptxopt.evaluate import Candidate
    from ptxopt.kernels.inputs import InputError, read_targets

    if target != "-" and not target.startswith("corpus:") and not _is_path(target):
        try:
            select(target)
            target = f"corpus:{target}"
        except CorpusError as e:
            raise InputError(f"{target}: no such file or folder, and not a corpus selector ({e})") from None
    out = []
    for src in read_targets([target]):
        if src.name.startswith("corpus:"):
            from ptxopt.kernels.corpus import get

            spec = get(src.name[len("corpus:"):])
            out.append((Candidate.from_corpus(spec), spec.family))
            continue
        try:
            text = src.data.decode("utf-8")
        except UnicodeDecodeError as e:
            if rejected is None:
                raise InputError(f"{src.name}: not UTF-8 text ({e.reason})") from None
            rejected.append((src.name, f"{src.name}: not UTF-8 text ({e.reason})", BAD_INPUT))
            click.echo(f"ptxopt: error: {rejected[-1][1]}", err=True)
            continue
        out.append((Candidate(text, name=src.name, entry=entry), None))
    return out


def _check_parse(kernels, arch: str | None = None, rejected: list | None = None) -> list:
    """Before any work: the first syntax error the ptxopt way (file:line:col),
    a ``--kernel`` the module lacks, a ``.version``/``.target``/``--arch`` no
    installed ptxas takes (exit 2 each; a toolchain that failed on its own: 5).
    ``rejected`` (folder runs): such a kernel is said at once, added there as
    ``(name, message, exit code)`` and left out; returns the kernels kept."""
    from ptxopt.ptx.parser import ParseError, parse

    from .common import toolchain_problem

    kept = []
    for cand, family in kernels:
        problem, syntax = None, False
        if cand.spec is None:
            try:
                m = parse(cand.ptx, filename=cand.label)
            except ParseError as e:
                problem, syntax = (str(e), BAD_INPUT), True  # file:line:col: error: ..., printed as it is
            else:
                entries = [f.name for f in m.entries]
                if not entries:
                    problem = (f"{cand.label}: the module has no .entry to optimise", BAD_INPUT)
                elif cand.entry is not None and cand.entry not in entries:
                    problem = (f"{cand.label}: no .entry named {cand.entry} (entries: {', '.join(entries)})",
                               BAD_INPUT)
        problem = problem or toolchain_problem(cand.ptx, cand.label, arch)
        if problem is None:
            kept.append((cand, family))
            continue
        click.echo(problem[0] if syntax else f"ptxopt: error: {problem[0]}", err=True)
        if rejected is None:
            sys.exit(problem[1])
        rejected.append((cand.label, problem[0], problem[1]))  # the others are searched
    return kept


@click.command("search")
@click.argument("target")
@click.option("-s", "--strategy", type=click.Choice(["greedy", "beam", "random", "exhaustive", "guided"]),
              default="greedy", show_default=True,
              help="How pipelines are explored (guided: greedy measuring only a learned ranker's top actions "
                   "plus exploration slots; give the ranker with --policy).")
@click.option("--max-steps", default=6, show_default=True, type=click.IntRange(1, 20),
              help="Longest pipeline (exhaustive: keep it at 2-3).")
@click.option("--budget", default=None, metavar="N|STRATEGY",
              help="Evaluations per kernel, or a strategy's own per-kernel count (e.g. 'greedy': random search "
                   "at greedy's budget). Default: unlimited (random: 16 rollouts).")
@click.option("--beam-width", default=4, show_default=True, type=click.IntRange(1, 64), help="Beam width.")
@click.option("--seed", default=0, show_default=True, help="Random search seed (mixed with each kernel's name).")
@click.option("--policy", "policy", default=None, metavar="CKPT|NAME", callback=lambda ctx, p, v: _policy_path(v),
              help="A trained checkpoint (ptxopt train), or the name of a committed one (gemm_elementwise_sm_89, "
                   "shipped with the package): roll the policy out instead of a search strategy. With --strategy "
                   "guided: a ranker file (ptxopt.search.ranker) or a committed ranker's name (corpus/rankers).")
@click.option("--top-k", default=None, type=click.IntRange(1, 64),
              help="With --strategy guided: actions measured per step in the ranker's order, plus one "
                   "exploration slot [default: the ranker's own top-k and exploration slots, chosen on its "
                   "training groups].")
@click.option("--threshold", default=None, type=float,
              help="With --strategy guided: past the root, stop when no action is predicted to gain more than "
                   "this (option value max(0, log gain)) [default: the ranker's own].")
@click.option("--samples", default=0, show_default=True, type=click.IntRange(0, 1024),
              help="With --policy: 0 = one greedy-decoded rollout; K = best of K rollouts (the greedy-decoded one and K-1 sampled at temperature 0.5).")
@click.option("--temperature", default=0.5, show_default=True, type=FiniteFloat(0.01),
              help="With --policy --samples K: sampling temperature of the K-1 sampled rollouts.")
@click.option("-j", "--workers", default=0, show_default=True, type=click.IntRange(0, 256),
              help="Kernels searched in parallel worker processes (0: in this process).")
@executor_option
@backend_option
@arch_option
@allow_unchecked_option
@click.option("--kernel", default=None, metavar="NAME", help="The .entry to optimise in PTX files (default: first).")
@cache_option
@trials_option
@timeout_option
@contract_options
@fresh_cache_option
@click.option("--record", default=None, type=click.Path(dir_okay=False), callback=output_file(),
              help="Write the trajectories (JSON Lines, see ptxopt.search.trajectory) here.")
@json_options(legacy_path=True, what="the per-kernel results and the summary")
@click.option("--plot", default=None, type=click.Path(dir_okay=False), callback=output_file(),
              help="Draw per-kernel improvement (sorted) as a PNG.")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar and no per-kernel table.")
@click.option("--pipelines-out", default=None, type=click.Path(dir_okay=False), callback=output_file(),
              help="With a Triton cache directory as TARGET: write the best verified pipeline per kernel "
                   "here (the file ptxopt.triton.enable(pipelines=...) reads) [default: "
                   "ptxopt-triton-pipelines.json].")
@click.option("--actions", "extra_actions", default=None, metavar="[+|-]NAME[,...]",
              help="+NAME: explore this pass too, besides the built-in actions (your own passes: the ptxopt.passes "
                   "entry points; '+mul_pow2'); -NAME: leave a built-in action out ('-prefetch_L1'). "
                   "Not with --policy or --record.")
@click.option("--emit", "emit_dir", default=None, type=click.Path(file_okay=False), metavar="DIR",
              help="Write per kernel the best PTX (in the source's layout) and its cubin for the target, and "
                   "DIR/manifest.json: source digest, pipeline, verdict, objective, launch, estimates, ptxas version.")
@click.option("--min-improvement", "min_improvement", default=None, type=click.FloatRange(min=0), metavar="PCT",
              help="Report (and --emit, --pipelines-out) a pipeline only when it gains at least PCT percent of "
                   "the baseline's cycles; below it the kernel says 'no change worth making' [default: 1.0, "
                   "see ptxopt.evaluate.pair.MIN_IMPROVEMENT_PCT].")
@prove_option
@objective_option
@perf_launch_options
@writes({"json_out": "--json-out", "as_json": "--json", "record": "--record", "plot": "--plot",
         "pipelines_out": "--pipelines-out"}, ("target", "contract_file", "policy"))
def search_cmd(target, strategy, max_steps, budget, beam_width, seed, policy, top_k, threshold, samples, temperature,
               workers, executor, backend,
               arch, allow_unchecked, kernel, cache_path, fresh_cache, trials, timeout, contract_file, grid, block, shared_bytes, scalars,
               record, json_out, plot, quiet, pipelines_out, emit_dir=None, extra_actions=None, prove=True,
               objective=None, as_json=None, min_improvement=None, l2="cold", **perf):
    """Search pass pipelines for every kernel of TARGET and report the best.

    TARGET: a PTX file, a folder, a Triton cache directory, or a corpus
    selector (gemm_tile, triton, cuda_saxpy, a template group such as row_reduction, all; 'corpus:' optional). For a
    Triton cache directory the launch contracts come from Triton's metadata
    and the best verified pipeline per kernel is written to --pipelines-out. Per kernel: best pipeline, cycles
    before/after (ESTIMATE with --backend sim), improvement, evaluations,
    wall time; then a summary. --record writes the trajectories the learning
    layer trains on.
    """
    from ptxopt.kernels.corpus import CorpusError
    from ptxopt.evaluate import BackendUnavailable, CacheError, default_cache_path
    from ptxopt.kernels.inputs import InputError
    from ptxopt.search import EvalOptions, SearchConfig

    as_json, json_out = json_target(as_json, json_out)  # a deprecated '--json FILE' is said here, before any work
    try:
        budget = _budget(budget)
    except click.BadParameter as e:
        _fail(f"--budget: {e.message}")
    contract = dict(contract_file=contract_file, grid=grid, block=block, shared_bytes=shared_bytes, scalars=scalars)
    tcache = _triton_cache(target, kernel, contract)
    if tcache is None and pipelines_out:
        _fail("--pipelines-out: TARGET is not a Triton cache directory")
    # a folder or a Triton cache: one bad kernel is reported (exit 2 at the end), the others are searched
    rejected: list | None = [] if tcache is not None or (_is_path(target) and Path(target).is_dir()) else None
    try:
        kernels = resolve_kernels(target, kernel, rejected) if tcache is None else tcache[0]
    except (InputError, CorpusError) as e:
        _fail(str(e))
    if not kernels and not rejected:
        _fail(f"{target}: no PTX kernels found")
    check_arch(arch)
    kernels = _check_parse(kernels, arch, rejected)
    if tcache is None:
        kernels = [(with_contract(c, c.label, contract), fam) for c, fam in kernels]  # --grid..., KERNEL.contract.json
        kernels = [(with_performance(c, c.label, perf, contract_file), fam) for c, fam in kernels]
    check_backend(backend)
    cache = cache_path or str(default_cache_path())
    prepare_cache(cache, fresh_cache)
    options = EvalOptions(arch=arch, backend=backend, cache=cache, trials=trials, timeout=timeout,
                          allow_unchecked=allow_unchecked, prove=prove, objective=objective, l2=l2)
    guided = strategy == "guided"
    extras, dropped = _extra_actions(extra_actions, None if guided else policy, record)
    if guided and not policy:
        _fail("--strategy guided needs a ranker: --policy FILE or a committed ranker's name")
    try:
        config = SearchConfig(strategy="policy" if policy and not guided else strategy, max_steps=max_steps,
                              budget=budget, beam_width=beam_width, seed=seed, options=options, policy=policy,
                              samples=samples, temperature=temperature, extra_actions=extras, dropped_actions=dropped,
                              min_improvement=min_improvement, top_k=top_k, threshold=threshold)
    except ValueError as e:
        _fail(f"--actions: {e}")
    if guided:
        from ptxopt.search.ranker import RankerError
        from ptxopt.search.run import ranker_for

        try:
            ranker_for(policy)  # a bad ranker is refused here, before any work
        except RankerError as e:
            _fail(f"--policy: {e}")
    elif policy:
        try:
            from ptxopt import plugins

            load_policy = plugins.obj("load_policy")  # the learning layer registers it (rl.plugin)
            CheckpointError = plugins.obj("CheckpointError")
        except ImportError as e:
            _fail(f"--policy needs the learning layer (pip install 'ptxopt[rl]'): {e}")
        try:
            load_policy(policy)  # a bad checkpoint is refused here, before any work
        except CheckpointError as e:
            _fail(str(e))

    from .output_rule import check_outputs
    from .search_emit import emit_plan, emit_writer, planned_files
    from .search_report import run_and_report

    on_results, plan = None, {}
    out_path = (pipelines_out or "ptxopt-triton-pipelines.json") if tcache is not None else None
    if emit_dir is not None:
        plan = emit_plan(kernels, target, {k: v.path for k, v in tcache[1].items()} if tcache else None)
    # the outputs known only now (the default pipelines file, --emit's files), by the same rule, before any work
    if out_path or plan:
        check_outputs({"--json-out": json_out, "--record": record, "--plot": plot, "--pipelines-out": out_path,
                       **{f"--emit ({n})": str(Path(emit_dir) / n) for n in (planned_files(plan) if emit_dir else ())}},
                      [target, contract_file, policy], cache)
    if tcache is not None:
        on_results = _pipelines_writer(tcache[1], out_path, target, config, tcache[3])
    if emit_dir is not None:
        from ptxopt.cli.common import output_dir_problem

        why = output_dir_problem(emit_dir)
        if why:
            _fail(f"--emit: {why}")
        writers = [w for w in (on_results, emit_writer(kernels, emit_dir, config, plan)) if w is not None]
        on_results = lambda results, interrupted: [w(results, interrupted) for w in writers]  # noqa: E731
    from ptxopt.triton.tune_toolchain import tuning_with

    try:
        with tuning_with(tcache[2] if tcache is not None else None):
            code = run_and_report(kernels, config, workers=workers, executor=executor, record=record,
                                  json_out=json_out, as_json=as_json, plot=plot, quiet=quiet, target=target,
                                  on_results=on_results, rejected=rejected or ())
    except (BackendUnavailable, CacheError) as e:
        _fail(str(e))
    sys.exit(worst([code, report_unsaved(cache)]))


def _extra_actions(value: str | None, policy, record) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """--actions '+a,-b': the extra pass actions (each written with its '+')
    and the built-in actions left out (each written with its '-')."""
    if not value:
        return (), ()
    words = [w.strip() for w in value.split(",") if w.strip()]
    bad = [w for w in words if w[0] not in "+-" or len(w) < 2]
    if bad:
        _fail(f"--actions: write each action as +NAME (add) or -NAME (leave out) (got {', '.join(bad)})")
    if policy:
        _fail("--actions: not with --policy (a policy chooses among the actions it was trained on)")
    if record:
        _fail("--actions: not with --record (trajectories are over the learning layer's fixed action list)")
    return tuple(w[1:] for w in words if w[0] == "+"), tuple(w[1:] for w in words if w[0] == "-")


def _policy_path(value: str | None) -> str | None:
    """--policy: an existing file, else a committed policy by name (found in
    the installed package's corpus too, where no checkout path exists)."""
    if value is None or (_is_path(value) and Path(value).is_file()):
        return value
    from ptxopt.kernels.corpus import committed_policies, committed_policy
    from ptxopt.search.ranker import committed_ranker, committed_rankers

    found = committed_policy(value) or committed_ranker(value)
    if found is None:
        raise click.BadParameter(f"{value!r} is neither a file nor a committed policy or ranker "
                                 f"({', '.join(committed_policies() + committed_rankers()) or 'none committed'})",
                                 param_hint="--policy")
    return str(found)


def _triton_cache(target: str, kernel: str | None, contract: dict):
    """``([(Candidate, None)], {label: CachedKernel})`` when TARGET is a Triton
    cache directory, else None. Each kernel is launched under the first
    contract derived from its metadata (:mod:`ptxopt.triton.contract_from_triton`) that
    the original runs under."""
    from ptxopt.triton.cache_dir import is_cache_dir, scan

    if target == "-" or not is_cache_dir(target):
        return None
    if any(v for v in contract.values()):
        _fail(f"{target}: a Triton cache's launch contracts come from Triton's metadata; "
              "--contract/--grid/--block/--shared-bytes/--scalar do not apply")
    from ptxopt.evaluate import Candidate
    from ptxopt.ptx.parser import ParseError

    found, skipped = scan(target)
    for line in skipped:
        click.echo(f"ptxopt: skipped {line}", err=True)
    if kernel is not None:
        found = [k for k in found if k.name == kernel]
    from ptxopt.triton.tune_toolchain import choose

    try:  # tuning compiles with the ptxas command the hook will run (Triton's binary and flags)
        toolchain, toolchains, note = choose(found)
    except ValueError as e:
        _fail(f"{target}: {e}")
    out, by_label = [], {}
    for k in found:
        try:
            launch = k.runnable_contract()
        except ParseError as e:
            click.echo(str(e), err=True)
            sys.exit(BAD_INPUT)
        # the performance launch the hook judges by (Triton's block and shared memory): tuning and
        # applying optimise the same objective on the same launch
        from ptxopt.ptx.parser import parse
        from ptxopt.triton.contract_from_triton import triton_performance

        perf = triton_performance(parse(k.ptx, str(k.path)), k.metadata).with_entry(k.name)
        out.append((Candidate(k.ptx, name=k.label, entry=k.name, launch=launch, performance=perf), None))
        by_label[k.label] = k
        k.check_launch = launch.describe()  # recorded: the hook estimates under the same alternative
    if note:  # after the kernels were read: a broken one is reported first, alone
        click.echo(f"ptxopt: {note}", err=True)
    return out, by_label, toolchain, toolchains


def _pipelines_writer(by_label: dict, path: str, target: str, config, toolchains: dict):
    """``on_results`` for :func:`run_and_report`: the pipelines file of a
    Triton cache search (``""`` for a kernel nothing improved or that failed)."""

    def write(results, interrupted) -> None:
        from ptxopt.triton.pipelines import TunedKernel, write_pipelines

        tuned = []
        for r in results:
            k = by_label.get(r.kernel)
            if k is None:
                continue
            better = not r.error and r.pipeline and r.best_cycles is not None and r.baseline_cycles is not None \
                and r.best_cycles < r.baseline_cycles
            tuned.append(TunedKernel(k.name, k.source_hash, r.pipeline if better else "",
                                     verdict=(r.verdict or "") if better else "",
                                     baseline_cycles=r.baseline_cycles, best_cycles=r.best_cycles,
                                     cycles_kind="estimate" if r.estimate else "measurement",
                                     arch=r.arch or "", path=str(k.path), objective=r.objective or "",
                                     launch=r.performance or "",
                                     toolchain=toolchains[r.kernel].record() if r.kernel in toolchains else {},
                                     check_launch=getattr(k, "check_launch", "")))
        write_pipelines(path, tuned, source=str(Path(target).resolve()), strategy=config.strategy,
                        backend=config.options.backend, interrupted=interrupted)
        click.echo(f"ptxopt: wrote {len(tuned)} kernels' pipelines to {path}", err=True)

    return write
