"""The evaluator's ``gpu`` backend: :func:`ptxopt.gpu.measure_on_gpu` behind the
:class:`~ptxopt.measure.backend.Backend` protocol.

The harness (child process, CuPy, timing) lives in :mod:`ptxopt.gpu`; this
module only adapts it, and imports nothing of :mod:`ptxopt.gpu` before a
backend is made, so the registry can name it on machines without CuPy.

:func:`make_backend` (``**options``; the harness package does not re-export
it: :mod:`ptxopt.gpu` sits below this layer) raises
:class:`~ptxopt.measure.backend.BackendUnavailable` (``GPU backend unavailable:
<reason>``) where :func:`~ptxopt.gpu.probe.gpu_available` says no; the
registry's factory (:func:`registry_factory`) checks first that the
:mod:`ptxopt.gpu` package and CuPy are importable. ``measure``
returns a ``Measurement`` with ``estimate=False`` and ``spread`` = the IQR
of the cycle samples, or raises ``MeasureError(category, message)`` for a
failed candidate:

=============================== =====================
harness status                  evaluator category
=============================== =====================
``mismatch``                    ``mismatch``
``fault``, ``crash``            ``fault`` (the child died running it)
``timeout``                     ``timeout``
``ptxas``                       ``ptxas``
``instrument``, ``load``,       ``unsupported``
``launch``, ``unavailable``
``error``                       ``internal``
=============================== =====================

Kernels outside the corpus (``spec`` None) are ``unsupported``: the GPU
needs the manifest's launch geometry and input description.
"""

from __future__ import annotations

import hashlib
import importlib.util
from pathlib import Path

from ptxopt.measure.backend import BackendUnavailable, MeasureError, Measurement

CATEGORY = {
    "mismatch": "mismatch", "fault": "fault", "crash": "fault", "timeout": "timeout", "ptxas": "ptxas",
    "instrument": "unsupported", "load": "unsupported", "launch": "unsupported", "unavailable": "unsupported",
    "error": "internal",
}


def harness_digest() -> str:
    """sha256 (16 hex digits) of :mod:`ptxopt.gpu`'s sources: changing the
    harness invalidates cached measurements."""
    h = hashlib.sha256()
    root = Path(__file__).resolve().parent.parent / "gpu"
    for f in sorted(root.glob("*.py")):
        h.update(f.name.encode())
        h.update(f.read_bytes())
    return h.hexdigest()[:16]


def to_measurement(m) -> Measurement:
    """The evaluator's ``Measurement`` for a successful
    :class:`~ptxopt.gpu.measurement.GpuMeasurement` ``m``; raises its
    ``MeasureError`` for a failed one."""
    if not m.ok:
        raise MeasureError(CATEGORY.get(m.status, "internal"), f"gpu {m.status}: {m.message}")
    notes = [f"measured on {m.device} ({m.arch}) with %clock64: median of {m.repeats} launches after "
             f"{m.warmup} warm-up, max over {m.threads} thread(s)"]
    if m.message:
        notes.append(m.message)
    if m.nondeterministic:
        notes.append("not compared (the original itself is nondeterministic): " + ", ".join(m.nondeterministic))
    return Measurement(
        cycles=float(m.cycles), estimate=False, registers=m.registers, spill_store_bytes=m.spill_store_bytes,
        spill_load_bytes=m.spill_load_bytes, spread=m.cycles_iqr, notes=tuple(notes),
        extra={"device": m.device, "arch": m.arch, "arch_requested": m.arch_requested, "load_path": m.load_path,
               "cycles_min": m.cycles_min, "cycles_max": m.cycles_max, "cycles_p25": m.cycles_p25,
               "cycles_p75": m.cycles_p75, "wall_us": m.wall_us, "wall_us_iqr": m.wall_us_iqr,
               "instrumented_registers": m.instrumented_registers, "threads": m.threads, "repeats": m.repeats,
               "warmup": m.warmup, "compared": m.compared, "ptxas_version": m.ptxas_version},
    )


class GpuBackend:
    """``name = "gpu"``, ``is_estimate = False``, ``pipelined = False``; one
    harness child per instance."""

    name = "gpu"
    is_estimate = False
    #: hardware timings: measured alone, in the evaluating thread, with at most one worker process
    pipelined = False
    expected_error = None

    def __init__(self, *, warmup: int = 50, repeats: int = 200, timeout: float | None = None, seed: int = 0,
                 flavours=("random", "edge"), info: dict | None = None):
        from ptxopt.gpu.probe import gpu_info
        from ptxopt.gpu.worker import DEFAULT_TIMEOUT, GpuWorker

        self.warmup, self.repeats, self.seed, self.flavours = int(warmup), int(repeats), int(seed), tuple(flavours)
        self.timeout = DEFAULT_TIMEOUT if timeout is None else float(timeout)
        self.info = info if info is not None else gpu_info()
        self.worker = GpuWorker()
        self.version = (f"{harness_digest()}/{self.info.get('device')}/{self.info.get('driver_version')}"
                        f"/w{self.warmup}r{self.repeats}s{self.seed}")

    def measure(self, ptx_text: str, arch: str, spec=None) -> Measurement:
        if spec is None:
            raise MeasureError("unsupported", "the gpu backend needs a corpus manifest entry (launch geometry "
                                              "and inputs); this kernel has none")
        from ptxopt.gpu.worker import measure_on_gpu

        m = measure_on_gpu(ptx_text, spec, warmup=self.warmup, repeats=self.repeats, arch=arch,
                           timeout=self.timeout, seed=self.seed, flavours=self.flavours, worker=self.worker)
        return to_measurement(m)

    def close(self) -> None:
        self.worker.close()


def make_backend(**options) -> GpuBackend:
    """A :class:`GpuBackend`; raises
    :class:`BackendUnavailable` where :func:`~ptxopt.gpu.probe.gpu_available` says no."""
    from ptxopt.gpu.probe import gpu_available

    ok, reason = gpu_available()
    if not ok:
        raise BackendUnavailable(f"GPU backend unavailable: {reason}")
    return GpuBackend(**options)


def registry_factory(**options) -> GpuBackend:
    """The registry's ``gpu`` factory: :func:`make_backend` after checking
    that the :mod:`ptxopt.gpu` package and CuPy are importable, so that every
    failure reads ``GPU backend unavailable: <why>``."""
    if importlib.util.find_spec("ptxopt.gpu") is None:
        raise BackendUnavailable("GPU backend unavailable: the ptxopt.gpu package is not installed")
    try:
        import ptxopt.gpu  # noqa: F401
    except Exception as e:
        raise BackendUnavailable(f"GPU backend unavailable: ptxopt.gpu cannot be imported ({e})") from e
    if importlib.util.find_spec("cupy") is None:
        raise BackendUnavailable("GPU backend unavailable: CuPy is not installed "
                                 "(pip install 'ptxopt[gpu]' on a machine with a CUDA GPU)")
    try:
        return make_backend(**options)
    except BackendUnavailable:
        raise
    except Exception as e:
        raise BackendUnavailable(f"GPU backend unavailable: {e}") from e


#: what the registry reads the flags from without calling the factory
registry_factory.backend_class = GpuBackend  # type: ignore[attr-defined]


__all__ = ["GpuBackend", "make_backend", "registry_factory", "to_measurement", "CATEGORY", "harness_digest"]
