"""What bounding the interpreter costs, as ratios in one run (the machine is shared and noisy).

* **The stop poll** (:mod:`ptxopt.support.cancel`): the engine calls
  :func:`ptxopt.support.cancel.check` every :data:`ptxopt.support.cancel.POLL_STEPS` steps, at
  a backward branch, on the path that already compared the step budget.  The
  same launches run with the poll as shipped and with it pushed out of reach
  (``POLL_STEPS`` = 10**15: the old hot path), interleaved, best of ``--reps`` in CPU time.
* **The size check** (:mod:`ptxopt.interp.limits`): a launch's memory is
  counted before it allocates; a short launch shows its share best.

Kernels: an endless loop cut at ``--steps`` steps (one thread; the loop
profile's instrumented copy too: one atomic per iteration), and the corpus
kernels with loops ``cuda_reduce_sum_smem`` and ``gemm_tile_4x4x4`` (one
launch each).

Run: ``python benchmarks/speed/bounded_cost.py [--reps N] [--steps N] [--json]``.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

import ptxopt.interp.engine as engine
import ptxopt.interp.launcher as launch_mod
from ptxopt.kernels.corpus import get
from ptxopt.interp import Program, make_args, run_kernel
from ptxopt.interp.errors import StepLimit
from ptxopt.measure.measured_trips import instrument_loops
from ptxopt.ptx.parser import parse

ENDLESS = """
.version 8.0
.target sm_89
.address_size 64
.visible .entry spin(.param .u64 out, .param .u32 n)
{
    .reg .pred %p<2>;
    .reg .b32 %r<5>;
    .reg .b64 %rd<3>;
    ld.param.u64 %rd1, [out];
    ld.param.u32 %r3, [n];
    or.b32 %r3, %r3, 1;
    cvta.to.global.u64 %rd2, %rd1;
    mov.u32 %r1, 0;
LOOP:
    add.u32 %r1, %r1, 2;
    setp.ne.u32 %p1, %r1, %r3;
    @%p1 bra LOOP;
    st.global.u32 [%rd2], %r1;
    ret;
}
"""


def _cases(steps: int):
    m = parse(ENDLESS)
    inst, _ = instrument_loops(m, "spin")
    out = [("endless loop", Program(m), "spin", (1, 1, 1), (1, 1, 1), lambda: [np.zeros(4, np.uint32), 1], 0, steps),
           ("endless loop, profiled", Program(inst), "spin", (1, 1, 1), (1, 1, 1),
            lambda: [np.zeros(4, np.uint32), 1, np.zeros(16, np.uint32)], 0, steps)]
    for kid in ("cuda_reduce_sum_smem", "gemm_tile_4x4x4"):
        spec = get(kid)
        out.append((kid, Program(parse(spec.ptx_text(), kid)), spec.entry, spec.launch.grid, spec.launch.block,
                    lambda spec=spec: make_args(spec, 0), spec.launch.shared_bytes, 5_000_000))
    return out


def _run(case) -> float:
    _, prog, entry, grid, block, args, shared, steps = case
    a = args()
    t0 = time.process_time()  # CPU time: the shared machine's load inflates wall-clock time unevenly
    try:
        run_kernel(prog, entry, grid, block, a, shared, max_steps=steps)
    except StepLimit:
        pass
    return time.process_time() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--steps", type=int, default=100_000)
    ap.add_argument("--json", action="store_true")
    o = ap.parse_args()
    shipped, check = engine.POLL_STEPS, launch_mod._check_size
    rows = []
    for case in _cases(o.steps):
        _run(case)  # warm (decode)
        best = {"poll": float("inf"), "no poll": float("inf"), "no size check": float("inf")}
        for _ in range(o.reps):
            for variant in best:
                engine.POLL_STEPS = 10**15 if variant == "no poll" else shipped
                launch_mod._check_size = (lambda *a, **k: None) if variant == "no size check" else check
                try:
                    best[variant] = min(best[variant], _run(case))
                finally:
                    engine.POLL_STEPS, launch_mod._check_size = shipped, check
        rows.append({"kernel": case[0], **{k: round(v, 4) for k, v in best.items()},
                     "poll / no poll": round(best["poll"] / best["no poll"], 3),
                     "size check / none": round(best["poll"] / best["no size check"], 3)})
    if o.json:
        print(json.dumps(rows, indent=2))
        return
    print(f"poll every {shipped} steps; best of {o.reps}; CPU seconds")
    for r in rows:
        print(f"  {r['kernel']:<24} poll {r['poll']:.4f}  no poll {r['no poll']:.4f}  ratio {r['poll / no poll']:.3f}"
              f"   size check ratio {r['size check / none']:.3f}")


if __name__ == "__main__":
    main()
