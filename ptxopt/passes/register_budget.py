"""Register budgets: set (or replace) ``.maxnreg N`` on every ``.entry``.

A budget trades registers for occupancy and spills: low budgets force ptxas
to spill, generous ones let it schedule freely (BRIEF §3). ptxas accepts
almost any ``.maxnreg`` and silently clamps it, so the legality rules here
are what make a budget *mean* something; an entry is refused when:

* it uses ``setmaxnreg`` (sm_90a warpgroup register reallocation manages the
  register count itself);
* its block-size directives bound the registers below the budget: the
  register file holds 64K 32-bit registers per SM, so with ``.maxntid`` /
  ``.reqntid`` of T threads a thread can have at most 65536 / T registers,
  and with ``.minnctapersm M`` at most 65536 / (M * T). A budget above that
  bound cannot take effect, and ptxas would quietly ignore it.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import prod
from typing import ClassVar

from ptxopt.ir import Function, Module, PerfDirective
from ptxopt.passes.base import ChangeReport, Pass
from ptxopt.passes.families import REGISTER_BUDGET

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


def budget_refusal(fn: Function, budget: int) -> str | None:
    if any(i.opcode == "setmaxnreg" for i in fn.instructions()):
        return "the entry uses setmaxnreg, which manages its register count"
    b = register_bound(fn)
    if b is not None and budget > b[0]:
        return f"{b[1]} allows at most {b[0]} registers per thread, below .maxnreg {budget}"
    return None


@dataclass(frozen=True)
class _MaxNReg(Pass):
    family: ClassVar[str] = REGISTER_BUDGET
    budget: ClassVar[int] = 0

    def run(self, module: Module) -> ChangeReport:
        report = ChangeReport(self.name)
        for fn in module.entries:
            why = budget_refusal(fn, self.budget)
            if why:
                report.refuse(fn.name, fn.line, why)
                continue
            current = fn.directive(".maxnreg")
            if current is not None and current.args == (str(self.budget),):
                continue
            new = PerfDirective(".maxnreg", (str(self.budget),))
            if current is None:
                fn.directives = fn.directives + (new,)
                what = f"set .maxnreg {self.budget}"
            else:
                fn.directives = tuple(new if d.name == ".maxnreg" else d for d in fn.directives)
                what = f"replaced .maxnreg {', '.join(current.args)} with {self.budget}"
            report.change(fn.name, fn.line, what)
        return report


@dataclass(frozen=True)
class MaxNReg32(_MaxNReg):
    name: ClassVar[str] = "maxnreg_32"
    budget: ClassVar[int] = 32
    description: ClassVar[str] = "limit every entry to 32 registers per thread (.maxnreg 32)"


@dataclass(frozen=True)
class MaxNReg64(_MaxNReg):
    name: ClassVar[str] = "maxnreg_64"
    budget: ClassVar[int] = 64
    description: ClassVar[str] = "limit every entry to 64 registers per thread (.maxnreg 64)"


@dataclass(frozen=True)
class MaxNReg128(_MaxNReg):
    name: ClassVar[str] = "maxnreg_128"
    budget: ClassVar[int] = 128
    description: ClassVar[str] = "limit every entry to 128 registers per thread (.maxnreg 128)"


@dataclass(frozen=True)
class MaxNReg255(_MaxNReg):
    name: ClassVar[str] = "maxnreg_255"
    budget: ClassVar[int] = 255
    description: ClassVar[str] = "allow every entry up to 255 registers per thread (.maxnreg 255)"
