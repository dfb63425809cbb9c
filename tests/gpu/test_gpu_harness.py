"""The GPU harness's CPU-side parts: inputs built exactly like the CPU
verifier's, statistics, error classification, the protocol's spec
encoding, the result type, and -- on a machine without a GPU -- that the
whole path reports ``unavailable`` with a reason instead of failing."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from ptxopt.kernels.corpus import load_manifest
from ptxopt.gpu import GpuMeasurement, STATUSES, gpu_available, measure_on_gpu
from ptxopt.gpu.errors import HarnessError, classify_cuda_error
from ptxopt.gpu.harness_args import clock_buffer, host_args, kernel_params, scalar_dtype, typed_scalar
from ptxopt.gpu.readback import compare_outputs, launch_durations, nondeterministic_buffers, summarize
from ptxopt.gpu.session import resolve_arch
from ptxopt.gpu.clock_instrument import SENTINEL
from ptxopt.gpu.protocol import make_spec, spec_from_json, spec_to_json
from ptxopt.interp.launcher import encode_scalar
from ptxopt.interp.workload import FLAVOURS, make_args

SPECS = load_manifest()
GPU, GPU_REASON = gpu_available()
no_gpu_only = pytest.mark.skipif(GPU, reason="a GPU is present: the no-GPU path is not taken here")


# ---------------------------------------------------------------------------
# inputs: the same as ptxopt.equivalence.interpret builds
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("flavour", FLAVOURS)
@pytest.mark.parametrize("spec", SPECS, ids=[s.id for s in SPECS])
def test_host_args_match_verify(spec, flavour):
    slots = kernel_params(spec.ptx_text(), spec.entry)
    got = host_args(spec, slots, seed=3, flavour=flavour)
    want = make_args(spec, 3, flavour)  # what ptxopt.equivalence.interpret passes to the interpreter
    assert len(got) == len(want) == len(slots)
    for p, slot, g, w in zip(spec.params, slots, got, want):
        if isinstance(w, np.ndarray):
            assert isinstance(g, np.ndarray)
            assert g.dtype == w.dtype and g.shape == w.shape and g.tobytes() == w.tobytes(), p.arg
            assert p.count is None or g.size == max(p.count, 1) or p.role == "scratch"
        elif w is None:
            assert g is None  # a null pointer, as the interpreter passes it
        else:
            # a numpy scalar whose bytes are exactly the interpreter's parameter bytes
            assert isinstance(g, np.generic)
            assert g.tobytes() == encode_scalar(w, slot.dtype, slot.size), p.arg


def test_scalar_types():
    assert scalar_dtype("f32") == np.float32 and scalar_dtype("s32") == np.int32
    assert scalar_dtype("u16") == np.uint16 and scalar_dtype("b64") == np.uint64
    assert typed_scalar(-1, "s32", 4) == np.int32(-1)
    assert typed_scalar(2.5, "f32", 4).dtype == np.float32
    assert typed_scalar(0xFFFFFFFF, "u32", 4) == np.uint32(0xFFFFFFFF)
    with pytest.raises(HarnessError):
        scalar_dtype("pred")
    with pytest.raises(HarnessError):
        typed_scalar(1, "u32", 8)


def test_host_args_checks_parameter_count():
    spec = next(s for s in SPECS if s.id == "gemm_tile_2x2x2")
    slots = kernel_params(spec.ptx_text(), spec.entry)
    with pytest.raises(HarnessError, match="parameters"):
        host_args(spec, slots[:-1])


# ---------------------------------------------------------------------------
# durations and statistics
# ---------------------------------------------------------------------------


def test_clock_buffer_and_durations():
    clk = clock_buffer(4, 3)
    assert clk.shape == (3, 4) and clk.dtype == np.uint64 and (clk == SENTINEL).all()
    clk[:] = [[5, 9, 7, 1], [6, 6, 6, 6], [10, 2, 3, 4]]
    assert launch_durations(clk).tolist() == [9, 6, 10]  # the critical thread per launch
    clk[1, 2] = SENTINEL
    with pytest.raises(HarnessError, match="1 thread-launch"):
        launch_durations(clk)


def test_summarize():
    s = summarize([1, 2, 3, 4, 100])
    assert s["median"] == 3 and s["min"] == 1 and s["max"] == 100 and s["n"] == 5
    assert s["p25"] == 2 and s["p75"] == 4 and s["iqr"] == 2
    assert math.isclose(s["mean"], 22.0)
    assert summarize([])["median"] is None


def test_compare_outputs_and_nondeterminism():
    names = ["A", "B", "C"]
    a = [np.array([1.0, 2.0], np.float32), None, np.array([0.0], np.float32)]
    b = [np.array([1.0, 2.0], np.float32), None, np.array([-0.0], np.float32)]  # -0.0 differs bit-wise
    mm = compare_outputs(names, a, b)
    assert mm is not None and mm.buffer == "C" and mm.index == 0
    assert compare_outputs(names, a, b, ignore=("C",)) is None
    assert nondeterministic_buffers(names, a, b) == ["C"]
    nan1 = np.array([np.nan], np.float32)
    assert compare_outputs(["x"], [nan1], [nan1.copy()]) is None  # same NaN bits compare equal


def test_classify_cuda_errors():
    # CuPy's runtime and driver spellings of the same errors
    for msg in ("cudaErrorIllegalAddress: an illegal memory access was encountered",
                "CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access was encountered",
                "cudaErrorMisalignedAddress: misaligned address",
                "CUDA_ERROR_MISALIGNED_ADDRESS: misaligned address",
                "cudaErrorLaunchFailure: unspecified launch failure",
                "CUDA_ERROR_LAUNCH_FAILED: unspecified launch failure",
                "cudaErrorIllegalInstruction: an illegal instruction was encountered",
                "cudaErrorAssert: device-side assert triggered",
                "cudaErrorLaunchTimeout: the launch timed out and was terminated"):
        assert classify_cuda_error(msg) == ("fault", True), msg
    for msg in ("CUDA_ERROR_INVALID_PTX: a PTX JIT compilation failed",
                "CUDA_ERROR_NO_BINARY_FOR_GPU: no kernel image is available for execution on the device",
                "cudaErrorUnsupportedPtxVersion: the provided PTX was compiled with an unsupported toolchain.",
                "CUDA_ERROR_INVALID_IMAGE: device kernel image is invalid",
                "CUDA_ERROR_NOT_FOUND: named symbol not found"):
        assert classify_cuda_error(msg) == ("load", False), msg
    for msg in ("cudaErrorLaunchOutOfResources: too many resources requested for launch",
                "CUDA_ERROR_INVALID_VALUE: invalid argument",
                "cudaErrorInvalidConfiguration: invalid configuration argument"):
        assert classify_cuda_error(msg) == ("launch", False), msg
    assert classify_cuda_error("cudaErrorUnknown: unknown error") == ("error", True)


def test_resolve_arch():
    assert resolve_arch("sm_89", "sm_90", ".version 8.8\n.target sm_89\n") == "sm_90"
    assert resolve_arch(None, "sm_90", ".version 9.4\n.target sm_90a\n") == "sm_90a"
    assert resolve_arch(None, "sm_89", ".version 9.4\n.target sm_90a\n") == "sm_89"


# ---------------------------------------------------------------------------
# protocol and result
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("spec", SPECS, ids=[s.id for s in SPECS])
def test_spec_json_round_trip(spec):
    import json

    back = spec_from_json(json.loads(json.dumps(spec_to_json(spec))))
    assert back == spec
    assert back.root == spec.root and back.ptx_text() == spec.ptx_text()


def test_make_spec():
    s = make_spec("k", [{"name": "k_param_0", "role": "output", "dtype": "f32", "count": 8},
                        {"name": "k_param_1", "role": "scalar", "dtype": "s32", "value": 8}], block=(8, 1, 1))
    assert s.launch.threads == 8 and [p.arg for p in s.params] == ["k_param_0", "k_param_1"]
    assert spec_from_json(spec_to_json(s)) == s


def test_measurement_json():
    m = GpuMeasurement(status="ok", kernel="k", cycles=12.0, cycles_iqr=1.0, cycles_min=11, cycles_max=20,
                       wall_us=3.5, registers=10, spill_store_bytes=4, spill_load_bytes=8, samples=(11, 12, 13),
                       checked_flavours=("random",), device="X", arch="sm_90")
    assert GpuMeasurement.from_json(m.to_json()) == m
    assert m.spill_bytes == 12 and m.ok and not m.is_estimate
    assert "[measured]" in m.summary()
    bad = GpuMeasurement.from_json({"status": "exploded", "message": "?"})
    assert bad.status == "error" and "exploded" in bad.message
    assert set(STATUSES) >= {"ok", "mismatch", "fault", "timeout", "crash"}


# ---------------------------------------------------------------------------
# no GPU here: said plainly, never an exception
# ---------------------------------------------------------------------------


@no_gpu_only
def test_gpu_available_false_with_reason():
    ok, reason = gpu_available()
    assert ok is False
    assert reason and ("CuPy" in reason or "CUDA" in reason or "device" in reason or "disabled" in reason)


def test_gpu_available_can_be_disabled(monkeypatch):
    monkeypatch.setenv("PTXOPT_GPU", "0")
    assert gpu_available() == (False, "disabled by PTXOPT_GPU=0")


@no_gpu_only
def test_measure_on_gpu_reports_unavailable():
    spec = next(s for s in SPECS if s.id == "gemm_tile_2x2x2")
    m = measure_on_gpu(spec.ptx_text(), spec, timeout=120)
    assert m.status == "unavailable"
    assert m.message == GPU_REASON
    assert m.kernel == spec.entry and m.cycles is None and not m.is_estimate


# ---------------------------------------------------------------------------
# the evaluator's backend adapter
# ---------------------------------------------------------------------------


def test_backend_adapter_maps_results():
    backends = pytest.importorskip("ptxopt.measure.backend")
    from ptxopt.measure.gpu import CATEGORY, to_measurement

    ok = GpuMeasurement(status="ok", kernel="k", cycles=100.0, cycles_iqr=1.0, registers=20, spill_store_bytes=0,
                        spill_load_bytes=0, device="X", arch="sm_90", repeats=200, warmup=50, threads=1)
    meas = to_measurement(ok)
    assert meas.cycles == 100.0 and meas.estimate is False and meas.spread == 1.0 and meas.registers == 20
    for status in STATUSES:
        if status == "ok":
            continue
        with pytest.raises(backends.MeasureError) as e:
            to_measurement(GpuMeasurement(status=status, message="why"))
        assert e.value.category == CATEGORY[status]
    assert CATEGORY["crash"] == "fault"  # the child died running the candidate


@no_gpu_only
def test_make_backend_unavailable_here():
    backends = pytest.importorskip("ptxopt.measure.backend")
    from ptxopt.measure.gpu import make_backend

    with pytest.raises(backends.BackendUnavailable, match="GPU backend unavailable: " + re.escape(GPU_REASON)):
        make_backend()
