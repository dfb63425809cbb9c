"""Where cycle counts come from: the :class:`Backend` interface and its registry.

A backend turns one compiled candidate into a :class:`Measurement`::

    class Backend(Protocol):
        name: str            # "sim", "gpu", ...
        is_estimate: bool    # True: a model's estimate; False: measured on hardware
        def measure(self, ptx_text: str, arch: str, spec: KernelSpec | None) -> Measurement: ...

Optional members the evaluator uses when present:

* ``version: str`` -- folded into the cache key, so changing the model or the
  harness invalidates earlier results (the ``sim`` backend uses a digest of
  :mod:`ptxopt.sim`'s source);
* ``measure_many(jobs: Sequence[MeasureJob]) -> list[Measurement | Exception]``
  -- measure several candidates at once, reusing what the evaluator already
  has (the ptxas result, the parsed module, the launch); the default calls
  ``measure`` per job.  ``spec`` may be None for kernels outside the corpus
  (``MeasureJob.geometry`` then says how the evaluator launched it in the
  interpreter: one thread unless the caller said otherwise).

Errors a backend raises become failed results (see
:mod:`ptxopt.evaluate.result`): :class:`~ptxopt.toolchain.ToolchainTimeout`
-> ``timeout``, other :class:`~ptxopt.toolchain.ToolchainError` ->
``unsupported``, :class:`MeasureError` -> its ``category``, anything else ->
``internal``.

Registry: :func:`register_backend` (name -> factory), :func:`get_backend`
(one instance per name and process), :func:`backend_names`.

The ``gpu`` backend lives in :mod:`ptxopt.gpu`.  The contract: that package
defines ``make_backend(**options) -> Backend`` (``is_estimate = False``) and
raises :class:`BackendUnavailable` (or any exception, which is wrapped) when
it cannot run; the factory here checks first that the package and CuPy are
importable, so every failure reads ``GPU backend unavailable: <why>``.
"""

from __future__ import annotations

import hashlib
import importlib.util
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Protocol, Sequence, runtime_checkable

from .result import Measurement


class BackendUnavailable(RuntimeError):
    """The backend cannot run here (no GPU, no CuPy, not installed)."""


class MeasureError(Exception):
    """A backend's verdict that this candidate failed, with a category
    (``fault``, ``timeout``, ``unsupported``, ``mismatch``...)."""

    def __init__(self, category: str, message: str):
        super().__init__(message)
        self.category = category


@runtime_checkable
class Backend(Protocol):
    name: str
    is_estimate: bool

    def measure(self, ptx_text: str, arch: str, spec: Any) -> Measurement: ...


@dataclass
class MeasureJob:
    """One candidate as the evaluator hands it to ``measure_many``."""

    ptx_text: str  # the printed, transformed PTX
    arch: str
    spec: Any = None  # corpus KernelSpec, or None
    entry: str | None = None
    compiled: Any = None  # ptxopt.toolchain.CompileResult of ptx_text for arch
    module: Any = None  # the parsed transformed module (ptxopt.ir.Module)
    geometry: Any = None  # ptxopt.verify.Geometry used when spec is None
    profile_loops: bool = True  # sim: measure loop trip counts with the interpreter
    extra: dict = field(default_factory=dict)


def source_digest(*packages_or_files: str) -> str:
    """sha256 (16 hex digits) of the source files of ptxopt subpackages/modules."""
    root = Path(__file__).resolve().parent.parent
    h = hashlib.sha256()
    for name in packages_or_files:
        p = root / name
        files = sorted(p.rglob("*.py")) + sorted(p.rglob("*.lark")) if p.is_dir() else [p]
        for f in files:
            h.update(str(f.relative_to(root)).encode())
            h.update(f.read_bytes())
    return h.hexdigest()[:16]


# ---------------------------------------------------------------------------
# sim


class SimBackend:
    """The SASS issue model (:mod:`ptxopt.sim`): an estimate, CPU only.

    Loops: trip counts come from the interpreter (:mod:`ptxopt.evaluate.loops`)
    for the same inputs as the equivalence check; where they cannot be had the
    model's static fallback applies and the measurement says so (``fallback``
    and ``notes``).  Warps: the launch (corpus spec or geometry) goes to the
    many-warp part of the model (occupancy, waves, issue and bandwidth
    bounds), see :func:`ptxopt.sim.simulate`.
    """

    name = "sim"
    is_estimate = True
    #: The model's dynamic instruction budget per kernel; a walk that hits it is a
    #: ``truncated`` failure, not a result (:data:`ptxopt.sim.model.DEFAULT_MAX_STEPS`).
    max_steps: int | None = None

    def __init__(self, loop_trips: int | None = None):
        from ptxopt.sim import DEFAULT_LOOP_TRIPS

        self.loop_trips = loop_trips or DEFAULT_LOOP_TRIPS
        self.version = source_digest("sim") + f"/N={self.loop_trips}"

    def measure(self, ptx_text: str, arch: str, spec: Any = None) -> Measurement:
        job = MeasureJob(ptx_text, arch, spec, spec.entry if spec is not None else None)
        out = self.measure_many([job])[0]
        if isinstance(out, Exception):
            raise out
        return out

    def measure_many(self, jobs: Sequence[MeasureJob]) -> list[Measurement | Exception]:
        from ptxopt.toolchain import compile_ptx

        from .disasm import disassemble_many

        out: list[Measurement | Exception | None] = [None] * len(jobs)
        compiled = []
        for i, j in enumerate(jobs):
            if j.compiled is None:
                try:
                    j.compiled = compile_ptx(j.ptx_text, j.arch)
                except Exception as e:
                    out[i] = e
                    continue
            compiled.append(i)
        listings = disassemble_many([jobs[i].compiled.cubin for i in compiled])
        for i, listing in zip(compiled, listings):
            if isinstance(listing, Exception):
                out[i] = listing
                continue
            try:
                out[i] = self._simulate(jobs[i], listing)
            except Exception as e:
                out[i] = e
        return out  # type: ignore[return-value]

    def _simulate(self, job: MeasureJob, listing) -> Measurement:
        from ptxopt.sim import simulate
        from ptxopt.sim.decode import decode

        compiled = job.compiled
        entry = job.entry or next(iter(compiled.kernels), None)
        program = decode(listing, entry)
        trips, source, notes = self._trip_counts(job, program, entry)
        launch = getattr(job.spec, "launch", None) if job.spec is not None else job.geometry
        kw = {} if self.max_steps is None else {"max_steps": self.max_steps}
        if launch is not None and getattr(launch, "grid", None) is not None:
            kw["launch"] = (tuple(launch.grid), tuple(launch.block), int(getattr(launch, "shared_bytes", 0) or 0))
            if job.spec is not None:
                from ptxopt.sim.occupancy import footprint_of_spec

                kw["footprint_bytes"] = footprint_of_spec(job.spec)
        r = simulate(program, compiled, trips or None, loop_trips=self.loop_trips, **kw)
        if r.truncated:
            raise MeasureError("truncated", f"the sim model {next(n for n in r.notes if 'stopped after' in n)}: "
                                            f"{r.cycles:g} cycles is a lower bound, not an estimate")
        return Measurement(
            cycles=r.cycles, estimate=True, registers=r.registers, spill_store_bytes=r.spill_store_bytes,
            spill_load_bytes=r.spill_load_bytes, sass_instructions=r.sass_instructions, fallback=r.fallback,
            notes=tuple(notes) + tuple(r.notes),
            extra={"trip_counts": source, "warps": r.warps, "issued_instructions": r.issued_instructions,
                   "resident_warps": r.resident_warps, "waves": r.waves, "bound": r.bound,
                   "expected_error": r.expected_error},
        )

    def _trip_counts(self, job: MeasureJob, program, entry) -> tuple[dict, str, list[str]]:
        from ptxopt.sim import sass_loops, trip_counts_from_loop_profile

        loops = [lp for lp in sass_loops(program) if lp.function == program.kernel]
        if not loops:
            return {}, "none needed (no SASS loops)", []
        if not job.profile_loops or job.module is None:
            return {}, f"static:N={self.loop_trips}", ["loop trips: static fallback (no interpreter profile requested)"]
        from .loops import loop_profile

        try:
            prof = loop_profile(job.module, entry, spec=job.spec, geometry=job.geometry)
            trips = trip_counts_from_loop_profile(program, prof.counts)
        except Exception as e:  # LoopProfileError, InterpError, ValueError (loop counts differ)
            why = str(e).splitlines()[0] if str(e) else type(e).__name__
            return {}, f"static:N={self.loop_trips}", [f"loop trips: static fallback N={self.loop_trips} ({why})"]
        per = ", ".join(f"{h} {c.trips_per_entry:g}" for h, c in zip(prof.headers, prof.counts))
        return trips, "interpreter", [f"loop trips from the interpreter (mean per entry): {per}"]


# ---------------------------------------------------------------------------
# gpu


def _gpu_factory(**options) -> Backend:
    if importlib.util.find_spec("ptxopt.gpu") is None:
        raise BackendUnavailable("GPU backend unavailable: the ptxopt.gpu package is not installed")
    try:
        import ptxopt.gpu as gpu
    except Exception as e:
        raise BackendUnavailable(f"GPU backend unavailable: ptxopt.gpu cannot be imported ({e})") from e
    make = getattr(gpu, "make_backend", None)
    if make is None:
        raise BackendUnavailable("GPU backend unavailable: ptxopt.gpu provides no make_backend()")
    if importlib.util.find_spec("cupy") is None:
        raise BackendUnavailable("GPU backend unavailable: CuPy is not installed "
                                 "(pip install 'ptxopt[gpu]' on a machine with a CUDA GPU)")
    try:
        backend = make(**options)
    except BackendUnavailable:
        raise
    except Exception as e:
        raise BackendUnavailable(f"GPU backend unavailable: {e}") from e
    return backend


# ---------------------------------------------------------------------------
# registry

_FACTORIES: dict[str, Callable[..., Backend]] = {"sim": SimBackend, "gpu": _gpu_factory}
_INSTANCES: dict[tuple[str, int], Backend] = {}  # (name, pid): a forked worker makes its own


def register_backend(name: str, factory: Callable[..., Backend], *, replace: bool = False) -> None:
    """Make ``factory()`` the backend called ``name``."""
    if name in _FACTORIES and not replace:
        raise ValueError(f"backend {name!r} is already registered")
    _FACTORIES[name] = factory
    for k in [k for k in _INSTANCES if k[0] == name]:
        del _INSTANCES[k]


def backend_names() -> list[str]:
    return sorted(_FACTORIES)


def get_backend(name: str) -> Backend:
    """The backend called ``name`` (one instance per name and process).

    Raises :class:`BackendUnavailable` (the ``gpu`` backend without a GPU,
    CuPy or :mod:`ptxopt.gpu`) or :class:`ValueError` (unknown name).
    """
    import os

    b = _INSTANCES.get((name, os.getpid()))
    if b is not None:
        return b
    factory = _FACTORIES.get(name)
    if factory is None:
        raise ValueError(f"unknown backend {name!r} (choose from {', '.join(backend_names())})")
    b = factory()
    _INSTANCES[(name, os.getpid())] = b
    return b


def backend_version(b: Backend) -> str:
    return str(getattr(b, "version", "") or "")


def measure_many(b: Backend, jobs: Sequence[MeasureJob]) -> list[Measurement | Exception]:
    """``b.measure_many(jobs)`` if the backend has it, else ``measure`` per job."""
    many = getattr(b, "measure_many", None)
    if many is not None:
        return list(many(jobs))
    out: list[Measurement | Exception] = []
    for j in jobs:
        try:
            out.append(b.measure(j.ptx_text, j.arch, j.spec))
        except Exception as e:
            out.append(e)
    return out


__all__ = ["Backend", "BackendUnavailable", "MeasureError", "MeasureJob", "SimBackend", "register_backend",
           "get_backend", "backend_names", "measure_many", "source_digest"]
