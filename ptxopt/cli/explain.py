"""``ptxopt explain FILE``: why a kernel is slow, before and after a pipeline.

Per entry: the launch the estimate used (and whether its grid was assumed),
registers and spills (ptxas -v), occupancy and what limits it, every bound of
the whole-launch model and the one that binds, the estimate (cycles, seconds,
``kind: "estimate"``, expected error) and the device.  With ``--passes`` the
same under ``before`` and ``after``, the after estimate on the same number of
blocks as the before one (a register budget changes the time, not the work).

Launch: the performance launch (what the user runs): the contract file's
``"performance"`` entry, else the corpus manifest's, with
``--perf-grid/--perf-block/--perf-shared-bytes/--perf-scalar`` overriding its
fields (:func:`ptxopt.equivalence.launch_contract.resolve_performance`); else the
check launch's block with the grid assumed
(:data:`ptxopt.sim.throughput.ASSUMED_WAVES` full waves at the original
kernel's occupancy), as when a performance launch gives no grid.  The contract options (``eval``'s) give the
check launch; loop trips are the performance launch's (its scalars, grid and
block: :mod:`ptxopt.measure.loop_slice`), the check launch's only where those
cannot be derived (said so).  Objective: ``--objective``,
else the evaluator's one rule (:func:`ptxopt.evaluate.candidate.objective_for`):
``throughput`` when a performance launch is known, ``latency`` for the
gemm_tile family and when none is.

Every number is an ESTIMATE of the CPU model; throughput estimates are
uncalibrated (no GPU has measured them).
"""

from __future__ import annotations

import os
import sys

import click

from ptxopt.cli.common import (arch_option, check_toolchain, contract_options, emit_json, fail, json_options,
                               json_target, l2_option, output_file,
                               perf_launch_options, performance_launch, with_contract)
from ptxopt.cli.output_rule import writes
from ptxopt.cli.exitcodes import BAD_INPUT

#: The per-entry keys of ``--json`` (fixed names: scripts read them), besides ``name`` (and ``before``/``after`` with ``--passes``).
ENTRY_KEYS = ("launch", "objective", "registers", "spills", "occupancy", "binding", "bounds", "estimate",
              "dram_bytes", "l2", "device")


@click.command("explain")
@click.argument("file")
@click.option("--kernel", default=None, metavar="NAME", help="The .entry to explain (default: every entry).")
@click.option("-p", "--passes", "pipeline", default=None, metavar="PIPELINE",
              help="Also explain the kernel after this pipeline (before/after), e.g. maxnreg_128.")
@click.option("--objective", type=click.Choice(["latency", "throughput"]), default=None,
              help="latency: one warp's time; throughput: the whole launch "
                   "[default: throughput when a block size is known, else latency].")
@l2_option
@click.option("--device", "device_name", default=None, metavar="NAME",
              help="Device table to use (L4, H100-SXM, A100-SXM4-80GB) [default: the architecture's: sm_89 -> L4].")
@arch_option
@perf_launch_options
@contract_options
@json_options(what="{\"kernels\": [...]}")
@click.option("--plot", "plot_path", default=None, metavar="FILE.png", callback=output_file(),
              help="Also draw the bounds as bars (matplotlib) into FILE.png.")
@writes({"json_out": "--json-out", "plot_path": "--plot"}, ("file", "contract_file"))
def explain_cmd(file, kernel, pipeline, objective, l2, device_name, arch, perf_grid, perf_block, perf_shared_bytes,
                perf_scalars, perf_bytes, contract_file, grid, block, shared_bytes, scalars, as_json, plot_path,
                json_out=None):
    """Explain FILE's estimated time: occupancy, bounds, the binding one (ESTIMATES)."""
    from dataclasses import replace

    from ptxopt.evaluate import Candidate
    from ptxopt.evaluate.candidate import objective_for
    from ptxopt.kernels.inputs import read_one
    from ptxopt.measure.loop_slice import UNKNOWN
    from ptxopt.passes.pipeline import Pipeline, PipelineError
    from ptxopt.sim.device import device_for, device_named

    src = read_one(file)
    try:
        text = src.data.decode("utf-8")
    except UnicodeDecodeError as e:
        fail(f"{src.name}: not UTF-8 text ({e.reason})")
    pl = None
    if pipeline:
        try:
            pl = Pipeline.parse(pipeline)
        except PipelineError as e:
            fail(str(e))
    perf = dict(perf_grid=perf_grid, perf_block=perf_block, perf_shared_bytes=perf_shared_bytes,
                perf_scalars=perf_scalars, perf_bytes=perf_bytes)
    try:
        dev = device_named(device_name) if device_name else None
    except ValueError as e:
        fail(str(e))
    from ptxopt.toolchain.arch import DEFAULT_ARCH, resolve_arch

    arch = arch or (dev.arch if dev is not None else resolve_arch(text, None))
    try:
        dev = device_for(arch, device_name)
    except ValueError as e:  # an old .target (ZLUDA's sm_60 ...): the estimate exists for a newer one
        hint = "" if device_name else f"; estimate it for a target that has one: --arch {DEFAULT_ARCH}"
        fail(f"{src.name}: {e}{hint}")
    check_toolchain(text, src.name, arch)

    spec = None
    if src.name.startswith("corpus:"):
        from ptxopt.kernels.corpus import get

        spec = get(src.name[len("corpus:"):])
    module = _parse(text, src.name)
    entries = [f.name for f in module.entries]
    if kernel is not None and kernel not in entries:
        fail(f"{src.name}: no .entry named {kernel} (entries: {', '.join(entries) or 'none'})")
    if not entries:
        fail(f"{src.name}: the module has no .entry to explain")
    chosen = [kernel] if kernel else ([spec.entry] if spec is not None else entries)
    contract = dict(contract_file=contract_file, grid=grid, block=block, shared_bytes=shared_bytes, scalars=scalars)

    docs = []
    for entry in chosen:
        cand = with_contract(Candidate(text, name=src.name, entry=entry, spec=spec), src.name, contract)
        fn = next(f for f in module.entries if f.name == entry)
        launch, given = _perf_launch(perf, cand, spec, src.name, contract_file, fn)
        obj = objective_for(replace(cand, performance=given), objective)  # the evaluator's one rule
        if obj == "throughput" and (launch is None or launch.block is None):
            fail(f"{src.name}: {entry}: the throughput objective needs a block size: give --perf-block X,Y,Z "
                 "(or a launch contract)")
        counts = given.footprint_bytes if given is not None else None
        before = _explain(text, arch, entry, cand, launch, obj, dev, blocks=None, counts=counts, l2=l2)
        after_text = None if pl is None else _apply(pl, text, src.name, given, entry)
        doc = {"name": entry}
        if after_text is None:
            doc.update(before)
        else:
            blocks = before["launch"]["blocks"] if before["launch"] and before["launch"]["assumed"] else None
            after = _explain(after_text, arch, entry, cand, launch, obj, dev, blocks=blocks, counts=counts, l2=l2,
                             original=text)
            b, a = before["estimate"]["cycles"], after["estimate"]["cycles"]
            doc.update({"objective": obj, "pipeline": str(pl), "before": before, "after": after,
                        "change": {"cycles": a - b, "relative": (a - b) / b if b else None,
                                   "kind": "estimate",
                                   "dram_floor": obj != "throughput" or all(
                                       (x.get("footprint") or {}).get("floor_bytes") is not None
                                       for x in (before, after)),
                                   "comparable": all(str(x.get("loop_trips", "")) != UNKNOWN
                                                     for x in (before, after))}})
        docs.append(doc)

    as_json, json_out = json_target(as_json, json_out)
    emit_json({"kernels": docs}, as_json, json_out)
    if not as_json:
        for d in docs:
            _print(d)
    if plot_path:
        _plot(docs, plot_path)


def _parse(text: str, label: str):
    from ptxopt.evaluate.prepare import original
    from ptxopt.ptx.parser import ParseError

    try:
        return original(text, label).module
    except ParseError as e:
        click.echo(str(e), err=True)
        sys.exit(BAD_INPUT)


def _apply(pl, text: str, label: str, performance, entry: str) -> str:
    """``text`` after ``pl`` for ``entry``'s performance launch (a pass that
    uses the launch bound to it, as the evaluator binds it)."""
    from ptxopt.ptx.emit import emit
    from ptxopt.evaluate.candidate import bind_launch
    from ptxopt.ptx.parser import parse_bytes
    from ptxopt.passes.base import PassError
    from ptxopt.passes.passmanager import PassManager

    try:
        pl = bind_launch(pl, performance, entry)
    except PassError as e:
        fail(f"{label}: {entry}: {e}")
    return emit(PassManager(pl).run(parse_bytes(text.encode(), label)).module)


def _perf_launch(perf: dict, cand, spec, path: str, contract_file, fn):
    """``(shape, given)``: the performance launch (:func:`ptxopt.cli.common.performance_launch`:
    the contract's or the corpus manifest's, --perf-* overriding fields) as a
    shape and itself; else the check launch's block with the grid assumed
    (what an explicit ``--objective throughput`` is estimated on) and None;
    ``(None, None)`` when no block is known."""
    from ptxopt.equivalence.launch import performance_of
    from ptxopt.sim.throughput import launch_shape

    base = performance_of(spec) if spec is not None else None
    known = performance_launch(path, perf, contract_file=contract_file, entry=fn.name, base=base, fn=fn)
    if known is not None:
        return launch_shape(known, origin=known.source), known
    check = _check_launch(cand, spec)
    if check is not None:
        return launch_shape(grid=None, block=tuple(check.block), shared_bytes=int(check.shared_bytes or 0),
                            origin=f"block of the {check.source} check launch; grid assumed"), None
    return None, None


def _check_launch(cand, spec):
    """The check launch the interpreter runs (a contract's, else the manifest's); None: none known."""
    if cand.launch is not None:
        return cand.launch
    if spec is not None:
        from ptxopt.equivalence.launch import from_spec

        return from_spec(spec)
    return None


def _facts(text: str, arch: str, entry: str, cand, launch=None, blocks=None, l2: str = "warm"):
    """ptxas resources and the single-warp walk of ``entry``; loop trips by the
    evaluator's rule (:func:`ptxopt.measure.loop_slice.trip_counts_for`): the
    performance ``launch``'s, else the check launch's, else the static fallback."""
    from ptxopt.measure.loop_slice import trip_counts_for
    from ptxopt.ptx.parser import parse_bytes
    from ptxopt.sim import decode, simulate
    from ptxopt.toolchain import compile_ptx, disassemble

    compiled = compile_ptx(text, arch)
    program = decode(disassemble(compiled.cubin), entry)
    check = _check_launch(cand, cand.spec)
    kw = check.interp_kwargs() if check is not None and not check.guessed else None
    # a LaunchShape; one with neither grid nor assumed blocks is no performance launch, only a block
    perf = launch if launch is not None and launch.block is not None and (launch.grid or blocks) else None
    trips, source, notes = trip_counts_for(program, parse_bytes(text.encode(), "explain"), entry, check=kw,
                                           performance=perf, blocks=blocks)
    how = {"interpreter": "interpreter (check launch)"}.get(source, source)
    if source == "performance launch":  # with the counts: "performance launch: $L__BB0_2 128"
        how += ": " + notes[-1].rsplit("): ", 1)[-1]
    if source.startswith("static") and notes:
        how = f"static fallback ({notes[-1].split('(', 1)[-1].rstrip(')')})"
    lanes = None
    if perf is not None and perf.grid is not None:  # the sectors each warp's lanes touch (sim.coalescing)
        from ptxopt.sim.coalescing import lane_charges

        lanes = lane_charges(text, entry, perf)
    return simulate(program, compiled, trips or None, l2=l2, lanes=lanes), compiled.kernels[entry], how


def _explain(text, arch, entry, cand, launch, objective, dev, *, blocks, counts=None, l2: str = "cold",
             original: str | None = None) -> dict:
    """``original``: the text ``text`` was rewritten from (its exact DRAM floor is carried)."""
    from ptxopt.sim.occupancy import dram_bytes_of_spec
    from ptxopt.sim.throughput import estimate

    l2 = l2 if objective == "throughput" else "warm"  # the latency objective is calibrated warm
    sim, res, trips = _facts(text, arch, entry, cand, launch, blocks, l2)
    footprint = None
    if cand.spec is not None and cand.launch is None and launch is not None and launch.grid is not None \
            and tuple(launch.grid) == tuple(cand.spec.launch.grid):
        footprint = dram_bytes_of_spec(cand.spec)  # the buffers are sized for this very launch
    elif cand.spec is not None and cand.launch is None and launch is not None:
        big = cand.spec.performance_spec()  # the manifest's buffers at its performance size
        if big is not None and launch.grid is not None and tuple(launch.grid) == tuple(big.launch.grid) \
                and dict(launch.scalars) == cand.spec.performance.scalars:
            footprint = dram_bytes_of_spec(big)
    floor = arith = None
    if objective == "throughput" and launch is not None:
        from ptxopt.analysis.carried_footprint import candidate_footprint
        from ptxopt.sim.floors import arithmetic_floors

        floor = candidate_footprint(original, text, entry, launch, footprint if footprint is not None else counts)
        if counts is not None and footprint is None:
            footprint = counts
        if launch.grid is not None:  # the work of an assumed grid is no floor
            arith = arithmetic_floors(text, entry, launch, dev)
    try:
        e = estimate(sim, launch, dev, objective, blocks=blocks, footprint_bytes=footprint, dram_floor=floor, l2=l2,
                     floors=arith)
    except ValueError as exc:
        fail(f"{entry}: {exc}")
    j = e.to_json()
    return {
        "launch": j["launch"], "objective": objective, "registers": res.registers,
        "spills": {"store_bytes": res.spill_store_bytes, "load_bytes": res.spill_load_bytes},
        "occupancy": j["occupancy"], "binding": j["binding"], "bounds": j["bounds"], "estimate": j["estimate"],
        "arithmetic_class": j.get("arithmetic_class"), "dram_bytes": j["dram_bytes"], "l2": l2, "device": j["device"], "waves": j["waves"],
        "footprint": None if floor is None else floor.to_json(),
        "single_warp_cycles": sim.single_warp_cycles, "loop_trips": trips,
        "notes": list(e.notes) + [n for n in sim.notes if not n.startswith("no trip counts")],
    }


# -- text output -----------------------------------------------------------------

def _bar(value: float, top: float, width: int = 40) -> str:
    n = 0 if top <= 0 else round(width * value / top)
    return "#" * n


def _section(d: dict, indent: str = "  ") -> list[str]:
    lines = []
    la = d["launch"]
    if la is None:
        lines.append(f"{indent}launch      none known (one warp)")
    else:
        grid = "x".join(map(str, la["grid"])) if la["grid"] else f"{la['blocks']} blocks ASSUMED" \
            if la["blocks"] else "unknown"
        lines.append(f"{indent}launch      grid {grid}, block {'x'.join(map(str, la['block']))}, "
                     f"{la['shared_bytes']} B dynamic shared  ({la['origin']})")
    lines.append(f"{indent}registers   {d['registers']}, spills {d['spills']['store_bytes']} B stored / "
                 f"{d['spills']['load_bytes']} B loaded")
    o = d["occupancy"]
    if o is not None:
        lines.append(f"{indent}occupancy   {o['occupancy']:.0%}: {o['blocks_per_sm']} blocks, {o['warps_per_sm']} "
                     f"warps per SM (limited by {o['limited_by']})")
    e = d["estimate"]
    err = e["expected_error"]
    err = err if isinstance(err, str) else f"±{100 * err:.0f}%"
    lines.append(f"{indent}estimate    {e['cycles']:,.0f} cycles = {1e6 * e['seconds']:,.2f} us ({err}; "
                 f"{d['objective']}; ESTIMATE)")
    if d["waves"] is not None:
        lines.append(f"{indent}waves       {d['waves']:.2f}; DRAM bytes {d['dram_bytes']:,}; L2 {d['l2']} at the start")
    fp = d.get("footprint")
    if fp is not None:
        from ptxopt.sim.throughput import CARRIED

        lines.append(f"{indent}footprint   {fp['source']}: " + (f"{'' if fp['source'] in ('exact', 'counts', 'carried') else 'partial: the exact buffers only: '}"
                                                               f"DRAM floor {fp['floor_bytes']:,} B (cold L2)"
                                                               + ("; " + CARRIED if fp["source"] == "carried" else "")
                                                              if fp["floor_bytes"] is not None else
                                                              "NO DRAM floor (the estimate may beat DRAM)"))
    if d.get("loop_trips") and not str(d["loop_trips"]).startswith("none needed"):
        lines.append(f"{indent}loop trips  {d['loop_trips']}")
    dev = d["device"]
    lines.append(f"{indent}device      {dev['name']}: {dev['sm_count']} SMs, {dev['clock_mhz']:g} MHz, "
                 f"{dev['dram_gbps']:g} GB/s, L2 {dev['l2_bytes'] >> 20} MB")
    lines.append(f"{indent}bounds (cycles; * binding):")
    top = max(d["bounds"].values()) if d["bounds"] else 0
    for k, v in d["bounds"].items():
        mark = "*" if k == d["binding"] else " "
        name = f"{k} ({d['arithmetic_class']})" if k == "arithmetic" and d.get("arithmetic_class") else k
        lines.append(f"{indent}  {mark} {name:<19} {v:>14,.0f}  {_bar(v, top)}")
    for n in d["notes"]:
        lines.append(f"{indent}note: {n}")
    return lines


def _print(d: dict) -> None:
    click.echo(f"{d['name']}  (ESTIMATES of the sim model, not measurements)")
    if "before" not in d:
        click.echo("\n".join(_section(d)))
        return
    click.echo(f"  pipeline {d['pipeline']}, objective {d['objective']}")
    click.echo("  before:")
    click.echo("\n".join(_section(d["before"], "    ")))
    click.echo("  after:")
    click.echo("\n".join(_section(d["after"], "    ")))
    c = d["change"]
    rel = "" if c["relative"] is None else f" ({100 * c['relative']:+.1f}%)"
    click.echo(f"  change: {c['cycles']:+,.0f} cycles{rel} (estimated; negative = faster)"
               + _floor_caveat(d["before"], d["after"]) + _trips_caveat(d["before"], d["after"]))


def _trips_caveat(before: dict, after: dict) -> str:
    """What a change must say when one side's loop trips are unknown (:data:`ptxopt.measure.loop_slice.UNKNOWN`):
    the loops were walked the static fallback's few times, so the figures cannot be compared."""
    from ptxopt.measure.loop_slice import UNKNOWN

    lost = [w for w, x in (("before", before), ("after", after)) if str(x.get("loop_trips", "")) == UNKNOWN]
    if not lost:
        return ""
    return f"; NOT COMPARABLE: {' and '.join(lost)}: {UNKNOWN} (the search refuses such a rewrite)"


def _floor_caveat(before: dict, after: dict) -> str:
    """What a gain shown without a DRAM floor must say: the estimate may beat DRAM."""
    missing = [w for w, x in (("before", before), ("after", after))
               if x.get("objective") == "throughput" and (x.get("footprint") or {}).get("floor_bytes") is None]
    if not missing:
        return ""
    src = (after.get("footprint") or before.get("footprint") or {}).get("source", "unknown")
    return f"; NO DRAM floor ({' and '.join(missing)}: footprint {src}): the gain may be below what DRAM allows"


def _plot(docs: list, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = []  # (title, bounds doc, the largest bound of its kernel's panels: before and after share a scale)
    for d in docs:
        if "before" in d:
            top = max([*d["before"]["bounds"].values(), *d["after"]["bounds"].values(), 0])
            panels += [(f"{d['name']} before", d["before"], top),
                       (f"{d['name']} after {d['pipeline']}", d["after"], top)]
        else:
            panels.append((d["name"], d, max([*d["bounds"].values(), 0])))
    fig, axes = plt.subplots(len(panels), 1, figsize=(7, 2.2 * len(panels)), squeeze=False)
    for ax, (title, d, top) in zip(axes[:, 0], panels):
        names = list(d["bounds"])
        vals = [d["bounds"][k] for k in names]
        ax.barh(names, vals, color=["tab:red" if k == d["binding"] else "tab:gray" for k in names])
        if top > 0:
            ax.set_xlim(0, 1.05 * top)
        ax.set_title(f"{title} ({d['objective']}, ESTIMATE)", fontsize=9)
        ax.set_xlabel("cycles")
        ax.invert_yaxis()
    fig.tight_layout()
    from ptxopt.support.outputs import atomic_path

    with atomic_path(path) as tmp:
        fig.savefig(tmp, format=os.path.splitext(str(path))[1][1:].lower() or None)
    plt.close(fig)


__all__ = ["explain_cmd", "ENTRY_KEYS"]
