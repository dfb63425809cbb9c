"""``ptxopt eval FILE``: what a candidate costs (the search's reward).

FILE is a PTX file, ``-``, or ``corpus:SELECTOR`` (one kernel id, or a family
such as ``corpus:gemm_tile`` for several).  Each kernel is evaluated under
each ``--passes`` pipeline (default: the unoptimised kernel): passes ->
ptxas -> equivalence with the original in the interpreter -> cycles from the
backend.  ``sim`` cycles are an ESTIMATE of a SASS issue model; ``gpu``
cycles are a MEASUREMENT on the GPU; the output says which.

Each result carries the equivalence ``verdict``: ``identical``,
``hints-only``, ``proved`` (translation validation; ``--no-prove`` skips it),
``equal`` (trials and launch in the note), ``inconclusive``
(why: the original cannot be interpreted under the launch, ...) or
``differ`` (the counterexample); see :mod:`ptxopt.evaluate.result`.
``--arch`` defaults to each kernel's own ``.target``.

Exit status (:mod:`ptxopt.cli.exitcodes`): 0 when every candidate is ``ok``; 1
when one failed (a failure category -- illegal, ptxas, mismatch, fault,
timeout, truncated, unsupported, internal -- and its message are printed);
2 on bad input (unreadable or unparsable FILE, an unknown kernel or
``--kernel``, a bad or conflicting pipeline string, an unusable backend or
cache, an original kernel that ptxas rejects, its ``.version``/``.target`` or
``--arch`` no installed ptxas handles), which wins over 1 when both occur;
5 when ptxas or nvdisasm crashed, ran out of memory or hung (status
``toolchain``: not cached, run again), ranked between 2 and 1.
"""

from __future__ import annotations

import sys

import click

from ptxopt.cli.common import (arch_option, backend_option, cache_option,
                               check_arch, check_backend, check_toolchain, contract_options, emit_json,
                               fresh_cache_option, json_options, json_target,
                               objective_option, prepare_cache, prove_option, report_unsaved, timeout_option, trials_option,
                               perf_launch_options, with_contract, with_performance)
from ptxopt.cli.output_rule import writes
from ptxopt.cli.exitcodes import BAD_INPUT, result_code, worst
from ptxopt.cli.executor_option import executor_option
from ptxopt.cli.common import fail as _fail


@click.command("eval")
@click.argument("file")
@click.option("-p", "--passes", "pipelines", multiple=True, metavar="PIPELINE",
              help="Pipeline to apply, e.g. vec_ld,maxnreg_128 (repeatable; default: none, the baseline).")
@backend_option
@arch_option
@click.option("--kernel", default=None, metavar="NAME", help="The .entry to evaluate (default: the first).")
@cache_option
@fresh_cache_option
@click.option("--no-cache", is_flag=True, help="Neither read nor write the cache.")
@click.option("-j", "--workers", default=0, show_default=True, type=click.IntRange(0, 256),
              help="Worker processes (0: evaluate in this process).")
@executor_option
@timeout_option
@trials_option
@contract_options
@json_options(what="the result(s)")
@prove_option
@objective_option
@perf_launch_options
@writes({"json_out": "--json-out"}, ("file", "contract_file"))
def eval_cmd(file, pipelines, backend, arch, kernel, cache_path, fresh_cache, no_cache, workers, executor, timeout, trials, contract_file,
             grid, block, shared_bytes, scalars, as_json, prove=True, objective=None, json_out=None, l2="cold",
             **perf):
    """Evaluate FILE (a path or corpus:ID/corpus:FAMILY) under each --passes pipeline.

    Reports cycles (ESTIMATE with --backend sim, MEASUREMENT with gpu),
    registers, spill bytes, SASS instruction count and the equivalence check;
    each kernel's baseline (no pipeline) is always evaluated and shown too.
    Exit 0: all ok; 1: a candidate failed (category and message printed);
    2: bad input.
    """
    from ptxopt.kernels.corpus import CorpusError
    from ptxopt.evaluate import BackendUnavailable, CacheError, Candidate, default_cache_path, evaluate_many
    from ptxopt.kernels.inputs import InputError, read_targets
    from ptxopt.ptx.parser import ParseError
    from ptxopt.passes.pipeline import Pipeline, PipelineError

    try:
        sources = read_targets([file])
    except (InputError, CorpusError) as e:
        _fail(str(e))
    parsed = []
    for p in pipelines or ("",):
        try:
            parsed.append(Pipeline.parse(p))
        except PipelineError as e:
            _fail(str(e))
    if all(len(p) for p in parsed):  # the baseline row is always shown: what the pipelines are compared with
        parsed.insert(0, Pipeline.parse(""))
    check_backend(backend)
    check_arch(arch)

    from dataclasses import replace

    from ptxopt.evaluate.prepare import original as _original

    contract = dict(contract_file=contract_file, grid=grid, block=block, shared_bytes=shared_bytes,
                    scalars=scalars)
    candidates = []
    for src in sources:
        try:
            text = src.data.decode("utf-8")
        except UnicodeDecodeError as e:
            _fail(f"{src.name}: not UTF-8 text ({e.reason})")
        check_toolchain(text, src.name, arch)  # .version/.target/--arch no ptxas takes: bad input, before any work
        spec = None
        if src.name.startswith("corpus:"):
            from ptxopt.kernels.corpus import get

            spec = get(src.name[len("corpus:"):])
        if spec is not None and kernel is None:
            entry = spec.entry  # a corpus kernel: known to parse, entry from the manifest
        else:
            try:
                module = _original(text, src.name).module  # syntax errors the ptxopt way; warms the memo
            except ParseError as e:
                click.echo(str(e), err=True)
                sys.exit(BAD_INPUT)
            entries = [f.name for f in module.entries]
            if kernel is not None and kernel not in entries:
                _fail(f"{src.name}: no .entry named {kernel} (entries: {', '.join(entries) or 'none'})")
            if not entries:
                _fail(f"{src.name}: the module has no .entry to evaluate")
            entry = kernel or (spec.entry if spec is not None else entries[0])
        base = with_contract(Candidate(text, name=src.name, entry=entry, spec=spec), src.name, contract)
        base = with_performance(base, src.name, perf, contract_file)
        for p in parsed:
            candidates.append(replace(base, pipeline=p))

    cache = None if no_cache else (cache_path or default_cache_path())
    if cache is not None:
        prepare_cache(cache, fresh_cache)
    options = dict(arch=arch, backend=backend, timeout=timeout, trials=trials, prove=prove, objective=objective,
                   executor=executor, l2=l2)
    as_json, json_out = json_target(as_json, json_out)
    try:
        if len(candidates) <= 2 or as_json:
            results = evaluate_many(candidates, workers=workers, cache=cache, **options)
        else:
            results = _with_progress(candidates, workers, cache, options)
    except (BackendUnavailable, CacheError) as e:
        _fail(str(e))

    # one kernel, its baseline and at most one pipeline: the candidate's own report, with the baseline's
    single = len(sources) == 1 and sum(1 for p in parsed if len(p)) <= 1
    main = next((r for r in results if r.pipeline), results[0]) if single else None
    base = next((r for r in results if not r.pipeline), None) if single and main.pipeline else None
    if as_json or json_out:
        docs = [r.to_json() for r in results]
        if single:  # the candidate's document, its baseline's under "baseline" (null: it is the baseline)
            doc = {"file": sources[0].name, "cache": str(cache) if cache else None, **main.to_json(),
                   "baseline": None if base is None else base.to_json()}
        else:
            doc = {"file": file, "backend": backend, "arch": arch,  # null: each kernel's .target
                   "cycles_kind": results[0].cycles_kind if results else None,
                   "cache": str(cache) if cache else None, "results": docs, "summary": _summary(results)}
        emit_json(doc, as_json, json_out)
    if not as_json and single:
        _print_one(main, cache, baseline=base)
    elif not as_json:
        _print_table(results, backend, arch or "arch from .target")
    failed = [r for r in results if not r.ok]
    if failed and not as_json:
        for r in failed:
            what = "bad input" if r.bad_input else f"failed: {r.status}"
            click.echo(f"ptxopt: {r.kernel} [{r.pipeline or 'baseline'}] {what}: {r.error}", err=True)
    lost = report_unsaved(cache)
    sys.exit(worst([result_code(r.bad_input, r.status) for r in failed] + [lost]))


def _with_progress(candidates, workers, cache, options):
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from ptxopt.evaluate import evaluate_many

    console = Console(stderr=True)
    with Progress(TextColumn("evaluating"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  TextColumn("{task.fields[last]}"), console=console, transient=True,
                  disable=not console.is_terminal) as bar:
        task = bar.add_task("eval", total=len(candidates), last="")

        def tick(i, r):
            bar.update(task, advance=1, last=f"{r.kernel} {r.status}")

        return evaluate_many(candidates, workers=workers, cache=cache, on_result=tick, **options)


def _summary(results) -> dict:
    by = {}
    for r in results:
        by[r.status] = by.get(r.status, 0) + 1
    return {"candidates": len(results), "by_status": by, "cache_hits": sum(r.cache_hit for r in results)}


def _kind_line(r) -> str:
    if r.estimate:
        return f"ESTIMATE ({r.backend} backend: a SASS issue model on the CPU, not a hardware measurement)"
    return f"MEASUREMENT ({r.backend} backend: measured on the GPU)"


def _ms(t) -> str:
    return f"{1000 * (t or 0):.0f}"


def _print_one(r, cache, baseline=None) -> None:
    click.echo(f"{r.kernel}  [{r.entry}]  pipeline: {r.pipeline or '(none: baseline)'}")
    rows = []
    if baseline is not None:
        rows.append(("baseline", _baseline_row(baseline, r)))
    if r.ok:
        err = f" {r.error_text} (the model's expected error)" if getattr(r, "error_text", "") else ""
        rows.append(("cycles", f"{r.cycles:g}{err}  {_kind_line(r)}"))
        if r.objective == "throughput":
            rows.append(("objective", f"throughput of the whole launch (uncalibrated): {r.performance}"))
        elif r.objective:
            rows.append(("objective", "latency of one warp (the measure of the published sm_89 figures)"))
        if r.spread is not None:
            rows.append(("spread", f"{r.spread:g}"))
    else:
        rows.append(("status", f"FAILED: {r.status}"))
        rows.append(("error", r.error or ""))
    if r.registers is not None:
        rows.append(("registers", str(r.registers)))
    if r.spill_bytes is not None:
        rows.append(("spill bytes", f"{r.spill_bytes} (stores {r.spill_store_bytes}, loads {r.spill_load_bytes})"))
    if r.sass_instructions is not None:
        rows.append(("SASS instrs", str(r.sass_instructions)))
    ptxas = f", ptxas {r.ptxas_version}" if r.ptxas_version else ""
    rows.append(("backend", f"{r.backend} on {r.arch}{ptxas}"))
    eq = r.equivalence + (f" ({r.equivalence_note})" if r.equivalence_note else "")
    if r.ok and not r.checked:
        eq += "  -- NOT CHECKED: a search never takes this candidate (unless --allow-unchecked)"
    rows.append(("verdict", eq))
    if r.coverage is not None:
        rows.append(("coverage", f"{r.coverage:.0%} of the bytes of the buffers the kernel writes were stored by "
                                 "the equivalence launches"))
    if r.trip_counts:
        rows.append(("loop trips", r.trip_counts))
    if r.footprint is not None:
        from ptxopt.sim.throughput import CARRIED

        fb = r.footprint.get("floor_bytes")
        rows.append(("footprint", f"{r.footprint.get('source')}: " + (f"{'' if r.footprint.get('source') in ('exact', 'counts', 'carried') else 'partial '}DRAM floor {fb:,} B "
                                                                       "(cold L2)" + ("; " + CARRIED if r.footprint.get("source") == "carried" else "")
                                                                       if fb is not None
                                                                       else "NO DRAM floor")))
    rows.append(("changed", {True: "yes", False: "no (the pipeline left the module unchanged)", None: "-"}[r.changed]))
    rows.append(("cache", ("hit" if r.cache_hit else "miss") + (f"  ({cache})" if cache else "  (disabled)")))
    t = r.timings
    rows.append(("time", f"{_ms(t.get('total'))} ms (pass {_ms(t.get('pass'))}, ptxas {_ms(t.get('ptxas'))}, "
                         f"verify {_ms(t.get('verify'))}, backend {_ms(t.get('backend'))})"
                 + ("; computed earlier, read from the cache" if r.cache_hit else "")))
    for k, v in rows:
        click.echo(f"  {k:<12} {v}")
    for n in r.notes:
        click.echo(f"  note: {n}")


def _baseline_row(b, r) -> str:
    """The baseline (no pipeline) next to candidate ``r``: its cycles and registers, and the change."""
    if not b.ok:
        return f"FAILED: {b.status}: {b.error or ''}"
    out = f"{b.cycles:g} cycles, {_s(b.registers)} registers"
    if r.ok and r.cycles is not None and b.cycles:
        out += f"; the pipeline: {100 * (r.cycles - b.cycles) / b.cycles:+.1f}% cycles (negative = faster)"
        if r.objective == "throughput" and (r.footprint or {}).get("floor_bytes") is None:
            out += (f"; NO DRAM floor (footprint {(r.footprint or {}).get('source', 'unknown')}): the gain may be "
                    "below what DRAM allows")
    return out


def _print_table(results, backend, arch) -> None:
    from rich.console import Console
    from rich.table import Table

    estimate = any(r.estimate for r in results)
    t = Table(box=None, title=f"ptxopt eval: {len(results)} candidates, backend {backend}, {arch}")
    for col, just in (("kernel", "left"), ("pipeline", "left"), ("status", "left"), ("cycles", "right"),
                      ("regs", "right"), ("spill B", "right"), ("SASS", "right"), ("equivalence", "left"),
                      ("cache", "left")):
        t.add_column(col, justify=just)
    for r in results:
        cyc = "-" if r.cycles is None else (f"{r.cycles:g} {r.error_text}".strip() if getattr(r, "error_text", "")
                                            else f"{r.cycles:g}")
        t.add_row(r.kernel, r.pipeline or "-", r.status, cyc,
                  _s(r.registers), _s(r.spill_bytes), _s(r.sass_instructions), r.equivalence,
                  "hit" if r.cache_hit else "miss")
    Console(width=max(120, Console().width)).print(t)
    s = _summary(results)
    statuses = ", ".join(f"{n} {k}" for k, n in sorted(s["by_status"].items()))
    click.echo(f"{s['candidates']} candidates: {statuses}; {s['cache_hits']} from the cache")
    click.echo("cycles are ESTIMATES of the sim model (not measurements)" if estimate
               else "cycles are MEASUREMENTS on the GPU")


def _s(v) -> str:
    return "-" if v is None else str(v)


__all__ = ["eval_cmd"]
