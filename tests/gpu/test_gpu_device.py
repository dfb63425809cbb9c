"""Tests that need a CUDA GPU (and CuPy: ``pip install -e '.[gpu]'``).

Skipped, with the reason, wherever :func:`ptxopt.gpu.gpu_available` says
no. They load, launch and time real kernels through the child-process
harness: baselines, a single-pass variant, multi-thread kernels, a wrong
candidate (mismatch), a faulting one (fault, then service continues in a
fresh child), a hanging one (timeout), and ``benchmarks/reports/gpu_measure_corpus.py`` end to end.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ptxopt.kernels.corpus import get
from ptxopt.ptx.emit import emit
from ptxopt.gpu import GpuWorker, gpu_available, gpu_info, make_spec
from ptxopt.ptx.parser import parse
from ptxopt.passes.passmanager import PassManager
from ptxopt.toolchain import compile_ptx

GPU, REASON = gpu_available()
SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "reports" / "gpu_measure_corpus.py"
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not GPU, reason=f"needs a CUDA GPU: {REASON}")]

SPEC = get("gemm_tile_2x2x2")
PTX = SPEC.ptx_text()

SPIN_PTX = """
.version 8.0
.target sm_80
.address_size 64

.visible .entry spin(
	.param .u64 spin_param_0
)
{
	.reg .pred 	%p<2>;
	.reg .b32 	%r<2>;
	.reg .b64 	%rd<3>;

	ld.param.u64 	%rd1, [spin_param_0];
	cvta.to.global.u64 	%rd2, %rd1;
$L_spin:
	ld.volatile.global.u32 	%r1, [%rd2];
	setp.ne.u32 	%p1, %r1, 7;
	@%p1 bra 	$L_spin;
	ret;
}
"""


@pytest.fixture(scope="module")
def worker():
    w = GpuWorker()
    yield w
    w.close()


def test_probe_describes_the_device():
    info = gpu_info()
    assert info["available"] is True
    assert re.fullmatch(r"sm_\d+", info["arch"]) and info["device"]
    assert info["driver_version"] > 0 and info["runtime_version"] > 0


def test_baseline_is_measured(worker):
    m = worker.measure(PTX, SPEC, reference_ptx=PTX, warmup=50, repeats=200)
    assert m.status == "ok", m.message
    assert m.compared and m.checked_flavours == ("random", "edge")
    assert len(m.samples) == 200 and m.repeats == 200 and m.threads == 1
    assert 0 < m.cycles_min <= m.cycles <= m.cycles_max
    assert m.cycles_p25 <= m.cycles <= m.cycles_p75
    assert m.wall_us > 0 and m.wall_us_min <= m.wall_us <= m.wall_us_max
    assert m.registers == compile_ptx(PTX, m.arch).registers
    assert m.instrumented_registers is not None and m.load_path in ("cubin", "ptx-jit")
    # the earlier sm_89 work saw about one cycle of noise; leave generous room for other GPUs
    assert m.cycles_iqr <= max(16.0, 0.05 * m.cycles)
    assert not m.is_estimate


def test_measurements_repeat(worker):
    a = worker.measure(PTX, SPEC, reference_ptx=None, warmup=50, repeats=200)
    b = worker.measure(PTX, SPEC, reference_ptx=None, warmup=50, repeats=200)
    assert a.ok and b.ok
    assert abs(a.cycles - b.cycles) <= max(8.0, 0.05 * a.cycles)


def test_single_pass_variant(worker):
    spec = get("gemm_tile_4x4x4")
    base = spec.ptx_text()
    variant = emit(PassManager("vec_ld").run(parse(base)).module)
    assert variant != base
    m = worker.measure(variant, spec, reference_ptx=base, warmup=20, repeats=50)
    assert m.status == "ok", m.message
    assert m.compared and m.cycles > 0


@pytest.mark.parametrize("kid", ["cuda_vector_add", "cuda_reduce_sum_smem", "cuda_softmax_row",
                                 "triton_softmax_row", "triton_matmul_f32_ieee"])
def test_multi_thread_kernels(worker, kid):
    spec = get(kid)
    m = worker.measure(spec.ptx_text(), spec, reference_ptx=spec.ptx_text(), warmup=10, repeats=30)
    assert m.status == "ok", m.message
    assert m.threads == spec.launch.threads and m.compared


def test_wrong_candidate_is_a_mismatch(worker):
    # multiply A[0] by itself instead of by B[0] in the first FMA
    bad, n = re.subn(r"fma\.rn\.f32(\s+)(%f\d+), (%f\d+), (%f\d+), (%f\d+);", r"fma.rn.f32\1\2, \3, \3, \5;",
                     PTX, count=1)
    assert n == 1
    m = worker.measure(bad, SPEC, reference_ptx=PTX, warmup=2, repeats=5)
    assert m.status == "mismatch", m.message
    assert m.mismatch["buffer"] == "C" and m.cycles is None


def test_faulting_candidate_is_isolated(worker):
    # read A through a null pointer: an illegal address on every GPU
    bad, n = re.subn(r"cvta\.to\.global\.u64(\s+)%rd4, %rd1;", r"mov.u64\1%rd4, 0;", PTX)
    assert n == 1
    worker.request({"kind": "ping"}, 120)
    before = worker.pid
    m = worker.measure(bad, SPEC, reference_ptx=PTX, warmup=2, repeats=5)
    assert m.status == "fault", m.message
    assert "illegal" in m.message.lower() or "launch failure" in m.message.lower()
    # the lost context went with its child; the next measurement runs in a fresh one
    again = worker.measure(PTX, SPEC, reference_ptx=PTX, warmup=2, repeats=5)
    assert again.status == "ok", again.message
    assert worker.pid != before


def test_hanging_kernel_times_out(worker):
    spec = make_spec("spin", [{"name": "spin_param_0", "role": "inout", "dtype": "u32", "count": 1,
                               "init": "zero"}])
    # warm the child (CuPy imported, context created) so the limit covers the kernel
    assert worker.request({"kind": "probe"}, 120)["info"]["available"]
    m = worker.measure(SPIN_PTX, spec, reference_ptx=None, warmup=1, repeats=1, timeout=20)
    assert m.status == "timeout", m.message
    again = worker.measure(PTX, SPEC, reference_ptx=None, warmup=2, repeats=5)
    assert again.status == "ok", again.message


def test_backend_for_the_evaluator():
    pytest.importorskip("ptxopt.measure.backend")
    from ptxopt.measure.gpu import make_backend

    b = make_backend(warmup=5, repeats=20)
    try:
        meas = b.measure(PTX, "sm_89", SPEC)
        assert meas.estimate is False and meas.cycles > 0 and b.is_estimate is False
    finally:
        b.close()


def test_measure_corpus_end_to_end(tmp_path):
    out = tmp_path / "m.json"
    r = subprocess.run([sys.executable, str(SCRIPT), "--kernels", "gemm_tile_2x2x2",
                        "--passes", "vec_ld,split_ld,maxnreg_32", "--warmup", "5", "--repeats", "20",
                        "--out", str(out), "--compare-sim"], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    data = json.loads(out.read_text())
    k = data["kernels"]["gemm_tile_2x2x2"]
    assert k["baseline"]["status"] == "ok" and k["vec_ld"]["status"] == "ok"
    assert k["split_ld"]["same_as"] == "baseline"
    assert data["gpu"]["arch"] == gpu_info()["arch"]
    assert "Spearman" in r.stdout and "sim_comparison" in data
