"""Process isolation of the GPU harness, tested without a GPU.

The child (``python -m ptxopt.gpu.child``) is made to misbehave through
``PTXOPT_GPU_CHILD_HOOK`` (see :mod:`ptxopt.gpu.protocol`) at the start of a
``measure`` request, before it touches CUDA. Every misbehaviour must come
back as a categorised failed measurement, never as an exception, and the
worker must start a fresh child for the next request."""

from __future__ import annotations

import os
import time

import pytest

from ptxopt.kernels.corpus import get
from ptxopt.gpu import GpuWorker, gpu_available, measure_on_gpu
from ptxopt.gpu.protocol import HOOK_ENV

SPEC = get("gemm_tile_2x2x2")
PTX = SPEC.ptx_text()
GPU, _ = gpu_available()
# what a well-behaved child answers here: "unavailable" without a GPU, a measurement with one
NORMAL = ("ok",) if GPU else ("unavailable",)


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    # a zombie would still answer; the worker reaps its child, so this means alive
    return False


def _measure(worker, timeout=60.0):
    return worker.measure(PTX, SPEC, reference_ptx=PTX, warmup=2, repeats=5, timeout=timeout)


def test_child_exit_139_is_a_crash_and_the_worker_recovers():
    with GpuWorker(extra_env={HOOK_ENV: "crash"}) as w:
        m = _measure(w)
        assert m.status == "crash"
        assert "exit status 139" in m.message and "SIGSEGV" in m.message
        assert m.kernel == SPEC.entry and m.cycles is None
        assert not w.alive
        m2 = _measure(w)  # a new child, which crashes again
        assert m2.status == "crash" and w.starts == 2


def test_child_killed_by_a_signal_is_a_crash():
    with GpuWorker(extra_env={HOOK_ENV: "segv"}) as w:
        m = _measure(w)
        assert m.status == "crash"
        assert "SIGSEGV" in m.message
        assert "Fatal Python error" in m.message  # faulthandler's report, from the child's log


def test_hanging_child_times_out_and_is_killed():
    with GpuWorker(extra_env={HOOK_ENV: "hang"}) as w:
        # start the child and learn its pid with a request that does not hang
        assert w.request({"kind": "ping"}, 60)["kind"] == "ping"
        pid = w.pid
        t0 = time.monotonic()
        m = _measure(w, timeout=1.5)
        elapsed = time.monotonic() - t0
        assert m.status == "timeout"
        assert "1.5 s" in m.message and "killed" in m.message
        assert 1.4 < elapsed < 15
        assert not w.alive and _gone(pid)


def test_exception_in_the_child_is_an_error_and_the_child_survives():
    with GpuWorker(extra_env={HOOK_ENV: "raise"}) as w:
        m = _measure(w)
        assert m.status == "error"
        assert "failure injected" in m.message
        pid = w.pid
        assert w.alive
        assert w.request({"kind": "ping"}, 30)["pid"] == pid  # the same child answers on


def test_protocol_violation_is_a_crash():
    with GpuWorker(extra_env={HOOK_ENV: "garbage"}) as w:
        m = _measure(w)
        assert m.status == "crash" and "protocol" in m.message
        assert not w.alive


def test_a_crash_once_then_normal_service(tmp_path):
    marker = tmp_path / "crashed"
    with GpuWorker(extra_env={HOOK_ENV: f"crash-once:{marker}"}) as w:
        first = _measure(w)
        assert first.status == "crash" and marker.exists()
        second = _measure(w)
        assert second.status in NORMAL, second.message
        assert w.starts == 2


def test_measure_on_gpu_never_raises_for_bad_input():
    # not PTX at all: ptxas rejects it on a GPU machine; here the child says there is no GPU
    m = measure_on_gpu("this is not PTX", SPEC, reference_ptx=None, timeout=60)
    assert m.status in (("ptxas",) if GPU else ("unavailable",))
    assert m.message


def test_close_ends_the_child():
    w = GpuWorker()
    assert w.request({"kind": "ping"}, 60)["kind"] == "ping"
    pid = w.pid
    w.close()
    assert w.pid is None and _gone(pid)


def test_unknown_request_kind_is_answered():
    with GpuWorker() as w:
        r = w.request({"kind": "nonsense"}, 60)
        assert "unknown request kind" in r["error"]


@pytest.mark.skipif(GPU, reason="a GPU is present: the probe finds it")
def test_probe_in_the_child_reports_why_not():
    with GpuWorker() as w:
        info = w.request({"kind": "probe"}, 120)["info"]
        assert info["available"] is False and info["reason"]
