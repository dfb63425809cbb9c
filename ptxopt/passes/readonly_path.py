"""``nc_ld``: global loads from buffers the kernel provably never writes go
through the read-only data path (``ld.global.nc``, what ``const __restrict__``
gives nvcc).

Per load (``ld.global``, weak, not already ``.nc``):

* the ISA form must allow ``.nc`` (:data:`ptxopt.ptx.opcodes.NC_LOAD_TYPES`,
  cache operator in :data:`ptxopt.ptx.opcodes.NC_LOAD_CACHE_OPS`, no
  ``.unified``; a generic ``ld`` is not proven global and is refused);
* no instruction of the kernel or of a function it calls may write the
  load's bytes (:class:`ptxopt.analysis.readonly.ReadOnly`): otherwise the
  site is refused, naming the writer.

``nc_ld{assume_noalias=1}`` rewrites the loads refused for a writer anyway,
and says so in the change (``assumes noalias: ...``). Nothing in the
equivalence layer accepts that assumption: a candidate with an ``.nc`` load
the analysis cannot prove read-only is at most ``inconclusive``
(:func:`ptxopt.equivalence.decision.decide`), however it is produced.

``.nc`` goes right after ``.global`` and any cache operator (the ISA's
order: ``ld.global{.cop}.nc...``). Device functions (``.func``) are left
alone: whether their pointer arguments are written is a question about
every caller.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import ClassVar

from ptxopt.ptx import opcodes
from ptxopt.analysis.readonly import ReadOnly
from ptxopt.ptx.ir import Instruction, Module, instruction_slots
from ptxopt.passes.base import ChangeReport, FunctionPass, Refused, check
from ptxopt.analysis.manager import manager_or_default
from ptxopt.passes.families import READ_ONLY_PATH
from ptxopt.passes.registry import declare
from ptxopt.support.bounded_memo import register


def nc_form(ins: Instruction) -> Instruction:
    """``ins`` with ``.nc``; raises :class:`Refused` when the ISA has no such form."""
    mods = _nc_modifiers(ins.opcode, ins.modifiers)
    if type(mods) is Refused:
        raise Refused(*mods.args)
    return ins.with_modifiers(mods)


@lru_cache(maxsize=4096)
def _nc_modifiers(opcode: str, mods: tuple[str, ...]):
    """:func:`nc_form`'s modifiers, or the :class:`Refused` to raise: they
    depend on the opcode and modifiers alone (a kernel repeats a few forms)."""
    ins = Instruction(opcode, mods)
    try:
        check(opcodes.space_of(ins) == "global", "not a .global load (a generic address is not proven global)")
        strong = next((m for m in mods if m in opcodes.ORDERED_MEM_MODS), None)
        check(strong is None, f".{strong} loads have no .nc form")
        cop = next((m for m in mods if m in opcodes.LOAD_CACHE_OPS), None)
        check(cop is None or cop in opcodes.NC_LOAD_CACHE_OPS, f".{cop} is not allowed with ld.global.nc")
        bad = next((m for m in mods if m in opcodes.NC_LOAD_EXCLUDED_MODS), None)
        check(bad is None, f".{bad} is not allowed with ld.global.nc")
        t = opcodes.value_type(ins)
        check(t in opcodes.NC_LOAD_TYPES, f".{t} is not a type of ld.global.nc")
    except Refused as r:
        return r
    mods = tuple(m for m in mods if m != "weak")  # the default; the .nc forms do not spell it
    at = max(mods.index("global"), mods.index(cop) if cop is not None else -1) + 1
    return (*mods[:at], "nc", *mods[at:])


register("front_end", "passes.readonly_path._nc_modifiers", _nc_modifiers)


def is_nc_candidate(ins: Instruction) -> bool:
    """A weak-or-not ``ld`` of the global or generic space without ``.nc``."""
    return ins.opcode == "ld" and "nc" not in ins.modifiers \
        and opcodes.space_of(ins) in ("global", "generic")


@declare
@dataclass(frozen=True)
class NcLd(FunctionPass):
    """``nc_ld``: see the module doc."""

    kind: ClassVar[str] = "nc_ld"
    family: ClassVar[str] = READ_ONLY_PATH
    description: ClassVar[str] = ("global loads from buffers the kernel never writes use the read-only path "
                                  "(ld.global.nc)")
    choices: ClassVar[dict] = {"assume_noalias": (0, 1)}
    assume_noalias: int = 0

    def run_function(self, fn, report: ChangeReport, module: Module, analyses=None) -> None:
        analyses = manager_or_default(analyses)
        if fn.kind != ".entry":
            return
        ro = None
        for items, i, ins in instruction_slots(fn.body):
            if not is_nc_candidate(ins):
                continue
            try:
                new = nc_form(ins)
            except Refused as r:
                report.refuse(fn.name, ins.line, f"{ins.full_opcode}: {r}")
                continue
            if ro is None:
                ro = ReadOnly(module, fn, analyses=analyses)
            w = ro.may_write(ins)
            if w is not None and not self.assume_noalias:
                report.refuse(fn.name, ins.line, f"{ins.full_opcode}: the buffer may be written: {w.describe()} "
                                                 "(nc_ld{assume_noalias=1} asserts it is not)")
                continue
            items[i] = new
            note = f" (assumes noalias: {w.describe()} may write it)" if w is not None else ""
            report.change(fn.name, ins.line, f"{ins.full_opcode} -> {new.full_opcode}{note}")


__all__ = ["NcLd", "nc_form", "is_nc_candidate"]
