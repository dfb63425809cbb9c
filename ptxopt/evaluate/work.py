"""One candidate in flight: :class:`Work`, and the one place an :class:`EvalResult` is built.

The preparation (:mod:`ptxopt.evaluate.prepare`), the batch runner
(:mod:`ptxopt.evaluate.batch`) and the worker pool
(:mod:`ptxopt.evaluate.parallel`, for candidates whose worker died) all
finish candidates through :meth:`Work.finish`, so every result -- failed or
not -- carries the same fields, timings and key.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from ptxopt.equivalence.verdict import Verdict
from ptxopt.measure.backend import Measurement
from ptxopt.measure.backend_registry import is_estimate

from .candidate import Candidate, Settings, settings_for
from .result import NOT_REACHED, OK, EvalResult


@dataclass
class Work:
    """A candidate's state between its preparation and its result (``result`` set when final)."""

    index: int
    cand: Candidate
    settings: Settings
    pipeline: str = ""
    pkey: str | None = None
    key: str | None = None
    entry: str | None = None
    spec: Any = None
    check: Any = None  # the check Launch (ptxopt.equivalence.launch), once resolved
    performance: Any = None  # the performance Launch, when known (the throughput objective's launch)
    printed: str | None = None
    module: Any = None
    compiled: Any = None
    changed: bool | None = None
    equivalence: str = Verdict.INCONCLUSIVE.value
    equivalence_note: str | None = None
    coverage: float | None = None
    launch: str | None = None
    bad_input: bool = False
    orig: Any = None  # prepare's Original, once parsed
    timings: dict = field(default_factory=lambda: {"pass": 0.0, "ptxas": 0.0, "verify": 0.0, "backend": 0.0})
    t0: float = field(default_factory=time.perf_counter)
    result: EvalResult | None = None  # set when final
    from_cache: bool = False
    ptx_sha: str | None = None
    ptxas_future: Any = None
    #: the structural passes (they change control flow) that changed the module: its verdict must be a proof
    structural: list = field(default_factory=list)

    def __post_init__(self):
        self.settings = settings_for(self.cand, self.settings)
        self.pipeline = self.cand.pipeline  # canonical since the Candidate was built

    def pipeline_key(self) -> str:
        """The request's key (:func:`~ptxopt.evaluate.keys.request_key`),
        computed when first needed: it folds in the code of every plugin pass,
        and finding those costs ``importlib.metadata`` -- a one-off ``eval``
        without a cache whose candidate gets a module key never needs it."""
        if self.pkey is None:
            from .keys import request_key

            self.pkey = request_key(self.cand, self.settings)
        return self.pkey

    def finish(self, status: str, *, error: str | None = None, m: Measurement | None = None,
               cacheable: bool = True, key: str | None = None) -> EvalResult:
        s = self.settings
        t = dict(self.timings)
        t["total"] = time.perf_counter() - self.t0
        t = {k: round(v, 6) for k, v in t.items()}
        c = self.compiled
        kres = None
        if c is not None:
            kres = c.kernels.get(self.entry) if self.entry else None
            kres = kres or (c.kernel if c.kernels else None)
        estimate = is_estimate(s.backend)
        r = EvalResult(
            kernel=self.cand.label, pipeline=self.pipeline, status=status, backend=s.backend, arch=s.arch,
            estimate=estimate,
            cycles=m.cycles if (m is not None and status == OK) else None,
            registers=_first(m and m.registers, kres and kres.registers),
            spill_store_bytes=_first(m and m.spill_store_bytes, kres and kres.spill_store_bytes),
            spill_load_bytes=_first(m and m.spill_load_bytes, kres and kres.spill_load_bytes),
            sass_instructions=m.sass_instructions if m is not None else None,
            equivalence=self.equivalence,
            equivalence_note=self.equivalence_note if (self.equivalence_note or self.equivalence != Verdict.INCONCLUSIVE)
            else NOT_REACHED,
            coverage=self.coverage, launch=self.launch, bad_input=self.bad_input, changed=self.changed,
            entry=self.entry, error=error, fallback=m.fallback if m is not None else None,
            trip_counts=(m.extra or {}).get("trip_counts") if m is not None else None,
            notes=tuple(m.notes) if m is not None else (), timings=t, cache_hit=False,
            key=key or self.key or self.pipeline_key(), ptxas_version=c.ptxas_version if c is not None else None,
            spread=m.spread if m is not None else None, cacheable=cacheable,
            expected_error=(m.extra or {}).get("expected_error") if (m is not None and status == OK) else None,
            objective=s.objective, performance=(m.extra or {}).get("performance") if m is not None else None,
            footprint=(m.extra or {}).get("footprint") if m is not None else None,
        )
        self.result = r
        return r


def _first(*vals):
    for v in vals:
        if v is not None and v is not False:
            return v
    return None



def one_line(e: BaseException) -> str:
    s = str(e).strip()
    return s if s else type(e).__name__



__all__ = ["Work", "one_line"]
