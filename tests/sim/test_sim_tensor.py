"""The tensor-core bound of the throughput model, ESTIMATES.

A kernel built on ``mma``/``wgmma`` (SASS ``HMMA``/``HGMMA``) is paid for by
its tensor-core work: the estimate must never be faster than that work at the
device's vendor peak (``ptxopt.sim.device``, cited there).  The work is
derived here from each kernel's problem statement, not from the model, and
the model's count must equal it.
"""

from __future__ import annotations

import pytest

from ptxopt.sim.device import DEVICES
from ptxopt.sim.tensor_work import tensor_work
from ptxopt.sim.throughput import BOUND_NAMES, KernelFacts, tensor_cycles
from tests.measure.test_roofline import throughput_of


@pytest.mark.parametrize("base, mods, want", [
    ("HMMA", ("16816", "F32"), ("fp16", 2 * 16 * 8 * 16)),  # mma.m16n8k16 f16 -> f32
    ("HMMA", ("16816", "F32", "BF16"), ("fp16", 4096)),
    ("HMMA", ("1688", "F32", "TF32"), ("tf32", 2 * 16 * 8 * 8)),
    ("HMMA", ("16832", "F32", "E4M3"), ("fp8", 2 * 16 * 8 * 32)),
    ("IMMA", ("16832", "S8", "S8"), ("int8", 2 * 16 * 8 * 32)),
    ("IMMA", ("16864", "S4", "S4"), ("int4", 2 * 16 * 8 * 64)),
    ("DMMA", ("884",), ("fp64", 2 * 8 * 8 * 4)),
    ("HGMMA", ("64x128x16", "F32"), ("fp16", 2 * 64 * 128 * 16 / 4)),  # a warpgroup = 4 warps
    ("QGMMA", ("64x256x32", "F32", "E4M3"), ("fp8", 2 * 64 * 256 * 32 / 4)),
])
def test_mma_shapes_and_precisions(base, mods, want):
    assert tensor_work(base, mods) == want


@pytest.mark.parametrize("base, mods", [("BMMA", ("88128", "POPC")), ("HMMA", ("884", "F32")), ("FFMA", ()),
                                        ("HMMA", ())])
def test_unknown_work_counts_nothing(base, mods):
    # left out, the bound only gets lower: it stays a lower bound on the time
    assert tensor_work(base, mods) is None


def test_every_device_rate_is_cited_and_positive():
    for dev in DEVICES.values():
        assert dev.tensor_flops_per_cycle, dev.name
        assert all(v > 0 for v in dev.tensor_flops_per_cycle.values())
        assert "tensor_flops_per_cycle" in dev.sources
    # L4 datasheet: 242 TFLOPS FP16 with sparsity = 121 dense; per SM per cycle at 58 SMs x 2,040 MHz
    l4 = DEVICES["L4"]
    assert l4.tensor_flops_per_cycle["fp16"] >= 121e12 / (l4.sms * l4.clock_mhz * 1e6)


#: kernel -> tensor operations of the whole launch, from the problem statement
WORK = {
    # batch 4 x 16 heads, seq 4096, head_dim 64: Q K^T and P V, 2 S^2 D multiply-adds per head each
    "triton_flash_attn_fwd": 64 * 2 * (2 * 4096 * 4096 * 64),
    # C = A B, 2048^3
    "triton_matmul_f16": 2 * 2048 ** 3,
}


@pytest.mark.parametrize("kid", sorted(WORK))
def test_mma_kernels_are_never_faster_than_the_tensor_peak(kid):
    spec, perf, m, facts, e = throughput_of(kid)
    dev = e.device
    shape = e.launch
    warps = shape.blocks * (shape.threads // 32)
    assert facts.tensor_flops["fp16"] * warps == pytest.approx(WORK[kid])
    roof = WORK[kid] / (dev.sms * dev.tensor_flops_per_cycle["fp16"])
    assert e.bounds["tensor"] >= roof * (1 - 1e-9)
    assert m.cycles == pytest.approx(e.cycles)
    assert m.cycles >= roof * (1 - 1e-9)  # without the tensor bound flash attention comes out at 0.52x


def test_the_causal_kernel_does_about_half_the_work():
    # causal flash attention skips the blocks above the diagonal: (S/B)(S/B+1)/2 of (S/B)^2 tiles (B=64)
    *_, full = throughput_of("triton_flash_attn_fwd")
    *_, causal = throughput_of("triton_flash_attn_fwd_causal")
    tiles = 4096 // 64
    assert causal.bounds["tensor"] / full.bounds["tensor"] == pytest.approx((tiles + 1) / (2 * tiles), rel=0.02)


def test_a_kernel_without_mma_has_no_tensor_time():
    f = KernelFacts(100.0, 50, registers=32)
    assert tensor_cycles(f, DEVICES["L4"]) == 0
    assert "tensor" in BOUND_NAMES
