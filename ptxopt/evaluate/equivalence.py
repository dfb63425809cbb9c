"""Equivalence checks that remember the original kernel's outputs.

A search evaluates many candidates of one kernel; :func:`ptxopt.verify.verify`
would interpret the *original* again for every one of them, which is half of
the interpreter's work. :func:`verify_with_reference` is ``verify`` with its
``reference`` memo set to a per-process LRU of the original's final buffers
per (original, entry, launch, seed, trial), so each is computed once.
``tests/test_evaluate.py`` checks that both agree on equal, mismatching and
faulting candidates.

An original that cannot be interpreted raises its :class:`InterpError` (as
``verify`` does), and that failure is remembered too.

:func:`decide` is the evaluator's whole equivalence decision for one
candidate (identical text, hints-only difference, a proof by the translation
validator :mod:`ptxopt.prove`, else the interpreter's verdict), in one place.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, replace
from typing import Callable

from ptxopt.verify import DEFAULT_SEEDS, VerifyResult, verify

REFERENCE_SIZE = 128  # (kernel, trial) entries kept per process


class _LRU(OrderedDict):
    """A mapping that keeps the REFERENCE_SIZE most recently used entries."""

    def get(self, key, default=None):
        if key in self:
            self.move_to_end(key)
            return self[key]
        return default

    def __setitem__(self, key, value):
        super().__setitem__(key, value)
        while len(self) > REFERENCE_SIZE:
            self.popitem(last=False)


_REFERENCE = _LRU()


def clear() -> None:
    _REFERENCE.clear()


def verify_with_reference(original, transformed, entry: str, reference_key: str, *, trials: int, spec=None,
                          geometry=None, seeds=DEFAULT_SEEDS, max_steps: int | None = None,
                          min_coverage: float | None = None) -> VerifyResult:
    """:func:`ptxopt.verify.verify` for interpreter :class:`~ptxopt.interp.Program` s,
    with the original's runs memoised under ``reference_key`` (which must
    identify the original module and the launch). ``min_coverage``: an
    ``equal`` whose launches stored less of the written buffers than this, or
    whose regular launches the original could not all run, is
    ``inconclusive`` (None: never)."""
    return verify(original, transformed, entry, seeds, trials, spec=spec, geometry=geometry,
                  max_steps=max_steps, reference=_REFERENCE, reference_key=reference_key,
                  min_coverage=min_coverage)


_VERIFY_KINDS = {"fault": "fault", "barrier": "fault", "warp-sync": "fault", "trap": "fault", "error": "fault",
                 "step-limit": "timeout", "unsupported": "unsupported", "launch": "unsupported"}


@dataclass(frozen=True)
class Decision:
    """The equivalence verdict of one candidate (vocabulary of
    :mod:`ptxopt.evaluate.result`) and what the evaluator does with it.

    ``finish``: the status that ends the candidate ("mismatch", "fault",
    "timeout", "unsupported") with ``error``, None when it goes on to be
    measured. ``coverage``: the verifier's output-bytes coverage, when it ran.
    """

    verdict: str
    note: str | None = None
    finish: str | None = None
    error: str | None = None
    coverage: float | None = None
    coverage_note: str = ""


def _one_line(e: BaseException) -> str:
    s = str(e).strip()
    return s if s else type(e).__name__


def coverage_of(cov) -> tuple[float | None, str]:
    """The verifier's :class:`ptxopt.verify.Coverage` as (fraction of the
    written buffers' bytes the launches stored, a note suffix)."""
    if cov is None:
        return None, ""
    parts = [f"{cov.output_bytes:.0%} of the written buffers' bytes stored",
             f"{cov.threads:.0%} of threads stored"]
    if cov.conditional_branches:
        parts.append(f"{cov.branches:.0%} of branch directions taken")
    return float(cov.output_bytes), "; coverage: " + ", ".join(parts)


def decide(*, changed: bool, same_observable: Callable[[], bool], original_program: Callable[[], object],
           module, entry: str, reference_key: str, launch: str, trials: int, spec=None, geometry=None,
           min_coverage: float | None = None, original_module: Callable[[], object] | None = None) -> Decision:
    """Is the candidate ``module`` equivalent to the original?

    ``changed``: its printed text differs from the original's printing
    (else ``identical``); ``same_observable()``: it differs only in what the
    interpreter cannot observe (``hints-only``, equal by construction);
    then, when ``original_module()`` is given, the translation validator
    (:func:`ptxopt.prove.prove`, entry ``entry``, nothing assumed about
    pointer alignment) tries to prove the two equivalent for all inputs
    (``proved``: the interpreter is not run). When it cannot, its reason is
    appended to the note and the interpreter's verdict stands: the
    interpreter runs both (:func:`verify_with_reference`, the
    original's runs memoised under ``reference_key``) on the launch
    ``spec``/``geometry`` (described by ``launch`` in notes)."""
    if not changed:
        return Decision("identical")
    if same_observable():
        return Decision("hints-only", "differs from the original only in cache operators, eviction hints, "
                                      "prefetches or register budgets, which the interpreter cannot observe: "
                                      "equal by construction, not run")
    proof = ""
    if original_module is not None:
        from ptxopt.prove import prove

        pr = prove(original_module(), module, entry=entry)
        if pr.verdict == "proved":
            return Decision("proved", f"translation validation: {pr.reason} ({pr.seconds:.3f} s); "
                                      f"interpreter not run")
        proof = f"; prover {pr.verdict}: {pr.reason}"
    d = _interpret(original_program, module, entry, reference_key, launch, trials, spec, geometry, min_coverage)
    if proof:
        d = replace(d, note=(d.note or "") + proof)
    return d


def _interpret(original_program, module, entry, reference_key, launch, trials, spec, geometry,
               min_coverage) -> Decision:
    """The interpreter's verdict (see :func:`decide`)."""
    from ptxopt.interp import Program
    from ptxopt.interp.errors import InterpError

    try:
        res = verify_with_reference(original_program(), Program(module), entry, reference_key, trials=trials,
                                    spec=spec, geometry=geometry if spec is None else None,
                                    min_coverage=min_coverage)
    except InterpError as e:
        return Decision("inconclusive", f"the original cannot be interpreted with the launch {launch}: "
                                        f"{_one_line(e)}")
    coverage, cov = coverage_of(res.coverage)
    if res.status == "equal":
        return Decision("equal", f"{res.trials} launches, grid {tuple(res.grid)}, block {tuple(res.block)}{cov}",
                        coverage=coverage, coverage_note=cov)
    if res.status == "mismatch":
        mm = res.mismatch
        note = (f"{mm.buffer}[{mm.index}] is {mm.transformed}, was {mm.original} ({mm.differing} of "
                f"{mm.size} elements differ; seed {mm.seed}, {mm.flavour} inputs, {mm.schedule} schedule)")
        return Decision("differ", note, finish="mismatch", error=f"{entry} computes something else: {note}",
                        coverage=coverage, coverage_note=cov)
    if res.status != "error":  # "inconclusive" (or any status this evaluator does not know): nothing shown
        why = res.error or "; ".join(map(str, res.notes)) or f"the verifier returned {res.status!r}"
        return Decision("inconclusive", f"equivalence not established with the launch {launch}: {why}",
                        coverage=coverage, coverage_note=cov)
    category = _VERIFY_KINDS.get(res.error_kind or "error", "fault")
    why = res.error or "the transformed kernel failed in the interpreter"
    # the transformed kernel faults where the original runs: a counterexample; a step budget, an
    # instruction or launch the interpreter cannot run: no verdict
    verdict = "differ" if category == "fault" else "inconclusive"
    return Decision(verdict, why, finish=category, error=why, coverage=coverage, coverage_note=cov)


__all__ = ["verify_with_reference", "clear", "REFERENCE_SIZE", "decide", "Decision", "coverage_of"]
