"""Register-bank read conflicts: the issue cycles ptxas's stall counts do not show.

Why: ptxas encodes in each instruction's stall count how long the *next*
instruction must wait for this one's result or unit, but not whether the
register file can deliver this instruction's source operands in one cycle.
Published microbenchmarks of the GA10x SM (the SM Ada's is derived from):

* Huerta, Abaie Shoushtary, Cruz, González, "Analyzing Modern NVIDIA GPU
  cores" (arXiv:2503.20481, 2025; RTX A6000, sm_86), section 5.3: each
  sub-core's register file has **two banks**, each with a read port of
  **1024 bits** per cycle -- one warp-wide 32-bit register per bank per
  cycle -- and a register-file cache filled by the ``.reuse`` operand flags,
  whose hits read no bank; an instruction needing more reads from one bank
  than it has ports holds the pipeline for the extra cycles ("bubbles").  The
  authors found no single rule for every instruction type; this module uses
  the plain port count for the arithmetic instructions listed below.
* NVIDIA developer forum thread 266769 (RTX A4000, sm_86): back-to-back
  ``FFMA R4, R9, R10, R4`` (two sources in the even bank, stall 1) ran at
  about 55% of the FP32 peak, i.e. ~2 cycles each; with ``R9.reuse,
  R10.reuse`` (one bank read left) at about 95%.
* Jia et al., "Dissecting the NVIDIA Volta GPU Architecture via
  Microbenchmarking" (arXiv:1804.06826), sections 2.1 and 3.5: two register
  banks since Volta (bank = register index mod 2), and one reuse flag per
  source-operand slot: the slot's register is kept for a later instruction
  reading the same register in the same slot.

Rule: a listed instruction's register sources (``RZ`` and uniform registers
read nothing; a reuse-cache hit reads nothing) are counted per bank; it
occupies the read stage for ``max(reads per bank)`` cycles, so the next
instruction issues no earlier than that many cycles after it (ptxas's stall
still applies when longer).  The reuse cache is taken from the instruction
just before in the listing, and empty after a branch target or a control
instruction.  Memory, tensor and 64-bit instructions are left out (their
operands are read on other paths; ptxas's read barriers and stalls cover
them).
"""

from __future__ import annotations

import re

#: 32-bit FP32/INT32-pipe instructions whose register sources are read in the issue-side read stage.
ARITH = frozenset({
    "FFMA", "FADD", "FMUL", "FMNMX", "FSEL", "FSETP", "FCHK",
    "IMAD", "IADD3", "LOP3", "ISETP", "SHF", "LEA", "IMNMX", "SEL", "PRMT", "IABS", "LOP", "IADD",
    "HFMA2", "HADD2", "HMUL2", "HMNMX2", "HSETP2",
})
BANKS = 2
_REG = re.compile(r"^[-|!~]*R(\d+)((?:\.[A-Za-z0-9]+)*)")


def _sources(ins) -> list[tuple[int, int, bool]]:
    """``(slot, register, reuse flag)`` of each GPR source of ``ins`` (RZ excluded)."""
    ops = ins.operand_list
    if ops and _REG.match(ops[0].strip()):
        ops = ops[1:]  # the destination
    out = []
    for slot, op in enumerate(ops):
        m = _REG.match(op.strip())
        if m:
            out.append((slot, int(m.group(1)), ".reuse" in m.group(2)))
    return out


def read_cycles(instructions, targets=frozenset()) -> list[int]:
    """Per instruction of a listing (in order): cycles its sources hold the read stage (0 = not modelled)."""
    out: list[int] = []
    cache: dict[int, int] = {}
    for i, ins in enumerate(instructions):
        if i in targets:
            cache = {}
        base = ins.base_opcode
        if base not in ARITH or "WIDE" in ins.modifiers or "64" in ins.modifiers:
            out.append(0)
            cache = {}
            continue
        banks = [0] * BANKS
        kept: dict[int, int] = {}
        for slot, reg, reuse in _sources(ins):
            if cache.get(slot) != reg:
                banks[reg % BANKS] += 1
            if reuse:
                kept[slot] = reg
        cache = kept
        out.append(max(banks))
    return out


__all__ = ["ARITH", "BANKS", "read_cycles"]
