"""Greedy under ``latency`` and under ``throughput``, per nvcc/Triton corpus kernel (ESTIMATES).

What the objective does to search: under the single-warp
``latency`` objective greedy's gains are mostly register budgets (more
registers for one warp), which a whole launch may pay for in occupancy.
This script runs greedy twice per kernel -- ``--objective latency`` and
``--objective throughput`` on the manifest's performance launch -- and
prints per kernel: the pipeline, the estimated gain, how much of the
pipeline is register budgets (``maxnreg_*``, ``launch_bounds``), and for
the throughput winner the occupancy and binding bound before/after (from
:func:`ptxopt.sim.throughput.estimate` through ``ptxopt explain``).

    python benchmarks/reports/objective_report.py [SELECTOR] [--json OUT] [-j N]

Every figure is the sim model's ESTIMATE; throughput is uncalibrated.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

BUDGET_FAMILY = ("maxnreg", "launch_bounds")


def _budget_share(pipeline: str) -> str:
    passes = [p for p in pipeline.split(",") if p]
    if not passes:
        return "-"
    n = sum(p.startswith(BUDGET_FAMILY) for p in passes)
    return f"{n}/{len(passes)}"


def _explain(kernel: str, pipeline: str) -> dict | None:
    from click.testing import CliRunner

    from ptxopt.cli import cli

    args = ["explain", f"corpus:{kernel}", "--objective", "throughput", "--json"]
    if pipeline:
        args += ["--passes", pipeline]
    r = CliRunner().invoke(cli, args)
    if r.exit_code != 0:
        return None
    return json.loads(r.stdout)["kernels"][0]


def run(selector: str, cache: str | None) -> list[dict]:
    from ptxopt.kernels.corpus import select
    from ptxopt.equivalence.launch import performance_of
    from ptxopt.evaluate import Candidate
    from ptxopt.search import EvalOptions, SearchConfig, search_kernel

    rows = []
    for spec in select(selector):
        if spec.family == "gemm_tile":
            continue
        perf = performance_of(spec)
        row = {"kernel": spec.id, "performance": perf.describe() if perf is not None else None,
               "problem": spec.performance.problem if spec.performance is not None else None}
        for obj in ("latency", "throughput"):
            cfg = SearchConfig("greedy", options=EvalOptions(cache=cache, objective=obj))
            r = search_kernel(Candidate.from_corpus(spec), cfg, spec.family)
            gain = (1 - r.best_cycles / r.baseline_cycles) if r.best_cycles and r.baseline_cycles else None
            row[obj] = {"pipeline": r.pipeline, "gain": gain, "budget_share": _budget_share(r.pipeline),
                        "baseline": r.baseline_cycles, "best": r.best_cycles, "error": r.error}
        t = row["throughput"]
        doc = _explain(spec.id, t["pipeline"]) if t["pipeline"] else _explain(spec.id, "")
        if doc is not None:
            before, after = (doc["before"], doc["after"]) if "before" in doc else (doc, doc)
            row["occupancy"] = [before["occupancy"], after["occupancy"]]
            row["binding"] = [before["binding"], after["binding"]]
        lat = row["latency"]["pipeline"]
        if lat and lat != t["pipeline"]:  # the latency winner re-scored on the whole launch
            doc = _explain(spec.id, lat)
            if doc is not None and "after" in doc:
                row["latency_winner_on_throughput"] = doc["change"]["relative"]
        rows.append(row)
        _print_row(row)
    return rows


def _pct(x) -> str:
    return "-" if x is None else f"{100 * x:+.1f}%"


def _print_row(row: dict) -> None:
    lat, thr = row["latency"], row["throughput"]
    occ = row.get("occupancy")
    occ_s = f"{occ[0]['occupancy']:.2f}->{occ[1]['occupancy']:.2f}" if occ and occ[0] and occ[1] else "-"
    bind = "->".join(row.get("binding") or ["-"])
    print(f"{row['kernel']:28s} latency [{lat['pipeline'] or '-'}] {_pct(lat['gain'])} budgets {lat['budget_share']}"
          f" | throughput [{thr['pipeline'] or '-'}] {_pct(thr['gain'])} budgets {thr['budget_share']}"
          f" | occ {occ_s} bound {bind} | latency winner on the launch "
          f"{_pct(-row['latency_winner_on_throughput']) if 'latency_winner_on_throughput' in row else '-'}",
          flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("selector", nargs="?", default="cuda,triton")
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--cache", default=None, help="evaluation cache (default: none)")
    a = ap.parse_args()
    rows = run(a.selector, a.cache)
    def mean(xs):
        xs = [x for x in xs if x is not None]
        return sum(xs) / len(xs) if xs else None
    for obj in ("latency", "throughput"):
        gains = [r[obj]["gain"] for r in rows]
        budget = sum(1 for r in rows if r[obj]["budget_share"] not in ("-", f"0/{len(r[obj]['pipeline'].split(','))}"))
        print(f"{obj}: mean gain {_pct(mean(gains))} over {len(rows)} kernels; pipelines with a register budget: "
              f"{budget}")
    flips = [r["latency_winner_on_throughput"] for r in rows if "latency_winner_on_throughput" in r]
    if flips:
        print(f"latency winners re-scored on the performance launch: mean {_pct(-mean(flips))} "
              f"({sum(1 for f in flips if f > 0)} of {len(flips)} slower than the original)")
    if a.json:
        a.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
