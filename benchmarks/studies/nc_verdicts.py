"""Verdicts of candidates with new ``.nc`` loads the read-only analysis cannot prove.

    python benchmarks/studies/nc_verdicts.py {unroll|nc} [--per-family N] [--json OUT]

``unroll``: ``unroll_2``/``unroll_4`` of every corpus kernel where the unrolled
copies add unproven ``.nc`` loads (nvcc's own ``const __restrict__`` loads in
the loop body), and the same followed by ``nc_ld{assume_noalias=1}``. ``nc``:
``nc_ld{assume_noalias=1}`` on every corpus kernel it changes. One row per
candidate: the verdict of :func:`ptxopt.equivalence.decision.decide` on the
manifest launch, its time and note. Run it on two checkouts (``PYTHONPATH``)
to compare: an unrolled copy should be ``equal`` with the ``.nc`` evidence
(:mod:`ptxopt.equivalence.nc_reads`), every forced rewrite ``inconclusive``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter

from ptxopt import parse
from ptxopt.kernels.corpus import select
from ptxopt.equivalence.assumptions import unproven_nc
from ptxopt.equivalence.decision import decide
from ptxopt.equivalence.launch import from_spec
from ptxopt.passes.readonly_path import NcLd
from ptxopt.passes.unroll import Unroll


def candidates(what: str, m):
    if what == "nc":
        c, rep = NcLd(assume_noalias=1).apply(m)
        if rep.changed and unproven_nc(m, c) is not None:
            yield "nc_ld{assume_noalias=1}", c
        return
    for f in (2, 4):
        c, rep = Unroll(factor=f).apply(m)
        if rep.changed and unproven_nc(m, c) is not None:
            yield f"unroll_{f}", c
            c2, rep2 = NcLd(assume_noalias=1).apply(c)
            if rep2.changed:
                yield f"unroll_{f},nc_ld{{assume_noalias=1}}", c2


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("what", choices=("unroll", "nc"))
    ap.add_argument("--per-family", type=int, default=0, help="at most this many kernels per family (0: all)")
    ap.add_argument("--json", default=None, help="write {kernel pipeline: [verdict, seconds, note]} here")
    a = ap.parse_args()
    rows, seen, counts = {}, Counter(), Counter()
    t0 = time.perf_counter()
    for spec in select("all"):
        if a.per_family and seen[spec.family] >= a.per_family:
            continue
        m = parse(spec.ptx_text(), spec.path)
        cands = list(candidates(a.what, m))
        seen[spec.family] += bool(cands)
        for name, c in cands:
            t = time.perf_counter()
            d = decide(m, c, spec.entry, from_spec(spec))
            s = time.perf_counter() - t
            rows[f"{spec.id} {name}"] = [str(d.verdict), round(s, 2), d.note[:200]]
            counts[(name.split(",")[0] if "," not in name else name, str(d.verdict))] += 1
            print(f"{spec.id:<28} {name:<36} {d.verdict!s:<12} {s:6.2f} s  {d.note[:110]}", flush=True)
    print("\nverdicts: " + ", ".join(f"{k[0]}/{k[1]}: {v}" for k, v in sorted(counts.items())))
    print(f"{time.perf_counter() - t0:.0f} s", file=sys.stderr)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
