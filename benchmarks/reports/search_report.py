"""Search baselines: greedy, beam (width 4) and random search at greedy's budget.

For each kernel set (default: the gemm_tile family, then the real-kernel
families -- every nvcc and Triton kernel) prints, per strategy: mean,
median, best and worst improvement (cycles saved, % of the baseline), the
geometric-mean speedup, evaluations per kernel, and wall time. Cycles are
the sim model's ESTIMATE unless ``--backend gpu``.

Random search gets, per kernel, exactly the evaluations greedy spent on it
(``budget="greedy"``), so the greedy/random rows compare at equal cost.

Results go through the evaluator's cache (``--cache``; default the user
cache), so a second run is fast and wall times then measure the search, not
the evaluations -- the ``hit %`` column says which you are looking at.

Usage: ``python benchmarks/reports/search_report.py [--sets gemm_tile,real] [--workers 2] [--json OUT]``
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from ptxopt.kernels.corpus import select  # noqa: E402
from ptxopt.evaluate import Candidate, default_cache_path  # noqa: E402
from ptxopt.search import EvalOptions, SearchConfig, search_many, summarize  # noqa: E402

SETS = {"gemm_tile": "gemm_tile", "real": "cuda,triton"}
RUNS = (("greedy", {}), ("beam", {"beam_width": 4}), ("random", {"budget": "greedy"}))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sets", default="gemm_tile,real", help="comma list of: gemm_tile, real, or corpus selectors")
    ap.add_argument("--strategies", default="greedy,beam,random")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--max-steps", type=int, default=6)
    ap.add_argument("--backend", default="sim")
    ap.add_argument("--cache", default=str(default_cache_path()))
    ap.add_argument("--json", default=None, help="write every per-kernel result and summary here")
    args = ap.parse_args()
    options = EvalOptions(backend=args.backend, cache=args.cache)
    wanted = args.strategies.split(",")
    doc = {}
    print(f"cycles: {'ESTIMATE (sim model)' if options.estimate else 'MEASUREMENT'}; workers {args.workers}")
    print(f"{'set':<10}{'strategy':<9}{'kernels':>8}{'mean %':>8}{'median %':>9}{'best %':>8}{'worst %':>8}"
          f"{'geomean':>9}{'evals/k':>8}{'hit %':>7}{'wall s':>8}")
    for set_name in args.sets.split(","):
        specs = select(SETS.get(set_name, set_name))
        kernels = [(Candidate.from_corpus(s), s.family) for s in specs]
        for strategy, extra in RUNS:
            if strategy not in wanted:
                continue
            cfg = SearchConfig(strategy, max_steps=args.max_steps, options=options, **extra)
            t0 = time.perf_counter()
            results = search_many(kernels, cfg, workers=args.workers)
            wall = time.perf_counter() - t0
            s = summarize(results)
            imp = s["improvement_pct"]
            print(f"{set_name:<10}{strategy:<9}{s['searched']:>8}{imp['mean']:>8.2f}{imp['median']:>9.2f}"
                  f"{imp['best']:>8.2f}{imp['worst']:>8.2f}{s['geomean_speedup']:>9.4f}"
                  f"{s['evaluations_per_kernel']:>8.1f}{100 * (s['cache_hit_rate'] or 0):>7.1f}{wall:>8.1f}",
                  flush=True)
            doc[f"{set_name}/{strategy}"] = {"summary": s, "wall_s": wall,
                                             "kernels": [r.to_json() for r in results]}
    if args.json:
        Path(args.json).write_text(json.dumps(doc, indent=2) + "\n")


if __name__ == "__main__":
    main()
