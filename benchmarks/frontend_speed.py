"""Front-end speed, measured as ratios in one run (the machine is shared and noisy).

Targets (issue: foundation, section 7):
* parsing >= 50,000 PTX lines/s on the 16x16x16 gemm and on the largest Triton kernel;
* printing >= 200,000 lines/s;
* copying a module >= 10x faster than re-parsing it;
* parse time as a fraction of ptxas time for the same kernel (reported, no target).

Each figure is the best of several repetitions (the least disturbed one), in
wall-clock time. Run: ``python benchmarks/frontend_speed.py [--json]``.
"""

from __future__ import annotations

import argparse
import json
import time

from ptxopt import parser as P
from ptxopt.corpus import select
from ptxopt.emit import emit
from ptxopt.parser import parse
from ptxopt.toolchain import compile_ptx
from ptxopt.toolchain.arch import DEFAULT_ARCH

TARGET_PARSE = 50_000
TARGET_EMIT = 200_000
TARGET_COPY_RATIO = 10.0


def best_of(fn, reps: int) -> float:
    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def measure(kernel_id: str, reps: int) -> dict:
    text = select(kernel_id)[0].ptx_text()
    lines = text.count("\n")
    parse(text)  # warm the grammar tables
    t_parse = best_of(lambda: parse(text), reps)
    m = parse(text)
    t_emit = best_of(lambda: emit(m), reps)
    t_copy = best_of(lambda: m.copy(), reps * 5)
    t_ptxas = min(compile_ptx(text, DEFAULT_ARCH).wall_time_s for _ in range(3))
    return {
        "kernel": kernel_id,
        "lines": lines,
        "parse_lines_per_s": lines / t_parse,
        "emit_lines_per_s": lines / t_emit,
        "parse_ms": t_parse * 1e3,
        "copy_ms": t_copy * 1e3,
        "copy_speedup_vs_parse": t_parse / t_copy,
        "ptxas_ms": t_ptxas * 1e3,
        "parse_fraction_of_ptxas": t_parse / t_ptxas,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    triton = max(select("triton"), key=lambda k: k.ptx_text().count("\n"))
    rows = [measure("gemm_tile_16x16x16", args.reps), measure(triton.id, args.reps * 4)]
    ok = all(r["parse_lines_per_s"] >= TARGET_PARSE and r["emit_lines_per_s"] >= TARGET_EMIT
             and r["copy_speedup_vs_parse"] >= TARGET_COPY_RATIO for r in rows)
    if args.json:
        print(json.dumps({"parser_backend": P.BACKEND, "rows": rows, "targets_met": ok}, indent=2))
        return 0 if ok else 1
    print(f"parser engine: {P.BACKEND}")
    for r in rows:
        print(f"{r['kernel']} ({r['lines']} lines)")
        print(f"  parse  {r['parse_lines_per_s']:>10,.0f} lines/s  ({r['parse_lines_per_s'] / TARGET_PARSE:.2f}x target)"
              f"  {r['parse_ms']:.1f} ms")
        print(f"  emit   {r['emit_lines_per_s']:>10,.0f} lines/s  ({r['emit_lines_per_s'] / TARGET_EMIT:.2f}x target)")
        print(f"  copy   {r['copy_speedup_vs_parse']:>10,.0f}x faster than parse ({r['copy_ms']:.3f} ms)")
        print(f"  ptxas  {r['ptxas_ms']:>10.1f} ms; parse = {r['parse_fraction_of_ptxas']:.2f} of ptxas time")
    print("targets met" if ok else "TARGETS MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
