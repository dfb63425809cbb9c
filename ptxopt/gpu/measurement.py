"""What a GPU measurement returns: :class:`GpuMeasurement`.

One flat record, JSON-serialisable both ways (it crosses the process
boundary between the harness child and its caller, and it is what
``benchmarks/reports/gpu_measure_corpus.py`` writes). A failed candidate is a
measurement too, with a ``status`` other than ``ok`` and a ``message``;
nothing here raises.

Statuses:

=============== ==============================================================
``ok``           measured; outputs identical to the reference (if one was given)
``mismatch``     ran, but an output differs bit-wise from the reference kernel's
``fault``        the kernel faulted on the GPU (illegal/misaligned address,
                 illegal instruction, trap, launch failure); the CUDA context
                 was lost, so the child process was replaced
``timeout``      no result within the caller's time limit; the child was killed
``crash``        the child process died (signal, ``os._exit``) or broke the
                 protocol; ``message`` holds the exit status and its log tail
``ptxas``        ptxas rejected the candidate (or its instrumented form)
``instrument``   the clock instrumentation refused the kernel
``load``         the driver refused the module (cubin and PTX JIT both)
``launch``       the launch was refused (bad configuration, out of resources)
``unavailable``  no usable GPU (CuPy missing, no device, driver error)
``error``        anything else (a bug, unsupported arguments, a reference that
                 fails); ``message`` holds the details
=============== ==============================================================
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields

STATUSES = ("ok", "mismatch", "fault", "timeout", "crash", "ptxas", "instrument", "load", "launch",
            "unavailable", "error")
#: Failures that lose the CUDA context: the child exits after reporting one.
FATAL_STATUSES = ("fault",)


@dataclass
class GpuMeasurement:
    """One candidate measured on the GPU (or why it could not be).

    Cycle figures are ``%clock64`` differences (SM cycles): per launch the
    maximum over the launch's threads (the critical thread), then the median,
    quartiles and extremes over the timed launches. Wall times are CUDA-event
    intervals around each timed launch of the instrumented kernel, in µs.
    Resources (``registers``, spills) are ptxas's report for the candidate
    *as given* (uninstrumented); ``instrumented_*`` for what actually ran.
    """

    status: str
    message: str = ""
    kernel: str = ""  # entry name
    kernel_id: str = ""  # corpus id
    # the device and toolchain
    device: str = ""
    compute_capability: str = ""
    arch: str = ""  # what ptxas compiled for (the device's)
    arch_requested: str | None = None
    driver_version: int | None = None
    runtime_version: int | None = None
    cupy_version: str = ""
    ptxas_version: str = ""
    load_path: str = ""  # "cubin" (ptxopt's ptxas) or "ptx-jit" (the driver compiled it)
    # resources
    registers: int | None = None
    spill_store_bytes: int | None = None
    spill_load_bytes: int | None = None
    stack_frame_bytes: int | None = None
    instrumented_registers: int | None = None
    instrumented_spill_bytes: int | None = None
    # protocol
    threads: int = 0
    warmup: int = 0
    repeats: int = 0
    seed: int = 0
    checked_flavours: tuple[str, ...] = ()
    compared: bool = False  # outputs compared against a reference kernel
    nondeterministic: tuple[str, ...] = ()  # buffers the reference itself does not reproduce
    mismatch: dict | None = None
    # timings
    cycles: float | None = None  # median over launches of max-over-threads cycles
    cycles_iqr: float | None = None
    cycles_p25: float | None = None
    cycles_p75: float | None = None
    cycles_min: float | None = None
    cycles_max: float | None = None
    cycles_mean: float | None = None
    thread_cycles_median: float | None = None  # median over launches of the per-launch thread median
    wall_us: float | None = None
    wall_us_iqr: float | None = None
    wall_us_min: float | None = None
    wall_us_max: float | None = None
    samples: tuple[int, ...] = field(default=(), repr=False)  # per timed launch: max-over-threads cycles
    seconds: float = 0.0  # time the child spent on this request

    is_estimate = False  # a measurement, never an estimate (class attribute, not a field)

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def failed(self) -> bool:
        return self.status != "ok"

    @property
    def spill_bytes(self) -> int | None:
        if self.spill_store_bytes is None and self.spill_load_bytes is None:
            return None
        return (self.spill_store_bytes or 0) + (self.spill_load_bytes or 0)

    def to_json(self) -> dict:
        d = asdict(self)
        for k in ("checked_flavours", "nondeterministic", "samples"):
            d[k] = list(d[k])
        return d

    @classmethod
    def from_json(cls, d: dict) -> "GpuMeasurement":
        names = {f.name for f in fields(cls)}
        kw = {k: v for k, v in d.items() if k in names}
        for k in ("checked_flavours", "nondeterministic", "samples"):
            if k in kw and kw[k] is not None:
                kw[k] = tuple(kw[k])
        if kw.get("status") not in STATUSES:
            kw["message"] = f"unknown status {kw.get('status')!r}: {kw.get('message', '')}"
            kw["status"] = "error"
        return cls(**kw)

    @classmethod
    def failure(cls, status: str, message: str, **kw) -> "GpuMeasurement":
        return cls(status=status, message=message, **kw)

    def summary(self) -> str:
        if not self.ok:
            return f"{self.kernel or self.kernel_id}: {self.status}: {self.message}"
        return (f"{self.kernel}: {self.cycles:.0f} cycles (IQR {self.cycles_iqr:.1f}, min {self.cycles_min:.0f}, "
                f"max {self.cycles_max:.0f}), {self.wall_us:.2f} us wall, {self.registers} registers, "
                f"{self.spill_bytes} spill bytes on {self.device} ({self.arch}) [measured]")


__all__ = ["GpuMeasurement", "STATUSES", "FATAL_STATUSES"]
