"""``mul_pow2``: multiply by a power of two -> shift left."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ptxopt.ir import Imm, Instruction, Module, instruction_slots
from ptxopt.passes import ChangeReport, FunctionPass

#: integer types of ``mul.lo`` -> the ``shl`` type of the same width (the PTX ISA's
#: ``shl`` takes ``.b16/.b32/.b64``; the shift amount is a ``.u32`` operand)
SHL_TYPE = {"s16": "b16", "u16": "b16", "s32": "b32", "u32": "b32", "s64": "b64", "u64": "b64"}
WIDTH = {"b16": 16, "b32": 32, "b64": 64}


def shift_of(operand) -> int | None:
    """``k`` when *operand* is the integer immediate ``2^k`` (k >= 1), else None."""
    if not isinstance(operand, Imm) or operand.is_float:
        return None
    try:
        value = operand.value()
    except (TypeError, ValueError):
        return None
    if not isinstance(value, int) or value < 2 or value & (value - 1):
        return None
    return value.bit_length() - 1


@dataclass(frozen=True)
class MulPow2(FunctionPass):
    """``mul.lo`` by an immediate power of two becomes ``shl`` by its exponent."""

    kind: ClassVar[str] = "mul_pow2"
    family: ClassVar[str] = "strength-reduction"  # no other pass in it: conflicts with none
    description: ClassVar[str] = "mul.lo by an immediate 2^k becomes shl by k"

    def run_function(self, fn, report: ChangeReport, module: Module) -> None:
        for items, i, ins in instruction_slots(fn.body):
            new = self.rewrite(ins)
            if new is not None:
                items[i] = new
                report.change(fn.name, ins.line, f"{ins.full_opcode} by {ins.operands[2]} -> {new.full_opcode} "
                                                 f"by {new.operands[2]}")

    @staticmethod
    def rewrite(ins: Instruction) -> Instruction | None:
        if ins.opcode != "mul" or len(ins.modifiers) != 2 or ins.modifiers[0] != "lo":
            return None
        shl = SHL_TYPE.get(ins.modifiers[1])
        if shl is None or len(ins.operands) != 3:
            return None
        k = shift_of(ins.operands[2])
        if k is None or k >= WIDTH[shl]:
            return None
        dst, src, _ = ins.operands
        return Instruction("shl", (shl,), (dst, src, Imm(str(k))), guard=ins.guard, guard_neg=ins.guard_neg,
                           line=ins.line)
