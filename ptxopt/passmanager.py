"""Running a pipeline: passes in order, with instrumentation between them.

One loop, one callback point (after LLVM's new pass manager and MLIR's
instrumentation): every ``--print-changed``, ``--print-after-all``,
``--time-passes``, ``--stats`` and ``--verify-each`` behaviour is an
:class:`Instrument` called after each pass, so the loop itself stays short.

* ``bisect_limit`` (``--opt-bisect-limit N``) runs only the first N passes
  and skips the rest, to find the pass that breaks a kernel by bisection.
* When a pass raises, or ``--verify-each`` finds the output rejected by
  ptxas, a reproducer file (the input PTX plus the pipeline string) is written
  and its path is part of the :class:`PassFailure` message.
"""

from __future__ import annotations

import difflib
import hashlib
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from ptxopt.emit import emit
from ptxopt.ir import Module
from ptxopt.parser import parse
from ptxopt.passes.base import ChangeReport, IllegalPass, Pass
from ptxopt.pipeline import Pipeline


class PassFailure(Exception):
    """A pass crashed or produced PTX that ptxas rejects; ``reproducer`` is
    the path of a file that replays it."""

    def __init__(self, message: str, reproducer: Path | None = None):
        super().__init__(message + (f" (reproducer: {reproducer})" if reproducer else ""))
        self.reproducer = reproducer


@dataclass
class PassRecord:
    name: str
    report: ChangeReport | None
    seconds: float = 0.0
    skipped: str = ""  # why the pass did not run: "bisect", "illegal: ..."

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
                 "skipped": r.skipped or None,
                 **({"report": r.report.to_json()} if r.report else {})}
                for r in self.records
            ],
        }


class Instrument:
    """Hooks called by the pass manager; override what you need."""

    def after_pass(self, p: Pass, before: Module, after: Module, record: PassRecord) -> None:
        pass

    def finish(self, result: RunResult) -> None:
        pass


class PassManager:
    def __init__(self, pipeline: Pipeline | str, *, instruments: list[Instrument] | tuple = (),
                 bisect_limit: int | None = None, reproducer_dir: str | Path | None = None):
        self.pipeline = Pipeline.parse(pipeline) if isinstance(pipeline, str) else pipeline
        self.instruments = list(instruments)
        self.bisect_limit = bisect_limit
        self.reproducer_dir = Path(reproducer_dir) if reproducer_dir else None

    def run(self, module: Module) -> RunResult:
        """Apply the pipeline to a copy of ``module``; ``module`` is not modified."""
        result = RunResult(module, self.pipeline)
        current = module
        for n, p in enumerate(self.pipeline):
            if self.bisect_limit is not None and n >= self.bisect_limit:
                result.records.append(PassRecord(p.name, None, skipped="bisect"))
                continue
            t0 = time.perf_counter()
            try:
                new, report = p.apply(current)
            except IllegalPass as e:
                result.records.append(PassRecord(p.name, None, time.perf_counter() - t0,
                                                 skipped=f"illegal: {e}"))
                continue
            except Exception as e:  # a bug in the pass: keep the evidence
                repro = self.write_reproducer(module, f"pass '{p.name}' raised {type(e).__name__}: {e}")
                raise PassFailure(f"pass '{p.name}' raised {type(e).__name__}: {e}", repro) from e
            record = PassRecord(p.name, report, time.perf_counter() - t0)
            result.records.append(record)
            try:
                for ins in self.instruments:
                    ins.after_pass(p, current, new, record)
            except VerificationError as e:
                repro = self.write_reproducer(module, str(e))
                raise PassFailure(str(e), repro) from None
            current = new
        result.module = current
        for ins in self.instruments:
            ins.finish(result)
        return result

    def write_reproducer(self, module: Module, why: str) -> Path:
        """Input PTX plus the pipeline string, replayable with ``ptxopt run``."""
        text = emit(module)
        folder = self.reproducer_dir or Path(tempfile.gettempdir()) / "ptxopt-reproducers"
        folder.mkdir(parents=True, exist_ok=True)
        digest = hashlib.sha256((text + str(self.pipeline)).encode()).hexdigest()[:12]
        path = folder / f"repro-{digest}.ptx"
        header = (f"// ptxopt reproducer: {why}\n"
                  f"// replay: ptxopt run --passes '{self.pipeline}' --verify-each {path.name}\n")
        path.write_text(header + text)
        return path


def optimize(ptx_text: str, pipeline: str | Pipeline, *, filename: str = "<input>") -> str:
    """Library entry point: PTX text in, transformed PTX text out."""
    m = parse(ptx_text, filename)
    return emit(PassManager(pipeline).run(m).module)


# --------------------------------------------------------------------------
# Instruments
# --------------------------------------------------------------------------

class VerificationError(Exception):
    """An instrument found the output of a pass invalid."""


class VerifyEach(Instrument):
    """After every pass that changed the module: the printed PTX re-parses,
    ptxas accepts it, and (``equivalence``) every entry computes exactly what
    it computed before the pass, checked by the interpreter
    (:func:`ptxopt.verify.verify`: bit-for-bit buffers over several input
    flavours and thread schedules).

    Launch geometry comes from the corpus manifest when the kernel is a corpus
    kernel, else a single-thread launch with default buffers. When the
    *original* cannot be interpreted there (it faults under that guess, or uses
    an instruction the interpreter lacks), equivalence is not checked for that
    entry and the reason is kept in ``skipped`` -- said, not hidden.
    """

    def __init__(self, arch: str = "sm_89", equivalence: bool = True, trials: int | None = None):
        self.arch = arch
        self.equivalence = equivalence
        self.trials = trials
        self.skipped: list[str] = []

    def after_pass(self, p, before, after, record):
        if not record.changed:
            return
        from ptxopt.toolchain import PtxasError, compile_ptx

        text = emit(after)
        try:
            parse(text)
        except Exception as e:
            raise VerificationError(f"after '{p.name}': printed PTX does not re-parse: {e}") from None
        try:
            compile_ptx(text, self.arch)
        except PtxasError as e:
            raise VerificationError(f"after '{p.name}': ptxas rejects the result: {e}") from None
        if self.equivalence:
            for fn in after.entries:
                self._check_equivalent(p, before, after, fn.name)

    def _check_equivalent(self, p, before, after, entry: str) -> None:
        from ptxopt.interp.errors import InterpError, LaunchError
        from ptxopt.verify import DEFAULT_TRIALS, Geometry, verify

        trials = self.trials or DEFAULT_TRIALS
        try:
            try:
                res = verify(before, after, entry, trials=trials)
            except LaunchError:  # not a corpus kernel: a one-thread guess
                res = verify(before, after, entry, trials=trials, geometry=Geometry())
        except InterpError as e:  # the *original* cannot run here
            self.skipped.append(f"after '{p.name}': {entry}: equivalence not checked: {e}")
            return
        if res.status == "mismatch":
            mm = res.mismatch
            raise VerificationError(
                f"after '{p.name}': {entry} computes something else: buffer {mm.buffer}[{mm.index}] "
                f"is {mm.transformed}, was {mm.original} (seed {mm.seed}, {mm.flavour} inputs, "
                f"{mm.schedule} schedule)")
        if res.status == "error":
            raise VerificationError(f"after '{p.name}': {entry}: {res.error}")


class PrintChanged(Instrument):
    """A unified diff after every pass that changed the module."""

    def __init__(self, out: TextIO | None = None):
        self.out = out or sys.stderr

    def after_pass(self, p, before, after, record):
        if not record.changed:
            return
        diff = difflib.unified_diff(emit(before).splitlines(), emit(after).splitlines(),
                                    f"before {p}", f"after {p}", lineterm="", n=2)
        self.out.write("\n".join(diff) + "\n")


class PrintAfterAll(Instrument):
    def __init__(self, out: TextIO | None = None):
        self.out = out or sys.stderr

    def after_pass(self, p, before, after, record):
        self.out.write(f"// ----- after {p} -----\n{emit(after)}")


class TimePasses(Instrument):
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
            if r.report is None:
                self.out.write(f"{r.name}: skipped ({r.skipped})\n")
                continue
            rep = r.report
            self.out.write(f"{r.name}: {len(rep.changed)} changed, {len(rep.refused)} refused\n")
            for s in rep.changed:
                self.out.write(f"  changed {s}\n")
            for s in rep.refused:
                self.out.write(f"  refused {s}\n")


__all__ = ["PassManager", "RunResult", "PassRecord", "PassFailure", "Instrument", "VerifyEach",
           "PrintChanged", "PrintAfterAll", "TimePasses", "Stats", "optimize"]
