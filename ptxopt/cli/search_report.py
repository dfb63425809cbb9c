"""Running a search from the CLI and reporting it: progress, table, JSON, plot.

Kept apart from :mod:`ptxopt.cli.search` (options and input) and from
:mod:`ptxopt.search` (the library): this is presentation only.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from ptxopt.cli.exitcodes import BAD_INPUT, OK, TOOLCHAIN, result_code, worst
from ptxopt.support.outputs import StreamLock, atomic_path, write_atomic


def _fmt(x, spec=".0f", none="-") -> str:
    return none if x is None else format(x, spec)


def run_and_report(kernels, config, *, workers: int, executor=None, record: str | None, json_out: str | None,
                   plot: str | None, quiet: bool, target: str, on_results=None, rejected=(),
                   as_json: bool = False) -> int:
    """Search ``kernels``, print/write the report; the exit status.
    ``as_json``: the JSON document on stdout instead of the table and summary;
    ``json_out``: the same document written there (``"-"``: stdout, as ``as_json``).
    ``on_results(results, interrupted)`` sees the per-kernel results (in
    ``kernels`` order) before anything is printed. ``rejected``: ``(name,
    message, exit code)`` of inputs of a folder run that were not searched
    (they are reported with the others and set the exit code)."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from contextlib import ExitStack

    from ptxopt.support.outputs import OutputNotWritable, append_synced
    from ptxopt.search import search_many, summarize

    err = Console(stderr=True)
    from ptxopt.cli.exitcodes import TOOLCHAIN as _TOOLCHAIN
    from ptxopt.search import KernelResult

    results = [KernelResult(name, None, config.strategy, error=msg, bad_input=code != _TOOLCHAIN,
                            toolchain=code == _TOOLCHAIN) for name, msg, code in rejected]
    interrupted = False
    unwritten: list[str] = []  # outputs that could not be written: exit 2 once the rest is reported
    stack = ExitStack()
    rec = None
    if record:  # another live run streaming into it: refused before it is truncated
        stack.enter_context(StreamLock(record))
        try:
            rec = stack.enter_context(open(record, "w"))  # each kernel's steps are appended as it finishes
        except OSError as e:
            stack.close()
            raise OutputNotWritable(record, e) from None
    with stack, Progress(TextColumn(f"{config.strategy}"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.description}"),
                  TimeElapsedColumn(), console=err, disable=quiet, transient=True) as bar:
        task = bar.add_task("", total=len(kernels))

        def done(r) -> None:
            nonlocal rec
            results.append(r)
            if rec is not None and r.steps:
                try:
                    append_synced(rec, "".join(json.dumps(s.to_json(), sort_keys=True) + "\n" for s in r.steps))
                except OutputNotWritable as e:  # the search goes on; the record stops here
                    unwritten.append(str(e))
                    rec = None
            imp = r.improvement_pct
            bar.update(task, advance=1, description=f"{r.kernel}: {_fmt(imp, '+.1f')}%")

        def evaluated(state, r) -> None:  # per candidate, in this process: which one, how long it took
            took = r.timings.get("total") or 0.0
            what = f"{state.kernel.label} [{state.pipeline or 'baseline'}]"
            bar.update(task, description=f"{what} {r.status} {'(cached)' if r.cache_hit else f'{took:.1f}s'}")

        from ptxopt.search.meter import evaluation_progress

        try:
            with evaluation_progress(evaluated):
                search_many(kernels, config, workers=workers, on_result=done, executor=executor)
        except KeyboardInterrupt:
            interrupted = True
    order = {k.label: i for i, (k, _) in enumerate(kernels)}
    results.sort(key=lambda r: order.get(r.kernel, 0))
    if on_results is not None:
        try:
            on_results(results, interrupted)
        except OutputNotWritable as e:  # the report is still written, then exit 2
            unwritten.append(str(e))
    summary = summarize(results)
    doc = {
        "target": target, "strategy": config.strategy, "max_steps": config.max_steps, "budget": config.budget,
        "beam_width": config.beam_width if config.strategy == "beam" else None, "seed": config.seed,
        "policy": config.policy, "samples": config.samples if config.policy else None,
        "backend": config.options.backend, "arch": config.options.arch,  # null: each kernel's .target
        "allow_unchecked": config.options.allow_unchecked,
        "cycles_kind": "ESTIMATE" if config.options.estimate else "MEASUREMENT",
        "expected_error": expected_error(config),
        "cache": str(config.options.cache) if config.options.cache else None, "workers": workers,
        "executor": executor or "local",
        "interrupted": interrupted, "kernels": [r.to_json() for r in results], "summary": summary,
    }
    from ptxopt.cli.common import dump_json

    as_json, json_out = as_json or json_out == "-", None if json_out == "-" else json_out
    if json_out:
        try:
            write_atomic(json_out, dump_json(doc) + "\n")
        except OutputNotWritable as e:
            unwritten.append(str(e))
    if as_json:
        click.echo(dump_json(doc))
    else:
        if not quiet:
            print_table(results, config)
        print_summary(summary, config)
    if plot and results:
        try:
            where = Path(target).name if Path(target).name and not target.startswith("corpus:") else target
            draw_plot(results, plot, title=f"{config.strategy} on {where} ({doc['cycles_kind'].lower()})")
        except OutputNotWritable as e:
            unwritten.append(str(e))
    for why in unwritten:
        click.echo(f"ptxopt: error: {why}", err=True)
    said = {name for name, _, _ in rejected}  # reported before the search, in a single file's words
    for r in results:
        if r.error and r.kernel in said and not r.steps:
            continue
        if r.error:
            click.echo(f"ptxopt: {r.kernel}: {r.error}", err=True)
        elif r.toolchain:
            click.echo(f"ptxopt: {r.kernel}: {r.failures.get('toolchain', 0)} candidate(s) hit a toolchain failure "
                       "(a crash, out of memory, a hang); not cached: run again", err=True)
    if interrupted:
        from ptxopt.cli import termination

        click.echo(f"ptxopt: {termination.word()} after {len(results) - len(rejected)}/{len(kernels)} kernels; "
                   "run the same command again to resume from the cache", err=True)
        return termination.interrupted_code()
    return worst([result_code(r.bad_input, "toolchain" if r.toolchain else None) for r in results if r.error]
                 + [TOOLCHAIN for r in results if r.toolchain] + [BAD_INPUT for _ in unwritten] or [OK])


def expected_error(config) -> float | None:
    """The backend's expected relative error of each estimate (the sim model's; None for measurements)."""
    if not config.options.estimate:
        return None
    from ptxopt.measure.backend_registry import get_backend

    return getattr(get_backend(config.options.backend), "expected_error", None)


def print_table(results, config) -> None:
    from rich.console import Console
    from rich.table import Table

    kind = "estimated" if config.options.estimate else "measured"
    err = expected_error(config)
    if err:
        kind += f" ±{100 * err:.0f}%"
    arch = config.options.arch or "arch from .target"
    t = Table(title=f"{config.strategy} search ({kind} cycles, {arch})")
    for col in ("kernel", "best pipeline", "cycles before", "after", "improvement", "verdict", "evals", "hits",
                "wall s"):
        t.add_column(col, justify="left" if col in ("kernel", "best pipeline", "verdict") else "right")
    for r in results:
        t.add_row(r.kernel, r.pipeline or ("(error)" if r.error else "(none)"), _fmt(r.baseline_cycles),
                  _fmt(r.best_cycles), _fmt(r.improvement_pct, "+.1f") + ("%" if r.improvement_pct is not None else ""),
                  r.verdict or "-", str(r.evaluations), str(r.cache_hits), _fmt(r.wall_s, ".1f"))
    Console(width=None if sys.stdout.isatty() else 160).print(t)
    for r in results:
        if r.note:
            click.echo(f"{r.kernel}: {r.note}")
        if r.objective == "throughput" and r.improvement_pct and (r.footprint_after or {}).get("floor_bytes") is None:
            click.echo(f"{r.kernel}: NO DRAM floor (footprint {(r.footprint_after or {}).get('source', 'unknown')}): "
                       "the improvement may be below what DRAM allows")


def print_summary(s: dict, config) -> None:
    imp = s["improvement_pct"]
    kind = "ESTIMATE (sim model)" if config.options.estimate else "MEASUREMENT"
    click.echo(f"{s['searched']}/{s['kernels']} kernels searched ({s['errors']} errors); cycles are an {kind}")
    err = expected_error(config)
    objectives = s.get("objectives") or {}
    if objectives:
        click.echo("objectives: " + ", ".join(
            f"{n} kernel{'s' if n != 1 else ''} {o} ({'one warp' if o == 'latency' else 'the whole performance launch'})"
            for o, n in sorted(objectives.items())))
    if err and objectives.get("latency", not objectives):
        click.echo(f"expected error of each latency estimate: ±{100 * err:.0f}% (ptxopt.sim.model.EXPECTED_ERROR: "
                   "MAPE on published sm_89 baselines, all under-estimates; relative changes are what search uses)")
    if objectives.get("throughput"):
        click.echo("throughput estimates are uncalibrated: no GPU has measured one")
    if imp["mean"] is not None:
        click.echo(f"improvement: mean {imp['mean']:+.2f}%  median {imp['median']:+.2f}%  best {imp['best']:+.2f}%  "
                   f"worst {imp['worst']:+.2f}%  geomean speedup {s['geomean_speedup']:.4f}x  "
                   f"improved {s['improved']}/{s['searched']}")
    hit = s["cache_hit_rate"]
    click.echo(f"evaluations: {s['evaluations']} ({_fmt(s['evaluations_per_kernel'], '.1f')}/kernel), "
               f"cache hits {_fmt(None if hit is None else 100 * hit, '.1f')}%, failures {s['failures'] or 0}, "
               f"search time {s['wall_s']:.1f} s")
    if s.get("unchecked"):
        what = "allowed by --allow-unchecked" if config.options.allow_unchecked else "never chosen"
        click.echo(f"unchecked candidates (equivalence not established): {s['unchecked']}, {what}")
    if s["pass_frequency"]:
        click.echo("passes in best pipelines: " + ", ".join(f"{k} {v}" for k, v in s["pass_frequency"].items()))


def short_labels(names) -> dict[str, str]:
    """A short, still unique, label per kernel name for plots: a file's stem
    (``runs/k/saxpy.ptx`` -> ``saxpy``), a corpus id as it is; names whose
    stems collide keep as many parent folders as tell them apart."""
    parts = {n: Path(n.removeprefix("corpus:").removesuffix(".ptx")).parts or (n,) for n in names}
    out = {}
    for n, p in parts.items():
        depth = 1
        while depth < len(p) and sum(1 for q in parts.values() if q[-depth:] == p[-depth:]) > 1:
            depth += 1
        out[n] = "/".join(p[-depth:])
    if len(set(out.values())) < len(out):  # still ambiguous: the full names
        return {n: n for n in names}
    return out


def improvement_range(r) -> tuple[float, float] | None:
    """``(low, high)`` of the improvement (percent) when the baseline's and the
    best pipeline's cycles each move by half their spread (the interquartile
    range of the repeated measurements); None without a spread (estimates)."""
    if r.baseline_spread is None or r.best_spread is None or not r.baseline_cycles or r.best_cycles is None:
        return None
    hb, ha = r.baseline_spread / 2, r.best_spread / 2
    low = 100.0 * (1.0 - (r.best_cycles + ha) / max(r.baseline_cycles - hb, 1e-9))
    high = 100.0 * (1.0 - max(r.best_cycles - ha, 0.0) / (r.baseline_cycles + hb))
    return low, high


def draw_plot(results, path: str, *, title: str) -> None:
    """Draw :func:`improvement_figure` into ``path`` (PNG, or the format its suffix names)."""
    fig = improvement_figure(results, title=title)  # selects the Agg backend first
    import matplotlib.pyplot as plt

    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=120, format=Path(path).suffix[1:].lower() or None)
    plt.close(fig)


def improvement_figure(results, *, title: str):
    """Per-kernel improvement, sorted: one bar per kernel (errors left out),
    labelled with short kernel names (:func:`short_labels`); error bars where
    the cycles are repeated measurements with a spread (:func:`improvement_range`)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    kept = sorted((r for r in results if r.improvement_pct is not None), key=lambda r: (r.improvement_pct, r.kernel))
    labels = short_labels([r.kernel for r in kept])
    pts = [r.improvement_pct for r in kept]
    ranges = [improvement_range(r) for r in kept]
    fig, ax = plt.subplots(figsize=(max(6.0, 0.12 * len(pts) + 2), 4))
    ax.bar(range(len(pts)), pts, color=["#2a7" if p > 0 else "#c44" for p in pts])
    if any(x is not None for x in ranges):
        yerr = [[0.0 if x is None else max(p - x[0], 0.0) for p, x in zip(pts, ranges)],
                [0.0 if x is None else max(x[1] - p, 0.0) for p, x in zip(pts, ranges)]]
        ax.errorbar(range(len(pts)), pts, yerr=yerr, fmt="none", ecolor="black", elinewidth=0.8, capsize=2,
                    label="interquartile range of the measurements")
        ax.legend(fontsize=7, loc="upper left")
    ax.axhline(0, color="black", lw=0.6)
    ax.set_xlabel("kernel (sorted by improvement)")
    ax.set_ylabel("cycles saved (%)")
    ax.set_title(title)
    if len(pts) <= 40:
        ax.set_xticks(range(len(pts)), [labels[r.kernel] for r in kept], rotation=90, fontsize=6)
    fig.tight_layout()
    return fig
