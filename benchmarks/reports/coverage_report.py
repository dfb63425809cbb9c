"""What the verifier's launches exercise on every nvcc and Triton corpus
kernel under its manifest contract (the target: at least 90% of output bytes,
so that an ``equal`` rests on most of what a kernel writes).

    python benchmarks/reports/coverage_report.py [SELECTOR ...]

Per kernel: fraction of output bytes stored at least once (over the bytes of
the buffers and .global variables the kernel stores to at all), fraction of
threads that stored to global memory, and conditional-branch directions
taken. The kernel is verified against itself, so every launch is compared.
"""

from __future__ import annotations

import argparse
import sys
import time

from ptxopt import parse
from ptxopt.kernels.corpus import select
from ptxopt.equivalence.interpret import verify


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("selectors", nargs="*", default=["nvcc", "triton"], metavar="SELECTOR",
                    help="corpus selectors [default: nvcc triton]")
    specs = [s for sel in ap.parse_args(argv).selectors for s in select(sel)]
    t0 = time.perf_counter()
    print(f"{'kernel':<30}{'output bytes':>14}{'threads':>10}{'branches':>10}{'launches':>10}")
    low = []
    for spec in specs:
        m = parse(spec.ptx_text(), spec.path)
        r = verify(m, m, spec.entry, spec=spec)
        c = r.coverage
        br = f"{c.branch_directions}/{2 * c.conditional_branches}" if c.conditional_branches else "-"
        print(f"{spec.id:<30}{c.output_bytes:>13.1%}{c.threads:>10.0%}{br:>10}{r.trials:>10}")
        if c.output_bytes < 0.9:
            low.append(spec.id)
    print(f"{len(specs)} kernels; below 90% of output bytes: {', '.join(low) or 'none'}; "
          f"{time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
