"""The trust-class fuzzing campaign: findings per class of false trust (the target: none).

    python benchmarks/reports/fuzz_trust.py [--seeds 30] [--classes func_exit,misaligned] [--json FILE]

For every class of :mod:`ptxopt.testing.trust_fuzz` (``.func`` exits, nested
special registers, wrapping offsets, misaligned scalars, mixed-width vectors,
hints before definitions, kernels without a contract, read-only load forms
after an aliasing store, changed float precision forms) and every seed, one
random case and its oracle (the interpreter on a real launch, ptxas, the
timed-region order, the hint well-formedness rule; for the last two: any
``proved`` or ``equal``, since those pairs differ on a GPU by construction). Prints per class: cases,
cases with a finding, their seeds, and the first finding; exit 1 when
anything was found. Run it against another checkout with
``PYTHONPATH=<that checkout>`` (copying ``ptxopt/testing/trust_fuzz.py`` and
``ptxopt/equivalence/prove/hints.py`` there) to count what the code before a fix let
through.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from ptxopt.testing.trust_fuzz import CLASSES, check_case, make_case


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=30)
    ap.add_argument("--first", type=int, default=0)
    ap.add_argument("--classes", default=",".join(CLASSES))
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    report = {}
    total = 0
    for cls in a.classes.split(","):
        t0 = time.perf_counter()
        seeds, kinds, first = [], {}, None
        for s in range(a.first, a.first + a.seeds):
            r = check_case(make_case(cls, s))
            if r.findings:
                seeds.append(s)
                for f in r.findings:
                    kinds[f.what] = kinds.get(f.what, 0) + 1
                first = first or str(r.findings[0])
        total += len(seeds)
        report[cls] = {"cases": a.seeds, "with_findings": len(seeds), "seeds": seeds, "kinds": kinds,
                       "first": first, "seconds": round(time.perf_counter() - t0, 2)}
        print(f"{cls:16s} {len(seeds):3d}/{a.seeds} cases with findings  seeds {seeds[:15]}"
              f"{' ...' if len(seeds) > 15 else ''}  ({report[cls]['seconds']} s)", flush=True)
        if first:
            print(f"{'':16s} first: {first[:240]}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(report, f, indent=1)
    return 1 if total else 0


if __name__ == "__main__":
    sys.exit(main())
