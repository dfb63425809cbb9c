"""Evaluation results of corpus kernels x single passes, as JSON lines, for before/after comparisons.

A refactor of the checking layer must leave every evaluation result as it
was: status, verdict, cycles and registers per (kernel, pipeline). This
script writes one JSON line per candidate, in a fixed order, from the
evaluator's public API only (``ptxopt.evaluate.evaluate_many`` on
``Candidate.from_corpus``), so the same script runs on any commit::

    git worktree add /tmp/old <rev>
    PYTHONPATH=/tmp/old python benchmarks/reports/verdict_compare.py cuda,triton --out old.jsonl
    python benchmarks/reports/verdict_compare.py cuda,triton --out new.jsonl
    python benchmarks/reports/verdict_compare.py --diff old.jsonl new.jsonl

``--diff`` prints every (kernel, pipeline) whose status, verdict, cycles or
registers differ, and a count; exit 1 when any does. Timings, notes and
keys are not compared (they name code versions and launches in words).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

FIELDS = ("status", "equivalence", "cycles", "registers")


def run(selector: str, pipelines: list[str] | None, out: Path, jobs: int) -> None:
    from ptxopt.kernels.corpus import select
    from ptxopt.evaluate import Candidate, evaluate_many
    from ptxopt.passes.registry import pass_names

    names = pipelines or [""] + pass_names()
    cands = [Candidate.from_corpus(k, p) for k in select(selector) for p in names]
    results = evaluate_many(cands, cache=None, workers=jobs)
    with out.open("w") as f:
        for c, r in zip(cands, results):
            f.write(json.dumps({"kernel": c.spec.id, "pipeline": c.pipeline,
                                **{k: getattr(r, k) for k in FIELDS}}) + "\n")
    print(f"{len(cands)} candidates -> {out}")


def diff(a: Path, b: Path) -> int:
    def load(p):
        return {(d["kernel"], d["pipeline"]): d for d in map(json.loads, p.read_text().splitlines())}

    old, new = load(a), load(b)
    bad = 0
    for key in sorted(set(old) | set(new)):
        o, n = old.get(key), new.get(key)
        if o is None or n is None or any(o[k] != n[k] for k in FIELDS):
            bad += 1
            print(f"{key[0]} [{key[1]}]: {o and {k: o[k] for k in FIELDS}} -> {n and {k: n[k] for k in FIELDS}}")
    print(f"{len(old)} before, {len(new)} after, {bad} differ")
    return 1 if bad else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("selector", nargs="?", default="cuda,triton", help="corpus selector (ptxopt.kernels.corpus.select)")
    ap.add_argument("--pipelines", default=None, help="comma-separated pipelines [default: baseline + every pass]")
    ap.add_argument("--out", type=Path, default=Path("verdicts.jsonl"))
    ap.add_argument("-j", "--jobs", type=int, default=0, help="worker processes (0: this one)")
    ap.add_argument("--diff", nargs=2, type=Path, metavar=("BEFORE", "AFTER"))
    a = ap.parse_args()
    if a.diff:
        return diff(*a.diff)
    run(a.selector, a.pipelines.split(",") if a.pipelines else None, a.out, a.jobs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
