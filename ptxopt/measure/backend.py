"""What a measurement backend is: the :class:`Backend` protocol and the types it trades in.

This module exists so that every backend (:mod:`ptxopt.measure.sim`,
:mod:`ptxopt.measure.gpu`, a user's own) and the evaluator agree on one
interface without importing each other: it imports nothing of ptxopt.

A backend turns one compiled candidate into a :class:`Measurement`::

    class Backend(Protocol):
        name: str            # "sim", "gpu", ...
        is_estimate: bool    # True: a model's estimate; False: measured on hardware
        pipelined: bool      # True: may measure while other evaluation work runs
                             #   (a helper thread, parallel worker processes);
                             # False: measures alone (hardware timings are disturbed
                             #   by concurrent work), at most one worker process
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
  interpreter: one thread unless the caller said otherwise);
* ``expected_error: float | None`` -- the typical relative error of an
  estimate (the ``sim`` model's; None for measurements).

Errors a backend raises become failed results (see
:mod:`ptxopt.evaluate.result`): a transient toolchain failure (a tool
timed out, crashed, ran out of memory) -> ``toolchain`` (never cached), other
:class:`~ptxopt.toolchain.ToolchainError` ->
``unsupported``, :class:`MeasureError` -> its ``category``, anything else ->
``internal``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable


class BackendUnavailable(RuntimeError):
    """The backend cannot run here (no GPU, no CuPy, not installed)."""


class MeasureError(Exception):
    """A backend's verdict that this candidate failed, with a category
    (``fault``, ``timeout``, ``unsupported``, ``mismatch``...)."""

    def __init__(self, category: str, message: str):
        super().__init__(message)
        self.category = category


@dataclass(frozen=True)
class Measurement:
    """What a backend reports for one compiled kernel.

    ``cycles`` is an estimate when ``estimate`` is True (the ``sim`` model)
    and a measurement otherwise (``gpu``: median of timed launches, with
    ``spread`` the interquartile range or what the backend documents).
    Resource fields are None when the backend does not know them (the
    evaluator then fills them from its own ptxas run).
    """

    cycles: float
    estimate: bool
    registers: int | None = None
    spill_store_bytes: int | None = None
    spill_load_bytes: int | None = None
    sass_instructions: int | None = None
    spread: float | None = None
    fallback: str | None = None  # how the backend filled in what it could not know (sim: loop trips)
    notes: tuple[str, ...] = ()
    extra: dict = field(default_factory=dict)


@runtime_checkable
class Backend(Protocol):
    name: str
    is_estimate: bool
    pipelined: bool

    def measure(self, ptx_text: str, arch: str, spec: Any) -> Measurement: ...


@dataclass
class MeasureJob:
    """One candidate as the evaluator hands it to ``measure_many``."""

    ptx_text: str  # the printed, transformed PTX
    arch: str
    spec: Any = None  # corpus KernelSpec, or None
    entry: str | None = None
    compiled: Any = None  # ptxopt.toolchain.CompileResult of ptx_text for arch
    module: Any = None  # the parsed transformed module (ptxopt.ptx.ir.Module)
    geometry: Any = None  # ptxopt.equivalence.interpret.Geometry used when spec is None
    profile_loops: bool = True  # sim: measure loop trip counts with the interpreter
    extra: dict = field(default_factory=dict)
    #: ``latency`` (one warp) or ``throughput`` (the whole ``performance`` launch)
    objective: str = "latency"
    performance: Any = None  # the performance Launch (grid may be None: then ``blocks`` are assumed)
    blocks: int | None = None  # grid blocks to assume when the performance grid is unknown
    check_block: Any = None  # the check launch's block: throughput without a performance launch assumes it
    l2: str = "cold"  # throughput: the L2 at the launch's start, cold or warm (ptxopt.sim.throughput)
    #: the original this job's PTX was rewritten from (module or text; None: not a rewrite): its exact
    #: DRAM floor is carried to the rewrite (ptxopt.analysis.carried_footprint)
    original: Any = None


def is_pipelined(backend) -> bool:
    """``backend.pipelined``; a backend written before the flag existed is
    pipelined when it is an estimate (what the evaluator did then)."""
    flag = getattr(backend, "pipelined", None)
    return bool(backend.is_estimate if flag is None else flag)


def measure_many(b: Backend, jobs) -> list:
    """``b.measure_many(jobs)`` if the backend has it, else ``measure`` per job
    (a list of :class:`Measurement` or the exception each job raised)."""
    many = getattr(b, "measure_many", None)
    if many is not None:
        return list(many(jobs))
    out: list = []
    for j in jobs:
        try:
            out.append(b.measure(j.ptx_text, j.arch, j.spec))
        except Exception as e:
            out.append(e)
    return out


__all__ = ["Backend", "BackendUnavailable", "MeasureError", "MeasureJob", "Measurement", "is_pipelined",
           "measure_many"]
