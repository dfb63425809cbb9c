"""Cache-operator hints on global loads (``cache_ld{op=..}``, aliases ``cache_*``)
and stores (``cache_st{op=..}``, aliases ``st_cache_*``).

Each pass sets the cache operator of every ``ld.global`` / ``st.global``,
replacing one that is already there. What the PTX ISA allows, and so what is
refused per site:

* only the ``.global`` space: ``ld.param``, ``ld.shared``, ``ld.local`` and
  generic accesses (whose space is not proven) keep their form;
* only *weak* accesses: ``.volatile``, ``.relaxed``, ``.acquire``,
  ``.release``, ``.mmio`` (and any other :data:`ptxopt.ptx.opcodes.ORDERED_MEM_MODS`)
  forms take no cache operator;
* ``ld.global.nc`` accepts only ``.ca``, ``.cg``, ``.cs`` (so ``.cv`` is refused);
* an eviction-priority qualifier (``.L1::evict_last``, ``.L1::no_allocate``,
  ``.L2::evict_first`` ...) is a different syntax form from a cache operator,
  so such accesses are refused; ``.L2::cache_hint`` and ``.L2::64B``-style
  prefetch sizes combine with a cache operator and are kept.

The operator is placed right after ``.global`` (the ISA's order:
``ld{.weak}.global{.cop}{.nc}...``).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import ClassVar

from ptxopt.ptx import opcodes
from ptxopt.ptx.ir import Instruction, Module, instruction_slots
from ptxopt.passes.base import ChangeReport, FunctionPass, Refused, check
from ptxopt.passes.families import LOAD_CACHE, STORE_CACHE
from ptxopt.passes.registry import declare
from ptxopt.support.bounded_memo import register


def set_cache_op(ins: Instruction, op: str, allowed: tuple[str, ...]) -> Instruction | None:
    """The instruction with cache operator ``op``, None if it already has it;
    raises :class:`Refused` when the ISA forbids it."""
    mods = _with_cache_op(ins.opcode, ins.modifiers, op, allowed)
    if mods is None:
        return None
    if type(mods) is Refused:
        raise Refused(*mods.args)
    return ins.with_modifiers(mods)


@lru_cache(maxsize=4096)
def _with_cache_op(opcode: str, mods: tuple[str, ...], op: str, allowed: tuple[str, ...]):
    """:func:`set_cache_op`'s answer for an opcode and its modifiers: the new
    modifiers, None, or the :class:`Refused` to raise. It depends on nothing
    else, and a kernel repeats a handful of forms thousands of times."""
    try:
        check(opcodes.space_of(Instruction(opcode, mods)) == "global", "not a .global access")
        strong = next((m for m in mods if m in opcodes.ORDERED_MEM_MODS), None)
        check(strong is None, f".{strong} accesses take no cache operator")
        check(not any(opcodes.is_eviction_priority(m) for m in mods),
              "an eviction-priority qualifier excludes a cache operator")
        if "nc" in mods:
            check(op in opcodes.NC_LOAD_CACHE_OPS, f".{op} is not allowed with ld.global.nc")
    except Refused as r:
        return r
    current = [m for m in mods if m in allowed]
    if current == [op]:
        return None
    kept = [m for m in mods if m not in allowed]
    at = kept.index("global") + 1
    return (*kept[:at], op, *kept[at:])


register("front_end", "passes.cache_hints._with_cache_op", _with_cache_op)


@dataclass(frozen=True)
class _CacheHint(FunctionPass):
    """Sets cache operator ``op`` on every candidate access of ``opcodes_``."""

    opcodes_: ClassVar[frozenset[str]] = frozenset()
    op_help: ClassVar[dict[str, str]] = {}  # op -> what it does, for the description
    op: str

    @property
    def description(self) -> str:
        return self.op_help.get(self.op, f"global accesses get cache operator .{self.op}")

    def run_function(self, fn, report: ChangeReport, module: Module) -> None:
        for items, i, ins in instruction_slots(fn.body):
            if ins.opcode not in self.opcodes_:
                continue
            if opcodes.space_of(ins) in ("param", "shared", "local", "const"):
                continue  # other spaces are not candidates at all
            try:
                new = set_cache_op(ins, self.op, self.choices["op"])
            except Refused as r:
                report.refuse(fn.name, ins.line, f"{ins.full_opcode}: {r}")
                continue
            if new is not None:
                items[i] = new
                report.change(fn.name, ins.line, f"{ins.full_opcode} -> {new.full_opcode}")


@declare
@dataclass(frozen=True)
class CacheLd(_CacheHint):
    """``cache_ld{op=OP}``: every operator the ISA allows on ``ld`` (aliases
    ``cache_ca``, ``cache_cg``, ``cache_cs``, ``cache_cv``)."""

    kind: ClassVar[str] = "cache_ld"
    aliases: ClassVar[dict[str, dict]] = {"cache_ca": {"op": "ca"}, "cache_cg": {"op": "cg"},
                                           "cache_cs": {"op": "cs"}, "cache_cv": {"op": "cv"}}
    family: ClassVar[str] = LOAD_CACHE
    opcodes_: ClassVar[frozenset[str]] = frozenset({"ld"})
    choices: ClassVar[dict] = {"op": opcodes.LOAD_CACHE_OPS}
    op_help: ClassVar[dict[str, str]] = {
        "ca": "global loads cache at all levels (ld.global.ca, the default)",
        "cg": "global loads cache in L2 only, bypassing L1 (ld.global.cg)",
        "cs": "global loads marked streaming, evict first (ld.global.cs)",
        "lu": "global loads marked last use (ld.global.lu; on global addresses the same as .cs)",
        "cv": "global loads not cached, fetched again every time (ld.global.cv)",
    }


@declare
@dataclass(frozen=True)
class CacheSt(_CacheHint):
    """``cache_st{op=OP}``: every operator the ISA allows on ``st`` (aliases
    ``st_cache_wb``, ``st_cache_wt``, ``st_cache_cs``)."""

    kind: ClassVar[str] = "cache_st"
    aliases: ClassVar[dict[str, dict]] = {"st_cache_wb": {"op": "wb"}, "st_cache_wt": {"op": "wt"},
                                           "st_cache_cs": {"op": "cs"}}
    family: ClassVar[str] = STORE_CACHE
    opcodes_: ClassVar[frozenset[str]] = frozenset({"st"})
    choices: ClassVar[dict] = {"op": opcodes.STORE_CACHE_OPS}
    op_help: ClassVar[dict[str, str]] = {
        "wb": "global stores write back at all coherent levels (st.global.wb, the default)",
        "cg": "global stores cache in L2 only, bypassing L1 (st.global.cg)",
        "cs": "global stores marked streaming, evict first (st.global.cs)",
        "wt": "global stores write through to system memory (st.global.wt)",
    }
