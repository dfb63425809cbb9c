"""Every pass on every kernel: the whole-corpus pass matrix.

For one (pass, kernel) pair the outcome is one of:

* ``changed``  -- the pass rewrote the kernel; the output re-parses to the same
  IR, ptxas accepts it, and the interpreter proves it computes exactly what
  the original does (otherwise ``broken``, which is a bug);
* ``refused``  -- nothing changed, and the report says why for at least one site
  (or the pass was illegal for the whole module);
* ``no-op``    -- nothing to do (no candidate sites at all);
* ``unverified`` -- the pass rewrote the kernel, the output re-parses and
  ptxas accepts it, nothing differed in the interpreter, but some changed
  instruction never ran under the manifest launch, or the rewrite makes an
  assumption no check establishes (``nc_ld{assume_noalias=1}``: "assumes
  noalias"): ``verify``'s ``inconclusive``, not shown correct, not shown wrong.

Used by ``tests/passes/test_pass_matrix.py`` (no cell may be broken)
and ``benchmarks/reports/pass_matrix.py`` (sites changed per pass per family, and time
per pass). ptxas runs only on outputs that changed, once per distinct text.
The interpreter check runs each original once per launch, not once per
pass: the original's program and runs are memoised by its printed text and
launch (``verify``'s ``reference``), as the evaluator does for the
candidates of one original.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass

from ptxopt.kernels.corpus import KernelSpec
from ptxopt.ptx.emit import emit
from ptxopt.ptx.parser import parse
from ptxopt.passes.base import IllegalPass
from ptxopt.passes.pipeline import Pipeline, make_pass
from ptxopt.support.bounded_memo import BoundedMemo, register
from ptxopt.toolchain.arch import DEFAULT_ARCH


@dataclass
class Cell:
    pass_name: str
    kernel: str
    family: str
    outcome: str  # changed / refused / no-op / unverified / broken
    sites_changed: int = 0
    sites_refused: int = 0
    seconds: float = 0.0  # pass application alone (copy + run)
    detail: str = ""


_compiled: dict[str, str | None] = {}


def _ptxas_error(text: str, arch: str) -> str | None:
    """None if ptxas accepts ``text`` (memoised by content)."""
    from ptxopt.toolchain import ToolchainError, compile_ptx

    key = hashlib.sha256((arch + text).encode()).hexdigest()
    if key not in _compiled:
        try:
            compile_ptx(text, arch)
            _compiled[key] = None
        except ToolchainError as e:
            _compiled[key] = str(e).splitlines()[0]
    return _compiled[key]


class _Runs(BoundedMemo):
    """The originals' interpreter runs behind the mapping protocol ``verify``'s
    ``reference`` takes (``get``, ``[]=``), at most :data:`REFERENCE_RUNS`."""

    def get(self, key, default=None):
        return self.lookup(key, default)

    def __setitem__(self, key, value):
        self.remember(key, value, touch=False)


#: original runs kept (one per launch of a check: about 10 per kernel), enough
#: for one sweep of the corpus's checked kernels, so that the next pass's
#: sweep finds them; the buffers are the check launch's (kilobytes)
REFERENCE_RUNS = 4096
_RUNS = register("matrix", "testing.matrix", _Runs(lambda: REFERENCE_RUNS))
#: per original module object: (module, interpreter program, reference key)
_ORIGINALS = register("matrix", "testing.matrix.programs", BoundedMemo(512))


def _original(spec: KernelSpec, m):
    """``(program, reference key)`` of the original ``m`` under ``spec``'s
    launch: the key names the printed text and the whole manifest entry, so
    two modules that print alike share runs and nothing else does."""
    hit = _ORIGINALS.lookup(id(m))
    if hit is not None and hit[0] is m:
        return hit[1], hit[2]
    from ptxopt.interp import Program

    key = hashlib.sha256((repr(spec) + "\0" + emit(m)).encode()).hexdigest()
    program = Program(m)
    _ORIGINALS.remember(id(m), (m, program, key))
    return program, key


def run_cell(pass_name: str, spec: KernelSpec, module=None, arch: str = DEFAULT_ARCH,
             compile_check: bool = True, equivalence_trials: int = 0) -> Cell:
    """One (pass, kernel) cell (module doc). ``pass_name``: a pass, or one with
    parameters (``nc_ld{assume_noalias=1}``)."""
    m = module if module is not None else parse(spec.ptx_text(), spec.id)
    p = make_pass(pass_name) if "{" not in pass_name else Pipeline.parse(pass_name).passes[0]
    cell = Cell(pass_name, spec.id, spec.family, "no-op")
    t0 = time.perf_counter()
    try:
        out, report = p.apply(m)
    except IllegalPass as e:
        cell.seconds = time.perf_counter() - t0
        cell.outcome, cell.detail = "refused", f"illegal: {e}"
        return cell
    cell.seconds = time.perf_counter() - t0
    cell.sites_changed = len(report.changed)
    cell.sites_refused = len(report.refused)
    if not report.changed_any:
        if report.refused:
            cell.outcome, cell.detail = "refused", report.refused[0].what
        return cell
    text = emit(out)
    if parse(text, f"{spec.id} after {pass_name}") != out:
        cell.outcome, cell.detail = "broken", "printed output does not re-parse to the same IR"
        return cell
    if compile_check:
        err = _ptxas_error(text, arch)
        if err:
            cell.outcome, cell.detail = "broken", f"ptxas rejects the output: {err}"
            return cell
    if equivalence_trials:
        from ptxopt.equivalence.interpret import verify
        from ptxopt.equivalence.observable import observable_form
        from ptxopt.equivalence.prove.hints import HINTS_ILL_FORMED, hints_only_legal

        why = hints_only_legal(m, out) if observable_form(out) == observable_form(m) else None
        if why:
            cell.outcome, cell.detail = "broken", f"{HINTS_ILL_FORMED}: {why}"
            return cell
        if observable_form(out) == observable_form(m):
            # only cache operators, hints, prefetches or budgets changed: equal
            # by construction, as in the evaluator (tests/evaluate/test_evaluate_observable.py
            # checks the interpreter agrees)
            cell.outcome, cell.detail = "changed", "hints-only"
            return cell
        program, key = _original(spec, m)
        res = verify(program, out, spec.entry, trials=equivalence_trials, spec=spec,
                     reference=_RUNS, reference_key=key)
        if res.status == "inconclusive" and getattr(p, "structural", False):
            # a loop rewrite the interpreter cannot settle (swp_ld's predicated-off early loads are masked
            # reads the original lacks): the proof decides, as `run` requires for structural passes
            from ptxopt.equivalence.prove import prove

            proof = prove(m, out, entry=spec.entry)
            if str(getattr(proof.verdict, "value", proof.verdict)) == "proved":
                cell.outcome, cell.detail = "changed", f"proved ({res.error or 'interpreter inconclusive'})"
                return cell
            cell.outcome = "unverified"
            cell.detail = f"{res.error or 'inconclusive'}; proof {proof.verdict}: {proof.reason}"
            return cell
        if res.status == "inconclusive":
            # nothing differed, but the launch contract never ran some of what changed, or the candidate
            # assumes what no launch here can show (verify caps it: "assumes noalias"): not shown either way
            cell.outcome, cell.detail = "unverified", res.error or "inconclusive"
            return cell
        if res.status != "equal":
            mm = res.mismatch
            detail = (f"{mm.buffer}[{mm.index}]: {mm.transformed} instead of {mm.original}"
                      if mm is not None else res.error or res.status)
            cell.outcome, cell.detail = "broken", f"not equivalent ({res.verdict}): {detail}"
            return cell
    cell.outcome = "changed"
    return cell
