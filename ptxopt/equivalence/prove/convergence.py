"""A candidate must not let the lanes of a warp reach a ``.sync.aligned``
instruction on different paths.

Every thread of a warp must execute the very same ``mma``/``ldmatrix``
(``.sync.aligned``; the PTX ISA: "behavior is undefined" when the warp does
not run it together). The prover models one thread: it shows each thread
runs the same warp-wide instructions on the same operands, not that the
warp's threads still run them *together*. A rewrite that adds a branch on a
per-thread value (a loop versioned by a runtime alignment test) keeps every
thread's own sequence and splits the warp between two copies of the
instruction. Whether that can happen is a question about the warp, so it is
asked here, before any per-thread proof: a candidate function holding a
``.sync.aligned`` instruction may add no branch whose predicate (or ``brx.idx``
index) may differ between the threads of a block
(:func:`ptxopt.analysis.uniform.nonuniform_registers`) -- a branch is the
original's when its predicate, sense and target are (conservative: a
branch that moved is new).
"""

from __future__ import annotations

from ptxopt.ptx import opcodes
from ptxopt.ptx.ir import Function


def _branches(fn: Function) -> list:
    """The branches of ``fn`` that may send threads different ways: a guarded ``bra``, any ``brx.idx``."""
    return [ins for ins in fn.instructions()
            if ins.opcode in opcodes.BRANCH_OPCODES and (ins.guard is not None or ins.opcode == "brx")]


def _decided_by(ins) -> set[str]:
    """The registers that decide where ``ins`` goes: its guard, and a ``brx.idx``'s index."""
    from ptxopt.ptx import operand_facts

    regs = {ins.guard} if ins.guard is not None else set()
    if ins.opcode == "brx" and ins.operands:
        regs.update(operand_facts.regs_in(ins.operands[0]))
    return regs


def _key(ins) -> tuple:
    return ins.guard, ins.guard_neg, tuple(str(o) for o in ins.operands)


def warp_split(fo: Function, fc: Function) -> str | None:
    """Why ``fc`` may split a warp across a ``.sync.aligned`` instruction that
    ``fo`` runs together (module doc); None when it cannot."""
    from ptxopt.analysis.cfg import CFG
    from ptxopt.analysis.uniform import nonuniform_registers
    from ptxopt.ptx.emit import format_instruction

    aligned = next((ins for ins in fc.instructions() if opcodes.is_warp_aligned(ins)), None)
    if aligned is None:
        return None
    theirs = {_key(ins) for ins in _branches(fo)}
    new = [ins for ins in _branches(fc) if _key(ins) not in theirs]
    if not new:
        return None
    varying = nonuniform_registers(CFG(fc))
    for ins in new:
        if _decided_by(ins) & varying:
            text = " ".join(format_instruction(ins).split())
            return (f"line {ins.line}: `{text}` is a branch the original does not have, on a predicate that may "
                    f"differ between the threads of a warp, in a function with {aligned.full_opcode}: every thread "
                    f"of a warp must run that very instruction together, and one thread's proof cannot show they "
                    f"still do")
    return None


__all__ = ["warp_split"]
