"""What the sim model says unrolling is worth: ESTIMATES.

    python benchmarks/studies/unroll_estimates.py [KERNEL ...] [--factors 2,4,8]

For each corpus kernel and ``unroll{factor=F}``, ``ptxopt explain`` under the
``latency`` objective (one warp, the steady-state loop model with the
manifest's trip counts) and the ``throughput`` objective (the performance
launch: occupancy and the binding bound) gives estimated cycles before and
after, the registers ptxas allocated, and the occupancy. Fewer branches and
more independent loads per trip (ILP) against more registers (and, past a
register boundary, fewer warps per SM). Every figure is the sim model's
ESTIMATE; the throughput model is uncalibrated. The last column says whether
the model matched the SASS loops onto the PTX loops (trip counts from the
interpreter's profile) or fell back to static counts, and whether the
replay was truncated (then the figure is not comparable).
"""

from __future__ import annotations

import argparse
import json
import sys

DEFAULT = ("gen_softmax_rows_01", "gen_reduce_partial_00", "gen_gemv_00", "cuda_matmul_naive", "triton_matmul_f16")


def explain(kernel: str, pipeline: str, objective: str) -> dict | None:
    from click.testing import CliRunner

    from ptxopt.cli import cli

    args = ["explain", f"corpus:{kernel}", "--objective", objective, "--json"]
    if pipeline:
        args += ["--passes", pipeline]
    r = CliRunner().invoke(cli, args)
    if r.exit_code != 0:
        print(f"  {kernel} {pipeline} {objective}: exit {r.exit_code}: {r.output.strip()[:200]}", file=sys.stderr)
        return None
    return json.loads(r.stdout)["kernels"][0]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("kernels", nargs="*", default=list(DEFAULT))
    ap.add_argument("--factors", default="2,4,8")
    a = ap.parse_args()
    print(f"{'kernel':<24}{'pass':<18}{'latency cyc (est)':>20}{'regs':>6}"
          f"{'throughput cyc (est)':>22}{'occ':>6}  binding / trip counts (latency)")
    for k in a.kernels:
        for f in [0] + [int(x) for x in a.factors.split(",")]:
            p = f"unroll{{factor={f}}}" if f else ""
            lat, thr = explain(k, p, "latency"), explain(k, p, "throughput")
            if lat is None or thr is None:
                continue
            L, T = (lat["after"], thr["after"]) if f else (lat, thr)
            occ = (T.get("occupancy") or {}).get("occupancy")
            occ = "-" if occ is None else f"{occ:.2f}"
            print(f"{k:<24}{p or 'original':<18}{L['estimate']['cycles']:>20,.0f}{L.get('registers', 0):>6}"
                  f"{T['estimate']['cycles']:>22,.0f}{occ:>6}  {T.get('binding', '')} / "
                  f"{'static FALLBACK' if 'fallback' in str(L.get('loop_trips')) else 'matched'}"
                  f"{' TRUNCATED' if 'truncated' in str(L.get('notes')) else ''}",
                  flush=True)
    print("every figure is an ESTIMATE of the sim model (throughput: uncalibrated)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
