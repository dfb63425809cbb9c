"""Verdicts and cost of proving ``unroll`` on corpus kernels with loops.

    python benchmarks/speed/unroll_proof_cost.py [SELECTOR ...] [--factors 2,4,8] [--per-family 2] [--mutants]

For each selected kernel where ``unroll{factor=F}`` changes something: the
prover's verdict (:func:`ptxopt.equivalence.prove.prove`, memo cleared: a
cold proof) and its wall time, against the wall time of one ptxas run on the
unrolled kernel (``compile_ptx``, memo off). Prints one row per kernel and
factor, the verdict counts, and the median ratio proof/ptxas.
``--mutants``: every loop mutant (:mod:`ptxopt.testing.loop_mutants`) of
factor 4 is proved too; none may be ``proved`` (the count is printed).
Run it against another checkout (PYTHONPATH) for a before/after comparison:
what it measures is only what that checkout's prover says.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections import Counter

from ptxopt import emit, parse
from ptxopt.kernels.corpus import select
from ptxopt.equivalence.prove import clear_memo, prove
from ptxopt.passes.unroll import Unroll


def _ptxas_seconds(text: str, arch: str) -> float | None:
    from ptxopt.toolchain.ptxas import compile_ptx

    t = time.perf_counter()
    try:
        compile_ptx(text, arch, memo=False)
    except Exception:  # noqa: BLE001 - a rejected kernel has no comparable time
        return None
    return time.perf_counter() - t


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("selectors", nargs="*", default=["nvcc", "triton"])
    ap.add_argument("--factors", default="2,4,8")
    ap.add_argument("--per-family", type=int, default=2, help="at most this many kernels per family (0: all)")
    ap.add_argument("--mutants", action="store_true")
    a = ap.parse_args()
    seen: Counter = Counter()
    counts: Counter = Counter()
    mut: Counter = Counter()
    ratios, proofs = [], []
    for spec in [s for sel in a.selectors for s in select(sel)]:
        if a.per_family and seen[spec.family] >= a.per_family:
            continue
        text = spec.ptx_text()
        m = parse(text, spec.path)
        arch = getattr(spec, "arch", None) or "sm_89"
        did = False
        for f in (int(x) for x in a.factors.split(",")):
            out, rep = Unroll(factor=f).apply(m)
            if not rep.changed:
                continue
            did = True
            cand = emit(out)
            clear_memo()
            t = time.perf_counter()
            r = prove(text, cand, entry=spec.entry)
            tp = time.perf_counter() - t
            ts = _ptxas_seconds(cand, arch)
            counts[(f, r.verdict)] += 1
            proofs.append(tp)
            if ts:
                ratios.append(tp / ts)
            print(f"{spec.id:<28} unroll{{factor={f}}} {r.verdict:<12} proof {tp:6.3f} s  ptxas "
                  f"{ts if ts is not None else float('nan'):6.3f} s  {r.reason[:140]}", flush=True)
        if did and a.mutants:
            from ptxopt.testing.loop_mutants import loop_mutants

            for mu in loop_mutants(m, spec.entry, 4):
                clear_memo()
                r = prove(text, emit(mu.module), entry=spec.entry)
                mut[(mu.operator, r.verdict)] += 1
                print(f"  mutant {mu.operator:<16} {r.verdict:<12} {r.reason[:120]}", flush=True)
        seen[spec.family] += did
    print("\nverdicts (factor/verdict): " + ", ".join(f"{k[0]}/{k[1]}: {v}" for k, v in sorted(counts.items())))
    if proofs:
        print(f"proof time: median {statistics.median(proofs):.3f} s, max {max(proofs):.3f} s")
    if ratios:
        print(f"proof / one ptxas run: median {statistics.median(ratios):.2f}x, max {max(ratios):.2f}x "
              f"({len(ratios)} pairs)")
    if mut:
        print("mutants (operator/verdict): " + ", ".join(f"{k[0]}/{k[1]}: {v}" for k, v in sorted(mut.items())))
        print(f"mutants proved: {sum(v for k, v in mut.items() if k[1] == 'proved')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
