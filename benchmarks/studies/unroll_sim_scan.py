"""Which ``unroll`` candidates the sim model cannot value: a scan.

    PYTHONPATH=$PWD python benchmarks/studies/unroll_sim_scan.py [SELECTOR] [--factors 2,4,8] [--objective throughput]

For every corpus kernel with a PTX loop (default selector: all) and
``unroll{factor=F}``: the pass (refused -> ``refused``), then the ``sim``
backend as the evaluator calls it (the manifest's performance launch, trip
counts from its loop-control slice, the objective given) on the original and
the candidate; no equivalence check (the verdict does not change what the
model says).  Prints one row per candidate -- ``ok`` with the estimate and
its ratio to the original, ``truncated`` (the walk hit ``max_steps``), or the
failure -- and the count of truncated candidates.  Run it with the code of two
revisions side by side to compare them.  Every cycle figure is an ESTIMATE.
"""

from __future__ import annotations

import argparse
import sys
import time


def _measure(spec, text: str, objective: str, perf):
    from ptxopt.measure.backend import MeasureJob
    from ptxopt.measure.sim import SimBackend
    from ptxopt.ptx.parser import parse

    job = MeasureJob(text, spec.arch, spec, spec.entry, None, parse(text, spec.id), None, True,
                     objective=objective, performance=perf, check_block=spec.launch.block)
    out = SimBackend().measure_many([job])[0]
    if isinstance(out, Exception):
        kind = getattr(out, "category", None) or type(out).__name__
        return None, str(kind)
    return out.cycles, "ok"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("selector", nargs="?", default="all")
    ap.add_argument("--factors", default="2,4,8")
    ap.add_argument("--objective", default="throughput", choices=("latency", "throughput"))
    a = ap.parse_args(argv)

    from ptxopt import emit, parse
    from ptxopt.kernels.corpus import select
    from ptxopt.evaluate.candidate import _manifest_performance
    from ptxopt.measure.measured_trips import loop_headers
    from ptxopt.passes.passmanager import PassManager
    from ptxopt.passes.pipeline import Pipeline

    t0 = time.perf_counter()
    tally: dict[str, int] = {}
    for spec in select(a.selector):
        module = parse(spec.ptx_text(), spec.id)
        if not loop_headers(module, spec.entry):
            continue
        perf = _manifest_performance(spec)
        base, status = _measure(spec, spec.ptx_text(), a.objective, perf)
        print(f"{spec.id:32} {'original':18} {status:10} {base if base is not None else '-':>14}", flush=True)
        for f in (int(x) for x in a.factors.split(",")):
            pipe = f"unroll{{factor={f}}}"
            try:
                text = emit(PassManager(Pipeline.parse(pipe)).run(parse(spec.ptx_text(), spec.id)).module)
            except Exception as e:  # refused (not counted, nounroll, ...): no candidate
                status, cyc = "refused", None
                why = str(e).splitlines()[0][:60] if str(e) else type(e).__name__
            else:
                if text == emit(module):
                    status, cyc, why = "unchanged", None, ""
                else:
                    cyc, status = _measure(spec, text, a.objective, perf)
                    why = f"x{cyc / base:.3f}" if cyc is not None and base else ""
            tally[status] = tally.get(status, 0) + 1
            print(f"{spec.id:32} {pipe:18} {status:10} {cyc if cyc is not None else '-':>14} {why}", flush=True)
    print("candidates: " + ", ".join(f"{k} {v}" for k, v in sorted(tally.items())))
    print(f"({time.perf_counter() - t0:.0f} s; objective {a.objective}; every cycle figure is an ESTIMATE)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
