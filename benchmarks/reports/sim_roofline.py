"""The throughput model against its rooflines, ESTIMATES.

1. Memory-bound kernels whose data exceeds L2 at their performance launch
   (element-wise, transpose, reduction): the bytes each must move (derived by
   hand from its problem, ``tests/measure/test_roofline.py``), the model's DRAM bytes,
   ``bytes / DRAM bandwidth`` in SM cycles, the estimate, and their ratio
   (target: within [1, 1.5]).
2. Tensor-core kernels (flash attention, an f16 GEMM): the operations each
   must do (``tests/sim/test_sim_tensor.py``), ``operations / tensor peak``, the
   estimate and the ratio (never below 1).

    PYTHONPATH=$PWD python benchmarks/reports/sim_roofline.py
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))


def main() -> int:
    from tests.measure.test_roofline import roofline_rows, throughput_of
    from tests.sim.test_sim_tensor import WORK

    print("1. DRAM roofline (memory-bound, data > L2; L4, sm_89)")
    print(f"   {'kernel':30} {'must move B':>13} {'model B':>13} {'roofline cyc':>13} {'estimate':>11} {'ratio':>6}  binding")
    for kid, moved, model, roof, cyc, binding in roofline_rows():
        print(f"   {kid:30} {moved:13,d} {model:13,d} {roof:13,.0f} {cyc:11,.0f} {cyc / roof:6.2f}  {binding}")
    print("2. tensor-core roofline (dense fp16 peak; L4, sm_89)")
    print(f"   {'kernel':30} {'operations':>15} {'roofline cyc':>13} {'estimate':>11} {'ratio':>6}  binding")
    for kid in list(WORK) + ["triton_flash_attn_fwd_causal"]:
        spec, perf, m, facts, e = throughput_of(kid)
        dev = e.device
        shape = e.launch
        ops = sum(facts.tensor_flops.values()) * shape.blocks * (shape.threads // 32)
        roof = ops / (dev.sms * dev.tensor_flops_per_cycle["fp16"])
        print(f"   {kid:30} {ops:15,.0f} {roof:13,.0f} {m.cycles:11,.0f} {m.cycles / roof:6.2f}  {e.binding}")
    print("(every cycle figure is an ESTIMATE; the throughput model is uncalibrated)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
