"""Greedy with and without the latency-hiding actions (``loop_version_2/4``, ``swp_ld_1/2``), under
``--objective throughput``, on the sample of ``benchmarks/reports/latency_actions_table.py``.

Every gain is an ESTIMATE of the sim model (throughput, L2 cold, the performance launch), not a
measurement. Two greedy searches per kernel (``--max-steps``, default 4; one fresh evaluator cache that
the second search shares, so it reuses the figures the first computed -- the sim is deterministic):
one with every action, one with the four new actions dropped
(``SearchConfig.dropped_actions``, what ``--actions -NAME`` does). Printed: per kernel both gains and
pipelines; then the mean and median gain of each search, how often each new action is in the best
pipeline, and the evaluations each search spent.

    python benchmarks/reports/latency_actions_greedy.py [--per-group 1] [--max-steps 4] [--arch sm_89]
                                                [--md benchmarks/results/latency_actions_greedy.md]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path[:0] = [str(ROOT / "benchmarks" / "reports"), str(ROOT / "benchmarks" / "studies")]

from latency_actions_table import NEW_ACTIONS, sample  # noqa: E402


def candidates(per_group: int) -> list:
    """``(Candidate, stratum)`` of the table's sample, the outside kernels with their contracts."""
    from ptxopt.evaluate import Candidate
    from throughput_audit import outside_candidates

    out = [(Candidate.from_corpus(spec), group) for label, group, *_, spec in sample(per_group) if spec is not None]
    out += [(c, "outside") for c, _ in outside_candidates()]
    return out


def search(kernels: list, args, dropped: tuple[str, ...]) -> tuple[list, float]:
    from ptxopt.search import EvalOptions, SearchConfig, search_many

    options = EvalOptions(backend="sim", cache=args.cache, objective="throughput", arch=args.arch)
    cfg = SearchConfig("greedy", max_steps=args.max_steps, options=options, dropped_actions=dropped)
    t0 = time.perf_counter()
    res = search_many(kernels, cfg, workers=0,
                      on_result=lambda r: print(f"  {'without' if dropped else 'with'} {r.kernel}: "
                                                f"{r.improvement_pct or 0:.2f}% {r.pipeline or '-'}",
                                                file=sys.stderr, flush=True))
    return res, time.perf_counter() - t0


def summary(res: list) -> dict:
    gains = [r.improvement_pct or 0.0 for r in res if r.baseline_cycles]
    chosen = {a: sum(a in (r.pipeline or "").split(",") for r in res) for a in NEW_ACTIONS}
    return {"kernels": len(gains), "mean": sum(gains) / len(gains) if gains else None,
            "median": statistics.median(gains) if gains else None, "chosen": chosen,
            "evaluations": sum(r.evaluations for r in res), "errors": sum(1 for r in res if not r.baseline_cycles)}


def markdown(doc: dict) -> str:
    w, wo = doc["with"], doc["without"]
    out = ["# Greedy with and without the latency-hiding actions (ESTIMATES of the sim model, not measured)", "",
           "Written by `benchmarks/reports/latency_actions_greedy.py`: "
           f"greedy, max {doc['max_steps']} steps, throughput, "
           f"L2 cold, arch {doc['arch']}, one fresh cache shared by both searches; "
           + (f"the kernels named ({len(doc['kernels'])}, `--only`)" if doc.get("only") else
              f"the sample of `latency_actions_table.py` (every outside kernel, the first {doc['per_group']} "
              "loop kernel per stratum)")
           + f". Wall: with {doc['with_s']:.0f} s, without {doc['without_s']:.0f} s."
           + (f" Note: {doc['note']}." if doc.get("note") else ""), "",
           "| search | kernels | mean gain | median gain | evaluations | "
           + " | ".join(f"{a} chosen" for a in NEW_ACTIONS) + " |", "|---|---|---|---|---|" + "---|" * len(NEW_ACTIONS)]
    for name, s in (("with the new actions", w), ("without them", wo)):
        out.append(f"| {name} | {s['kernels']} | {s['mean']:.2f}% | {s['median']:.2f}% | {s['evaluations']} | "
                   + " | ".join(str(s["chosen"][a]) for a in NEW_ACTIONS) + " |")
    out += ["", "| kernel | stratum | gain with | pipeline with | gain without | pipeline without |",
            "|---|---|---|---|---|---|"]
    for r in doc["kernels"]:
        out.append(f"| {r['kernel']} | {r['group']} | {r['gain_with']:.2f}% | {r['pipeline_with'] or '-'} | "
                   f"{r['gain_without']:.2f}% | {r['pipeline_without'] or '-'} |")
    return "\n".join(out) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--per-group", type=int, default=1)
    ap.add_argument("--max-steps", type=int, default=4)
    ap.add_argument("--arch", default="sm_89", help="sm_89: the L4 table; sm_90: the H100 table")
    ap.add_argument("--only", default=None, help="comma list of kernel names (a quick look)")
    ap.add_argument("--cache", default=None, help="evaluator cache file (default: a fresh one in a temporary "
                                                  "directory)")
    ap.add_argument("--from-json", default=None, help="only print/write the Markdown of a JSON this script wrote")
    ap.add_argument("--md", default=None)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    if args.from_json:
        md = markdown(json.loads(Path(args.from_json).read_text()))
        print(md)
        if args.md:
            Path(args.md).write_text(md)
        return 0
    if args.cache is None:
        args.cache = str(Path(tempfile.mkdtemp(prefix="latency_greedy_")) / "cache.sqlite")
    kernels = candidates(args.per_group)
    if args.only:
        keep = set(args.only.split(","))
        kernels = [k for k in kernels if k[0].label in keep]
    with_, t_with = search(kernels, args, ())
    without, t_without = search(kernels, args, NEW_ACTIONS)
    rows = [{"kernel": a.kernel, "group": g, "gain_with": a.improvement_pct or 0.0, "pipeline_with": a.pipeline,
             "gain_without": b.improvement_pct or 0.0, "pipeline_without": b.pipeline,
             "error": a.error or b.error}
            for (_, g), a, b in zip(kernels, with_, without)]
    doc = {"kind": "estimate", "arch": args.arch, "only": args.only, "max_steps": args.max_steps,
           "per_group": args.per_group, "with": summary(with_), "without": summary(without), "with_s": t_with,
           "without_s": t_without,
           "kernels": rows}
    md = markdown(doc)
    print(md)
    if args.md:
        Path(args.md).write_text(md)
    if args.json:
        Path(args.json).write_text(json.dumps(doc, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
