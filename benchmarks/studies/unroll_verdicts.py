"""Verdicts of ``unroll{factor=F}`` on corpus kernels with loops.

    python benchmarks/studies/unroll_verdicts.py [SELECTOR ...] [--factors 2,4,8] [--per-family 2] [--mutants]

For each selected kernel where ``unroll`` changes something: ptxas accepts
the result (or not), and :func:`ptxopt.equivalence.decision.decide` on the
kernel's manifest launch gives a verdict (the prover first, then the
interpreter with launches at the changed loops' boundary trip counts).
``--mutants`` also checks every loop mutant (:mod:`ptxopt.testing.loop_mutants`)
of factor 4: its verdict must never be ``proved``/``equal``.
Prints one row per kernel and factor, then the counts.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter

from ptxopt import emit, parse
from ptxopt.kernels.corpus import select
from ptxopt.equivalence.decision import decide
from ptxopt.equivalence.launch import from_spec
from ptxopt.passes.unroll import Unroll


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("selectors", nargs="*", default=["nvcc", "triton"])
    ap.add_argument("--factors", default="2,4,8")
    ap.add_argument("--per-family", type=int, default=2, help="at most this many kernels per family (0: all)")
    ap.add_argument("--mutants", action="store_true")
    ap.add_argument("--mutant-steps", type=int, default=20000,
                    help="interpreter step budget per mutant run (a runaway loop ends as a step limit)")
    ap.add_argument("--skip", default="", help="comma-separated kernel ids to leave out")
    a = ap.parse_args()
    from ptxopt.toolchain.ptxas import compile_ptx

    seen: Counter = Counter()
    counts: Counter = Counter()
    mut: Counter = Counter()
    t0 = time.perf_counter()
    for spec in [s for sel in a.selectors for s in select(sel)]:
        if spec.id in a.skip.split(",") or (a.per_family and seen[spec.family] >= a.per_family):
            continue
        m = parse(spec.ptx_text(), spec.path)
        did = False
        for f in (int(x) for x in a.factors.split(",")):
            out, rep = Unroll(factor=f).apply(m)
            if not rep.changed:
                continue
            did = True
            try:
                compile_ptx(emit(out), spec.arch if hasattr(spec, "arch") and spec.arch else "sm_89")
                ptxas = "ok"
            except Exception as e:  # noqa: BLE001 - reported
                ptxas = f"REJECTED {str(e).splitlines()[0][:80]}"
            t = time.perf_counter()
            d = decide(m, out, spec.entry, from_spec(spec))
            counts[(f, str(d.verdict))] += 1
            print(f"{spec.id:<28} unroll{{factor={f}}} loops {len(rep.changed)} ptxas {ptxas:<4} "
                  f"{d.verdict!s:<12} {time.perf_counter() - t:5.1f} s  {d.note[:150]}", flush=True)
        if did and a.mutants:
            from ptxopt.testing.loop_mutants import loop_mutants

            for mu in loop_mutants(m, spec.entry, 4):
                d = decide(m, mu.module, spec.entry, from_spec(spec), max_steps=a.mutant_steps)
                mut[(mu.operator, str(d.verdict))] += 1
                print(f"  mutant {mu.operator:<16} {d.verdict!s:<12} {d.note[:120]}", flush=True)
        seen[spec.family] += did
    print("\nverdicts (factor, verdict): " + ", ".join(f"{k[0]}/{k[1]}: {v}" for k, v in sorted(counts.items())))
    if mut:
        print("mutants (operator, verdict): " + ", ".join(f"{k[0]}/{k[1]}: {v}" for k, v in sorted(mut.items())))
    print(f"{time.perf_counter() - t0:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
