"""The library entry point: :func:`optimize` PTX text and say what was done.

Another compiler (Triton, an inductor backend, a hand-written build script)
hands ptxopt the PTX it was about to assemble and takes back either a
better PTX or its own, never a broken one::

    import ptxopt
    res = ptxopt.optimize(ptx, "vec_ld,maxnreg_128")
    use(res.ptx)                      # the result, or the input text when it was not safe
    print(res.verdict, res.reason)    # why (see below)

What :func:`optimize` does, in order:

1. parses the text and resolves the architecture (``arch``, else the
   module's ``.target``, :func:`ptxopt.toolchain.arch.resolve_arch`);
2. assembles the *input* with ptxas: a rejected input is bad input
   (:class:`~ptxopt.passmanager.InputRejected`), no pass is blamed;
3. runs the pipeline (:class:`~ptxopt.passmanager.PassManager`); the
   per-pass records say which sites changed and which were refused, and why;
4. assembles the result with the same ptxas: a rejection keeps the input;
5. establishes equivalence (:func:`check_equivalence`): ``identical`` (the
   printed module did not change), ``hints-only`` (it differs only in
   annotations the interpreter cannot observe: equal by construction),
   ``proved`` (the translation validator :mod:`ptxopt.prove` showed every
   entry equivalent for all inputs; ``prove=False`` skips it), otherwise
   the interpreter under the launch contract (``equal``, ``inconclusive``,
   ``differ``); ``verify=False`` skips both and says ``unchecked``.

The result is used only when it assembled and its verdict is trusted
(``identical``, ``hints-only``, ``proved``, ``equal``, or ``unchecked`` when the
caller asked for no check); otherwise :attr:`OptimizeResult.ptx` is the
input text, byte for byte, and :attr:`OptimizeResult.reason` says why.
A pass that crashes is caught the same way (its reproducer path is in the
reason). Registers and spill bytes come from ptxas ``-v`` for the input
and for the returned text.

``compile`` lets a caller use its own ptxas (binary and flags) for steps 2
and 4: the Triton hook checks with exactly the ptxas Triton will run.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable, NamedTuple

from ptxopt.emit import emit
from ptxopt.ir import Module
from ptxopt.parser import parse
from ptxopt.passmanager import InputRejected, PassFailure, PassManager, PassRecord
from ptxopt.pipeline import Pipeline

#: Verdicts under which the transformed PTX is returned.
ACCEPTED = ("identical", "hints-only", "proved", "equal", "unchecked")


class BeforeAfter(NamedTuple):
    before: int | None
    after: int | None


@dataclass
class OptimizeResult:
    """What :func:`optimize` did. ``ptx`` is always safe to assemble: the
    transformed text when it was accepted, else the caller's own text."""

    ptx: str
    changed: bool  # ptx is not the input text
    pipeline: str
    arch: str
    records: list[PassRecord] = field(default_factory=list)
    verdict: str = "identical"  # of the transformed module, see the module doc
    verdict_note: str = ""
    coverage: object | None = None  # ptxopt.verify.Coverage of the check, when the interpreter ran
    contract: str = ""  # the launch contract the check used
    registers: BeforeAfter = BeforeAfter(None, None)  # max over entries, input / returned text
    spills: BeforeAfter = BeforeAfter(None, None)  # spill store + load bytes, input / returned text
    reason: str = ""  # why the input text was kept ("" when the result was used or nothing changed)
    candidate: str | None = None  # the transformed text, also when it was not used
    ptxas: str = ""  # the ptxas that checked both (path, release)
    cubin: bytes | None = field(default=None, repr=False)  # ptxas's output for ``ptx``
    seconds: dict = field(default_factory=dict)

    @property
    def kept_original(self) -> bool:
        """A transformed module existed but was not used."""
        return bool(self.reason)

    @property
    def sites_changed(self) -> int:
        return sum(len(r.report.changed) for r in self.records if r.report)

    @property
    def sites_refused(self) -> int:
        return sum(len(r.report.refused) for r in self.records if r.report)

    def to_json(self) -> dict:
        return {
            "pipeline": self.pipeline, "arch": self.arch, "changed": self.changed,
            "verdict": self.verdict, "verdict_note": self.verdict_note or None,
            "coverage": None if self.coverage is None else round(float(self.coverage.output_bytes), 4),
            "contract": self.contract or None, "kept_original": self.kept_original,
            "reason": self.reason or None,
            "registers": {"before": self.registers.before, "after": self.registers.after},
            "spill_bytes": {"before": self.spills.before, "after": self.spills.after},
            "ptxas": self.ptxas,
            "passes": [{"pass": r.name, "changed": r.changed, "skipped": r.skipped or None,
                        "reverted": r.reverted or None, **({"report": r.report.to_json()} if r.report else {})}
                       for r in self.records],
            "seconds": {k: round(v, 6) for k, v in self.seconds.items()},
        }


Compile = Callable[[str, str], object]  # (ptx text, arch) -> ptxopt.toolchain.CompileResult


def _resources(res) -> tuple[int | None, int | None]:
    ks = list(res.kernels.values())
    if not ks:
        return None, None
    regs = [k.registers for k in ks if k.registers is not None]
    return (max(regs) if regs else None), sum(k.spill_store_bytes + k.spill_load_bytes for k in ks)


def optimize(ptx: str, pipeline: str | Pipeline, *, arch: str | None = None, contract=None,
             verify: bool = True, compile: Compile | None = None,
             filename: str = "<input>", prove: bool = True) -> OptimizeResult:
    """Apply ``pipeline`` to ``ptx``; return the result only when ptxas
    accepts it and its equivalence is established (module doc).

    ``contract``: how to launch the entries for the check -- a
    :class:`~ptxopt.contract.Contract`, :class:`~ptxopt.contract.Contracts`,
    ``Geometry``, corpus ``KernelSpec``, or a list of alternatives tried in
    order while the verdict is ``inconclusive`` (the first under which the
    original runs fully decides; a ``differ`` under any is final). None: the
    corpus manifest entry when one matches, else a guessed one-thread launch.

    Raises :class:`~ptxopt.parser.ParseError` (the text does not parse),
    :class:`~ptxopt.pipeline.PipelineError` (a bad pipeline string) and
    :class:`~ptxopt.passmanager.InputRejected` (ptxas rejects the input):
    problems of the input, not of a rewrite."""
    from ptxopt.toolchain import PtxasError, ToolchainError, compile_ptx
    from ptxopt.toolchain.arch import resolve_arch

    t0 = time.perf_counter()
    pipe = Pipeline.parse(pipeline) if isinstance(pipeline, str) else pipeline
    module = parse(ptx, filename)
    arch = resolve_arch(module, arch)
    run_ptxas = compile or compile_ptx
    seconds: dict[str, float] = {}

    def timed(key, fn, *a):
        t = time.perf_counter()
        try:
            return fn(*a)
        finally:
            seconds[key] = seconds.get(key, 0.0) + time.perf_counter() - t

    try:
        before = timed("ptxas", run_ptxas, ptx, arch)
    except (PtxasError, ToolchainError) as e:
        raise InputRejected(f"ptxas rejects the input itself for {arch}, before any pass: {e}") from None
    regs0, spill0 = _resources(before)
    out = OptimizeResult(ptx, False, str(pipe), arch, verdict="identical",
                         registers=BeforeAfter(regs0, regs0), spills=BeforeAfter(spill0, spill0),
                         ptxas=f"{before.ptxas_path} ({before.ptxas_version})", cubin=before.cubin,
                         seconds=seconds)

    def keep_input(reason: str) -> OptimizeResult:
        out.reason = reason
        seconds["total"] = time.perf_counter() - t0
        return out

    try:
        run = timed("passes", PassManager(pipe).run, module)
    except PassFailure as e:
        out.verdict = "inconclusive"
        return keep_input(f"a pass failed: {e}")
    out.records = run.records
    printed_in = emit(module)
    text = emit(run.module)
    if text == printed_in:
        seconds["total"] = time.perf_counter() - t0
        return out  # nothing changed: the caller's own text, byte for byte
    out.candidate = text
    try:
        after = timed("ptxas", run_ptxas, text, arch)
    except (PtxasError, ToolchainError) as e:
        out.verdict, out.verdict_note = "differ", f"ptxas rejects the result: {e}"
        return keep_input(f"ptxas rejects the result for {arch}: {e}")
    if verify:
        chk = timed("verify", check_equivalence, module, run.module, contract, prove)
        out.verdict, out.verdict_note, out.coverage, out.contract = chk
    else:
        out.verdict, out.verdict_note = _cheap_verdict(module, run.module)
    if out.verdict not in ACCEPTED:
        return keep_input(f"equivalence {out.verdict}: {out.verdict_note}")
    regs1, spill1 = _resources(after)
    out.ptx, out.changed, out.cubin = text, True, after.cubin
    out.registers, out.spills = BeforeAfter(regs0, regs1), BeforeAfter(spill0, spill1)
    seconds["total"] = time.perf_counter() - t0
    return out


def _cheap_verdict(original: Module, transformed: Module) -> tuple[str, str]:
    from ptxopt.evaluate.observable import observable_form
    from ptxopt.prove.hints import HINTS_ILL_FORMED, hints_only_legal

    if observable_form(original) == observable_form(transformed):
        why = hints_only_legal(original, transformed)
        if why:  # only hints differ, and one is ill-formed: no run can show what it does
            return "inconclusive", f"{HINTS_ILL_FORMED}: {why}"
        return "hints-only", _HINTS_NOTE
    return "unchecked", "verify=False: equivalence was not checked"


_HINTS_NOTE = ("differs only in cache operators, eviction hints, prefetches or register budgets, "
               "which the interpreter cannot observe: equal by construction")
_RANK = {"differ": 0, "inconclusive": 1, "equal": 2, "proved": 3}


def _alternatives(contract) -> list:
    if contract is None:
        return [None]
    if isinstance(contract, (list, tuple)):
        return list(contract) or [None]
    return [contract]


def check_equivalence(original: Module, transformed: Module, contract=None,
                      prove: bool = True) -> tuple[str, str, object, str]:
    """``(verdict, note, coverage, contract)`` for ``transformed`` against
    ``original``: the one verification step of :func:`optimize`.

    ``hints-only`` when the two differ only in what the interpreter cannot
    observe; otherwise each entry is ``proved`` by :func:`ptxopt.prove.prove`
    (when ``prove``) or else run by :func:`ptxopt.verify.verify` under its
    contract with the command line's minimum coverage (the prover's reason
    appended to the note), and the module's verdict is the weakest entry's.
    ``contract`` may list alternatives (see :func:`optimize`)."""
    cheap = _cheap_verdict(original, transformed)
    if cheap[0] in ("hints-only", "inconclusive"):
        return (*cheap, None, "")
    entries = [fn.name for fn in original.entries]
    worst: tuple | None = None
    for entry in entries:
        res = None
        why = ""
        if prove:
            from ptxopt.prove import prove as prove_pair

            pr = prove_pair(original, transformed, entry=entry)
            if pr.verdict == "proved":
                res = ("proved", f"{entry}: {pr.reason}", None, "all launches")
            else:
                why = f"; prover {pr.verdict}: {pr.reason}"
        if res is None:
            for alt in _alternatives(contract):
                res = _check_entry(original, transformed, entry, alt)
                if res[0] != "inconclusive":
                    break
            if why:
                res = (res[0], res[1] + why, *res[2:])
        if worst is None or _RANK[res[0]] < _RANK[worst[0]]:
            worst = res
    if worst is None:
        return "inconclusive", "the module has no kernel entry to run", None, ""
    verdict, note, cov, c = worst
    if len(entries) > 1:
        note = f"{len(entries)} entries; weakest: {note}"
    return verdict, note, cov, c


def _check_entry(original: Module, transformed: Module, entry: str, contract) -> tuple:
    from ptxopt.interp.errors import InterpError
    from ptxopt.passmanager import VerifyEach
    from ptxopt.verify import DEFAULT_MIN_COVERAGE, verify

    try:
        c = VerifyEach(contract=contract).contract_for(original, entry)
    except InputRejected as e:
        return "inconclusive", f"{entry}: {e}", None, ""
    where = c.describe()
    try:
        if c.spec is not None:
            res = verify(original, transformed, entry, spec=c.spec, min_coverage=DEFAULT_MIN_COVERAGE)
        else:
            res = verify(original, transformed, entry, geometry=c.geometry, min_coverage=DEFAULT_MIN_COVERAGE)
    except InterpError as e:
        return "inconclusive", f"{entry}: the original cannot run under {where}: {_line(e)}", None, where
    cov = res.coverage
    if res.status == "equal":
        pct = f"; {cov.output_bytes:.0%} of the written bytes stored" if cov is not None else ""
        return "equal", f"{entry}: {res.trials} launches{pct}", cov, where
    if res.status == "mismatch":
        mm = res.mismatch
        return ("differ", f"{entry}: {mm.buffer}[{mm.index}] is {mm.transformed}, was {mm.original} "
                f"({mm.flavour} inputs, {mm.schedule} schedule, {mm.layout} layout)", cov, where)
    why = res.error or "; ".join(map(str, res.notes)) or res.status
    return res.verdict, f"{entry}: {_line(why)}", cov, where


def _line(e) -> str:
    s = str(e).strip().splitlines()
    return s[0] if s else type(e).__name__


def optimize_text(ptx: str, pipeline: str | Pipeline, **kw) -> str:
    """Just the text of :func:`optimize`."""
    return optimize(ptx, pipeline, **kw).ptx


__all__ = ["optimize", "OptimizeResult", "BeforeAfter", "check_equivalence", "ACCEPTED", "optimize_text"]

