"""What a decoded instruction is: a :class:`Step` of one of the step kinds.

Shared by the decoder (:mod:`ptxopt.interp.decode`), the opcode tables
(:mod:`ptxopt.interp.ops`) and the engine, below all three (the ops modules
build steps without importing the decoder, which imports them).
"""

from __future__ import annotations

from ptxopt.ptx.ir import Instruction

# Step kinds: what the engine must do besides calling ``run``.
SIMPLE, BRANCH, BRX, BARRIER, COLLECTIVE, CALL, RET, EXIT = range(8)


class Step:
    """One decoded instruction.

    ``run(frame, sel)`` does the work for SIMPLE and COLLECTIVE steps (the
    guard is already folded into SIMPLE ones). ``guard``/``neg`` are the guard
    predicate's slot and polarity for the engine's own kinds; ``target`` a
    branch target pc; ``aux`` kind-specific data (barrier operands, callee,
    membermask reader...).
    """

    __slots__ = ("kind", "run", "ins", "guard", "neg", "target", "aux")

    def __init__(self, kind: int, run=None, ins: Instruction | None = None, target=None, aux=None):
        self.kind = kind
        self.run = run
        self.ins = ins
        self.guard = None
        self.neg = False
        self.target = target
        self.aux = aux


__all__ = ["SIMPLE", "BRANCH", "BRX", "BARRIER", "COLLECTIVE", "CALL", "RET", "EXIT", "Step"]
