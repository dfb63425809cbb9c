"""The one answer to "is the rewritten kernel the same as the original?".

:func:`decide` goes from cheap to expensive and stops at the first answer:

1. ``identical``: the printed module did not change;
2. ``hints-only``: it differs only in what no result can depend on (cache
   operators, eviction hints, prefetches, register budgets:
   :func:`ptxopt.equivalence.observable.observable_form`): equal by
   construction, nothing run;
3. ``proved``: the translation validator (:mod:`ptxopt.equivalence.prove`) shows the
   entry equivalent for all inputs and launches (``prove=True``);
4. the interpreter (:func:`ptxopt.equivalence.interpret.verify`) runs both on
   the check ``launch``: ``equal``, ``differ`` (a differing value, or the
   candidate faults where the original does not) or ``inconclusive`` (the
   original cannot run on the launch, a step budget, an instruction the
   interpreter lacks, too little coverage); an ``equal`` is then limited by
   what the launch's origin supports
   (:func:`ptxopt.equivalence.launch.ceiling`: never on a guessed launch).
5. a ``proved``/``equal`` is capped at ``inconclusive`` ("assumes noalias")
   when the candidate adds ``ld.global.nc`` loads whose buffers the kernel
   may write (:func:`assumption_cap`): the one assumption a pass may make
   (``nc_ld{assume_noalias=1}``) is never reported as established. Only an
   interpreter ``equal`` whose every launch showed those loads reading just
   bytes the original reads through ``.nc`` itself (an unrolled copy of
   nvcc's own ``.nc`` loads: :mod:`ptxopt.equivalence.nc_reads`) keeps its
   verdict, and says so. A candidate that changes the precision of a float
   operation (``rcp.rn`` -> ``rcp.approx``, ``.ftz`` added:
   :func:`ptxopt.equivalence.assumptions.precision_change`) is capped the
   same way ("changes float precision").

:func:`decide_module` is the same question for every entry of a module (the
module's verdict is its weakest entry's), trying alternative launches while
the answer is ``inconclusive``. ``optimize()``, the ``VerifyEach``
instrument, the evaluator and the CLI all call these; :func:`format_mismatch`
is the one way a counterexample is written.

A caller that checks many candidates of one original (the evaluator) passes
a :class:`Reference`: the original's printing, observable form, interpreter
program and interpreter runs are then computed once, not per candidate.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from ptxopt.equivalence.assumptions import ASSUMES_NOALIAS, CHANGES_PRECISION, nc_evidence, precision_change
from ptxopt.equivalence.infer import bounds_problem
from ptxopt.equivalence.trial_budget import DEFAULT_SEEDS, DEFAULT_TRIALS
from ptxopt.equivalence.launch import Launch, ceiling
from ptxopt.equivalence.launch import guessed as guessed_launch
from ptxopt.equivalence.verdict import Verdict, weakest
from ptxopt.support.bounded_memo import BoundedMemo
from ptxopt.support.session_state import Slot

if TYPE_CHECKING:
    from ptxopt.equivalence.interpret import VerifyResult

REFERENCE_SIZE = 128  # (kernel, trial) interpreter runs of originals kept per evaluation session

HINTS_NOTE = ("differs from the original only in cache operators, eviction hints, prefetches or register budgets, "
              "which no result can depend on: equal by construction, not run")


class _LRU(BoundedMemo):
    """The REFERENCE_SIZE most recently used entries behind the mapping
    protocol the interpreter's ``reference`` takes (``get``, ``[]=``)."""

    def get(self, key, default=None):
        return self.lookup(key, default)

    def __setitem__(self, key, value):
        self.remember(key, value, touch=False)


#: the active evaluation session's interpreter runs of originals, per (Reference.key, launch, seed, trial, ...)
_RUNS = Slot("equivalence.decision", lambda: _LRU(lambda: REFERENCE_SIZE))


def clear() -> None:
    """Forget the active session's runs of originals."""
    _RUNS.get().clear()


@dataclass
class Reference:
    """The original side of many checks, computed once: its module, its
    printing, its observable form and its interpreter program. ``key``
    identifies the module (with the launch) for the memo of its interpreter
    runs; None: its runs are not memoised."""

    module: Any
    key: str | None = None
    _printed: str | None = field(default=None, repr=False)
    _observable: str | None = field(default=None, repr=False)
    _program: Any = field(default=None, repr=False)

    @property
    def printed(self) -> str:
        if self._printed is None:
            from ptxopt.ptx.emit import emit

            self._printed = emit(self.module)
        return self._printed

    @property
    def observable(self) -> str:
        if self._observable is None:
            from ptxopt.equivalence.observable import observable_form

            self._observable = observable_form(self.module)
        return self._observable

    @property
    def program(self):
        if self._program is None:
            from ptxopt.interp import Program

            self._program = Program(self.module)
        return self._program


def as_reference(original) -> Reference:
    return original if isinstance(original, Reference) else Reference(original)


# --------------------------------------------------------------------------
# The decision
# --------------------------------------------------------------------------

#: How an interpreter failure of the *candidate* is classified: a fault is a
#: counterexample (the original ran); a step budget or something the
#: interpreter cannot run is no verdict at all.
_FAILURE_KINDS = {"fault": "fault", "barrier": "fault", "warp-sync": "fault", "trap": "fault", "error": "fault",
                  "race": "fault", "ptxas": "fault", "step-limit": "timeout", "unsupported": "unsupported",
                  "launch": "unsupported"}


@dataclass(frozen=True)
class Decision:
    """The verdict for one entry (or a module), why, and what it ends.

    ``finish``: for the evaluator, the status that ends the candidate
    (``mismatch``, ``fault``, ``timeout``, ``unsupported``) with ``error``;
    None when it goes on to be measured. ``coverage``: the fraction of the
    written buffers' bytes the interpreter's launches stored, when it ran
    (``coverage_note`` says more); ``launch``: the launch it ran (None when
    none was needed); ``result``: the interpreter's full result, when it ran."""

    verdict: Verdict
    note: str = ""
    finish: str | None = None
    error: str | None = None
    coverage: float | None = None
    coverage_note: str = ""
    launch: Launch | None = None
    result: VerifyResult | None = field(default=None, compare=False, repr=False)

    @property
    def trusted(self) -> bool:
        return self.verdict.trusted


def one_line(e) -> str:
    s = str(e).strip().splitlines()
    return s[0] if s else type(e).__name__


def format_mismatch(mm) -> str:
    """The one way a counterexample is written: which value, what it was and
    is, how much differs, and under which inputs."""
    return (f"{mm.buffer}[{mm.index}] is {mm.transformed}, was {mm.original} ({mm.differing} of {mm.size} "
            f"elements differ; seed {mm.seed}, {mm.flavour} inputs, {mm.schedule} schedule, {mm.layout} layout)")


def coverage_of(cov) -> tuple[float | None, str]:
    """The interpreter's :class:`~ptxopt.equivalence.interpret.Coverage` as
    (fraction of the written buffers' bytes the launches stored, a note suffix)."""
    if cov is None:
        return None, ""
    parts = [f"{cov.output_bytes:.0%} of the written buffers' bytes stored",
             f"{cov.threads:.0%} of threads stored"]
    if cov.conditional_branches:
        parts.append(f"{cov.branches:.0%} of branch directions taken")
    return float(cov.output_bytes), "; coverage: " + ", ".join(parts)


def decide(original, candidate, entry: str, launch: Launch | None = None, *, prove: bool = True,
           trials: int = DEFAULT_TRIALS, min_coverage: float | None = None, changed: bool | None = None,
           max_steps: int | None = None) -> Decision:
    """Is ``candidate``'s ``entry`` equivalent to ``original``'s (module doc)?

    ``original``: a module or a :class:`Reference`. ``launch``: the check
    launch (None: a guessed one). ``changed``: whether the candidate's printing
    differs from the original's, when the caller knows it already.
    ``min_coverage``: an interpreter ``equal`` whose launches stored less of
    the written bytes than this, or whose regular launches the original could
    not all run, is ``inconclusive`` (None: never)."""
    ref = as_reference(original)
    if changed is None:
        from ptxopt.ptx.emit import emit

        changed = emit(candidate) != ref.printed
    if not changed:
        return Decision(Verdict.IDENTICAL)
    hints = hints_only(ref, candidate)
    if hints is not None:
        return hints
    nc = _nc_assumption(ref, candidate)
    if prove:
        proved, why = _prove_or_fall_back(ref, candidate, entry, nc)
        if proved is not None:
            return proved
    d = _interpret(ref, candidate, entry, launch or guessed_launch(entry), trials, min_coverage, max_steps,
                   nc_reads=_nc_checkable(nc, entry))
    return assumption_cap(ref, candidate, replace(d, note=d.note + why) if prove else d, nc)


_UNKNOWN = object()


def _nc_assumption(ref: Reference, candidate):
    from ptxopt.equivalence.assumptions import unproven_nc_loads

    return unproven_nc_loads(ref.module, candidate)


def _nc_checkable(nc, entry: str) -> bool:
    """Whether the interpreter should compare ``.nc`` footprints for ``entry``
    (:meth:`ptxopt.equivalence.assumptions.NcAssumption.checkable`)."""
    return nc is not None and nc.checkable(entry)


def assumption_cap(original, candidate, d: Decision, assumption=_UNKNOWN) -> Decision:
    """``d``, unless it is ``proved``/``equal`` and the candidate reads through
    the read-only path (``ld.global.nc``) where the original did not and the
    kernel may write those bytes (:func:`ptxopt.equivalence.assumptions.unproven_nc_loads`,
    or ``assumption`` when the caller has it): then ``inconclusive`` ("assumes
    noalias"). Neither the prover nor the interpreter models the non-coherent
    path (both see one coherent memory), so their ``proved``/``equal`` says
    nothing about a launch whose buffers alias; only the read-only analysis
    can, and it did not.

    One exception (:mod:`ptxopt.equivalence.nc_reads`): an interpreter
    ``equal`` whose every compared launch (and spiked rerun) showed the
    candidate reading through ``.nc`` only bytes the original reads through
    ``.nc`` too, and neither kernel storing them, keeps ``equal``: those loads
    need what the original's own ``.nc`` loads need, no more. A ``proved``
    ran no launch and stays capped."""
    if d.verdict not in (Verdict.PROVED, Verdict.EQUAL):
        return d
    changed = precision_change(as_reference(original).module, candidate)
    if changed is not None:  # a float instruction computes another function: no check here settles it
        return replace(d, verdict=Verdict.INCONCLUSIVE,
                       note=f"{CHANGES_PRECISION}: {changed}; otherwise {d.verdict}: {d.note}")
    a = _nc_assumption(as_reference(original), candidate) if assumption is _UNKNOWN else assumption
    if a is None:
        return d
    ev, why = nc_evidence(a, d.result if d.verdict is Verdict.EQUAL else None)
    if ev is not None:
        return replace(d, note=f"{ev}; {d.note}")
    return replace(d, verdict=Verdict.INCONCLUSIVE,
                   note=f"{ASSUMES_NOALIAS}: {why}; otherwise {d.verdict}: {d.note}")


def _prove_or_fall_back(ref: Reference, candidate, entry: str, nc) -> tuple[Decision | None, str]:
    """The prover's decision with :func:`assumption_cap` applied, else None and
    why. A proof capped only by the ``.nc`` assumption is None too: a proof
    runs no launch, but the interpreter's ``.nc`` footprints can lift that cap
    (copies of the original's own ``.nc`` loads: :func:`assumption_cap`'s
    exception), so the interpreter decides, and its note says it was proved."""
    proved, why = _prove(ref, candidate, entry)
    if proved is None:
        return None, why
    capped = assumption_cap(ref, candidate, proved, nc)
    if capped.verdict is not Verdict.INCONCLUSIVE or not _nc_checkable(nc, entry) \
            or precision_change(ref.module, candidate) is not None:
        return capped, ""
    return None, f"; prover: proved, but {capped.note.split('; otherwise')[0]}"


def _prove(ref: Reference, candidate, entry: str) -> tuple[Decision | None, str]:
    """The prover's ``proved`` decision, else None and its reason (a note suffix)."""
    from ptxopt.equivalence.prove import prove as prove_pair

    pr = prove_pair(ref.module, candidate, entry=entry, cap=False)  # the caller applies assumption_cap
    if pr.verdict == Verdict.PROVED:
        return Decision(Verdict.PROVED, f"translation validation: {pr.reason} ({pr.seconds:.3f} s); "
                                        "interpreter not run"), ""
    return None, f"; prover {pr.verdict}: {pr.reason}"


def hints_only(original, candidate) -> Decision | None:
    """``hints-only`` when the two differ only in hints (the observable forms
    are equal) and every hint is well formed
    (:func:`ptxopt.equivalence.prove.hints.hints_only_legal`: registers it reads defined
    on every path before it, vectors of one register width); ``inconclusive``
    when only hints differ but one is ill-formed (the interpreter ignores
    prefetches and the prover splits vectors into lanes: no later step could
    see it); None when more than hints differ."""
    from ptxopt.equivalence.observable import observable_form
    from ptxopt.equivalence.prove.hints import HINTS_ILL_FORMED, hints_only_legal

    ref = as_reference(original)
    if observable_form(candidate) != ref.observable:
        return None
    why = hints_only_legal(ref.module, candidate)
    if why:
        return Decision(Verdict.INCONCLUSIVE, f"{HINTS_ILL_FORMED}: {why}")
    return Decision(Verdict.HINTS_ONLY, HINTS_NOTE)




def _interpret(ref: Reference, candidate, entry: str, launch: Launch, trials: int,
               min_coverage: float | None, max_steps: int | None, budget=None, program=None,
               nc_reads: bool = False) -> Decision:
    """The interpreter's verdict on ``launch``, limited by what its origin supports.
    ``program``: the candidate's interpreter program, when the caller built it
    already (one per module, not per launch alternative). ``nc_reads``: compare
    the kernels' ``.nc`` footprints (:mod:`ptxopt.equivalence.nc_reads`)."""
    from ptxopt.equivalence.interpret import verify  # numpy and the interpreter: only when it runs
    from ptxopt.interp import Program
    from ptxopt.interp.errors import InterpError

    where = launch.describe()
    fn = next((f for f in ref.module.entries if f.name == entry), None)
    bad = bounds_problem(fn, launch) if fn is not None else None
    if bad is not None:
        return Decision(Verdict.INCONCLUSIVE, f"the check launch {where} cannot run this kernel on a GPU: {bad}",
                        launch=launch)
    try:
        program = program if program is not None else Program(candidate)
        res = verify(ref.program, program, entry, DEFAULT_SEEDS, trials, launch=launch,
                     max_steps=max_steps, reference=_RUNS.get() if ref.key else None,
                     reference_key=f"{ref.key}/{entry}/{launch.key()}" if ref.key else None,
                     min_coverage=min_coverage, budget=budget, nc_reads=nc_reads,
                     cap=False)  # the caller applies assumption_cap (with the footprints nc_reads asks for)
    except InterpError as e:
        return Decision(Verdict.INCONCLUSIVE, f"the original cannot be interpreted with the launch {where}: "
                                              f"{one_line(e)}", launch=launch)
    coverage, cov = coverage_of(res.coverage)
    common = {"coverage": coverage, "coverage_note": cov, "launch": launch, "result": res}
    if res.status == "equal" and res.trials == 0:
        return Decision(Verdict.INCONCLUSIVE, f"no launch of the original could run with the launch {where}",
                        **common)
    if res.status == "equal":
        c = res.coverage
        full = c is not None and c.output_bytes >= 1.0 and not c.changed_not_run
        verdict, why = ceiling(Verdict.EQUAL, launch, fully_covered=full)
        note = f"{res.trials} launches, grid {tuple(res.grid)}, block {tuple(res.block)}{cov}"
        gap, trips = _trip_gap(ref, program, entry, res)
        if gap is not None and verdict is Verdict.EQUAL:
            verdict, why = Verdict.INCONCLUSIVE, gap
        note += trips
        return Decision(verdict, f"{why}; {note}" if why else note, **common)
    if res.status == "mismatch":
        note = format_mismatch(res.mismatch)
        return Decision(Verdict.DIFFER, note, finish="mismatch", error=f"{entry} computes something else: {note}",
                        **common)
    if res.status != "error":  # "inconclusive" (or any status this decider does not know): nothing shown
        why = res.error or "; ".join(map(str, res.notes)) or f"the interpreter returned {res.status!r}"
        return Decision(Verdict.INCONCLUSIVE, f"equivalence not established with the launch {where}: {why}",
                        **common)
    category = _FAILURE_KINDS.get(res.error_kind or "error", "fault")
    why = res.error or "the transformed kernel failed in the interpreter"
    # the transformed kernel fails where the original runs: a counterexample; a step budget, an
    # instruction or launch the interpreter cannot run: no verdict
    verdict = Verdict.DIFFER if category == "fault" else Verdict.INCONCLUSIVE
    return Decision(verdict, why, finish=category, error=why, **common)


def _trip_gap(ref: Reference, candidate, entry: str, res) -> tuple[str | None, str]:
    """Loop rewrites are checked at boundary trip counts or not trusted
    (:func:`ptxopt.equivalence.boundary.trip_gap`): an interpreter ``equal``
    on a candidate that changed a loop's control is ``inconclusive`` unless
    launches at the loops' boundary trip counts ran (or the changed loops have
    one constant trip count, which every launch checks)."""
    from ptxopt.equivalence.boundary import trip_gap
    from ptxopt.interp import Program

    return trip_gap(ref.program, candidate if isinstance(candidate, Program) else Program(candidate), entry,
                    res.launches)


def decide_module(original, candidate, launches=None, *, prove: bool = True, trials: int = DEFAULT_TRIALS,
                  min_coverage: float | None = None, budget=None) -> Decision:
    """:func:`decide` for every entry of ``original``; the weakest entry's
    decision (its note names the entry, and how many there were).

    ``launches(entry) -> list[Launch | None | Exception]``: the alternatives
    for an entry, tried in order while the verdict is ``inconclusive`` (the
    first that decides wins; a ``differ`` under any is final); None: a
    guessed launch; an exception: a given launch that does not fit the entry
    (``inconclusive`` with its message).

    ``budget``: interpreter steps for the whole check, every entry and
    alternative together (an int or a
    :class:`~ptxopt.equivalence.budget.StepBudget`; None: only the
    interpreter's per-run limits). Once it is spent no further launch runs:
    the entries and alternatives left are ``inconclusive``, their notes
    starting with :data:`~ptxopt.equivalence.budget.BUDGET_SPENT`."""
    from ptxopt.ptx.emit import emit
    from ptxopt.equivalence.budget import as_budget

    ref = as_reference(original)
    if emit(candidate) == ref.printed:
        return Decision(Verdict.IDENTICAL)
    hints = hints_only(ref, candidate)
    if hints is not None:
        return hints
    entries = [fn.name for fn in ref.module.entries]
    if not entries:
        return Decision(Verdict.INCONCLUSIVE, "the module has no kernel entry to run")
    budget = as_budget(budget)
    program = None  # the candidate's interpreter program, built once for every entry and alternative
    nc = _nc_assumption(ref, candidate)
    worst: Decision | None = None
    for entry in entries:
        d, why = _prove_or_fall_back(ref, candidate, entry, nc) if prove else (None, "")
        if d is None:
            for alt in (launches(entry) if launches else None) or [None]:
                if isinstance(alt, Exception):  # the given launch does not fit this entry: no verdict from it
                    d = Decision(Verdict.INCONCLUSIVE, one_line(alt))
                elif budget is not None and budget.spent:  # nothing more runs: say so, not a stale reason
                    d = Decision(Verdict.INCONCLUSIVE, budget.note("before this launch contract"),
                                 launch=alt or guessed_launch(entry))
                else:
                    if program is None:
                        from ptxopt.interp import Program

                        program = Program(candidate)
                    d = _interpret(ref, candidate, entry, alt or guessed_launch(entry), trials, min_coverage, None,
                                   budget, program, nc_reads=_nc_checkable(nc, entry))
                if d.verdict is not Verdict.INCONCLUSIVE or (budget is not None and budget.spent):
                    break
            d = replace(d, note=d.note + why)
        d = assumption_cap(ref, candidate, d, nc)
        d = replace(d, note=f"{entry}: {d.note}")
        if worst is None or d.verdict.rank < worst.verdict.rank:
            worst = d
    if len(entries) > 1:
        worst = replace(worst, note=f"{len(entries)} entries; weakest: {worst.note}")
    return worst


__all__ = ["decide", "decide_module", "Decision", "assumption_cap", "ASSUMES_NOALIAS", "Reference", "format_mismatch", "coverage_of", "clear",
           "HINTS_NOTE", "REFERENCE_SIZE", "weakest", "hints_only"]
