"""The parent/child protocol of the GPU harness.

The parent (:class:`ptxopt.gpu.worker.GpuWorker`) starts
``python -m ptxopt.gpu.child --result-fd N`` in its own session (process
group) and talks to it in JSON lines:

* requests go to the child's **stdin**, one object per line;
* responses come back on a **dedicated pipe** (file descriptor ``N``), one
  object per line, in request order. The child's stdout/stderr go to a log
  file instead, so a kernel's ``printf``, CuPy warnings or a Python traceback
  can never corrupt the protocol; the parent quotes the log's tail when the
  child dies.

Requests (``kind``):

``{"kind": "probe"}``
    -> ``{"kind": "probe", "info": {"available": bool, "reason": str, "device": ..., ...}}``
``{"kind": "measure", "ptx": str, "spec": <spec JSON>, "reference_ptx": str|null,
"warmup": int, "repeats": int, "arch": str|null, "seed": int, "flavours": [str]}``
    -> ``{"kind": "measure", "result": <GpuMeasurement JSON>, "fatal": bool}``
``{"kind": "ping"}`` -> ``{"kind": "ping", "pid": int}``
``{"kind": "exit"}`` -> the child exits (no response).

``fatal: true`` means the child's CUDA context is lost (a fault): it exits
right after writing the response and the parent starts a fresh child for
the next request. A child that dies without a response, writes something
that is not a JSON line, or does not answer within the request's time limit
(the parent then kills its whole process group) becomes a ``crash`` or
``timeout`` result; the caller never sees an exception for it.

Test hooks: ``PTXOPT_GPU_CHILD_HOOK`` in the child's environment makes it
misbehave at the start of every ``measure`` request, before touching CUDA:
``crash`` (``os._exit(139)``), ``segv`` (kill itself with SIGSEGV),
``hang`` (sleep far past any time limit), ``raise`` (an exception inside the
request: the child survives and answers ``error``), ``garbage`` (answer with
a line that is not JSON), ``crash-once:PATH`` (crash unless PATH exists,
creating it first: the next request then succeeds, which tests restarts).
They exist to test the isolation without a GPU and are inert unless set.
"""

from __future__ import annotations

from pathlib import Path

from ptxopt.kernels.corpus import KernelSpec, Launch, Param
from ptxopt.toolchain.arch import DEFAULT_ARCH

HOOK_ENV = "PTXOPT_GPU_CHILD_HOOK"
HOOKS = ("crash", "segv", "hang", "raise", "garbage", "crash-once")


def spec_to_json(spec: KernelSpec) -> dict:
    """A manifest-style record of ``spec`` (inverse: :func:`spec_from_json`)."""
    params = []
    for p in spec.params:
        d = {"name": p.name, "arg": p.arg, "role": p.role, "dtype": p.dtype}
        if p.count is not None:
            d["count"] = p.count
        if p.value is not None:
            d["value"] = p.value
        if p.align is not None:
            d["align"] = p.align
        if p.nullable:
            d["nullable"] = True
        for k, v in p.extra:
            d[k] = v
        params.append(d)
    out = {
        "id": spec.id, "family": spec.family, "compiler": spec.compiler, "path": spec.path,
        "entry": spec.entry, "source": spec.source, "generator": spec.generator, "arch": spec.arch,
        "ptx_version": spec.ptx_version,
        "launch": {"grid": list(spec.launch.grid), "block": list(spec.launch.block),
                   "shared_bytes": spec.launch.shared_bytes},
        "params": params,
        "shape": {k: v for k, v in spec.shape},
        "tags": list(spec.tags),
        "root": str(spec.root),
    }
    if spec.performance is not None:
        out["performance"] = spec.performance.to_json()
    out["group"] = spec.group
    if spec.loops:  # frozen (tuples); lists read back to the same tuples (KernelSpec.from_json freezes them)
        out["loops"] = [_lists(loop) for loop in spec.loops]
    if spec.divisible_by_16:  # the manifest keeps it under "triton" (KernelSpec.from_json reads it there)
        out["triton"] = {"divisible_by_16": list(spec.divisible_by_16)}
    return out


def _lists(value):
    return [_lists(v) for v in value] if isinstance(value, tuple) else value


def spec_from_json(d: dict) -> KernelSpec:
    return KernelSpec.from_json(d, Path(d.get("root", ".")))


def make_spec(entry: str, params: list[dict], *, grid=(1, 1, 1), block=(1, 1, 1), shared_bytes: int = 0,
              kernel_id: str | None = None, arch: str = DEFAULT_ARCH) -> KernelSpec:
    """A :class:`KernelSpec` for a kernel outside the corpus (``params`` in
    manifest form: ``{"name", "role", "dtype", "count"|"value", ...}``)."""
    return KernelSpec(
        id=kernel_id or entry, family="adhoc", compiler="unknown", path="", entry=entry, source="",
        generator="", arch=arch, ptx_version="", launch=Launch(tuple(grid), tuple(block), shared_bytes),
        params=tuple(Param.from_json({"arg": p["name"], **p}) for p in params))


def measure_request(ptx_text: str, spec: KernelSpec, *, reference_ptx: str | None, warmup: int, repeats: int,
                    arch: str | None, seed: int, flavours) -> dict:
    return {
        "kind": "measure", "ptx": ptx_text, "spec": spec_to_json(spec), "reference_ptx": reference_ptx,
        "warmup": int(warmup), "repeats": int(repeats), "arch": arch, "seed": int(seed),
        "flavours": list(flavours),
    }


__all__ = ["HOOK_ENV", "HOOKS", "spec_to_json", "spec_from_json", "make_spec", "measure_request"]
