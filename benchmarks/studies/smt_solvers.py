"""z3 or bitwuzla? And what does the SMT check add to the structural prover?

1. **Solver comparison**: real queries of :mod:`ptxopt.equivalence.prove.smt` -- the
   re-check of every ``proved`` pass-matrix pair (kernels sampled: every
   ``--every``-th corpus kernel), and the prover's fallback queries on
   mutants of corpus kernels (:mod:`ptxopt.testing.mutants`, mostly ``sat``:
   a real difference) -- each solved by both solvers with the same timeout:
   time per query (median, p90, max, total), ``unknown`` count, and any
   disagreement (``sat`` vs ``unsat``: a bug in one of them or in the text).
2. **Re-check tally** over the sampled pass matrix: pairs, proved, re-checked
   equal / counterexamples / timeouts / unsupported (by construct).
3. **What became proved**: pass-matrix pairs that are ``inconclusive`` for
   the prover without the solver and ``proved`` with it (they fell back to the
   interpreter before).

Usage: ``python benchmarks/studies/smt_solvers.py [--every 1] [--timeout-ms 2000] [--json]``
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from ptxopt.kernels.corpus import load_manifest
from ptxopt.ptx.emit import emit
from ptxopt.ptx.parser import parse
from ptxopt.equivalence.prove import _MEMO, prove  # _MEMO.get(): the active session's proofs
from ptxopt.equivalence.prove.smt import check, solver
from ptxopt.testing.mutants import mutants
from ptxopt.testing.smt_recheck import matrix_pairs, recheck_pairs

SOLVERS = ("z3", "bitwuzla")


def sample(every: int):
    ks = load_manifest()
    return ks[::every]


def collect_queries(kernels, timeout_ms: int, per_operator: int) -> tuple[list[tuple[str, str]], dict]:
    """(origin, SMT-LIB text) of every query the re-check and the fallback make; the re-check tally."""
    queries: list[tuple[str, str]] = []

    def keep(pair, pr, r):
        queries.extend(("recheck", b.query) for b in r.blocks if b.query)

    tally = recheck_pairs(matrix_pairs(kernels), timeout_ms=timeout_ms, on_pair=keep)
    # the fallback's queries: mutants of the nvcc/Triton kernels (the prover fails on a block)
    orig_check = check.check_block

    def capture(*a, **kw):
        r = orig_check(*a, **kw)
        if r.query:
            queries.append(("fallback", r.query))
        return r

    check.check_block = capture
    try:
        for spec in kernels:
            if spec.compiler not in ("nvcc", "triton"):
                continue
            m = parse(spec.ptx_text(), spec.id)
            text = emit(m)
            for mu in mutants(m, spec.entry, per_operator=per_operator):
                prove(text, emit(mu.module), entry=spec.entry)
    finally:
        check.check_block = orig_check
    return queries, {"line": tally.line(), "pairs": tally.pairs, "proved": tally.proved,
                     "proved_by_solver": tally.proved_by_solver, "recheck": dict(tally.status),
                     "unsupported": dict(tally.unsupported.most_common(12)),
                     "counterexamples": tally.counterexamples,
                     "recheck_seconds": round(sum(tally.seconds), 2)}


def compare(queries, timeout_ms: int) -> dict:
    out = {}
    answers = {}
    for s in SOLVERS:
        if not solver.available(s):
            out[s] = "not installed"
            continue
        times, status = [], Counter()
        for i, (_, text) in enumerate(queries):
            a = solver.solve(text, timeout_ms, s)
            times.append(a.seconds)
            status[a.status] += 1
            answers.setdefault(i, {})[s] = a.status
        times.sort()
        out[s] = {"queries": len(times), "status": dict(status), "unknown": status["unknown"],
                  "median_ms": round(1000 * statistics.median(times), 2) if times else None,
                  "p90_ms": round(1000 * times[int(0.9 * (len(times) - 1))], 2) if times else None,
                  "max_ms": round(1000 * times[-1], 1) if times else None,
                  "total_s": round(sum(times), 2)}
    disagree = [i for i, a in answers.items() if len(set(a.values()) - {"unknown"}) > 1]
    out["disagreements"] = len(disagree)
    return out


def newly_proved(kernels) -> list[str]:
    """Pairs inconclusive without the solver and proved with it."""
    out = []
    for p in matrix_pairs(kernels):
        _MEMO.get().clear()
        available = solver.available
        solver.available = lambda name=solver.DEFAULT: False
        try:
            before = prove(p.original, p.candidate, entry=p.entry).verdict
        finally:
            solver.available = available
        if before == "proved":
            continue
        _MEMO.get().clear()
        if prove(p.original, p.candidate, entry=p.entry).verdict == "proved":
            out.append(p.label)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--every", type=int, default=1, help="sample every N-th corpus kernel")
    ap.add_argument("--timeout-ms", type=int, default=solver.TIMEOUT_MS)
    ap.add_argument("--per-operator", type=int, default=1, help="mutants per operator for fallback queries")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    t0 = time.perf_counter()
    kernels = sample(args.every)
    queries, tally = collect_queries(kernels, args.timeout_ms, args.per_operator)
    origins = Counter(o for o, _ in queries)
    cmp = compare(queries, args.timeout_ms)
    new = newly_proved(kernels)
    doc = {"kernels": len(kernels), "every": args.every, "timeout_ms": args.timeout_ms,
           "queries": dict(origins), "solvers": cmp, "recheck": tally, "newly_proved": new,
           "wall_s": round(time.perf_counter() - t0, 1)}
    if args.json:
        print(json.dumps(doc, indent=1))
        return
    print(f"{len(kernels)} corpus kernels (every {args.every}), {len(queries)} queries {dict(origins)}, "
          f"timeout {args.timeout_ms} ms")
    for s in SOLVERS:
        print(f"  {s:9s} {cmp[s]}")
    print(f"  disagreements: {cmp['disagreements']}")
    print(f"re-check: {tally['line']} ({tally['recheck_seconds']} s)")
    print(f"  unsupported: {tally['unsupported']}")
    for c in tally["counterexamples"]:
        print(f"  COUNTEREXAMPLE {c}")
    print(f"newly proved (interpreter-only before): {len(new)}: {', '.join(new[:20])}")
    print(f"wall {doc['wall_s']} s")


if __name__ == "__main__":
    main()
