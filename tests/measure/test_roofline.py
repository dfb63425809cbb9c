"""Roofline consistency of the throughput estimate, ESTIMATES.

Memory-bound corpus kernels whose data exceeds L2 at their performance
launch: element-wise, transpose and reduction. The bytes each must move are
derived here by hand from its problem (not from the model), then:

* the model's DRAM bytes equal them (a read-modify-write buffer counts twice:
  ``cuda_saxpy``'s ``y`` counted once would be 2/3 of the traffic);
* the estimate is never faster than ``bytes / DRAM bandwidth``;
* and within 1.5x of it (a memory-bound kernel is not made compute-bound by
  the model's other bounds).
"""

from __future__ import annotations

import pytest

from ptxopt.kernels.corpus import get
from ptxopt.evaluate.candidate import _manifest_performance
from ptxopt.measure.backend import MeasureJob
from ptxopt.measure.sim import SimBackend
from ptxopt.ptx.parser import parse
from ptxopt.sim.device import device_for
from ptxopt.sim.throughput import KernelFacts, estimate

N = 1 << 24  # 2^24 f32 elements
F32 = 4

#: kernel -> (what it must move, in bytes, from its problem statement; the reason)
MUST_MOVE = {
    "triton_vector_add": (3 * N * F32, "x, y read; out written"),
    "cuda_saxpy": (3 * N * F32, "x read; y read and written back"),
    "triton_transpose": (2 * 4096 * 4096 * F32, "in read; out written"),
    "cuda_transpose_smem": (2 * 4096 * 4096 * F32, "in read; out written"),
    "triton_reduce_sum": (N * F32 + 32768 * F32, "x read; 32768 partials written"),
    "cuda_reduce_sum_smem": (N * F32 + 32768 * F32, "in read; 32768 partials written"),
    "cuda_reduce_sum_warp_shuffle": (N * F32 + 2 * F32, "in read; one f32 accumulator read and written"),
}


def throughput_of(kid: str):
    """A corpus kernel at its manifest performance launch under the throughput
    objective: ``(spec, launch, measurement, kernel facts, estimate)`` (also
    the tensor-core roofline tests' and benchmarks/reports/sim_roofline.py's)."""
    spec = get(kid)
    perf = _manifest_performance(spec)
    job = MeasureJob(spec.ptx_text(), spec.arch, spec, spec.entry, module=parse(spec.ptx_text(), kid),
                     objective="throughput", performance=perf, check_block=spec.launch.block)
    (m,) = SimBackend().measure_many([job])
    if isinstance(m, Exception):
        raise m
    facts = KernelFacts.of(m.extra["facts"])
    e = estimate(facts, perf, device_for(spec.arch), "throughput", footprint_bytes=perf.footprint_bytes)
    return spec, perf, m, facts, e


def roofline_rows():
    """``(kernel, must-move bytes, model DRAM bytes, roofline cycles, estimate cycles, binding)`` per kernel
    (the table the issue-27 note reports)."""
    for kid, (moved, _why) in MUST_MOVE.items():
        *_, m, _, e = throughput_of(kid)
        dev = e.device
        yield kid, moved, e.dram_bytes, moved / (dev.sms * dev.dram_bytes_per_cycle), m.cycles, e.binding


@pytest.mark.parametrize("kid", sorted(MUST_MOVE))
def test_memory_bound_kernels_sit_on_the_dram_roofline(kid):
    moved, why = MUST_MOVE[kid]
    *_, m, _, e = throughput_of(kid)
    dev = e.device
    assert moved > dev.l2_bytes  # the premise: the data does not stay in L2
    assert e.dram_bytes == moved, why
    assert e.cycles == pytest.approx(m.cycles)  # the backend's figure is this estimate
    roof = moved / (dev.sms * dev.dram_bytes_per_cycle)
    assert m.cycles >= roof * (1 - 1e-9)
    assert m.cycles <= 1.5 * roof


if __name__ == "__main__":  # the table: PYTHONPATH=. python tests/measure/test_roofline.py
    print(f"{'kernel':30} {'must move B':>12} {'model B':>12} {'roofline cyc':>13} {'estimate':>11} ratio  binding")
    for kid, moved, model, roof, cyc, binding in roofline_rows():
        print(f"{kid:30} {moved:12,d} {model:12,d} {roof:13,.0f} {cyc:11,.0f} {cyc / roof:5.2f}  {binding}")
