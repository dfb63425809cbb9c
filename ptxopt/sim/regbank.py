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

Rule: a listed instruction's distinct source registers (``RZ`` and uniform
registers read nothing; a reuse-cache hit reads nothing; a register named in
two slots is read once) are counted per bank; it
occupies the read stage for ``max(reads per bank)`` cycles, so the next
instruction issues no earlier than that many cycles after it (ptxas's stall
still applies when longer).  The reuse cache is taken from the instruction
just before in the listing, and empty after a branch target or a control
instruction.  Memory, tensor and 64-bit instructions are left out (their
operands are read on other paths; ptxas's read barriers and stalls cover
them).

Refinement (``ArchLatencies.register_read_window`` = 3; :func:`bank_reads` and the walk's port
reservation in :mod:`ptxopt.sim.model`), from the MICRO 2025 version of the same study: Huerta,
Abaie Shoushtary, Cruz, González, "Dissecting and Modeling the Architecture of Modern GPU Cores"
(MICRO '25, doi:10.1145/3725843.3756041), sections 3, 5.1.1, 5.3 and 5.3.1:

* **Three-cycle read stage** (5.1.1, 5.3): every fixed-latency instruction spends three cycles
  reading its sources; in an *Allocate* stage it reserves, per bank, the read-port cycles it needs
  within its next three cycles, and is held there (stalling the instructions behind it) until it
  can.  So a bank's port is a resource shared by overlapping three-cycle windows, not a per-
  instruction delay.  Their Listing 1 measured it: an FFMA whose three sources are all in the even
  bank, followed at stall 1 by an FFMA reading R16 plus two odd registers, costs no bubble; with one
  of the two even, one bubble; with both even, two.  The plain rule above charges two bubbles in all
  three cases.  In a long run of same-bank instructions both give the same rate (two reads from one
  bank per instruction: one instruction per two cycles, the forum's ~55%).
* **Register-file cache** (5.3.1, Listing 4): one entry per bank with three sub-entries, one per
  operand slot.  A source hits when the (bank, slot) sub-entry holds that register (cached by an
  earlier instruction's reuse flag in the same slot); any read request to a (bank, slot) -- hit or
  miss -- makes its sub-entry unavailable unless this instruction sets the reuse flag again, while
  sub-entries of other (bank, slot) pairs stay.  The plain rule keeps only the previous
  instruction's reuse flags.
* Memory and other variable-latency instructions do not pass the Allocate stage (5.1.1: they queue
  and get the ports fixed-latency instructions leave free), so they neither reserve ports here nor
  touch the cache; ptxas's own listings set ``.reuse`` across an intervening ``LDG`` (e.g.
  gemm_tile_4x4x4: ``FFMA R0, R23.reuse, ...; LDG ...; FFMA R3, R23.reuse, ...``), consistent with
  that.  Other unlisted instructions (MOV, IMAD.WIDE, ...) still empty the cache, as before.
"""

from __future__ import annotations

import re
from functools import lru_cache

#: 32-bit FP32/INT32-pipe instructions whose register sources are read in the issue-side read stage.
ARITH = frozenset({
    "FFMA", "FADD", "FMUL", "FMNMX", "FSEL", "FSETP", "FCHK",
    "IMAD", "IADD3", "LOP3", "ISETP", "SHF", "LEA", "IMNMX", "SEL", "PRMT", "IABS", "LOP", "IADD",
    "HFMA2", "HADD2", "HMUL2", "HMNMX2", "HSETP2",
})


_GPR = re.compile(r"\s*[-|!~]*R(\d+)")


@lru_cache(maxsize=1 << 16)
def _sources(operands: str) -> tuple[tuple[int, int, bool], ...]:
    """``(slot, register, reuse flag)`` of each GPR source (the listed instructions have no
    bracketed operands, so a plain comma split is exact; the first operand is the destination).
    Memoised: a kernel's walks under several latency tables (search, calibration) parse once."""
    out = []
    match = _GPR.match
    for slot, op in enumerate(operands.split(",")[1:]):
        m = match(op)
        if m is not None:
            out.append((slot, int(m.group(1)), op.endswith(".reuse")))
    return tuple(out)


def read_cycles(instructions, targets=frozenset(), banks: int = 2) -> list[int]:
    """Per instruction of a listing (in order): cycles its sources hold the read stage (0 = not
    modelled); ``banks``: the architecture's register banks (``ArchLatencies.register_banks``)."""
    out: list[int] = []
    cache: dict[int, int] = {}
    for i, ins in enumerate(instructions):
        opcode = ins.opcode
        if i in targets:
            cache = {}
        if opcode.split(".", 1)[0] not in ARITH or ".WIDE" in opcode or ".64" in opcode:
            out.append(0)
            cache = {}
            continue
        per_bank = [0] * banks
        seen: set[int] = set()  # one read delivers a register to every slot naming it
        kept: dict[int, int] = {}
        for slot, reg, reuse in _sources(ins.operands):
            if cache.get(slot) != reg and reg not in seen:
                seen.add(reg)
                per_bank[reg % banks] += 1
            if reuse:
                kept[slot] = reg
        cache = kept
        out.append(max(per_bank))
    return out


#: Variable-latency memory instructions: they skip the Allocate stage (see the module doc).
MEMORY = frozenset({"LDG", "STG", "LDL", "STL", "LDS", "STS", "LD", "ST", "LDSM", "LDGSTS", "ATOM", "ATOMG",
                    "ATOMS", "RED", "REDG", "CCTL", "LDC", "S2R", "S2UR", "CS2R"})


def bank_reads(instructions, targets=frozenset(), banks: int = 2) -> list[tuple[int, ...] | None]:
    """Per instruction of a listing (in order): its register-file reads per bank under the
    register-file cache of Huerta et al. (MICRO '25, Listing 4), or None where the instruction
    does not pass the Allocate stage or is not modelled (module doc, "Refinement")."""
    out: list[tuple[int, ...] | None] = []
    cache: dict[tuple[int, int], int] = {}  # (bank, slot) -> cached register
    for i, ins in enumerate(instructions):
        opcode = ins.opcode
        if i in targets:
            cache = {}
        head = opcode.split(".", 1)[0]
        if head not in ARITH or ".WIDE" in opcode or ".64" in opcode:
            out.append(None)
            if head not in MEMORY:
                cache = {}
            continue
        per_bank = [0] * banks
        seen: set[int] = set()  # one read delivers a register to every slot naming it
        for slot, reg, reuse in _sources(ins.operands):
            key = (reg % banks, slot)
            hit = cache.get(key) == reg
            if hit:
                seen.add(reg)
            elif reg not in seen:
                seen.add(reg)
                per_bank[reg % banks] += 1
            if reuse:
                cache[key] = reg
            else:
                cache.pop(key, None)
        out.append(tuple(per_bank))
    return out


__all__ = ["ARITH", "MEMORY", "bank_reads", "read_cycles"]
