"""``--verify-each``: the pass-manager instrument that checks every pass's output.

It lives here, with the equivalence checks, and not in
:mod:`ptxopt.passes.passmanager` (as LLVM keeps its verifier instruments outside
its pass manager): the manager knows only the :class:`~ptxopt.passes.passmanager.Instrument`
protocol, and this module brings the toolchain, the interpreter and the
prover to it.
"""

from __future__ import annotations

from dataclasses import dataclass

from ptxopt.ptx.emit import emit
from ptxopt.equivalence.decision import Decision, decide
from ptxopt.equivalence.launch import Launch
from ptxopt.equivalence.verdict import Verdict
from ptxopt.ptx.ir import Module
from ptxopt.ptx.parser import parse
from ptxopt.equivalence.launch_contract import check_launch
from ptxopt.passes.passmanager import InputRejected, Instrument, RevertPass, VerificationError

_REGISTER_TARGET_ERRORS = ("insufficient registers", "register target")


@dataclass
class EntryCheck:
    """One equivalence check of one entry after one pass: the
    :class:`~ptxopt.equivalence.decision.Decision` and the launch it was
    decided for (the launch is named even when no run needed it)."""

    pass_name: str
    entry: str
    decision: Decision
    launch: Launch

    @property
    def verdict(self) -> Verdict:
        return self.decision.verdict

    @property
    def status(self) -> str:
        return self.decision.verdict.value

    @property
    def trials(self) -> int:
        r = self.decision.result
        return r.trials if r is not None else 0

    def line(self) -> str:
        d = self.decision
        head = f"after '{self.pass_name}': {self.entry}: "
        if d.verdict is Verdict.INCONCLUSIVE:
            body = f"equivalence not established: {d.note}"
        elif d.verdict is Verdict.DIFFER:
            body = f"computes something else: {d.note}"
        else:
            body = f"{d.verdict.value}" + (f" ({d.note})" if d.note else "")
        return head + body + f"; launch: {self.launch.describe()}"

    def to_json(self) -> dict:
        return {"pass": self.pass_name, "entry": self.entry, "status": self.status,
                "detail": self.decision.note or None, "trials": self.trials, "launch": self.launch.to_json()}


class VerifyEach(Instrument):
    """Before the first pass: ptxas accepts the *input* (else
    :class:`~ptxopt.passes.passmanager.InputRejected`: an input problem, never a
    pass's fault). After every pass that changed the module: the printed PTX
    re-parses, ptxas accepts it, and (``equivalence``) every entry is decided
    equivalent to the module before the pass by
    :func:`ptxopt.equivalence.decision` (identical, hints-only, proved -- with
    ``prove`` -- or the interpreter on the entry's check launch).

    ``arch``: the ptxas architecture; None (the default) means the module's
    own ``.target`` (:func:`ptxopt.toolchain.arch.resolve_arch`).

    ``source``: the input's own text, when there is one: the input check
    assembles it rather than its printing, so that ptxas's complaints name the
    user's lines (the printed module drops comments and blank lines).

    ``contract``: how entries are launched: a
    :class:`~ptxopt.equivalence.launch.Launch`,
    :class:`~ptxopt.equivalence.launch_contract.Contracts`, an interpreter
    ``Geometry`` or a corpus ``KernelSpec``. Without one, an entry that
    matches a corpus kernel uses its manifest entry, and any other entry a
    launch inferred from its PTX (``equal`` on it needs full coverage).

    Every check is kept in ``checks`` (:class:`EntryCheck`). A ``differ``
    fails the pass (:class:`~ptxopt.passes.passmanager.VerificationError`, with a
    reproducer); an ``inconclusive`` is listed in ``inconclusive`` -- said,
    not hidden; ``ptxopt run --verify-each`` exits 4 on it unless
    ``--allow-unchecked``.

    A ptxas failure to meet a register budget ("Insufficient registers",
    "cannot be compiled with specified register target constraints") after a
    register-budget pass, or a ptxas warning that it ignores the
    ``.maxnreg`` or the ``.minnctapersm`` ("... will be ignored"), reverts
    that pass (:class:`~ptxopt.passes.passmanager.RevertPass`): a clean refusal, not
    a pass failure.
    """

    needs_before = True

    def __init__(self, arch: str | None = None, equivalence: bool = True, trials: int | None = None,
                 contract=None, source: str | None = None, prove: bool = True):
        from ptxopt.equivalence.launch_contract import Contracts
        from ptxopt.equivalence.launch import as_launch

        self.arch = arch
        self.source = source
        self.resolved_arch: str | None = None
        self.equivalence = equivalence
        self.trials = trials
        self.prove = prove
        if contract is None or isinstance(contract, Contracts):
            self.contracts = contract or Contracts()
        else:
            self.contracts = Contracts([as_launch(contract)])
        self.checks: list[EntryCheck] = []
        self._launches: dict[str, Launch] = {}
        self._input_warnings: frozenset[str] = frozenset()

    # -- results --------------------------------------------------------------
    @property
    def inconclusive(self) -> list[EntryCheck]:
        return [c for c in self.checks if c.verdict is Verdict.INCONCLUSIVE]

    @property
    def skipped(self) -> list[str]:
        """One line per inconclusive check."""
        return [c.line() for c in self.inconclusive]

    def launch_for(self, module: Module, entry: str) -> Launch:
        """The check launch of ``entry``: given, else the corpus's, else a guess."""
        got = self._launches.get(entry)
        if got is None:
            got = self._launches[entry] = check_launch(module, entry, self.contracts)
        return got

    def to_json(self) -> dict:
        return {
            "arch": self.resolved_arch,
            "equivalence": self.equivalence,
            "launches": {e: c.to_json() for e, c in self._launches.items()},
            "checks": [c.to_json() for c in self.checks],
            "inconclusive": len(self.inconclusive),
        }

    # -- the hooks ------------------------------------------------------------
    def start(self, module):
        from ptxopt.toolchain import PtxasError, compile_ptx
        from ptxopt.toolchain.arch import resolve_arch

        self.resolved_arch = resolve_arch(module, self.arch)
        try:
            res = compile_ptx(self.source if self.source is not None else emit(module), self.resolved_arch)
        except PtxasError as e:
            raise InputRejected.by_ptxas(self.resolved_arch, e, arch_given=bool(self.arch)) from None
        self._input_warnings = frozenset(d.message for d in res.warnings)
        if self.equivalence:
            for fn in module.entries:
                self.launch_for(module, fn.name)

    def after_pass(self, p, before, after, record):
        if not record.changed:
            return
        from ptxopt.passes.families import REGISTER_BUDGET
        from ptxopt.toolchain import PtxasError, compile_ptx
        from ptxopt.toolchain.arch import resolve_arch

        arch = self.resolved_arch or resolve_arch(before, self.arch)
        budget_pass = p.family == REGISTER_BUDGET
        text = emit(after)
        try:
            parse(text)
        except Exception as e:
            raise VerificationError(f"after '{p.name}': printed PTX does not re-parse: {e}") from None
        try:
            res = compile_ptx(text, arch)
        except PtxasError as e:
            if budget_pass and any(k in str(e).lower() for k in _REGISTER_TARGET_ERRORS):
                raise RevertPass(f"ptxas cannot meet the register budget for {arch}: {e}") from None
            raise VerificationError(f"after '{p.name}': ptxas rejects the result: {e}") from None
        if budget_pass:
            for d in res.warnings:
                msg = d.message
                if msg not in self._input_warnings and "ignored" in msg.lower() and any(
                        w in msg.lower() for w in ("maxnreg", "minnctapersm", "maxntid")):
                    raise RevertPass(f"ptxas ignores the register budget for {arch}: {msg}")
        if self.equivalence:
            for fn in after.entries:
                self._check(p, before, after, fn.name)

    def _check(self, p, before, after, entry: str) -> None:
        from ptxopt.equivalence.interpret import DEFAULT_MIN_COVERAGE, DEFAULT_TRIALS

        launch = self.launch_for(before, entry)
        d = decide(before, after, entry, launch, prove=self.prove, trials=self.trials or DEFAULT_TRIALS,
                   min_coverage=DEFAULT_MIN_COVERAGE)
        check = EntryCheck(p.name, entry, d, launch)
        self.checks.append(check)
        if d.verdict is Verdict.DIFFER:
            raise VerificationError(check.line())


__all__ = ["VerifyEach", "EntryCheck"]
