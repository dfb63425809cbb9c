"""What round_to's nearest-even fast paths save, as ratios measured in one run.

``ptxopt.interp.fp.round_to`` rounds to f16 and bf16 (round to nearest
even, no error term: every ``cvt.rn.f16x2.f32``, ``cvt.rn.bf16.f32``, each
half of a packed result) by numpy's cast and by a bit trick
(:data:`ptxopt.interp.fp._NEAREST`) instead of the general integer
rounding; ``tests/interp/test_interp_fp.py`` checks the two agree bit for
bit on every grid midpoint. This times, interleaved, best of ``--reps`` in
CPU time:

* ``round_to`` alone on warp-sized and CTA-sized arrays, fast path vs
  general rounding;
* whole interpreter launches (manifest inputs, lockstep and warp-serial)
  of kernels that convert to half precision, with the fast paths on and off.

Run: ``python benchmarks/speed/interp_rounding.py [--reps N] [--kernel ID ...] [--json]``.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from ptxopt.interp import Program, fp, make_args, run_kernel
from ptxopt.kernels.corpus import get
from ptxopt.ptx.parser import parse

DEFAULT_KERNELS = ("triton_flash_attn_fwd", "triton_matmul_f16")


def interleaved(on, off, reps: int) -> tuple[float, float]:
    """Best CPU time of ``on`` and of ``off``, run in turn (on, off, on, off ...)."""
    best = [float("inf"), float("inf")]
    for _ in range(reps):
        for i, fn in enumerate((on, off)):
            t = time.process_time()
            fn()
            best[i] = min(best[i], time.process_time() - t)
    return best[0], best[1]


class GeneralRounding:
    """Inside: round_to takes the general integer rounding for every format."""

    def __enter__(self):
        self.saved = dict(fp._NEAREST)
        fp._NEAREST.clear()

    def __exit__(self, *exc):
        fp._NEAREST.update(self.saved)


def round_to_rows(reps: int) -> list[dict]:
    rng = np.random.default_rng(0)
    rows = []
    for fmt in ("f16", "bf16"):
        for n in (32, 1024):
            x = rng.standard_normal(n).astype(np.float32).astype(np.float64)
            calls = 200

            def fast():
                for _ in range(calls):
                    fp.round_to(fmt, x, None, "rn")

            def general():
                for _ in range(calls):
                    fp._round_general(fmt, x, None, "rn")

            t_fast, t_gen = interleaved(fast, general, reps)
            rows.append({"what": f"round_to {fmt} x{n}", "fast_us": 1e6 * t_fast / calls,
                         "general_us": 1e6 * t_gen / calls, "speedup": t_gen / t_fast})
    return rows


def launch_rows(kernels, reps: int) -> list[dict]:
    rows = []
    for kid in kernels:
        spec = get(kid)
        program = Program(parse(spec.ptx_text(), kid))
        program.decoded(spec.entry)
        args = make_args(spec, 0)
        L = spec.launch
        for schedule in ("lockstep", "warps"):
            def run():
                return run_kernel(program, spec.entry, L.grid, L.block,
                                  [a.copy() if hasattr(a, "copy") else a for a in args], L.shared_bytes,
                                  schedule=schedule)

            def general():
                with GeneralRounding():
                    return run()

            same = all((p is None and q is None) or np.array_equal(p, q) for p, q in zip(run().buffers, general().buffers))
            t_fast, t_gen = interleaved(run, general, reps)
            rows.append({"what": f"{kid} ({schedule})", "fast_s": t_fast, "general_s": t_gen,
                         "speedup": t_gen / t_fast, "same_outputs": same})
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--kernel", action="append", default=None)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    rows = round_to_rows(a.reps) + launch_rows(a.kernel or DEFAULT_KERNELS, a.reps)
    if a.json:
        print(json.dumps(rows, indent=1))
        return 0
    print(f"{'':36s} {'fast':>10s} {'general':>10s} {'ratio':>7s}")
    for r in rows:
        if "fast_us" in r:
            print(f"{r['what']:36s} {r['fast_us']:8.1f}us {r['general_us']:8.1f}us {r['speedup']:6.2f}x")
        else:
            print(f"{r['what']:36s} {r['fast_s']:9.2f}s {r['general_s']:9.2f}s {r['speedup']:6.2f}x"
                  f"{'' if r['same_outputs'] else '  OUTPUTS DIFFER'}")
    return 0 if all(r.get("same_outputs", True) for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
