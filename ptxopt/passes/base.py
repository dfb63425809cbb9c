"""What a pass is: a small frozen dataclass with a name, a conflict family, a
legality check and a run that reports what it changed.

Why this shape (after xDSL and LLVM's new pass manager):

* ``run`` mutates the module it is given and returns a :class:`ChangeReport`;
  :meth:`Pass.apply` runs it on a copy, so callers never lose the input and the
  search layer can try every action on a clone (the RL action mask is exactly
  "the passes whose report says changed"). The pass manager calls
  ``check_legal`` and ``run`` itself, on a copy only where it needs one
  (:mod:`ptxopt.passes.passmanager`).
* Legality has two levels. :meth:`Pass.check_legal` refuses the pass for
  the module as a whole by raising :class:`IllegalPass`, before anything is
  changed: :meth:`apply` raises it to its caller, the pass manager skips the
  pass and records the refusal in its change report (``illegal: ...``), the
  evaluator calls the candidate ``illegal`` and the search masks the action.
  No registered optimisation pass refuses a whole module (the base method
  accepts every module). Per-site refusals
  (one unaligned load group, one entry whose ``.maxntid`` bounds the
  registers below a budget) are recorded in the report with their reason,
  and the pass goes on elsewhere. :meth:`run` never raises
  :class:`IllegalPass`: it may have changed the module already, so the pass
  manager reports that as a failure of the pass.
* ``check(cond, msg)`` is the one way a pass states a legality condition
  inside its rewrite; it raises :class:`Refused`, which the pass turns into a
  refusal for that site.
* Analyses come from an :class:`~ptxopt.analysis.manager.AnalysisManager`
  given to ``run(module, analyses=...)`` (and to a :class:`FunctionPass`'s
  ``run_function(..., analyses)``): the pass manager passes its own, and
  :meth:`Pass.apply` the one it is given or the default manager. A pass
  states what it leaves valid in :attr:`Pass.preserves`
  (:meth:`Pass.preserved`: all when it changed nothing). A plugin whose
  ``run``/``run_function`` takes no ``analyses`` still runs (called without;
  it may ask :func:`~ptxopt.analysis.manager.default_manager`).
"""

from __future__ import annotations

import inspect
from dataclasses import MISSING, dataclass, field, fields
from typing import ClassVar, Sequence

from ptxopt.support.gc_pause import gc_paused
from ptxopt.support.pass_output import captured
from ptxopt.ptx.ir import Module
from ptxopt.analysis.manager import AnalysisManager, PreservedAnalyses, manager_or_default


class PassError(Exception):
    """A pass cannot be run (bad option, pipeline error)."""


class IllegalPass(PassError):
    """The pass is illegal for this module as a whole; raised by
    :meth:`Pass.check_legal`, before anything was changed."""


class Refused(Exception):
    """One site cannot be rewritten; carries the reason."""


def check(cond: object, reason: str) -> None:
    """Refuse the current site unless ``cond`` holds."""
    if not cond:
        raise Refused(reason)


@dataclass(frozen=True)
class Site:
    """Where a pass acted (or declined to): function, PTX line, and what."""

    function: str
    line: int
    what: str

    def __str__(self) -> str:
        where = f"{self.function}:{self.line}" if self.line else self.function
        return f"{where}: {self.what}"


@dataclass
class ChangeReport:
    """What one pass application did: sites changed and sites refused."""

    pass_name: str
    changed: list[Site] = field(default_factory=list)
    refused: list[Site] = field(default_factory=list)

    @property
    def changed_any(self) -> bool:
        return bool(self.changed)

    def change(self, function: str, line: int, what: str) -> None:
        self.changed.append(Site(function, line, what))

    def refuse(self, function: str, line: int, reason: str) -> None:
        self.refused.append(Site(function, line, reason))

    def to_json(self) -> dict:
        return {
            "pass": self.pass_name,
            "changed": [{"function": s.function, "line": s.line, "what": s.what} for s in self.changed],
            "refused": [{"function": s.function, "line": s.line, "reason": s.what} for s in self.refused],
        }


class Pass:
    """Base class of every transform. Subclasses are frozen dataclasses whose
    fields are what a pipeline string may set: a field without a default is a
    *parameter* (it picks the variant: ``maxnreg``'s ``n``, ``cache_ld``'s
    ``op``), one with a default an *option* (``override``, ``assume_align``).

    ``kind`` is the registered name (``maxnreg``); :attr:`name` is this
    instance's: its alias when the class declares one for these parameters
    (``maxnreg_128``), else ``kind{params}`` (``maxnreg{n=96}``). Reports,
    conflicts and RL actions use ``name``; ``str(p)`` adds the options.
    ``choices`` declares the legal values of a parameter or option (a tuple,
    or a ``range``); a value outside them fails at construction, so a bad
    pipeline string fails at parse time with the pass's own list.
    """

    kind: ClassVar[str] = ""
    family: ClassVar[str] = ""
    description: ClassVar[str] = ""
    choices: ClassVar[dict[str, Sequence]] = {}
    #: Does the result depend on the performance launch (the block, its shared
    #: memory, which entry it is for)? Such a pass overrides :meth:`with_launch`
    #: and every caller that holds a launch applies it bound
    #: (:func:`ptxopt.evaluate.candidate.bind_launch`); what is remembered of
    #: its outcome on a module is remembered per launch (the search's move memo).
    #: Declared and overridden together: a class that does one without the
    #: other is refused when it is defined.
    uses_launch: ClassVar[bool] = False
    #: Does the pass change control flow (blocks, branches, loops)? A structural
    #: rewrite is written by ``ptxopt run`` only once the prover has shown its
    #: result equivalent (:mod:`ptxopt.equivalence.prove.structural`), and the
    #: unchecked :func:`ptxopt.passes.passmanager.run_passes_unchecked` refuses it unless told
    #: ``allow_unchecked=True``: sampling launches is not evidence enough for a
    #: rewrite of the loops themselves.
    structural: ClassVar[bool] = False
    #: Kinds this pass cannot share a pipeline with, each with why (declared
    #: by either side: :func:`ptxopt.passes.families.conflict` asks both).
    conflicts: ClassVar[dict[str, str]] = {}
    #: Names of one variant each, ``{"maxnreg_128": {"n": 128}}``: a pass with
    #: these parameters prints as its alias, and a pipeline accepts the alias
    #: wherever a name goes (the names from before passes took parameters).
    #: They name this class's ``kind``: a subclass with another kind does not
    #: inherit them.
    aliases: ClassVar[dict[str, dict]] = {}
    _alias_by_params: ClassVar[dict[tuple, str]] = {}
    #: What a run that changed the module leaves valid (:meth:`preserved`).
    preserves: ClassVar[PreservedAnalyses] = PreservedAnalyses.none()

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        if "aliases" not in vars(cls) and cls.kind != super(cls, cls).kind:
            cls.aliases = {}  # the parent's aliases name the parent's kind
        cls._alias_by_params = {tuple(sorted(p.items())): a for a, p in cls.aliases.items()}
        overrides = cls.with_launch is not Pass.with_launch
        if overrides != cls.uses_launch:
            raise TypeError(f"pass class {cls.__name__}: uses_launch={cls.uses_launch} but it "
                            f"{'overrides' if overrides else 'does not override'} with_launch "
                            "(a pass that depends on the launch declares it and takes it in with_launch)")

    def __post_init__(self) -> None:
        for key, legal in self.choices.items():
            v = getattr(self, key)
            if type(v) is bool or v not in legal:  # True == 1 would pass an int range
                raise ValueError(f"{key}={v!r} is not one of {show_choices(legal)}")

    def check_legal(self, module: Module) -> None:
        """Raise :class:`IllegalPass` if the pass may not run on ``module`` at
        all (``module`` is not changed). The default accepts every module."""

    def run(self, module: Module, analyses: AnalysisManager | None = None) -> ChangeReport:
        """Rewrite ``module`` in place and report the changes, asking
        ``analyses`` (default: the default manager) for what it needs."""
        raise NotImplementedError

    def run_with(self, module: Module, analyses: AnalysisManager) -> ChangeReport:
        """:meth:`run` given ``analyses`` (without, for a plugin whose ``run`` takes none)."""
        if _takes_analyses(self.run):
            return self.run(module, analyses=analyses)
        return self.run(module)

    def preserved(self, report: ChangeReport) -> PreservedAnalyses:
        """What the run that made ``report`` left valid: every analysis when
        it changed nothing, else :attr:`preserves`."""
        return PreservedAnalyses.all() if not report.changed_any else self.preserves

    def with_launch(self, launch, entry: str | None = None) -> Pass:
        """This pass for a performance launch of kernel ``entry`` (the one
        way a pass learns of the launch: a caller that holds one maps every
        pass of a pipeline through this). Most passes do not depend on the
        launch and return themselves; ``launch_bounds`` returns itself with
        the launch's block as its ``block`` option. An override declares
        :attr:`uses_launch`, and its canonical string names what it took
        from the launch (cache keys are made from it)."""
        return self

    def apply(self, module: Module, analyses: AnalysisManager | None = None) -> tuple[Module, ChangeReport]:
        """:meth:`check_legal`, then :meth:`run` on a copy, with ``analyses``
        (default: the default manager): returns the new module and the report;
        ``module`` is untouched (also when the pass raises or refuses). What
        the pass prints is kept off stdout (:mod:`ptxopt.support.pass_output`).
        Nothing is invalidated: the input, which every result handed out
        describes, is unchanged."""
        am = manager_or_default(analyses)
        with gc_paused(), captured(f"pass '{self.kind}'"):  # a burst of small acyclic objects (ptxopt.support.gc_pause)
            self.check_legal(module)
            out = module.copy()
            report = self.run_with(out, am)
        return out, report

    @classmethod
    def parameter_names(cls) -> list[str]:
        """The fields without a default: what picks the variant."""
        return [f.name for f in fields(cls)  # type: ignore[arg-type]
                if f.default is MISSING and f.default_factory is MISSING]

    def parameters(self) -> dict[str, object]:
        """This pass's parameter values (:meth:`parameter_names`)."""
        return {n: getattr(self, n) for n in self.parameter_names()}

    def options(self) -> dict[str, object]:
        """Options that differ from their defaults (for the canonical string)."""
        return {f.name: getattr(self, f.name) for f in fields(self)  # type: ignore[arg-type]
                if not (f.default is MISSING and f.default_factory is MISSING)
                and getattr(self, f.name) != (f.default if f.default is not MISSING else f.default_factory())}

    @classmethod
    def alias_of(cls, params: dict) -> str | None:
        """The alias naming this kind with exactly ``params``, or None."""
        return cls._alias_by_params.get(tuple(sorted(params.items()))) if params else None

    @property
    def name(self) -> str:
        """The alias of ``kind`` with these parameters, else ``kind{params}``."""
        params = self.parameters()
        return self.alias_of(params) or self.kind + _braced(params)

    def __str__(self) -> str:
        """Canonical: the alias and non-default options (``maxnreg_128{override=True}``),
        else ``kind`` with parameters and options together (``maxnreg{n=96,override=True}``),
        keys sorted."""
        params, opts = self.parameters(), self.options()
        alias = self.alias_of(params)
        if alias:
            return alias + _braced(opts)
        return self.kind + _braced({**params, **opts})


def _braced(values: dict) -> str:
    return "{" + ",".join(f"{k}={v}" for k, v in sorted(values.items())) + "}" if values else ""


def show_choices(legal: Sequence) -> str:
    """``24..255`` for a range, ``ca|cg|cs`` for a tuple (error messages, ``ptxopt passes``)."""
    if isinstance(legal, range) and legal.step == 1:
        return f"{legal.start}..{legal.stop - 1}"
    return "|".join(str(x) for x in legal)


def _takes_analyses(method) -> bool:
    """Does ``method`` (a bound ``run``/``run_function``) take an ``analyses``
    argument? Asked at each call: a test or plugin may replace the method."""
    code = getattr(getattr(method, "__func__", method), "__code__", None)
    if code is None:
        try:
            return "analyses" in inspect.signature(method).parameters
        except (TypeError, ValueError):
            return False
    named = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
    return "analyses" in named or bool(code.co_flags & inspect.CO_VARKEYWORDS)


class FunctionPass(Pass):
    """A pass that rewrites every defined function on its own: subclasses
    implement :meth:`run_function` and report into the shared report."""

    def run(self, module: Module, analyses: AnalysisManager | None = None) -> ChangeReport:
        am = manager_or_default(analyses)
        report = ChangeReport(self.name)
        takes = _takes_analyses(self.run_function)
        for fn in module.functions:
            if fn.body is not None:
                if takes:
                    self.run_function(fn, report, module, am)
                else:
                    self.run_function(fn, report, module)
        return report

    def run_function(self, fn, report: ChangeReport, module: Module, analyses: AnalysisManager) -> None:
        raise NotImplementedError
