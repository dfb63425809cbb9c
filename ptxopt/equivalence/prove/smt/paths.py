"""Straight-line runs through several blocks as SMT terms (for the loop simulation).

:class:`~.encode.BlockEncoder` gives one block its meaning from a fresh entry
state. :class:`PathEncoder` keeps the state (registers, memory, ordering
points, collectives, accesses) running across the blocks of a *path* -- a
sequence of blocks the caller chooses, branch by branch -- so that one loop
trip of an unrolled kernel, or ``n`` iterations of the original loop, are
one set of terms from one shared entry state (:mod:`ptxopt.equivalence.prove.loop_sim`).

The entry state is named by a ``tag`` shared by both kernels (registers
``in.<tag>.<name>``, memories ``mem.<tag>.<space>.<epoch>``, results of the
``k``-th ordering point ``ev.<tag>.<k>...``): the same names in both, which
is the simulation's hypothesis that both kernels are in the same state at
the cut point. The instructions' meaning is :mod:`.encode`'s, unchanged.
"""

from __future__ import annotations

from ptxopt import opcodes, operand_facts
from ptxopt.equivalence.prove.smt.encode import SPACES, BlockEncoder, BlockTerms, Unsupported


class PathEncoder(BlockEncoder):
    """A :class:`BlockEncoder` whose state runs on across blocks."""

    def begin(self, tag: str) -> None:
        """Start a path at a cut point whose entry state is named ``tag``."""
        self.b = tag
        self.regs = {}
        self.epoch = 0
        self.mem = {}
        self.out = BlockTerms(self.regs, self.mem)

    def block(self, instructions) -> object | None:
        """Encode ``instructions`` (one block) into the running state; the
        block's final terminator is not encoded but returned (None: the block
        falls through)."""
        last = len(instructions) - 1
        for k, ins in enumerate(instructions):
            if k == last and ins.opcode in opcodes.TERMINATORS:
                return ins
            try:
                self._step(ins)
            except Unsupported as e:
                raise Unsupported(f"line {ins.line}: {ins.full_opcode}: {e}") from None
        return None

    def branch(self, ins) -> tuple[str | None, str | None]:
        """(condition, target label) of a terminator: the 1-bit term under
        which it is taken (None: always) and, for ``bra``, its label (None for
        ``ret``/``exit``/``trap``). ``brx`` is :class:`Unsupported`."""
        if ins.opcode == "brx":
            raise Unsupported(f"line {ins.line}: an indirect branch (brx.idx)")
        try:
            cond = self.guard(ins)
        except Unsupported as e:
            raise Unsupported(f"line {ins.line}: {ins.full_opcode}: {e}") from None
        if ins.opcode != "bra":
            return cond, None
        labels = operand_facts.facts(ins).labels
        if not labels:
            raise Unsupported(f"line {ins.line}: a branch without a label")
        return cond, labels[0]

    def snapshot(self) -> BlockTerms:
        """The state now (copies: the encoder may run on); ``memory`` has every space."""
        o = self.out
        return BlockTerms(dict(self.regs), {s: self.memory(s) for s in SPACES}, list(o.events),
                          list(o.collectives), list(o.accesses))


__all__ = ["PathEncoder"]
