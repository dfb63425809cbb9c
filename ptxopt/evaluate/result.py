"""What an evaluation returns: :class:`EvalResult` (both backends; built from
a backend's :class:`~ptxopt.measure.backend.Measurement`).

Statuses
--------
``ok`` or one failure category (:data:`FAILURES`):

==============  =============================================================
``parse``       the original PTX does not parse (or the printed PTX does not)
``illegal``     the pipeline string is bad (unknown pass, bad option,
                conflicting passes) or a pass refused the module as a whole
                (:class:`~ptxopt.passes.base.IllegalPass`)
``ptxas``       ptxas rejects the transformed PTX
``mismatch``    the transformed kernel computes different bits than the original
``fault``       the transformed kernel faults where the original does not
                (memory fault, barrier/warp-sync deadlock, trap), or the GPU
                child process died running it
``timeout``     the interpreter's step budget or the per-candidate
                time limit ran out
``toolchain``   ptxas or nvdisasm failed without judging the candidate:
                killed by a signal, out of memory, an internal error of
                the tool (each retried once), or it ran past the time
                limit. Transient: never cached, never bad input; the next
                run tries again
``truncated``   the backend's estimate stopped early (the sim model's walk
                hit its instruction budget: "stopped after N issued
                instructions"), so its cycle count is a lower bound, not an
                estimate of the kernel, and never a search result
``unsupported`` no installed ptxas accepts the ``.version``/arch, nvdisasm
                cannot read the cubin, the interpreter lacks an instruction
                the transformed kernel uses, or the backend cannot measure
                this kernel
``internal``    a bug in ptxopt itself (a pass or the evaluator raised, a
                worker process crashed); the message says where
==============  =============================================================

Every one of them is a result, never an exception out of
:func:`ptxopt.evaluate.evaluate`, and all but environment problems (a missing
tool, an unavailable backend, a ``toolchain`` failure: ``cacheable=False``) are cached like successes.
A ``ptxas`` failure of a kernel whose *original* ptxas rejects for the arch
used is marked ``bad_input`` and its error says the original was rejected: no
pass is to blame. It is not cached either: its message quotes the lines of the
user's file, which the result key (the printed module) does not tell apart.

Equivalence verdict (``equivalence``, also written ``verdict`` in JSON): a
:class:`ptxopt.equivalence.Verdict` value other than ``unchecked`` (the list,
the trust order and each verdict's meaning are defined there, once; the
note says how it was reached: the launch and trials, the prover's reason, the
counterexample). Only trusted verdicts (``identical``, ``hints-only``,
``proved``, ``equal``) make a candidate usable as a search result:
:attr:`EvalResult.checked`.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields, replace

from ptxopt.equivalence.verdict import VALUES as _VALUES
from ptxopt.equivalence.verdict import Verdict

OK = "ok"
FAILURES = ("parse", "illegal", "ptxas", "mismatch", "fault", "timeout", "toolchain", "truncated", "unsupported",
            "internal")
STATUSES = (OK,) + FAILURES

#: The equivalence verdicts a result can carry, from the strongest to a counterexample.
VERDICTS = _VALUES
EQUIVALENCE = VERDICTS

#: Verdicts that establish equivalence: only these candidates may be a search's best.
TRUSTED = tuple(v for v in VERDICTS if Verdict(v).trusted)

#: The note of a result whose evaluation stopped before the equivalence check.
NOT_REACHED = "not checked: the evaluation stopped before the equivalence check"

#: The per-stage timings every result carries (seconds, wall clock).
TIMING_KEYS = ("pass", "ptxas", "verify", "backend", "total")


@dataclass(frozen=True)
class EvalResult:
    """One candidate (kernel + pipeline) evaluated on one backend.

    ``cycles`` is None for failures. ``estimate`` says whether ``cycles`` is a
    model's estimate (``sim``) or a hardware measurement (``gpu``).
    ``key`` is the cache key (see :mod:`ptxopt.evaluate.cache`); ``cache_hit``
    is True when this result was read from the cache rather than computed.
    """

    kernel: str  # corpus id, file name, or the entry name
    pipeline: str  # canonical pipeline string ("" = the unoptimised kernel)
    status: str  # "ok" or a failure category (FAILURES)
    backend: str
    arch: str
    estimate: bool
    cycles: float | None = None
    registers: int | None = None
    spill_store_bytes: int | None = None
    spill_load_bytes: int | None = None
    sass_instructions: int | None = None
    equivalence: str = Verdict.INCONCLUSIVE.value  # a verdict (VERDICTS)
    equivalence_note: str | None = None  # trials and launch, why inconclusive, or the counterexample
    coverage: float | None = None  # fraction of the original's instructions the equivalence trials ran
    launch: str | None = None  # the launch the equivalence check used ("grid (1, 1, 1), block (1, 1, 1)", ...)
    bad_input: bool = False  # the original kernel itself is rejected (ptxas): not the pipeline's fault
    changed: bool | None = None  # did the pipeline change the module's printed text
    entry: str | None = None  # the .entry evaluated
    error: str | None = None  # what went wrong (failures); None when ok
    fallback: str | None = None  # sim: "static:N=8" when loop trips were not known
    trip_counts: str | None = None  # sim: where loop trip counts came from
    notes: tuple[str, ...] = ()
    timings: dict = field(default_factory=dict)
    cache_hit: bool = False
    key: str | None = None
    ptxas_version: str | None = None
    spread: float | None = None
    cacheable: bool = True  # False for environment problems (missing tool, backend unavailable)
    # sim: the model's expected relative error of ``cycles`` (0.25 = ±25%; ptxopt.sim.model.EXPECTED_ERROR,
    # from its calibration against published hardware); None for measurements and failures
    expected_error: float | None = None
    #: what ``cycles`` estimates or measures: ``latency`` (one warp) or ``throughput`` (the whole launch)
    objective: str | None = None
    #: the performance launch a throughput figure is for, in words (None: latency)
    performance: str | None = None
    #: throughput: the DRAM floor's input, ``{"source": counts|exact|extrapolated|unknown, "floor_bytes"}``
    #: (floor_bytes None: the estimate has no DRAM floor)
    footprint: dict | None = None

    @property
    def error_text(self) -> str:
        """``"±25%"`` for an estimate with a known expected error, else ``""``."""
        return f"±{100 * self.expected_error:.0f}%" if self.expected_error else ""

    @property
    def ok(self) -> bool:
        return self.status == OK

    @property
    def verdict(self) -> str:
        """The equivalence verdict (:data:`VERDICTS`)."""
        return self.equivalence

    @property
    def checked(self) -> bool:
        """Is equivalence with the original established (a :data:`TRUSTED` verdict)?"""
        return self.equivalence in TRUSTED

    @property
    def spill_bytes(self) -> int | None:
        if self.spill_store_bytes is None and self.spill_load_bytes is None:
            return None
        return (self.spill_store_bytes or 0) + (self.spill_load_bytes or 0)

    @property
    def cycles_kind(self) -> str:
        """``ESTIMATE`` or ``MEASUREMENT``: what the cycle figure is."""
        return "ESTIMATE" if self.estimate else "MEASUREMENT"

    def to_json(self) -> dict:
        d = asdict(self)
        d["notes"] = list(self.notes)
        d["spill_bytes"] = self.spill_bytes
        d["cycles_kind"] = self.cycles_kind
        d["verdict"] = self.equivalence
        return d

    def dumps(self) -> str:
        return json.dumps(self.to_json(), sort_keys=True)

    @classmethod
    def from_json(cls, d: dict) -> "EvalResult":
        known = {f.name for f in fields(cls)}
        kw = {k: v for k, v in d.items() if k in known}
        kw["notes"] = tuple(kw.get("notes") or ())
        kw["timings"] = dict(kw.get("timings") or {})
        return cls(**kw)

    def replace(self, **changes) -> "EvalResult":
        return replace(self, **changes)


__all__ = ["EvalResult", "OK", "FAILURES", "STATUSES", "EQUIVALENCE", "VERDICTS", "TRUSTED",
           "NOT_REACHED", "TIMING_KEYS"]
