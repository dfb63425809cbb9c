"""Which registers hold the same value in every thread of a block?

A loop may contain a barrier or a warp collective only if every thread runs
it the same number of times, so ``unroll`` (and any pass that restructures
a loop with one) needs to know whether the values its trip count depends on
are *block-uniform*. The answer here is conservative: ``uniform`` means
proven, ``not uniform`` means "may differ".

A register is non-uniform when one of its definitions

* reads a special register that differs between the threads of a block
  (anything outside :data:`ptxopt.ptx.opcodes.BLOCK_UNIFORM_SREGS`: ``%tid``,
  ``%laneid``, ``%warpid``, clocks...);
* reads a non-uniform register or is guarded by a non-uniform predicate;
* is not a pure computation or a parameter/constant load (a global or shared
  load, an atomic, a shuffle or vote, a call result: other threads may see
  other values, or the memory may change between their reads);
* or when the register has several definitions and the function has a
  conditional branch on a non-uniform predicate (threads that took different
  paths may arrive at a merge with different definitions; PTX has no phi, so
  this is the sound rule without control-dependence analysis).

The fixpoint starts from "everything uniform" and only ever marks registers
non-uniform, so it terminates (at most one round per register).
"""

from __future__ import annotations

from ptxopt.ptx import opcodes, operand_facts
from ptxopt.analysis.cfg import CFG


def _uniform_source(ins) -> bool:
    """May this instruction's result be uniform when its inputs are?"""
    f = operand_facts.facts(ins)
    if any(not opcodes.is_block_uniform_sreg(s) for s in f.sregs):
        return False
    if f.role == "pure":
        return True
    if f.role == "load" and ins.opcode == "ld" and opcodes.mem_space(ins) in ("param", "const"):
        return True
    return False


def nonuniform_registers(cfg: CFG) -> frozenset[str]:
    """Registers that may hold different values in two threads of one block
    (module doc)."""
    defs_of: dict[str, list[int]] = {}
    for iid, (defs, _) in enumerate(cfg.du):
        for r in defs:
            defs_of.setdefault(r, []).append(iid)
    bad: set[str] = set()
    for iid, ins in enumerate(cfg.instructions):
        if not _uniform_source(ins):
            bad.update(cfg.du[iid][0])
    branches = [iid for iid, ins in enumerate(cfg.instructions)
                if ins.opcode in opcodes.BRANCH_OPCODES and ins.guard is not None]
    changed = True
    while changed:
        changed = False
        divergent = any(cfg.instructions[i].guard in bad for i in branches) or any(
            cfg.instructions[i].opcode == "brx" and set(cfg.du[i][1]) & bad for i in range(len(cfg.du)))
        for iid, (defs, uses) in enumerate(cfg.du):
            if not defs or all(d in bad for d in defs):
                continue
            if any(u in bad for u in uses):
                bad.update(defs)
                changed = True
        if divergent:
            for r, sites in defs_of.items():
                if r not in bad and len(sites) > 1:
                    bad.add(r)
                    changed = True
    return frozenset(bad)


__all__ = ["nonuniform_registers"]
