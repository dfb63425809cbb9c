"""The optional ``gpu`` backend: ground-truth cycle measurements on a CUDA GPU.

Install with ``pip install -e '.[gpu]'`` (CuPy for CUDA 12). Nothing here
imports CuPy in the caller's process; all CUDA work happens in a supervised
child process, so a kernel that faults cannot take the caller down.

* :func:`measure_on_gpu` -- ``(ptx_text, spec, *, warmup=50, repeats=200,
  arch=None, timeout=120) -> GpuMeasurement``: the plain function the
  evaluator's ``gpu`` backend wraps (``GpuMeasurement.is_estimate`` is False;
  failures come back as a status, never as an exception);
* :func:`gpu_available` -- ``(bool, reason)``;
* :func:`make_backend` -- the evaluator's ``gpu`` backend
  (:mod:`ptxopt.gpu.backend`; ``BackendUnavailable`` without a GPU);
* :mod:`ptxopt.gpu.instrument` -- the ``%clock64`` instrumentation (a
  transform, not a registered pass);
* :mod:`ptxopt.gpu.harness` -- what happens on the GPU (compile, load,
  inputs, correctness, timing, statistics);
* :mod:`ptxopt.gpu.worker`, :mod:`ptxopt.gpu.child`,
  :mod:`ptxopt.gpu.protocol` -- the process isolation;
* ``python -m ptxopt.gpu.measure_corpus`` -- measure the gemm_tile corpus
  under every single pass and compare the ``sim`` model's ranking with it.
"""

from __future__ import annotations

from ptxopt.gpu.result import FATAL_STATUSES, STATUSES, GpuMeasurement

_LAZY = {
    "measure_on_gpu": "ptxopt.gpu.worker",
    "GpuWorker": "ptxopt.gpu.worker",
    "WorkerFailure": "ptxopt.gpu.worker",
    "gpu_available": "ptxopt.gpu.harness",
    "gpu_info": "ptxopt.gpu.harness",
    "instrument": "ptxopt.gpu.instrument",
    "instrument_ptx": "ptxopt.gpu.instrument",
    "InstrumentClock": "ptxopt.gpu.instrument",
    "InstrumentError": "ptxopt.gpu.instrument",
    "make_spec": "ptxopt.gpu.protocol",
    "make_backend": "ptxopt.gpu.backend",
    "GpuBackend": "ptxopt.gpu.backend",
}

__all__ = ["GpuMeasurement", "STATUSES", "FATAL_STATUSES", *_LAZY]


def __getattr__(name):
    mod = _LAZY.get(name)
    if mod is None:
        raise AttributeError(f"module 'ptxopt.gpu' has no attribute {name!r}")
    from importlib import import_module

    return getattr(import_module(mod), name)
