"""The optional ``gpu`` backend: ground-truth cycle measurements on a CUDA GPU.

Install with ``pip install -e '.[gpu]'`` (CuPy for CUDA 12). Nothing here
imports CuPy in the caller's process; all CUDA work happens in a supervised
child process, so a kernel that faults cannot take the caller down.

* :func:`measure_on_gpu` -- ``(ptx_text, spec, *, warmup=50, repeats=200,
  arch=None, timeout=120) -> GpuMeasurement``: the plain function the
  evaluator's ``gpu`` backend wraps (``GpuMeasurement.is_estimate`` is False;
  failures come back as a status, never as an exception);
* :func:`gpu_available` -- ``(bool, reason)``;
* :mod:`ptxopt.gpu.clock_instrument` -- the ``%clock64`` instrumentation (a
  rewrite of the IR, not a pass);
* :mod:`ptxopt.gpu.session` -- what happens on the GPU (compile, load,
  correctness, timing), with :mod:`ptxopt.gpu.harness_args` (arguments built like
  the CPU verifier's), :mod:`ptxopt.gpu.readback` (durations, statistics,
  output comparison), :mod:`ptxopt.gpu.errors` (CUDA error classes) and
  :mod:`ptxopt.gpu.probe` (is there a usable GPU);
* :mod:`ptxopt.gpu.worker`, :mod:`ptxopt.gpu.child`,
  :mod:`ptxopt.gpu.protocol` -- the process isolation;

Layering: this package sits *below* the pass layer. It imports the IR,
parser, printer, interpreter, corpus, toolchain and the buffer comparison,
never the pass manager, the passes, the evaluator, the measurement backends
or the search (``tests/project/test_import_contract.py`` pins that floor). What
builds on it lives above: the evaluator's ``gpu`` backend
(:func:`ptxopt.measure.gpu.make_backend`; ``BackendUnavailable`` without a
GPU) and the calibration script ``benchmarks/reports/gpu_measure_corpus.py``, which
measures the gemm_tile corpus under every single pass and compares the
``sim`` model's ranking with it.

Running the hardware measurement
--------------------------------
On a machine with a CUDA GPU and network access::

    pip install -e '.[gpu]'                      # cupy-cuda12x (runs on CUDA 12 and 13 drivers)
    python -c "from ptxopt.gpu import gpu_available; print(gpu_available())"
    pytest -m gpu tests/gpu/test_gpu_device.py       # load, launch, mismatch, fault, timeout, end to end
    python benchmarks/reports/gpu_measure_corpus.py --compare-sim     # -> corpus/measurements/<gpu-name>.json
    git add corpus/measurements/<gpu-name>.json

(``--resume`` continues an interrupted run; ``--kernels``/``--limit`` split
it into batches.) The comparison needs no GPU and can be redone anywhere::

    python benchmarks/reports/gpu_measure_corpus.py --input corpus/measurements/<gpu-name>.json --compare-sim

On this workplace's lent H100/H200 machines (CuPy, Python 3.12 and a CUDA 13
driver are there; nothing can be downloaded there, and ptxopt's own wheels
are not installed), carry what ptxopt needs. Here, once, in the repo root::

    printf '/.gpu-carry/\n/.gpu-out/\n' >> .git/info/exclude; mkdir -p .gpu-carry
    cp .venv/lib/python3.*/site-packages/nvidia/cuda_nvcc/bin/ptxas .gpu-carry/ptxas-12.9
    cp .venv/lib/python3.*/site-packages/nvidia/cu13/bin/nvdisasm .gpu-carry/
    python3 -m pip download --no-deps --only-binary=:all: -d .gpu-carry lark

and on the device (``carry: [".gpu-carry"]``; ``.gpu-out/`` is ignored and
not carried, so it survives between calls on a warm machine and ``--resume``
continues a run that needed more than one 10-minute command)::

    python3 -m pip install -q --no-index --no-deps --target /tmp/site .gpu-carry/*.whl &&
    export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 \
      PTXOPT_PTXAS=$PWD/.gpu-carry/ptxas-12.9:/usr/local/cuda/bin/ptxas \
      PTXOPT_NVDISASM=$PWD/.gpu-carry/nvdisasm &&
    python3 -m pytest -q -m gpu tests/gpu/test_gpu_device.py -p no:cacheprovider;
    mkdir -p .gpu-out; timeout 560 python3 benchmarks/reports/gpu_measure_corpus.py --kernels gemm_tile \
      --out .gpu-out/measurements.json --resume; cp .gpu-out/measurements.json $OUT/

(about 41 MiB carried; ptxas 12.9 is the release the CPU side uses for the
gemm_tile PTX, so registers and SASS match the ``sim`` estimates; the
system's 13.0 ptxas takes ``.version 9.x`` modules.) Repeat the last line
until every kernel is in; then copy the returned file to
``corpus/measurements/<gpu-name>.json`` and run ``--compare-sim`` on it here.
"""

from __future__ import annotations

from ptxopt.gpu.measurement import FATAL_STATUSES, STATUSES, GpuMeasurement

_LAZY = {
    "measure_on_gpu": "ptxopt.gpu.worker",
    "GpuWorker": "ptxopt.gpu.worker",
    "WorkerFailure": "ptxopt.gpu.worker",
    "gpu_available": "ptxopt.gpu.probe",
    "gpu_info": "ptxopt.gpu.probe",
    "instrument": "ptxopt.gpu.clock_instrument",
    "instrument_ptx": "ptxopt.gpu.clock_instrument",
    "InstrumentError": "ptxopt.gpu.clock_instrument",
    "make_spec": "ptxopt.gpu.protocol",
}

__all__ = ["GpuMeasurement", "STATUSES", "FATAL_STATUSES", *_LAZY]


def __getattr__(name):
    mod = _LAZY.get(name)
    if mod is None:
        raise AttributeError(f"module 'ptxopt.gpu' has no attribute {name!r}")
    from importlib import import_module

    return getattr(import_module(mod), name)
