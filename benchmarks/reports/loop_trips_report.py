"""Loop kernels under the sim model: where trip counts come from, what they
cost, and the latency/throughput estimates they give.

For every corpus kernel with a PTX loop (or the ids given), prints the
trip-count source, the estimate under both objectives on the kernel's
performance launch, and the cost of each step in seconds: ptxas, the trip
counts (interpreter), the replay (nvdisasm excluded, timed apart).

    PYTHONPATH=. python benchmarks/reports/loop_trips_report.py [IDS] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import time


def _has_steady(simulate) -> bool:
    import inspect

    return "steady_state" in inspect.signature(simulate).parameters


def rows(ids: str):
    from ptxopt.kernels.corpus import select
    from ptxopt.evaluate.candidate import _manifest_performance as performance_of
    from ptxopt.measure.backend import MeasureJob
    from ptxopt.measure.disasm import disassemble_many
    from ptxopt.measure.measured_trips import loop_headers
    from ptxopt.measure.sim import SimBackend, _objective_kw
    from ptxopt.ptx.parser import parse
    from ptxopt.sim import simulate
    from ptxopt.sim.sass_decode import decode
    from ptxopt.toolchain import compile_ptx

    be = SimBackend()
    for k in select(ids):
        module = parse(k.ptx_text())
        if not loop_headers(module, k.entry):
            continue
        t = time.perf_counter()
        compiled = compile_ptx(k.ptx_text(), k.arch)
        t_ptxas = time.perf_counter() - t
        listing = disassemble_many([compiled.cubin])[0]
        program = decode(listing, k.entry)
        out = {"id": k.id, "ptxas_s": round(t_ptxas, 4)}
        for objective in ("latency", "throughput"):
            job = MeasureJob(k.ptx_text(), k.arch, k, k.entry, compiled, module, None, True,
                             objective=objective, performance=performance_of(k), check_block=k.launch.block)
            t = time.perf_counter()
            trips, source, notes = be._trip_counts(job, program, k.entry)
            t_trips = time.perf_counter() - t
            t = time.perf_counter()
            r = simulate(program, compiled, trips or None, loop_trips=be.loop_trips, **_objective_kw(job))
            t_replay = time.perf_counter() - t
            out[objective] = {"cycles": r.cycles, "truncated": r.truncated, "trips": source,
                              "trips_s": round(t_trips, 4), "replay_s": round(t_replay, 4),
                              "notes": [n for n in notes if "trip" in n]}
            if objective == "latency" and _has_steady(simulate):
                t = time.perf_counter()
                simulate(program, compiled, trips or None, loop_trips=be.loop_trips, steady_state=False)
                out["full_replay_s"] = round(time.perf_counter() - t, 4)
        yield out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("ids", nargs="?", default="cuda,triton")
    ap.add_argument("--json", default=None)
    a = ap.parse_args(argv)
    allrows = []
    print(f"{'kernel':32} {'ptxas s':>8} {'lat cyc':>10} {'thr cyc':>11} {'trips s':>8} {'replay s':>8} "
          f"{'full s':>7} {'replay/ptxas':>12}  trips")
    for r in rows(a.ids):
        allrows.append(r)
        lat, thr = r["latency"], r["throughput"]
        full = r.get("full_replay_s")
        print(f"{r['id']:32} {r['ptxas_s']:8.3f} {lat['cycles']:10.0f} {thr['cycles']:11.0f} "
              f"{lat['trips_s']:8.3f} {lat['replay_s']:8.4f} {'-' if full is None else f'{full:.4f}':>7} "
              f"{lat['replay_s'] / r['ptxas_s']:12.1%}  {thr['trips']}{' TRUNCATED' if thr['truncated'] else ''}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(allrows, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
