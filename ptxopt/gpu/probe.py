"""Is there a GPU to measure on?  :func:`gpu_available`, :func:`gpu_info`, :func:`probe_in_process`.

The cheap checks (``PTXOPT_GPU=0``, CuPy not installed) run in the caller;
the full probe (import CuPy, create a context on device 0, copy there and
back) runs in the harness child (:mod:`ptxopt.gpu.child`), once per
process, so the caller never holds a CUDA context.
"""

from __future__ import annotations

import importlib.util
import os

import numpy as np

_DISABLE_ENV = "PTXOPT_GPU"


def _disabled_reason() -> str:
    v = os.environ.get(_DISABLE_ENV, "").strip().lower()
    if v in ("0", "off", "no", "false", "none"):
        return f"disabled by {_DISABLE_ENV}={os.environ[_DISABLE_ENV]}"
    return ""


def cupy_missing_reason() -> str:
    """Why CuPy cannot be imported here ('' if it is installed)."""
    if importlib.util.find_spec("cupy") is None:
        return "CuPy is not installed (pip install 'ptxopt[gpu]' installs cupy-cuda12x)"
    return ""


def probe_in_process() -> dict:
    """Import CuPy, find device 0, create its context and copy to it and
    back: the full check. ``{"available", "reason", "device", "compute_capability",
    "arch", "driver_version", "runtime_version", "cupy_version", ...}``.
    Creates a CUDA context in *this* process: call it in a child."""
    why = _disabled_reason() or cupy_missing_reason()
    if why:
        return {"available": False, "reason": why}
    try:
        import cupy
    except Exception as e:  # broken install, missing libcuda.so ...
        return {"available": False, "reason": f"CuPy is not importable: {type(e).__name__}: {e}"}
    try:
        n = cupy.cuda.runtime.getDeviceCount()
    except Exception as e:
        return {"available": False, "reason": f"no usable CUDA driver: {type(e).__name__}: {e}"}
    if n < 1:
        return {"available": False, "reason": "no CUDA device"}
    try:
        info = device_info(cupy)
        # a copy there and back: no CuPy kernel (those would need NVRTC, which the harness never uses)
        probe = np.arange(4, dtype=np.uint32)
        if cupy.asnumpy(cupy.asarray(probe)).tolist() != probe.tolist():
            return {"available": False, "reason": "device 0 failed a host-device-host copy"}
    except Exception as e:
        return {"available": False, "reason": f"CUDA device 0 is not usable: {type(e).__name__}: {e}"}
    return {"available": True, "reason": "", **info}


def device_info(cupy) -> dict:
    rt = cupy.cuda.runtime
    dev = cupy.cuda.Device(0)
    dev.use()
    props = rt.getDeviceProperties(0)
    name = props.get("name", b"")
    name = name.decode(errors="replace") if isinstance(name, bytes) else str(name)
    major, minor = int(props["major"]), int(props["minor"])
    try:
        bus = dev.pci_bus_id
    except Exception:
        bus = "0"
    return {
        "device": name,
        "compute_capability": f"{major}.{minor}",
        "arch": f"sm_{major}{minor}",
        "driver_version": int(rt.driverGetVersion()),
        "runtime_version": int(rt.runtimeGetVersion()),
        "cupy_version": str(cupy.__version__),
        "sm_count": int(props.get("multiProcessorCount", 0)),
        "clock_rate_khz": int(props["clockRate"]) if "clockRate" in props else None,
        "total_memory": int(props.get("totalGlobalMem", 0)),
        "pci_bus_id": str(bus),
    }


def gpu_available(*, refresh: bool = False, timeout: float = 120.0) -> tuple[bool, str]:
    """``(True, description)`` when a CUDA GPU can run measurements here, else
    ``(False, reason)``. Cheap checks first (``PTXOPT_GPU=0``, CuPy not
    installed); otherwise the full :func:`probe_in_process` runs in a child
    process (so the caller never holds a CUDA context), once per process."""
    info = gpu_info(refresh=refresh, timeout=timeout)
    if not info.get("available"):
        return False, info.get("reason") or "unknown reason"
    return True, (f"{info['device']} ({info['arch']}), driver {info['driver_version']}, "
                  f"CUDA runtime {info['runtime_version']}, CuPy {info['cupy_version']}")


_PROBE: dict | None = None


def gpu_info(*, refresh: bool = False, timeout: float = 120.0) -> dict:
    """The probe dictionary behind :func:`gpu_available` (cached per process)."""
    global _PROBE
    why = _disabled_reason() or cupy_missing_reason()
    if why:
        return {"available": False, "reason": why}
    if _PROBE is None or refresh:
        from ptxopt.gpu.worker import GpuWorker, WorkerFailure

        with GpuWorker() as w:
            try:
                _PROBE = w.request({"kind": "probe"}, timeout)["info"]
            except WorkerFailure as f:
                _PROBE = {"available": False, "reason": f"the GPU probe process failed ({f.status}): {f.message}"}
    return dict(_PROBE)


__all__ = ["gpu_available", "gpu_info", "probe_in_process", "device_info", "cupy_missing_reason"]
