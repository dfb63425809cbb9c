"""Running a pipeline: passes in order, with instrumentation around them.

One loop, and every extra behaviour is an *instrument* (after LLVM's new
pass manager, ``PassInstrumentationCallbacks``, and MLIR's
``PassInstrumentation``): an object whose :meth:`Instrument.register` puts
callbacks on a :class:`PassInstrumentation`, which the loop calls at fixed
points of every run:

``start(module)``
    once, with the pipeline's input, before the first pass;
``should_run(pass, index) -> True | False | str``
    before each pass; any callback that does not return ``True`` vetoes the
    pass (every callback is still asked), which is then recorded as skipped
    with the reason the callback returned (a string) or its instrument's
    class name (``False``);
``before_pass(pass, module)``
    before a pass that will run (no veto, :meth:`Pass.check_legal` accepted
    the module), with the module it is given;
``after_pass(pass, before, after, record)``
    after a pass ran, with the module after it and its :class:`PassRecord`;
    ``before`` is the module before the pass *only* for callbacks registered
    with ``needs_before=True``, else None;
``finish(result)``
    once, with the :class:`RunResult`.

The features of ``ptxopt run`` are instruments: ``--opt-bisect-limit N``
(:class:`BisectLimit`, a ``should_run`` veto: only the first N passes run, to
find the pass that breaks a kernel by bisection), ``--verify-each``
(:class:`ptxopt.equivalence.instrument.VerifyEach`, which lives with the
equivalence checks: the pass manager itself imports none of them),
``--print-changed`` (:class:`PrintChanged`),
``--print-after-all`` (:class:`PrintAfterAll`), ``--time-passes``
(:class:`TimePasses`) and ``--stats`` (:class:`Stats`).

Copies. The caller's module is never changed: the first pass that runs is
given a copy of it. After that, passes change the module in place, one after
the other, unless some instrument registered an ``after_pass`` callback with
``needs_before=True`` (``--verify-each``, ``--print-changed``): then every
pass runs on a fresh copy and the module before it is kept for those
callbacks. (A module copy shares every immutable leaf, :meth:`Module.copy`,
so this is a few percent of a pass's time, not more.)

Analyses. Every pass of a run asks one
:class:`~ptxopt.analysis.manager.AnalysisManager` (the one given to the
manager, else the default one) for its CFGs, loops and dependence graphs.
After a pass the manager is told what the pass preserved
(:meth:`Pass.preserved`), and the results the pass was handed and did not
preserve are dropped when the pass changed the run's own module in place
(the state they describe is gone); after a pass that ran on a copy (the
first, or every one under ``needs_before``) the state before is still held,
and nothing is dropped.

Legality and failures:

* Before a pass runs the manager asks :meth:`Pass.check_legal`; a pass that
  refuses the module as a whole (:class:`IllegalPass`) is skipped
  (``skipped="illegal: ..."``) and its refusal is the one refused site of
  its change report. A pass's :meth:`Pass.run` must not raise
  :class:`IllegalPass` (it may already have changed the module): that is
  reported as a failure of the pass.
* When a pass raises, or ``--verify-each`` finds the output rejected by
  ptxas, a reproducer file (the input PTX plus the pipeline string) is written
  and its path is part of the :class:`PassFailure` message.
* An ``after_pass`` callback may *revert* a pass (:class:`RevertPass`): the
  pass's changes are dropped and recorded as refusals with the instrument's
  reason (``--verify-each`` does so when ptxas cannot meet a register
  budget), and the pipeline goes on from the module before that pass. Only
  an instrument that asked for the module before may revert (the manager
  keeps it only then).
* Instruments see the input before the first pass (``start``), so a problem
  of the input itself (ptxas rejects the original) is reported as
  :class:`InputRejected`, never blamed on a pass.
"""

from __future__ import annotations

import difflib
import hashlib
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, NoReturn, TextIO, Union

from ptxopt.analysis.manager import AnalysisManager, manager_or_default
from ptxopt.ptx.emit import emit
from ptxopt.kernels.inputs import InputError
from ptxopt.ptx.ir import Module
from ptxopt.ptx.parser import parse
from ptxopt.support.pass_output import captured
from ptxopt.passes.base import ChangeReport, IllegalPass, Pass, PassError, Site
from ptxopt.passes.pipeline import Pipeline


class PassFailure(Exception):
    """A pass crashed or produced PTX that ptxas rejects; ``reproducer`` is
    the path of a file that replays it."""

    def __init__(self, message: str, reproducer: Path | None = None):
        super().__init__(message + (f" (reproducer: {reproducer})" if reproducer else ""))
        self.reproducer = reproducer


class InputRejected(InputError):
    """The pipeline's *input* is unusable (ptxas rejects the original, a
    contract does not fit the kernel): an input problem, not a pass's fault."""

    @classmethod
    def by_ptxas(cls, arch: str, error, *, arch_given: bool = True) -> "InputRejected":
        """ptxas rejects the input before any pass ran (``arch_given`` False: the arch came from the
        module's ``.target``, and the message says how to give another). The one wording of
        :func:`ptxopt.optimize` and ``--verify-each`` (:mod:`ptxopt.evaluate.stages`)."""
        return cls(f"ptxas rejects the input itself for {arch}, before any pass: {error}"
                   + ("" if arch_given else " (the architecture comes from the module's .target; "
                      "give --arch to use another)"))


class VerificationError(Exception):
    """An instrument found the output of a pass invalid: the run fails with a
    :class:`PassFailure` and a reproducer."""


class RevertPass(Exception):
    """Raised by an ``after_pass`` callback registered with
    ``needs_before=True``: drop this pass's changes, refusing each changed
    site with ``reason``, and go on."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


#: Where a whole-module refusal (:meth:`Pass.check_legal`) is recorded in the
#: change report: one refused site with this function name and line 0.
MODULE_SITE = "<module>"


@dataclass
class PassRecord:
    name: str
    report: ChangeReport | None  # None when an instrument vetoed the pass
    seconds: float = 0.0
    skipped: str = ""  # why the pass did not run: "bisect" (a veto's reason), "illegal: ..."
    reverted: str = ""  # why an instrument dropped its changes (they are in report.refused)

    @property
    def changed(self) -> bool:
        return self.report is not None and self.report.changed_any


@dataclass
class RunResult:
    module: Module
    pipeline: Pipeline
    records: list[PassRecord] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return any(r.changed for r in self.records)

    def to_json(self) -> dict:
        return {
            "pipeline": str(self.pipeline),
            "changed": self.changed,
            "passes": [
                {"pass": r.name, "changed": r.changed, "seconds": round(r.seconds, 6),
                 "skipped": r.skipped or None, "reverted": r.reverted or None,
                 **({"report": r.report.to_json()} if r.report else {})}
                for r in self.records
            ],
        }


ShouldRun = Callable[[Pass, int], Union[bool, str]]
AfterPass = Callable[[Pass, Union[Module, None], Module, PassRecord], None]


class PassInstrumentation:
    """The callbacks of one :meth:`PassManager.run`, in registration order
    (see the module doc for when each is called and with what)."""

    def __init__(self) -> None:
        self.start: list[Callable[[Module], None]] = []
        self.should_run: list[ShouldRun] = []
        self.before_pass: list[Callable[[Pass, Module], None]] = []
        self.after_pass: list[tuple[AfterPass, bool]] = []  # (callback, needs_before)
        self.finish: list[Callable[[RunResult], None]] = []

    def register_start(self, cb: Callable[[Module], None]) -> None:
        self.start.append(cb)

    def register_should_run(self, cb: ShouldRun) -> None:
        self.should_run.append(cb)

    def register_before_pass(self, cb: Callable[[Pass, Module], None]) -> None:
        self.before_pass.append(cb)

    def register_after_pass(self, cb: AfterPass, *, needs_before: bool = False) -> None:
        """``needs_before``: ``cb`` is given the module before the pass (which
        makes the manager copy the module before every pass)."""
        self.after_pass.append((cb, needs_before))

    def register_finish(self, cb: Callable[[RunResult], None]) -> None:
        self.finish.append(cb)

    @property
    def needs_before(self) -> bool:
        return any(nb for _, nb in self.after_pass)

    def veto(self, p: Pass, index: int) -> str:
        """Why a ``should_run`` callback vetoes ``p`` ('' when none does);
        every callback is asked, the first veto's reason is returned."""
        why = ""
        for cb in self.should_run:
            ok = cb(p, index)
            if ok is not True and not why:
                owner = getattr(cb, "__self__", None)
                why = ok if isinstance(ok, str) and ok else (
                    type(owner).__name__ if owner is not None else getattr(cb, "__qualname__", repr(cb)))
        return why


class Instrument:
    """Something that watches (or vetoes) the passes of a run.

    :meth:`register` puts on the :class:`PassInstrumentation` exactly those
    of the methods below that a subclass overrides; ``after_pass`` with
    ``needs_before`` from the class attribute. Override :meth:`register`
    itself for anything else."""

    #: ``after_pass`` is given the module before the pass (costs a module
    #: copy per pass; required to raise :class:`RevertPass`).
    needs_before: bool = False

    def register(self, pi: PassInstrumentation) -> None:
        cls = type(self)
        if cls.start is not Instrument.start:
            pi.register_start(self.start)
        if cls.should_run is not Instrument.should_run:
            pi.register_should_run(self.should_run)
        if cls.before_pass is not Instrument.before_pass:
            pi.register_before_pass(self.before_pass)
        if cls.after_pass is not Instrument.after_pass:
            pi.register_after_pass(self.after_pass, needs_before=self.needs_before)
        if cls.finish is not Instrument.finish:
            pi.register_finish(self.finish)

    def start(self, module: Module) -> None:
        """Called once with the pipeline's input, before the first pass."""

    def should_run(self, p: Pass, index: int) -> bool | str:
        """True lets pass number ``index`` (0-based) run; False or a reason vetoes it."""
        return True

    def before_pass(self, p: Pass, module: Module) -> None:
        """Called before a pass that runs (not vetoed, not illegal), with the
        module it is given."""

    def after_pass(self, p: Pass, before: Module | None, after: Module, record: PassRecord) -> None:
        """Called after a pass ran; ``before`` is None unless :attr:`needs_before`."""

    def finish(self, result: RunResult) -> None:
        """Called once with the result, after the last pass."""


class BisectLimit(Instrument):
    """``--opt-bisect-limit N``: only the first ``limit`` passes run; the
    rest are skipped with the reason ``bisect``."""

    def __init__(self, limit: int):
        self.limit = limit

    def should_run(self, p, index):
        return index < self.limit or "bisect"


class PassManager:
    def __init__(self, pipeline: Pipeline | str, *, instruments: list[Instrument] | tuple = (),
                 bisect_limit: int | None = None, reproducer_dir: str | Path | None = None,
                 analyses: AnalysisManager | None = None):
        """``bisect_limit``: shorthand for a :class:`BisectLimit` instrument
        (asked before ``instruments``); ``analyses``: the passes' analysis
        manager (default: :func:`~ptxopt.analysis.manager.default_manager`)."""
        self.analyses = manager_or_default(analyses)
        self.pipeline = Pipeline.parse(pipeline) if isinstance(pipeline, str) else pipeline
        self.instruments = list(instruments)
        self.bisect_limit = bisect_limit
        self.reproducer_dir = Path(reproducer_dir) if reproducer_dir else None

    def instrumentation(self) -> PassInstrumentation:
        """The callbacks of the instruments, registered afresh (one per run)."""
        pi = PassInstrumentation()
        if self.bisect_limit is not None:
            BisectLimit(self.bisect_limit).register(pi)
        for ins in self.instruments:
            ins.register(pi)
        return pi

    def run(self, module: Module) -> RunResult:
        """Apply the pipeline; ``module`` is not modified (the first pass
        that runs gets a copy, see the module doc)."""
        pi = self.instrumentation()
        keep_before = pi.needs_before
        result = RunResult(module, self.pipeline)
        current, owned = module, False  # owned: current is our copy, free to change
        for cb in pi.start:
            cb(module)
        for n, p in enumerate(self.pipeline):
            veto = pi.veto(p, n)
            if veto:
                result.records.append(PassRecord(p.name, None, skipped=veto))
                continue
            t0 = time.perf_counter()
            try:
                with captured(f"pass '{p.kind}'"):  # stdout is the output's (ptxopt.support.pass_output)
                    p.check_legal(current)
            except IllegalPass as e:
                report = ChangeReport(p.name, [], [Site(MODULE_SITE, 0, str(e))])
                result.records.append(PassRecord(p.name, report, time.perf_counter() - t0,
                                                 skipped=f"illegal: {e}"))
                continue
            except Exception as e:
                self._crashed(module, p, e)
            seconds = time.perf_counter() - t0
            for cb in pi.before_pass:
                cb(p, current)
            t0 = time.perf_counter()
            before, before_owned = current, owned
            if keep_before or not owned:
                current, owned = current.copy(), True
            am = self.analyses
            try:
                with captured(f"pass '{p.kind}'"), am.pass_scope() as handed:
                    report = p.run_with(current, am)
            except Exception as e:  # a bug in the pass (IllegalPass belongs in check_legal): keep the evidence
                self._crashed(module, p, e)
            # in place on the run's own module: the state before the pass is gone
            am.invalidate(p.preserved(report), handed, drop=before_owned and not keep_before)
            record = PassRecord(p.name, report, seconds + time.perf_counter() - t0)
            result.records.append(record)
            try:
                for cb, wants_before in pi.after_pass:
                    cb(p, before if wants_before else None, current, record)
            except RevertPass as e:
                if not keep_before:
                    raise TypeError(f"an instrument reverted '{p.name}' without asking for the module "
                                    "before the pass (needs_before=True)") from e
                record.reverted = e.reason
                rep = record.report
                record.report = ChangeReport(
                    rep.pass_name, [],
                    rep.refused + [Site(s.function, s.line, f"{s.what}: reverted: {e.reason}")
                                   for s in rep.changed])
                current, owned = before, before_owned
            except VerificationError as e:
                repro = self.write_reproducer(module, str(e))
                raise PassFailure(str(e), repro) from None
        result.module = current
        for cb in pi.finish:
            cb(result)
        return result

    def _crashed(self, module: Module, p: Pass, e: Exception) -> NoReturn:
        why = f"pass '{p.name}' raised {type(e).__name__}: {e}"
        raise PassFailure(why, self.write_reproducer(module, why)) from e

    def write_reproducer(self, module: Module, why: str) -> Path | None:
        """Input PTX plus the pipeline string, replayable with ``ptxopt run``;
        None when it cannot be written (a full disk must not hide the pass's failure)."""
        from ptxopt.support.outputs import OutputNotWritable, write_atomic

        text = emit(module)
        folder = self.reproducer_dir or Path(tempfile.gettempdir()) / "ptxopt-reproducers"
        digest = hashlib.sha256((text + str(self.pipeline)).encode()).hexdigest()[:12]
        path = folder / f"repro-{digest}.ptx"
        header = (f"// ptxopt reproducer: {why}\n"
                  f"// replay: ptxopt run --passes '{self.pipeline}' --verify-each {path.name}\n")
        try:
            folder.mkdir(parents=True, exist_ok=True)
            return write_atomic(path, header + text)
        except (OSError, OutputNotWritable):
            return None


class UnprovedStructuralRewrite(PassError):
    """:func:`optimize` (no checks) was asked for a pipeline in which a
    structural pass (:attr:`ptxopt.passes.base.Pass.structural`) changed the
    module: it cannot prove the rewrite, so it does not return it."""


def structural_changes(result: RunResult) -> list[str]:
    """The names of the structural passes (they change control flow) that changed the module."""
    return [r.name for r, p in zip(result.records, result.pipeline.passes)
            if r.changed and getattr(p, "structural", False)]


def run_passes_unchecked(ptx_text: str, pipeline: str | Pipeline, *, filename: str = "<input>",
                         allow_unchecked: bool = False) -> str:
    """Text in, text out: the pipeline's output, printed, with no ptxas or
    equivalence check (the name says so). Callers outside ptxopt use
    :func:`ptxopt.optimize` (:mod:`ptxopt.api`), which checks both and keeps
    the input when the result is not safe.

    A structural pass (one that changes control flow, e.g. ``unroll``) that
    changed the module raises :class:`UnprovedStructuralRewrite`: nothing
    here proves it. ``allow_unchecked=True`` returns it anyway."""
    m = parse(ptx_text, filename)
    result = PassManager(pipeline).run(m)
    unproved = structural_changes(result)
    if unproved and not allow_unchecked:
        raise UnprovedStructuralRewrite(
            f"pass{'es' if len(unproved) > 1 else ''} {', '.join(unproved)} changed control flow and "
            f"this entry point proves nothing: use ptxopt.optimize (which proves the rewrite) or pass "
            f"allow_unchecked=True")
    return emit(result.module)


def optimize(ptx_text: str, pipeline: str | Pipeline, **kw) -> str:
    """Deprecated name of :func:`run_passes_unchecked`: ``ptxopt.optimize``
    is the one ``optimize`` (checked, an :class:`~ptxopt.api.OptimizeResult`)."""
    import warnings

    warnings.warn("ptxopt.passes.passmanager.optimize is unchecked and deprecated: use ptxopt.optimize (checked) or "
                  "ptxopt.passes.passmanager.run_passes_unchecked", DeprecationWarning, stacklevel=2)
    return run_passes_unchecked(ptx_text, pipeline, **kw)


# --------------------------------------------------------------------------
# Instruments
# --------------------------------------------------------------------------

class PrintChanged(Instrument):
    """A unified diff after every pass that changed the module."""

    needs_before = True

    def __init__(self, out: TextIO | None = None):
        self.out = out or sys.stderr

    def after_pass(self, p, before, after, record):
        if not record.changed:
            return
        diff = difflib.unified_diff(emit(before).splitlines(), emit(after).splitlines(),
                                    f"before {p}", f"after {p}", lineterm="", n=2)
        self.out.write("\n".join(diff) + "\n")


class PrintAfterAll(Instrument):
    """The whole module after every pass that ran."""

    def __init__(self, out: TextIO | None = None):
        self.out = out or sys.stderr

    def after_pass(self, p, before, after, record):
        self.out.write(f"// ----- after {p} -----\n{emit(after)}")


class TimePasses(Instrument):
    """Each pass's time (:attr:`PassRecord.seconds`, measured by the manager
    for every run: ``check_legal``, the copy when one is made, ``run``), at
    the end."""

    def __init__(self, out: TextIO | None = None):
        self.out = out or sys.stderr

    def finish(self, result):
        total = sum(r.seconds for r in result.records) or 1e-12
        self.out.write("===== pass execution timing =====\n")
        for r in result.records:
            self.out.write(f"{r.seconds * 1e3:10.3f} ms {100 * r.seconds / total:6.1f}%  {r.name}\n")
        self.out.write(f"{total * 1e3:10.3f} ms 100.0%  total\n")


class Stats(Instrument):
    """The change reports: sites changed and refused, per pass."""

    def __init__(self, out: TextIO | None = None):
        self.out = out or sys.stderr

    def finish(self, result):
        for r in result.records:
            if r.skipped:
                self.out.write(f"{r.name}: skipped ({r.skipped})\n")
                continue
            rep = r.report
            self.out.write(f"{r.name}: {len(rep.changed)} changed, {len(rep.refused)} refused\n")
            for s in rep.changed:
                self.out.write(f"  changed {s}\n")
            for s in rep.refused:
                self.out.write(f"  refused {s}\n")


__all__ = ["run_passes_unchecked", "PassManager", "RunResult", "PassRecord", "PassFailure", "InputRejected", "RevertPass", "VerificationError",
           "UnprovedStructuralRewrite", "structural_changes",
           "Instrument", "PassInstrumentation", "BisectLimit", "MODULE_SITE",
           "PrintChanged", "PrintAfterAll", "TimePasses", "Stats", "optimize"]
