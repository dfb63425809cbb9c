"""Rough per-instruction latencies, in one table.

Used for latency-weighted critical paths (a feature, and a scheduling
priority). The numbers are order-of-magnitude figures for sm_80/sm_89
class GPUs (dependent-issue latency in cycles, memory at an L2-ish hit), not
measurements: what matters to a list scheduler or a learned policy is that
a global load is ~100x an FMA and a shared load ~10x, not the exact cycle.
Change them here only; nothing else hard-codes a latency.
"""

from __future__ import annotations

from ptxopt.ptx import opcodes, operand_facts
from ptxopt.ptx.ir import Instruction
from ptxopt.support.bounded_memo import register

LATENCY: dict[str, int] = {
    "alu": 4,          # integer/logic/compare/select/move
    "fma": 4,          # fp32 add/mul/fma
    "fp64": 16,        # double precision on consumer parts
    "imul": 5,         # integer multiply / mad
    "sfu": 20,         # ex2, rcp, rsqrt, sin ... (MUFU)
    "div": 40,         # div/rem/sqrt: multi-instruction sequences after ptxas
    "conversion": 6,   # cvt
    "collective": 24,  # shfl, vote, redux
    "mma": 32,         # tensor-core mma
    "ld_global": 400,  # global/generic/local load (local = spills: DRAM-backed)
    "ld_shared": 30,
    "ld_param": 8,     # kernel parameters and constants: constant cache
    "store": 4,        # issue cost; nothing waits on a store's result
    "atomic": 500,
    "barrier": 20,
    "branch": 8,
    "other": 8,
}


def latency_class(ins: Instruction) -> str:
    """The :data:`LATENCY` key for an instruction."""
    op = ins.opcode
    role = operand_facts.role(ins)
    if role == "load":
        space = opcodes.mem_space(ins)
        if space == "shared":
            return "ld_shared"
        if space in ("param", "const"):
            return "ld_param"
        return "ld_global"
    if role == "store":
        return "store"
    if role == "collective":
        return "collective"
    if opcodes.is_atomic(ins):
        return "atomic"
    if opcodes.is_barrier(ins):
        return "barrier"
    if opcodes.is_control(ins):
        return "branch"
    if op in ("div", "rem", "sqrt"):
        return "div"
    if op in opcodes.SFU_OPCODES:
        return "sfu"
    if op == "cvt":
        return "conversion"
    if op in ("mma", "wmma"):
        return "mma"
    if role != "pure":
        return "other"
    t = opcodes.value_type(ins)
    if t == "f64":
        return "fp64"
    if t in opcodes.FLOAT_TYPES:
        return "fma"
    if op in ("mul", "mad", "mul24", "mad24"):
        return "imul"
    return "alu"


def estimated_latency(ins: Instruction) -> int:
    """Rough latency of ``ins`` in cycles (see :data:`LATENCY`)."""
    # the class depends on the opcode, modifiers and role alone: remembered per form
    key = (ins.opcode, ins.modifiers, (ins._facts or operand_facts.facts(ins)).role)
    lat = _BY_FORM.get(key)
    if lat is None:
        if len(_BY_FORM) > 4096:  # a bound on odd inputs; a kernel has a few dozen forms
            _BY_FORM.clear()
        lat = _BY_FORM[key] = LATENCY[latency_class(ins)]
    return lat


_BY_FORM: dict[tuple, int] = register("front_end", "analysis.rough_latency._BY_FORM", {})


def latencies(instructions) -> list[int]:
    """:func:`estimated_latency` of each instruction, in one loop (the list
    schedulers weigh every instruction of a block; a remembered form costs
    a lookup here instead of a call)."""
    by_form, facts = _BY_FORM, operand_facts.facts
    out = []
    for ins in instructions:
        lat = by_form.get((ins.opcode, ins.modifiers, (ins._facts or facts(ins)).role))
        out.append(estimated_latency(ins) if lat is None else lat)
    return out
