"""Instruction categories for the feature vector.

The ISA facts (purity, memory roles and spaces, access sizes, type and opcode
sets) live in :mod:`ptxopt.ptx.opcodes`; this module only defines the counting
categories that the learning layer's features use.
"""

from __future__ import annotations

from ptxopt.ptx import opcodes
from ptxopt.ptx.ir import Instruction
from ptxopt.ptx.operand_facts import facts


def is_fma(ins: Instruction) -> bool:
    """``fma`` and floating-point ``mad`` (PTX defines ``mad.rn.f32`` as a fused
    multiply-add)."""
    if ins.opcode == "fma":
        return True
    return ins.opcode == "mad" and opcodes.value_type(ins) in opcodes.FLOAT_TYPES


def is_float_op(ins: Instruction) -> bool:
    """An arithmetic instruction whose operation type is floating point
    (``setp.lt.f32`` compares floats; ``cvt.f32.s32`` is a conversion, not
    counted here)."""
    if ins.opcode not in opcodes.PURE_OPCODES or ins.opcode in opcodes.CONVERSION_OPCODES or ins.opcode == "mov":
        return False
    return opcodes.value_type(ins) in opcodes.FLOAT_TYPES


def reads_special_reg(ins: Instruction) -> bool:
    """Reads a special register anywhere in its operands (``{%clock, %clock_hi}`` too)."""
    return bool(facts(ins).sregs)
