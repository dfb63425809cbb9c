"""Register budgets: ``maxnreg{n=N}`` sets ``.maxnreg N`` on every ``.entry``
(aliases ``maxnreg_32``, ``_64``, ``_128``, ``_255``).

A budget trades registers for occupancy and spills: low budgets force ptxas
to spill, generous ones let it schedule freely (BRIEF §3). ptxas accepts
almost any ``.maxnreg`` and silently clamps it, so the legality rules here
are what make a budget *mean* something; an entry is refused when:

* the source already sets a different ``.maxnreg`` (a compiler such as Triton
  chose it, and a pass must respect the source): ``maxnreg{n=128}``
  (alias ``maxnreg_128``) never raises nor lowers it unless its option
  ``override=1`` says so (``maxnreg_128{override=1}``);
* it uses ``setmaxnreg``, itself or in a ``.func`` it calls (sm_90a warpgroup
  register reallocation manages the register count itself);
* its block-size directives bound the registers below the budget: the
  register file holds 64K 32-bit registers per SM, so with ``.maxntid`` /
  ``.reqntid`` of T threads a thread can have at most 65536 / T registers,
  and with ``.minnctapersm M`` at most 65536 / (M * T). A budget above that
  bound cannot take effect, and ptxas would quietly ignore it;
* one instruction needs more registers than the budget: every register an
  ``mma``/``wgmma`` reads or writes is live at once (an ``f64`` ``mma``
  ``m16n8k16`` names 40 32-bit registers), and ptxas fails such a kernel with
  "cannot be compiled with specified register target constraints". This is
  a lower bound: ptxas may need a few more registers than the operands
  ("Insufficient registers ... try a register target of N or higher"); those
  cases are caught by ``run --verify-each``, which turns that ptxas failure
  after a register-budget pass into a refusal of the pass, not a pass failure.

The passes write ``.maxnreg`` only; they never add, raise or replace the
source's ``.maxntid``, ``.reqntid`` or ``.minnctapersm`` (those only bound
the budget, above).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from math import prod
from typing import ClassVar

from ptxopt.analysis.manager import AnalysisManager, PreservedAnalyses, manager_or_default
from ptxopt.ptx.ir import Function, Module, PerfDirective
from ptxopt.ptx.operand_facts import facts
from ptxopt.passes.base import ChangeReport, Pass
from ptxopt.passes.families import REGISTER_BUDGET
from ptxopt.passes.registry import declare

REGISTER_FILE = 65536  # 32-bit registers per SM, sm_50 through sm_90


def register_bound(fn: Function) -> tuple[int, str] | None:
    """The most registers per thread the entry's directives allow, and why."""
    threads = None
    for name in (".reqntid", ".maxntid"):
        d = fn.directive(name)
        if d is not None and d.args:
            threads = (prod(int(a, 0) for a in d.args), name)
            break
    if threads is None:
        return None
    t, why = threads
    m = fn.directive(".minnctapersm")
    ctas = int(m.args[0], 0) if m is not None and m.args else 1
    bound = REGISTER_FILE // max(1, t * ctas)
    reason = f"{why} {t}" + (f" with .minnctapersm {ctas}" if ctas > 1 else "")
    return bound, reason


_WIDE_OPCODES = frozenset({"mma", "wgmma", "wmma"})


def instruction_registers(fn: Function, analyses: AnalysisManager | None = None) -> tuple[int, int] | None:
    """The most 32-bit registers that one matrix instruction (``mma``,
    ``wgmma``, ``wmma``) of ``fn`` names at once, with its PTX line; None
    when there is none. Registers weigh as in register pressure
    (:data:`ptxopt.analysis.pressure.WEIGHT32`: b64 2, b16 1, predicates 0)."""
    if fn.body is None or not any(i.opcode in _WIDE_OPCODES for i in fn.instructions()):
        return None
    from ptxopt.analysis.pressure import WEIGHT32, reg_class

    cfg = manager_or_default(analyses).cfg(fn)
    best = None
    for ins, (defs, uses) in zip(cfg.instructions, cfg.du):
        if ins.opcode in _WIDE_OPCODES:
            n = sum(WEIGHT32[reg_class(cfg, r)] for r in dict.fromkeys(defs + uses))
            if best is None or n > best[0]:
                best = (n, ins.line or 0)
    return best


def setmaxnreg_user(fn: Function, module: Module | None = None) -> str | None:
    """The function that executes ``setmaxnreg`` on ``fn``'s behalf: ``fn``
    itself or a ``.func`` it calls, directly or not (an indirect call may
    reach any function of ``module``); None when none does."""
    funcs = {f.name: f for f in (module.functions if module is not None else ()) if f.body is not None}
    seen, todo = {fn.name}, [fn]
    while todo:
        f = todo.pop()
        for ins in f.instructions():
            if ins.opcode == "setmaxnreg":
                return f.name
            if ins.opcode != "call":
                continue
            # the callee by name; an indirect call (no label naming a function) may reach any function
            names = [n for n in facts(ins).labels if n in funcs] or list(funcs)
            for n in names:
                if n in funcs and n not in seen:
                    seen.add(n)
                    todo.append(funcs[n])
    return None


def budget_refusal(fn: Function, budget: int, module: Module | None = None,
                   analyses: AnalysisManager | None = None) -> str | None:
    user = setmaxnreg_user(fn, module)
    if user is not None:
        via = "" if user == fn.name else f" (through the function {user} it calls)"
        return (f"the entry uses setmaxnreg{via}, which manages its register count (sm_90a warpgroup "
                f"register reallocation); a .maxnreg budget would contradict it")
    b = register_bound(fn)
    if b is not None and budget > b[0]:
        return f"{b[1]} allows at most {b[0]} registers per thread, below .maxnreg {budget}"
    need = instruction_registers(fn, analyses)
    if need is not None and need[0] > budget:
        where = f" at line {need[1]}" if need[1] else ""
        return (f"an instruction{where} names {need[0]} registers at once, more than .maxnreg {budget} "
                "(ptxas cannot compile it under that budget)")
    return None


#: The budgets ptxas honours: below 24 ptxas 13 raises the count to its lower
#: bound of 24 ("adjusting per thread register count of 16 to lower bound of
#: 24", sm_89/sm_90/sm_100/sm_120), above 255 it ignores the directive ("Too
#: many maxnreg specified ... will be ignored"); so a budget outside this
#: range would not mean what it says.
BUDGETS = range(24, 256)


@declare
@dataclass(frozen=True)
class MaxNReg(Pass):
    """``n``: the budget. ``override``: replace a ``.maxnreg`` the source
    already set (by default such an entry is refused: the source's budget is
    respected)."""

    kind: ClassVar[str] = "maxnreg"
    aliases: ClassVar[dict[str, dict]] = {"maxnreg_32": {"n": 32}, "maxnreg_64": {"n": 64}, "maxnreg_128": {"n": 128},
                                           "maxnreg_255": {"n": 255}}
    family: ClassVar[str] = REGISTER_BUDGET
    choices: ClassVar[dict] = {"n": BUDGETS}
    n: int
    override: bool = False

    @property
    def description(self) -> str:
        what = "allow every entry up to" if self.n == BUDGETS[-1] else "limit every entry to"
        return (f"{what} {self.n} registers per thread (.maxnreg {self.n}); "
                "keeps a .maxnreg the source set unless {override=1}")

    def overriding(self) -> str:
        """This pass as written with ``override=1`` (for the refusal's hint)."""
        plain = str(replace(self, override=False))
        return plain[:-1] + ",override=1}" if plain.endswith("}") else plain + "{override=1}"

    #: only the .maxnreg directive changes: the body's analyses stay valid
    preserves = PreservedAnalyses.of("cfg", "loops", "dag", "depgraph")

    def run(self, module: Module, analyses: AnalysisManager | None = None) -> ChangeReport:
        report = ChangeReport(self.name)
        budget = self.n
        for fn in module.entries:
            current = fn.directive(".maxnreg")
            if current is not None and current.args == (str(budget),):
                continue
            if current is not None and not self.override:
                report.refuse(fn.name, fn.line,
                              f"the source sets .maxnreg {', '.join(current.args)} "
                              f"(use {self.overriding()} to replace it)")
                continue
            why = budget_refusal(fn, budget, module, analyses)
            if why:
                report.refuse(fn.name, fn.line, why)
                continue
            new = PerfDirective(".maxnreg", (str(budget),))
            if current is None:
                fn.directives = fn.directives + (new,)
                what = f"set .maxnreg {budget}"
            else:
                fn.directives = tuple(new if d.name == ".maxnreg" else d for d in fn.directives)
                what = f"replaced .maxnreg {', '.join(current.args)} with {budget}"
            report.change(fn.name, fn.line, what)
        return report
