"""The loop-shape fuzzing campaign: wrong unrolls per class.

    python benchmarks/reports/fuzz_loop_shapes.py [--seeds 20] [--classes phi_copy,nested] [--json FILE]

For every class of :mod:`ptxopt.testing.loop_shapes` (phi copies, tests
before/after the update, tests of the previous iteration's value, starts
from inputs, unsigned wrap, steps != 1, down-counting, nested loops) and
every seed: one random kernel, ``unroll_2``/``unroll_4``/``unroll{factor=8}``
applied, and the interpreter run on the original and each result that
changed it. Prints per class: kernels, unrolls applied, refused, wrong
unrolls, kernels whose constant trip count the loop facts got wrong (and
the seeds of the kernels with either); exit 1 when anything was wrong. Run it against another checkout with ``PYTHONPATH=<that checkout>``
(copying ``ptxopt/testing/loop_shapes.py`` there) to count what the code
before a fix let through.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from ptxopt.testing.loop_shapes import CLASSES, check_shape, make_shape


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--first", type=int, default=0)
    ap.add_argument("--classes", default=",".join(CLASSES))
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    report, total = {}, 0
    for cls in a.classes.split(","):
        t0 = time.perf_counter()
        applied = refused = wrong = trips = 0
        seeds, first, reasons = [], None, {}
        for s in range(a.first, a.first + a.seeds):
            r = check_shape(make_shape(cls, s))
            applied += len(r.applied)
            refused += len(r.refused)
            for why in r.refused.values():
                for w in why:
                    key = w.split(": ", 1)[-1][:90]
                    reasons[key] = reasons.get(key, 0) + 1
            bad = {w.pipeline for w in r.wrong if w.pipeline != "trip count"}
            wrong += len(bad)
            trips += any(w.pipeline == "trip count" for w in r.wrong)
            if r.wrong:
                seeds.append(s)
                w = r.wrong[0]
                first = first or f"seed {s}: {r.shape.what}: {w.pipeline} {w.inputs} {w.detail}"
        total += wrong + trips
        report[cls] = {"kernels": a.seeds, "applied": applied, "refused": refused, "wrong_unrolls": wrong,
                       "wrong_trip_counts": trips,
                       "seeds": seeds, "first": first, "refusals": reasons, "seconds": round(time.perf_counter() - t0, 1)}
        print(f"{cls:15s} kernels {a.seeds:3d}  applied {applied:3d}  refused {refused:3d}  wrong {wrong:3d}"
              f"  wrong trip counts {trips:3d}"
              f"  seeds {seeds}" + (f"\n    {first}" if first else ""), flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(report, f, indent=1)
    return 1 if total else 0


if __name__ == "__main__":
    sys.exit(main())
