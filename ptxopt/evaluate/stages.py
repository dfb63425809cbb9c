"""Checking a rewrite, stage by stage -- passes, ptxas, the equivalence verdict, the estimate -- and what
each stage's outcome means: the one place :func:`ptxopt.optimize`, the evaluator
(:mod:`ptxopt.evaluate.prepare`) and ``ptxopt run`` (:mod:`ptxopt.cli.app`) take those decisions from.

The three callers schedule the stages their own way and keep that to
themselves: :func:`~ptxopt.optimize` overlaps the ptxas runs and the estimate in
helper threads and checks its compile-time budget between stages; the
evaluator starts from a prefix memo, runs ptxas in a helper thread while it
checks equivalence, caches by keys and measures in chunks; ``run`` checks with
pass-manager instruments after every pass. What an outcome *means* is decided
here, once, so that a rule ("ptxas rejecting the input is the input's
problem", "a structural rewrite needs a proof") changes in one place.

Design note -- each decision, and where it lived before:

* **Running the passes** (:func:`run_passes`): the pass manager's run under an
  optional ``SIGALRM`` limit, what passes print kept off stdout, the
  exception kept to be reported after ptxas has judged the input. Was
  ``api._run_passes``; the evaluator ran :func:`~ptxopt.evaluate.prefix.run_pipeline`
  in ``prepare.front`` with its own ``except``.
* **A pass's failure** (:class:`PassStage`.``kind``): ``timeout`` (the limit
  ran out), ``refused`` (a pass refused the module as a whole: a record
  skipped ``illegal: ...``), ``failed`` (:class:`~ptxopt.passes.passmanager.PassFailure`:
  a pass raised or an instrument rejected its output, reproducer written),
  ``crashed`` (anything else raised: the pass manager itself, an
  instrument's :class:`~ptxopt.passes.passmanager.InputRejected`). Was spread over ``api.optimize``
  (``isinstance(failure, str)`` / ``PassFailure`` / re-raise) and
  ``prepare.front`` (``internal: a pass crashed``, the ``illegal`` records).
* **ptxas's judgement** (:func:`judge_ptxas`, :func:`blame`): a transient
  failure (crash, out of memory, hang) says nothing about any text; a
  rejection of a rewritten text is the input's problem when ptxas rejects the
  input too (``bad input``), the printer's when the text is only the input
  reprinted, else the rewrite's; a ptxas that lacks the version or arch is
  ``unsupported``, a missing one ``missing``. Was written three times:
  ``api.optimize`` (the input's run: ``InputRejected``; the result's:
  ``differ``), ``prepare._toolchain_failure`` + ``_original_rejected``
  (statuses ``toolchain``/``ptxas``+``bad_input``/``internal``/``unsupported``)
  and ``cli.app._compile_check`` (exit 2 / exit 1 / a note). The wording of
  an input rejected before any pass was in ``api.optimize`` and
  :class:`~ptxopt.equivalence.instrument.VerifyEach`; it is now the
  exception's own (:meth:`InputRejected.by_ptxas
  <ptxopt.passes.passmanager.InputRejected.by_ptxas>`): that instrument sits
  on a floor below this module.
* **Accepting a verdict** (:func:`refusal`): a rewrite is used only on an
  accepted verdict (:data:`~ptxopt.equivalence.verdict.ACCEPTED`), and one in
  which a structural pass (:attr:`ptxopt.passes.base.Pass.structural`: it
  changes control flow) changed the module only when ``proved``
  (:func:`structural_stands`): launches that agreed at a few trip counts are
  no evidence for every trip count. Was in ``api.optimize`` (after the
  check) and ``cli.app.run_cmd`` with ``StructuralProofs.unproved`` (now
  :func:`unproved_proofs`; exit 1 unless ``--allow-unchecked``). The
  evaluator applies it too (``prepare._verify``): such a candidate's verdict
  becomes ``inconclusive`` with the refusal as its note, so its cycles are
  measured but no search takes it as its best (it once reported the
  sampled ``equal``, and ``search --emit`` wrote what ``optimize`` refused).
* **The verdict without a check** (:func:`unchecked_verdict`, ``verify=False``):
  only the hints-only shortcut, else ``unchecked``. Was ``api._cheap_verdict``.
* **The compile-time budget** (:func:`over_budget`, :func:`budget_exceeded`):
  the wording of a stage reached past the budget. Was in ``api.optimize``.
* **The estimate's keep/apply decision** (:func:`estimate_decision`): a
  result estimated slower, or faster by less than the minimum gain, is kept
  out (``if_slower="keep"``) or used with a warning (``"apply"``). Was in
  ``api.optimize``; the evaluator and ``run`` do not decide on an estimate.
  A result whose cubin holds the input's machine code is not estimated
  (:func:`same_code`, :data:`SAME_CODE`; was ``api._same_code``), and the
  minimum gain (:data:`MIN_IMPROVEMENT_PCT`, :func:`worth_making`) moved here
  from :mod:`ptxopt.evaluate.pair` (which re-exports it for the search).

What each caller makes of an outcome (its statuses, exit codes, wording):

===============  ========================  =========================  ==========================
outcome          :func:`~ptxopt.optimize`  evaluator (``status``)     ``ptxopt run`` (exit)
===============  ========================  =========================  ==========================
pass timeout     input kept, inconclusive  ``timeout`` (the batch's)  no limit
pass failed      input kept, inconclusive  ``internal``, not cached   1 (``pass failure``)
other error      raised                    ``internal``, not cached   the command's handler
pass refused     a record (the rest ran)   ``illegal``                a record
input rejected   ``InputRejected``         ``ptxas`` + ``bad_input``  2
result rejected  input kept, ``differ``    ``ptxas``                  1, nothing written
reprint          (not compiled)            ``internal``               (not told apart)
transient        raised                    ``toolchain``, not cached  a note (output unchecked)
unsupported      ``InputRejected``         ``unsupported``            a note (output unchecked)
unproved         input kept                ``inconclusive``           1 unless --allow-unchecked
===============  ========================  =========================  ==========================
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

from ptxopt.equivalence.verdict import ACCEPTED, Verdict

# -- stage 1: the passes ---------------------------------------------------------------------------------------------

OK = "ok"
TIMEOUT = "timeout"
REFUSED = "refused"
FAILED = "failed"
CRASHED = "crashed"


@dataclass
class PassStage:
    """The passes' outcome: ``run`` (the pass manager's
    :class:`~ptxopt.passes.passmanager.RunResult`) or what stopped it;
    ``printed``: what passes wrote to stdout (when collected)."""

    run: object | None = None
    error: BaseException | None = None
    timed_out: str | None = None  # "the passes took longer than ... s"
    printed: list = field(default_factory=list)

    @property
    def refused(self):
        """The first record of a pass that refused the module as a whole (``illegal: ...``), or None."""
        if self.run is None:
            return None
        return next((r for r in self.run.records if r.skipped.startswith("illegal")), None)

    @property
    def kind(self) -> str:
        """:data:`OK`, :data:`TIMEOUT`, :data:`REFUSED`, :data:`FAILED` or :data:`CRASHED` (module doc)."""
        from ptxopt.passes.passmanager import PassFailure

        if self.timed_out is not None:
            return TIMEOUT
        if self.error is not None:
            return FAILED if isinstance(self.error, PassFailure) else CRASHED
        return REFUSED if self.refused is not None else OK

    def refusal(self) -> str:
        """The message of a :data:`REFUSED` run."""
        r = self.refused
        return f"pass '{r.name}' refuses this module: {r.skipped[len('illegal: '):]}"


def run_passes(apply: Callable[[], object], *, timeout: float | None = None, limited: bool = False,
               collect: bool = False) -> PassStage:
    """Run ``apply()`` (the pass manager on a module, however the caller
    builds it) and keep what stopped it, to be reported when the caller's
    order says so (after ptxas has judged the input). ``limited``: under a
    ``SIGALRM`` limit of ``timeout`` seconds (None: none), a timeout kept as
    :attr:`PassStage.timed_out`; otherwise a limit the caller set outside
    goes through. ``collect``: what passes print is kept off stdout, in
    :attr:`PassStage.printed`."""
    from contextlib import nullcontext

    from ptxopt.evaluate.deadline import CandidateTimeout, deadline
    from ptxopt.support.pass_output import collecting

    with (collecting() if collect else nullcontext([])) as printed:
        try:
            if not limited:
                return PassStage(run=apply(), printed=printed)
            with deadline(timeout):
                return PassStage(run=apply(), printed=printed)
        except CandidateTimeout:
            if not limited:
                raise
            return PassStage(timed_out=f"the passes took longer than {timeout:g} s", printed=printed)
        except Exception as e:  # noqa: BLE001
            return PassStage(error=e, printed=printed)


# -- stage 2: ptxas --------------------------------------------------------------------------------------------------

ACCEPTED_BY_PTXAS = "accepted"
TRANSIENT = "transient"  # ptxas crashed, ran out of memory or hung: says nothing about the text
REJECTED = "rejected"  # ptxas rejects the text (the input accepted, or not asked)
BAD_INPUT = "bad_input"  # ptxas rejects the rewritten text and the input as well: the input's problem
REPRINT = "reprint"  # ptxas accepts the input but not its unchanged reprinting: the printer's bug
UNSUPPORTED = "unsupported"  # no installed ptxas takes the module's .version or the arch
MISSING = "missing"  # no ptxas found
TOOLCHAIN = "toolchain"  # another failure of the toolchain on purpose (not transient)
BROKEN = "broken"  # anything else raised while compiling


def judge_ptxas(e: BaseException | None) -> str:
    """What a ptxas run's outcome says about the text it was given (``e``: what it raised, None: it accepted)."""
    from ptxopt.toolchain import (PtxasError, ToolchainError, ToolNotFound, UnsupportedArch, UnsupportedPTXVersion,
                                  is_transient)

    if e is None:
        return ACCEPTED_BY_PTXAS
    if is_transient(e):
        return TRANSIENT
    if isinstance(e, PtxasError):
        return REJECTED
    if isinstance(e, (UnsupportedPTXVersion, UnsupportedArch)):
        return UNSUPPORTED
    if isinstance(e, ToolNotFound):
        return MISSING
    return TOOLCHAIN if isinstance(e, ToolchainError) else BROKEN


def input_judged(e: BaseException | None) -> bool:
    """Does the input's own ptxas run (``e`` raised, None: accepted) judge the input? Everything the
    toolchain raised on purpose does -- the input is unusable for this ptxas -- except a transient failure."""
    return judge_ptxas(e) in (REJECTED, UNSUPPORTED, MISSING, TOOLCHAIN)


def blame(e: BaseException, input_rejection: Callable[[], str | None], changed: bool | None = True) -> str:
    """Who a failed ptxas run of the *rewritten* text blames: :func:`judge_ptxas`'s kind, with a
    rejection (:data:`REJECTED`) turned into :data:`BAD_INPUT` when ptxas rejects the input too
    (``input_rejection()``: ptxas's error for the input, None when it accepts it or could not say) --
    the input's problem, no pass is to blame -- and into :data:`REPRINT` when the text is only the
    input reprinted (``changed`` False)."""
    kind = judge_ptxas(e)
    if kind != REJECTED:
        return kind
    if input_rejection() is not None:
        return BAD_INPUT
    return REPRINT if changed is False else REJECTED


def rejection(compile_text: Callable[[], object]) -> BaseException | None:
    """ptxas's rejection of a text (what ``compile_text()`` raised) when ptxas rejects it; None when it
    accepts it or could not judge it (a transient failure, a missing tool: nothing said about the text).
    Anything that is not the toolchain's goes through."""
    try:
        compile_text()
    except Exception as e:
        kind = judge_ptxas(e)
        if kind == BROKEN:
            raise
        if kind == REJECTED:
            return e
    return None


# -- stage 3: the verdict --------------------------------------------------------------------------------------------

def structural_stands(verdict) -> bool:
    """May a rewrite in which a structural pass changed control flow be used on this verdict? Only a
    proof (``proved``) covers every trip count; launches that agreed at a few are no evidence."""
    return verdict == Verdict.PROVED.value


def refusal(verdict: Verdict, note: str, structural: list[str]) -> str | None:
    """Why a checked rewrite is not used (None: it is): its verdict is not accepted, or ``structural``
    passes (their names) changed control flow and the verdict is an accepted one short of a proof."""
    if structural and verdict in ACCEPTED and not structural_stands(verdict):
        return (f"{', '.join(structural)} changed control flow and the result was not proved equivalent "
                f"({verdict}: {note})")
    if verdict not in ACCEPTED:
        from ptxopt.equivalence.budget import BUDGET_SPENT

        why = f"{verdict} (budget)" if BUDGET_SPENT in note else verdict
        return f"equivalence {why}: {note}"
    return None


def unproved_proofs(proofs) -> list:
    """The structural proofs (:class:`~ptxopt.equivalence.prove.structural.StructuralProof`) that do not
    let their rewrite stand (:func:`structural_stands`)."""
    return [p for p in proofs if not structural_stands(p.verdict)]


def unchecked_verdict(original, transformed) -> tuple[Verdict, str]:
    """verify=False: only the hints-only shortcut (with its well-formedness rule), nothing run."""
    from ptxopt.equivalence.decision import hints_only

    d = hints_only(original, transformed)
    if d is not None:
        return d.verdict, d.note
    return Verdict.UNCHECKED, "verify=False: equivalence was not checked"


# -- budget ----------------------------------------------------------------------------------------------------------

def budget_exceeded(budget_s: float, why: str) -> str:
    """A stage stopped by the compile-time budget (``why``: the stage's own reason)."""
    return f"over the compile-time budget of {budget_s:g} s ({why})"


def over_budget(t0: float, budget_s: float | None, before_stage: str) -> str | None:
    """The reason not to start ``before_stage`` when more than ``budget_s`` seconds were spent since ``t0``."""
    spent = time.perf_counter() - t0
    if budget_s is None or spent <= budget_s:
        return None
    return budget_exceeded(budget_s, f"{spent:.2f} s spent before {before_stage}")


# -- stage 4: the estimate -------------------------------------------------------------------------------------------

#: the estimate's note when the result's cubin holds the input's machine code
SAME_CODE = ("the result's cubin holds the input's machine code (the same code sections, constant banks, symbols "
             "and launch attributes, the same ptxas resources; debug info and the .maxnreg budget aside): "
             "the same speed, not estimated")


def same_code(before, after) -> bool:
    """The two ptxas results hold the same machine code and resources
    (:func:`ptxopt.measure.same_code.same_code`, and every kernel's and
    function's registers, spills, stack, shared memory, barriers and
    constant banks as ptxas reported them): the estimate, which reads only
    the SASS, those resources and the launch, has nothing to rank."""
    from ptxopt.measure.same_code import same_code

    return (before.arch == after.arch and before.kernels == after.kernels
            and before.functions == after.functions and same_code(before.cubin, after.cubin))


#: The smallest estimated gain, in percent, worth shipping (``--min-improvement``,
#: ``optimize(min_improvement=)``, the Triton hook's). The sim model is deterministic, so its
#: noise is not run to run: it is how far an estimate moves when ptxas merely re-schedules or
#: re-allocates (a rewrite with nothing to gain moved an estimate by 1-2 cycles of 144,774);
#: benchmarks/studies/min_improvement_noise.py measures those moves on the committed greedy
#: trajectories. A whole-launch timing with CUDA events, the judge a user has, does not tell
#: 1% apart either. Below this a rewrite is churn in the user's code, not a speed-up.
MIN_IMPROVEMENT_PCT = 1.0


def worth_making(change: float | None, min_improvement: float) -> bool:
    """Is an estimated relative change (``after / before - 1``) a gain of at least ``min_improvement`` %?"""
    return change is not None and -100.0 * change >= min_improvement


def estimate_decision(est, if_slower: str, min_improvement: float | None) -> tuple[str | None, str | None]:
    """``(keep_reason, warning)`` for an accepted rewrite estimated as ``est`` (a
    :class:`~ptxopt.evaluate.pair.PairEstimate`): slower, or faster by less than ``min_improvement``
    percent (None: :data:`MIN_IMPROVEMENT_PCT`), it is not used with
    ``if_slower="keep"`` (``keep_reason``) and used with a ``warning`` with ``"apply"``."""
    if est.slower:
        if if_slower == "keep":
            return f"estimated slower: {est.describe()}", None
        return None, f"applied as asked, but estimated {100 * est.change:.1f}% slower: {est.describe()}"
    floor = MIN_IMPROVEMENT_PCT if min_improvement is None else min_improvement
    if est.change is not None and not worth_making(est.change, floor):
        why = (f"estimated to gain {-100 * est.change:.2f}%, below the minimum gain of {floor:g}% "
               f"(min_improvement): {est.describe()}")
        if if_slower == "keep":
            return f"no change worth making: {why}", None
        return None, f"applied as asked, but {why}"
    return None, None


__all__ = ["PassStage", "run_passes", "judge_ptxas", "input_judged", "blame", "rejection",
           "structural_stands", "refusal", "unproved_proofs", "unchecked_verdict", "budget_exceeded", "over_budget",
           "SAME_CODE", "same_code", "MIN_IMPROVEMENT_PCT", "worth_making", "estimate_decision"]
