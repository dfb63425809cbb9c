"""Interpreter speed, measured as ratios in one run (the machine is shared and noisy).

Targets (interpreter issue):
* the 16x16x16 gemm_tile (one thread, ~5k instructions) interprets in <= 1 s;
* the 256-thread, 4-CTA shared-memory reduction (``cuda_reduce_sum_smem``)
  interprets in <= 2 s.

For each kernel this prints the time to decode (parse the PTX once, build the
step closures once; verification reuses both), the time of one launch with
inputs from the manifest, the launch under the warp-serial schedule, the
instructions issued per second (one instruction for one group of threads at
the same PC, like a warp instruction) and thread-instructions per second, a
full ``verify`` of the kernel against itself (default 4 trials, both kernels
each time), and the ratio of one launch to ptxas's compile time for the same
PTX. Each figure is the best of several repetitions, in wall-clock time.

Run: ``python benchmarks/speed/interp_speed.py [--json] [--reps N] [--kernel ID ...]``.
"""

from __future__ import annotations

import argparse
import json
import time

from ptxopt.kernels.corpus import get
from ptxopt.interp import Program, make_args, run_kernel
from ptxopt.ptx.parser import parse
from ptxopt.equivalence.interpret import verify
from ptxopt.toolchain.arch import DEFAULT_ARCH

TARGETS = {"gemm_tile_16x16x16": 1.0, "cuda_reduce_sum_smem": 2.0}
DEFAULT_KERNELS = ("gemm_tile_16x16x16", "cuda_reduce_sum_smem", "triton_matmul_f16",
                   "cuda_attention_small")


def best_of(fn, reps: int):
    best, out = float("inf"), None
    for _ in range(reps):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def measure(kernel_id: str, reps: int) -> dict:
    spec = get(kernel_id)
    text = spec.ptx_text()
    launch = spec.launch

    def decode():
        p = Program(parse(text, kernel_id))
        p.decoded(spec.entry)
        return p

    t_decode, program = best_of(decode, max(1, reps // 2))
    args = make_args(spec, 0)

    def run(schedule="lockstep"):
        return run_kernel(program, spec.entry, launch.grid, launch.block,
                          [a.copy() if hasattr(a, "copy") else a for a in args], launch.shared_bytes,
                          schedule=schedule)

    t_run, res = best_of(run, reps)
    t_warps, _ = best_of(lambda: run("warps"), max(1, reps // 2))
    t_verify, vr = best_of(lambda: verify(program, program, spec=spec), 1)
    assert vr.equal
    threads = launch.threads
    try:
        from ptxopt.toolchain import compile_ptx

        t_ptxas, _ = best_of(lambda: compile_ptx(text, DEFAULT_ARCH).wall_time_s, 1)
        t_ptxas = min(t_ptxas, compile_ptx(text, DEFAULT_ARCH).wall_time_s)
    except Exception as e:  # no ptxas wheel: report without the ratio
        t_ptxas = None
        print(f"  ({kernel_id}: ptxas unavailable: {e})")
    return {
        "kernel": kernel_id,
        "threads": threads,
        "ctas": res.ctas,
        "instructions_issued": res.steps,
        "decode_s": round(t_decode, 4),
        "run_s": round(t_run, 4),
        "run_warp_serial_s": round(t_warps, 4),
        "verify_s": round(t_verify, 4),
        "issued_per_s": round(res.steps / t_run),
        "thread_instructions": res.thread_steps,
        "thread_instructions_per_s": round(res.thread_steps / t_run),
        "target_run_s": TARGETS.get(kernel_id),
        "ptxas_s": None if t_ptxas is None else round(t_ptxas, 4),
        "run_over_ptxas": None if t_ptxas is None else round(t_run / t_ptxas, 2),
        "decode_run_over_ptxas": None if t_ptxas is None else round((t_decode + t_run) / t_ptxas, 2),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--kernel", action="append", default=None)
    a = ap.parse_args()
    rows = [measure(k, a.reps) for k in (a.kernel or DEFAULT_KERNELS)]
    if a.json:
        print(json.dumps(rows, indent=2))
    else:
        print(f"{'kernel':24s} {'thr':>5s} {'issued':>7s} {'decode':>8s} {'run':>8s} {'warps':>8s} "
              f"{'verify':>8s} {'issued/s':>10s} {'thread-ins/s':>13s} {'ptxas':>8s} {'run/ptxas':>9s} target")
        for r in rows:
            tgt = r["target_run_s"]
            ok = "" if tgt is None else ("ok" if r["run_s"] <= tgt else "MISSED") + f" (<= {tgt} s)"
            px = "-" if r["ptxas_s"] is None else f"{r['ptxas_s']:.3f}s"
            ratio = "-" if r["run_over_ptxas"] is None else f"{r['run_over_ptxas']:.2f}x"
            print(f"{r['kernel']:24s} {r['threads']:5d} {r['instructions_issued']:7d} {r['decode_s']:7.3f}s "
                  f"{r['run_s']:7.3f}s {r['run_warp_serial_s']:7.3f}s {r['verify_s']:7.3f}s "
                  f"{r['issued_per_s']:10,d} {r['thread_instructions_per_s']:13,d} {px:>8s} {ratio:>9s} {ok}")
    missed = [r for r in rows if r["target_run_s"] is not None and r["run_s"] > r["target_run_s"]]
    return 1 if missed else 0


if __name__ == "__main__":
    raise SystemExit(main())
