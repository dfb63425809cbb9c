"""Measuring one candidate on the GPU with CuPy, in the current process: :class:`GpuSession`.

Callers normally go through :func:`ptxopt.gpu.measure_on_gpu`, which runs
this code in a child process (:mod:`ptxopt.gpu.child`); everything here that
touches CUDA expects to own its process, because a faulting kernel leaves the
CUDA context unusable.

What one measurement does (:meth:`GpuSession.measure`):

1. **Compile** with ptxopt's ptxas (:func:`ptxopt.toolchain.compile_ptx`)
   for the *device's* architecture (``sm_<major><minor>``; a PTX module
   targeting ``sm_90a`` on a 9.0 device keeps the ``a``): the candidate as
   given (its registers and spills are reported) and its
   :func:`~ptxopt.gpu.clock_instrument.instrument`-ed form (what runs).
   A requested ``arch`` that differs from the device is recorded as
   ``arch_requested`` and not used: a cubin for another SM does not load.
2. **Load** the instrumented cubin (``cupy.cuda.function.Module().load``).
   If the driver refuses the cubin (a driver older than the ptxas), the PTX
   is handed to the driver's JIT instead and ``load_path`` says
   ``ptx-jit`` (the reported resources then describe ptxopt's ptxas build,
   not what ran; ``message`` says so).
3. **Inputs** exactly as the CPU verifier builds them:
   :func:`ptxopt.interp.workload.make_args` for the corpus entry (same
   dtypes, counts, ranges, seeded values, garbage-filled outputs), scalars
   encoded in the PTX parameter's type with the interpreter's own encoder
   (:func:`host_args`). Buffers are ``cupy`` arrays (256-byte aligned, more
   than the manifest's 16). The duration buffer is appended last,
   pre-filled with :data:`~ptxopt.gpu.clock_instrument.SENTINEL`.
4. **Correctness**: for each input flavour (default ``random`` and
   ``edge``), one launch of the candidate on fresh inputs, every buffer
   copied back and compared bit for bit with the reference kernel's (the
   uninstrumented original, run on the same inputs in the same process and
   cached per process). The reference runs twice; buffers it does not
   reproduce itself (float atomics) are listed in ``nondeterministic`` and
   excluded. Any difference makes the candidate a ``mismatch``; a thread
   that left the sentinel in the duration buffer is an ``error``.
5. **Timing**: ``warmup`` launches (default 50), then ``repeats`` timed
   launches (default 200), each between two CUDA events and synchronised,
   each writing its durations to its own row of a ``(repeats, threads)``
   buffer that is copied back once at the end. Per launch the maximum over
   threads is the kernel's cycle count; the result holds median, IQR,
   quartiles, min, max and mean of those, the per-launch samples, and the
   same statistics of the event wall times (µs). An exclusive ``flock`` on
   ``$TMPDIR/ptxopt-gpu-<pci bus id>.lock`` is held across warm-up and timed
   launches so concurrent harnesses on one machine never time each other.

CUDA errors are classified by :func:`classify_cuda_error` (``fault``,
``load``, ``launch`` or ``error``); anything other than a load or launch
refusal is treated as having lost the context (``fatal``), and the child
exits after reporting it.

Only :class:`GpuSession` here and :func:`ptxopt.gpu.probe.probe_in_process`
import CuPy; the helpers it uses -- :mod:`ptxopt.gpu.harness_args` (arguments),
:mod:`ptxopt.gpu.readback` (durations, statistics, comparison),
:mod:`ptxopt.gpu.errors` (classification) -- are plain numpy and are tested
on CPU.
"""


from __future__ import annotations

import contextlib
import hashlib
import os
import re
import tempfile
import time

import numpy as np

from ptxopt.support.bounded_memo import BoundedMemo
from ptxopt.gpu.errors import HarnessError, classify_cuda_error, is_cuda_error
from ptxopt.gpu.harness_args import clock_buffer, host_args, kernel_params
from ptxopt.gpu.probe import device_info
from ptxopt.gpu.readback import compare_outputs, launch_durations, nondeterministic_buffers, summarize
from ptxopt.gpu.measurement import GpuMeasurement

DEFAULT_WARMUP = 50
DEFAULT_REPEATS = 200
DEFAULT_FLAVOURS = ("random", "edge")
TIMING_FLAVOUR = "random"
_MAX_STATIC_DYNAMIC_SHARED = 48 * 1024
_CU_FUNC_ATTRIBUTE_NUM_REGS = 4
_CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8


def resolve_arch(requested: str | None, device_arch: str, ptx_text: str) -> str:
    """What to compile for: the device's SM; ``sm_XYa`` when the module
    targets the arch-specific variant of exactly this SM."""
    m = re.search(r"^\s*\.target\s+([^\n;/]*)", ptx_text, re.M)
    target = m.group(1).split(",")[0].strip() if m else ""
    if target == device_arch + "a":
        return target
    return device_arch



@contextlib.contextmanager
def device_lock(key: str):
    """An exclusive advisory lock per device, across processes."""
    try:
        import fcntl
    except ImportError:  # not POSIX: no cross-process lock
        yield
        return
    safe = "".join(c if c.isalnum() else "_" for c in key)
    path = os.path.join(tempfile.gettempdir(), f"ptxopt-gpu-{safe}.lock")
    with open(path, "a+") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


class GpuSession:
    """Owns CuPy and device 0 in this process; measures candidates."""

    REFERENCE_CACHE = 16

    def __init__(self):
        import cupy

        self.cp = cupy
        self.info = device_info(cupy)
        self._refs = BoundedMemo(self.REFERENCE_CACHE)

    # -- plumbing ----------------------------------------------------------

    def _cuda(self, what: str, fn, *a, **kw):
        """Run ``fn``; turn a CUDA error into a categorised HarnessError."""
        try:
            return fn(*a, **kw)
        except HarnessError:
            raise
        except Exception as e:
            if not is_cuda_error(e):
                raise
            status, fatal = classify_cuda_error(str(e))
            raise HarnessError(status, f"{what}: {type(e).__name__}: {e}", fatal) from e

    def _compile(self, ptx: str, arch: str, what: str):
        from ptxopt.toolchain import ToolchainError, compile_ptx

        try:
            return compile_ptx(ptx, arch)
        except ToolchainError as e:
            raise HarnessError("ptxas", f"{what}: {e}") from e

    def _load(self, cubin: bytes, ptx: str, entry: str, shared_bytes: int = 0):
        """``(function, load_path, note)``; the function is ready to launch
        with ``shared_bytes`` of dynamic shared memory."""
        cp = self.cp

        def load(image: bytes):
            m = cp.cuda.function.Module()
            m.load(image)
            fn = m.get_function(entry)
            if shared_bytes > _MAX_STATIC_DYNAMIC_SHARED:
                cp.cuda.driver.funcSetAttribute(fn.ptr, _CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                                int(shared_bytes))
            return fn

        try:
            return self._cuda("loading the cubin", load, cubin), "cubin", ""
        except HarnessError as e:
            if e.status != "load":
                raise
            first = e.message
        try:
            fn = self._cuda("loading the PTX with the driver JIT", load, ptx.encode() + b"\0")
        except HarnessError as e:
            raise HarnessError(e.status, f"{first}; {e.message}", e.fatal) from None
        return fn, "ptx-jit", f"the driver refused ptxopt's cubin ({first}); the driver's JIT compiled the PTX"

    def _launch(self, fn, spec, args, stream=None):
        shared = int(spec.launch.shared_bytes)
        self._cuda("launching the kernel", fn, tuple(spec.launch.grid), tuple(spec.launch.block), tuple(args),
                   shared_mem=shared, stream=stream)

    def _sync(self, what: str):
        self._cuda(what, self.cp.cuda.Device().synchronize)

    def _to_device(self, args):
        cp = self.cp
        return [cp.asarray(a) if isinstance(a, np.ndarray) else a for a in args]

    def _to_host(self, dev_args):
        cp = self.cp
        return [cp.asnumpy(a) if isinstance(a, cp.ndarray) else None for a in dev_args]

    def _run_once(self, fn, spec, host, extra=()):
        """Launch on fresh copies of ``host``; the final buffers (and extras)."""
        dev = self._cuda("copying inputs to the device", self._to_device, host)
        dev_extra = self._cuda("copying inputs to the device", self._to_device, list(extra))
        self._launch(fn, spec, dev + dev_extra)
        self._sync("running the kernel")
        return (self._cuda("copying results back", self._to_host, dev),
                self._cuda("copying results back", self._to_host, dev_extra))

    # -- the reference kernel ------------------------------------------------

    def _reference(self, ref_ptx: str, spec, arch: str, seed: int, flavours) -> dict:
        """Per flavour: the reference kernel's final buffers and the buffers
        it does not reproduce itself. Any failure is the reference's, not
        the candidate's: it is reported as ``error`` (``fault`` if it
        faulted, which also loses the context)."""
        key = (hashlib.sha256(ref_ptx.encode()).hexdigest(), arch, spec.id, spec.entry, seed, tuple(flavours))
        hit = self._refs.lookup(key)
        if hit is not None:
            return hit
        try:
            comp = self._compile(ref_ptx, arch, "ptxas")
            fn, _, _ = self._load(comp.cubin, ref_ptx, spec.entry, spec.launch.shared_bytes)
            slots = kernel_params(ref_ptx, spec.entry)
            out = {}
            for fl in flavours:
                host = host_args(spec, slots, seed, fl)
                a, _ = self._run_once(fn, spec, host)
                b, _ = self._run_once(fn, spec, host)
                out[fl] = (a, nondeterministic_buffers([p.arg for p in spec.params], a, b))
        except HarnessError as e:
            raise HarnessError("fault" if e.status == "fault" else "error",
                               f"the reference kernel failed ({e.status}): {e.message}", e.fatal) from None
        self._refs.remember(key, out)
        return out

    # -- one candidate -------------------------------------------------------

    def measure(self, ptx: str, spec, *, reference_ptx: str | None = None, warmup: int = DEFAULT_WARMUP,
                repeats: int = DEFAULT_REPEATS, arch: str | None = None, seed: int = 0,
                flavours=DEFAULT_FLAVOURS) -> tuple[GpuMeasurement, bool]:
        """``(measurement, fatal)``; never raises for a candidate's failure."""
        t0 = time.perf_counter()
        info = self.info
        res = GpuMeasurement(
            status="ok", kernel=spec.entry, kernel_id=spec.id, device=info["device"],
            compute_capability=info["compute_capability"], driver_version=info["driver_version"],
            runtime_version=info["runtime_version"], cupy_version=info["cupy_version"],
            threads=spec.launch.threads, warmup=int(warmup), repeats=int(repeats), seed=int(seed),
            checked_flavours=tuple(flavours) if reference_ptx is not None else ())
        res.arch = resolve_arch(arch, info["arch"], ptx)
        if arch and arch != res.arch:
            res.arch_requested = arch
        fatal = False
        try:
            self._measure(res, ptx, spec, reference_ptx, int(warmup), int(repeats), int(seed), tuple(flavours))
        except HarnessError as e:
            res.status, res.message, fatal = e.status, e.message, e.fatal
        res.seconds = time.perf_counter() - t0
        return res, fatal

    def _measure(self, res, ptx, spec, reference_ptx, warmup, repeats, seed, flavours):
        from ptxopt.gpu.clock_instrument import InstrumentError, instrument_ptx
        from ptxopt.ptx.parser import ParseError

        if repeats < 1 or warmup < 0:
            raise HarnessError("error", f"need repeats >= 1 and warmup >= 0 (got {repeats}, {warmup})")
        comp = self._compile(ptx, res.arch, "the candidate")
        k = comp.kernels.get(spec.entry) or comp.kernel
        res.ptxas_version = comp.ptxas_version
        res.registers, res.stack_frame_bytes = k.registers, k.stack_frame_bytes
        res.spill_store_bytes, res.spill_load_bytes = k.spill_store_bytes, k.spill_load_bytes
        try:
            iptx = instrument_ptx(ptx, spec.entry)
        except (InstrumentError, ParseError) as e:
            raise HarnessError("instrument", str(e)) from None
        icomp = self._compile(iptx, res.arch, "the instrumented candidate")
        ik = icomp.kernels.get(spec.entry) or icomp.kernel
        res.instrumented_registers, res.instrumented_spill_bytes = ik.registers, ik.spill_bytes
        fn, res.load_path, note = self._load(icomp.cubin, iptx, spec.entry, spec.launch.shared_bytes)
        if note:
            res.message = note
        slots = kernel_params(ptx, spec.entry)
        names = [p.arg for p in spec.params]
        threads = spec.launch.threads

        if reference_ptx is not None:
            ref = self._reference(reference_ptx, spec, res.arch, seed, flavours)
            nondet: set[str] = set()
            for fl in flavours:
                host = host_args(spec, slots, seed, fl)
                got, (clk,) = self._run_once(fn, spec, host, [clock_buffer(threads)])
                launch_durations(clk)
                ref_bufs, ref_nondet = ref[fl]
                nondet.update(ref_nondet)
                mm = compare_outputs(names, ref_bufs, got, ignore=ref_nondet, seed=seed, flavour=fl)
                if mm is not None:
                    res.mismatch = {k: getattr(mm, k) for k in ("buffer", "index", "original", "transformed",
                                                                 "differing", "size", "flavour")}
                    raise HarnessError("mismatch", f"{mm.buffer}[{mm.index}]: reference {mm.original}, candidate "
                                       f"{mm.transformed} ({mm.differing} of {mm.size} elements differ; "
                                       f"{fl} inputs, seed {seed})")
            res.compared = True
            res.nondeterministic = tuple(sorted(nondet))

        cp = self.cp
        host = host_args(spec, slots, seed, TIMING_FLAVOUR)
        dev = self._cuda("copying inputs to the device", self._to_device, host)
        clk = self._cuda("allocating the clock buffer", cp.asarray, clock_buffer(threads, repeats + 1))
        # argument tuples built up front: nothing but the launch between the events
        warm_args = tuple(dev + [clk[repeats]])
        timed_args = [tuple(dev + [clk[i]]) for i in range(repeats)]
        grid, block = tuple(spec.launch.grid), tuple(spec.launch.block)
        shared = int(spec.launch.shared_bytes)
        start, end = cp.cuda.Event(), cp.cuda.Event()
        wall = np.empty(repeats, dtype=np.float64)

        def timed():
            for _ in range(warmup):
                fn(grid, block, warm_args, shared_mem=shared)
            cp.cuda.Device().synchronize()
            for i in range(repeats):
                start.record()
                fn(grid, block, timed_args[i], shared_mem=shared)
                end.record()
                end.synchronize()
                wall[i] = cp.cuda.get_elapsed_time(start, end) * 1000.0

        with device_lock(self.info.get("pci_bus_id", "0")):
            self._cuda("the warm-up and timed launches", timed)
        host_clk = self._cuda("copying the durations back", cp.asnumpy, clk)
        per_thread = host_clk[:repeats]
        samples = launch_durations(per_thread)
        if res.load_path == "ptx-jit":  # what the driver's JIT allocated, not ptxopt's ptxas
            try:
                res.instrumented_registers = int(cp.cuda.driver.funcGetAttribute(_CU_FUNC_ATTRIBUTE_NUM_REGS, fn.ptr))
            except Exception:
                res.instrumented_registers = None
        c = summarize(samples)
        res.cycles, res.cycles_iqr, res.cycles_p25, res.cycles_p75 = c["median"], c["iqr"], c["p25"], c["p75"]
        res.cycles_min, res.cycles_max, res.cycles_mean = c["min"], c["max"], c["mean"]
        res.thread_cycles_median = float(np.median(np.median(per_thread.astype(np.float64), axis=1)))
        w = summarize(wall)
        res.wall_us, res.wall_us_iqr, res.wall_us_min, res.wall_us_max = w["median"], w["iqr"], w["min"], w["max"]
        res.samples = tuple(int(s) for s in samples)



__all__ = ["GpuSession", "device_lock", "resolve_arch", "DEFAULT_WARMUP", "DEFAULT_REPEATS", "DEFAULT_FLAVOURS",
           "TIMING_FLAVOUR"]
