"""What an estimate costs next to ptxas, per corpus kernel with a loop (the
target: the replay must cost <= 25% of that kernel's ptxas time).

For each kernel: ptxas wall time (no memo, best of ``--repeat``), then the
sim replay alone -- :func:`ptxopt.sim.simulate` on the already decoded SASS
with the performance launch's trip counts under the throughput objective
(nvdisasm, decoding and the trip-count derivation excluded: they are timed
apart by ``benchmarks/reports/loop_trips_report.py``), best of ``--repeat``.  Best-of
timings on a shared machine are the least disturbed ones; the ratio is taken
within one run.  Run under ``nice``::

    PYTHONPATH=$PWD python benchmarks/speed/sim_cost.py [IDS] [--repeat 3] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time


def rows(ids: str, repeat: int):
    from ptxopt.kernels.corpus import select
    from ptxopt.evaluate.candidate import _manifest_performance
    from ptxopt.measure.backend import MeasureJob
    from ptxopt.measure.disasm import disassemble_many
    from ptxopt.measure.loop_slice import trip_counts_for
    from ptxopt.measure.measured_trips import loop_headers
    from ptxopt.measure.sim import _objective_kw
    from ptxopt.ptx.parser import parse
    from ptxopt.sim import simulate
    from ptxopt.sim.sass_decode import decode
    from ptxopt.toolchain import compile_ptx

    for spec in select(ids):
        text = spec.ptx_text()
        module = parse(text, spec.id)
        if not loop_headers(module, spec.entry):
            continue
        ptxas = []
        for _ in range(repeat):
            t = time.perf_counter()
            compiled = compile_ptx(text, spec.arch, memo=False)
            ptxas.append(time.perf_counter() - t)
        program = decode(disassemble_many([compiled.cubin])[0], spec.entry)
        perf = _manifest_performance(spec)
        job = MeasureJob(text, spec.arch, spec, spec.entry, compiled, module, None, True,
                         objective="throughput" if perf is not None else "latency", performance=perf,
                         check_block=spec.launch.block)
        trips, how, _ = trip_counts_for(program, module, spec.entry, check={"spec": spec}, performance=perf)
        kw = _objective_kw(job)
        replay = []
        for _ in range(repeat):
            t = time.perf_counter()
            r = simulate(program, compiled, trips or None, **kw)
            replay.append(time.perf_counter() - t)
        yield {"kernel": spec.id, "ptxas_s": min(ptxas), "replay_s": min(replay), "trips": how,
               "issued": r.issued_instructions, "truncated": r.truncated}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("ids", nargs="?", default="all")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", metavar="OUT")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    out = []
    print(f"{'kernel':36} {'ptxas s':>8} {'replay s':>9} {'ratio':>7} {'issued':>12}  trips")
    for r in rows(args.ids, args.repeat):
        out.append(r)
        ratio = r["replay_s"] / r["ptxas_s"]
        print(f"{r['kernel']:36} {r['ptxas_s']:8.3f} {r['replay_s']:9.4f} {ratio:7.1%} {r['issued']:12,d}  "
              f"{r['trips']}{' TRUNCATED' if r['truncated'] else ''}", flush=True)
    if out:
        ratios = [r["replay_s"] / r["ptxas_s"] for r in out]
        over = [r["kernel"] for r, x in zip(out, ratios) if x > 0.25]
        print(f"{len(out)} kernels: replay/ptxas median {statistics.median(ratios):.1%}, max {max(ratios):.1%}; "
              f"over 25%: {len(over)} {', '.join(over)}; truncated: {sum(r['truncated'] for r in out)}")
    print(f"({time.perf_counter() - t0:.0f} s; timings best of {args.repeat})")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
