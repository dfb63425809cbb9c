"""Long differential fuzzing run of every pass: none may change what a race-free kernel computes.

    python benchmarks/reports/fuzz_passes.py [--cases 500] [--steps 24] [--seed 0]

Each case is a random race-free kernel (ptxopt.testing.random_kernels) and
all 20 passes on it; a finding is any pass result that ptxas rejects or the
interpreter does not find equal. Prints the number of cases, pass results
checked (the module changed), findings, and writes each finding's kernel to
runs/fuzz/ for replay. Exit 1 when anything was found.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

from ptxopt.testing.differential import check_passes
from ptxopt.testing.random_kernels import kernel_from_steps, launch, random_steps


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=500)
    ap.add_argument("--steps", type=int, default=24)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=Path("runs/fuzz"))
    a = ap.parse_args()
    t0 = time.perf_counter()
    checked = unchanged = unverified = 0
    findings = []
    for case in range(a.seed, a.seed + a.cases):
        rng = random.Random(case)
        text = kernel_from_steps(random_steps(rng, rng.randint(4, a.steps)))
        out = check_passes(text, launch())
        checked += len(out.changed)
        unchanged += len(out.unchanged)
        unverified += len(out.unverified)
        for f in out.findings:
            findings.append((case, f))
            a.out.mkdir(parents=True, exist_ok=True)
            (a.out / f"case{case}.ptx").write_text(text)
            print(f"case {case}: {f}", flush=True)
        if (case - a.seed + 1) % 50 == 0:
            print(f"{case - a.seed + 1} cases, {checked} changed results checked, "
                  f"{len(findings)} findings, {time.perf_counter() - t0:.0f} s", flush=True)
    print(f"cases: {a.cases}; pass results: {checked} changed (checked; {unverified} of them unverified: a "
          f"changed instruction never ran), {unchanged} unchanged; "
          f"findings: {len(findings)}; {time.perf_counter() - t0:.0f} s")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
