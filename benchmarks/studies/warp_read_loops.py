"""The prover's verdicts on loop rewrites of the corpus kernels that use ``ldmatrix``.

    python benchmarks/studies/warp_read_loops.py [--factors 2,4] [--interpret N] [--kernels ID,...]

For every corpus kernel whose PTX holds an ``ldmatrix`` (71: Triton's attention,
gemm, gemv... kernels) and every pipeline ``unroll_F`` and ``unroll_F`` followed by
one reorder pass (``reorder_cp``, ``reorder_il``, ``reorder_lf``) that changes it:
:func:`ptxopt.equivalence.prove.prove` (the prover alone, no interpreter), its
verdict and time. Run it on two commits (``PYTHONPATH=<worktree>``) to see what a
prover change proves; the counts are the last lines. ``--interpret N``: the
first ``N`` proved candidates with a reorder pass are also run by the interpreter on the kernel's
manifest launch (:func:`ptxopt.equivalence.decision.decide` with ``prove=False``),
which must say ``equal``: a cross-check of the proofs, not part of them.
"""

from __future__ import annotations

import argparse
import time
from collections import Counter

from ptxopt.equivalence.prove import clear_memo, prove
from ptxopt.kernels.corpus import load_manifest
from ptxopt.passes.passmanager import run_passes_unchecked


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--factors", default="2,4")
    ap.add_argument("--interpret", type=int, default=0)
    ap.add_argument("--kernels", default="", help="comma-separated kernel ids (default: every one with ldmatrix)")
    a = ap.parse_args()
    kernels = [k for k in load_manifest() if "ldmatrix" in k.ptx_text()
               and (not a.kernels or k.id in a.kernels.split(","))]
    pipes = [f"unroll_{f}{r}" for f in a.factors.split(",") for r in ("", ",reorder_cp", ",reorder_il", ",reorder_lf")]
    counts: dict[str, Counter] = {p: Counter() for p in pipes}
    checked, t0 = Counter(), time.perf_counter()
    for k in kernels:
        src = k.ptx_text()
        for p in pipes:
            cand = run_passes_unchecked(src, p, allow_unchecked=True)
            if cand == src:
                continue
            clear_memo()
            t = time.perf_counter()
            r = prove(src, cand)
            took = time.perf_counter() - t
            counts[p][r.verdict.value] += 1
            print(f"{k.id:28s} {p:22s} {r.verdict.value:12s} {took:6.2f} s  {'' if r.proved else r.reason[:150]}",
                  flush=True)
            if r.proved and "reorder" in p and checked["run"] < a.interpret:
                from ptxopt.equivalence.decision import decide
                from ptxopt.equivalence.launch import from_spec

                from ptxopt import parse

                d = decide(parse(src), parse(cand), k.entry, from_spec(k), prove=False)
                checked["run"] += 1
                checked[d.verdict.value] += 1
                print(f"    interpreter: {d.verdict.value}: {d.note[:120]}", flush=True)
    print(f"\n{len(kernels)} kernels, {time.perf_counter() - t0:.0f} s")
    for p in pipes:
        print(f"{p:22s} " + ", ".join(f"{v} {n}" for v, n in sorted(counts[p].items())))
    if checked:
        print(f"interpreter cross-check: {dict(checked)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
