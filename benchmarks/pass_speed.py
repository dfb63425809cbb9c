"""Pass speed: applying one pass and printing the result on the 16x16x16 gemm,
as a fraction of the ptxas compile time of that kernel, measured in one run.

Target (issue: passes, section 6): <= 5% of ptxas time for every pass.
Best of several repetitions each (the least disturbed one), wall clock.
Run: ``python benchmarks/pass_speed.py [--kernel ID] [--reps N]``.
"""

from __future__ import annotations

import argparse
import time

from ptxopt.corpus import get
from ptxopt.emit import emit
from ptxopt.parser import parse
from ptxopt.passes import pass_names
from ptxopt.pipeline import make_pass
from ptxopt.toolchain import compile_ptx

TARGET = 0.05


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernel", default="gemm_tile_16x16x16")
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args()
    text = get(args.kernel).ptx_text()
    m = parse(text)
    ptxas = min(compile_ptx(text, "sm_89").wall_time_s for _ in range(3))
    print(f"{args.kernel}: ptxas {ptxas * 1e3:.0f} ms (best of 3); target <= {TARGET:.0%} = {ptxas * TARGET * 1e3:.1f} ms")
    missed = []
    for name in pass_names():
        p = make_pass(name)
        best = float("inf")
        for _ in range(args.reps):
            t0 = time.perf_counter()
            out, _report = p.apply(m)
            emit(out)
            best = min(best, time.perf_counter() - t0)
        ratio = best / ptxas
        flag = "" if ratio <= TARGET else "  MISSED"
        if flag:
            missed.append(name)
        print(f"  {name:<12} {best * 1e3:8.1f} ms  {ratio:6.1%} of ptxas{flag}")
    print("all passes within target" if not missed else f"missed by: {', '.join(missed)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
