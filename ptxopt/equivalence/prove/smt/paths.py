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
the cut point. The instructions' meaning is :mod:`.encode`'s, with two
additions: ``mma``/``wmma.mma`` (which :mod:`.encode` refuses as float operations it
does not model) are warp-wide instructions: a lane's result depends on the other
lanes' registers, so both kernels must run the same set of them, with the same
operand terms (:meth:`~.encode.BlockEncoder._warp_wide`; a form without
``.sync.aligned``: an ordered collective); ``cvt`` packing two floats into a pair
(``cvt.rn.f16x2.f32``) and the integer operations :mod:`.encode` does not
model (``prmt``, ``lop3``, ``popc``... :data:`_OPAQUE_INT`) are
uninterpreted functions keyed by the whole opcode, as every float operation;
and an ordering point's second address (``cp.async``'s source) is compared
as the value of its base plus offset.
"""

from __future__ import annotations

from dataclasses import replace

from ptxopt.ptx import opcodes, operand_facts
from ptxopt.equivalence.prove.smt.encode import SPACES, BlockEncoder, BlockTerms, Unsupported
from ptxopt.equivalence.prove.smt.terms import lit
from ptxopt.ptx.ir import Addr, Reg, Sym

#: warp-level matrix multiplies: collectives (see :meth:`PathEncoder._step`)
_MATRIX = frozenset({"mma", "wmma"})
#: integer operations :mod:`.encode` does not model, each a deterministic function of its operands'
#: bits in one thread: an uninterpreted function keyed by the whole opcode (equal only for the same
#: operation on the same bits). Not ``div``/``rem`` (a zero divisor's result is not specified).
_OPAQUE_INT = frozenset({"prmt", "bfi", "bfind", "brev", "clz", "popc", "lop3", "shf", "dp4a", "dp2a", "sad",
                         "mul24", "mad24", "bmsk", "szext"})


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

    # -- what this encoder adds to :mod:`.encode` ------------------------------------------

    def _step(self, ins) -> None:
        """As :meth:`BlockEncoder._step`, but a warp-level matrix multiply
        (``mma``, ``wmma.mma``) is a warp-wide instruction, not a float
        operation: each thread's result depends on the other lanes' registers
        (module doc)."""
        if ins.opcode in _MATRIX:
            f = operand_facts.facts(ins)
            if f.role == "pure":
                if opcodes.is_warp_aligned(ins):
                    self._warp_wide(ins, f)
                else:
                    self._collective(ins, f)
                return
        if ins.opcode == "cvt" and len(ins.operands) == 3:
            self._pack(ins)
            return
        if ins.opcode in _OPAQUE_INT and not opcodes.writes_carry(ins):
            f = operand_facts.facts(ins)
            if f.role == "pure" and len(f.dests) == 1 and f.dests[0] is not None:
                srcs = [self._any(o) for o in ins.operands[f.ndest:]]
                d = f.dests[0]
                self.write(d, self.q.uf(ins.full_opcode, srcs, self.width(d)), self.guard(ins))
                return
        super()._step(ins)

    def _pack(self, ins) -> None:
        """``cvt.<rnd>.f16x2.f32 d, a, b`` (two floats packed into one pair):
        an uninterpreted function of both operands' bits keyed by the whole
        opcode, as :mod:`.encode` gives every float operation."""
        types = [m for m in ins.modifiers if m in opcodes.TYPE_BITS]
        if len(types) != 2 or not types[0].endswith("x2"):
            raise Unsupported("cvt shape")
        f = operand_facts.facts(ins)
        if len(f.dests) != 1:
            raise Unsupported("cvt shape")
        src = [self.read(o, types[1]) for o in ins.operands[1:]]
        self.write(f.dests[0], self.q.uf(ins.full_opcode, src, opcodes.TYPE_BITS[types[0]]), self.guard(ins))

    def _any(self, o) -> str:
        """An ordering point's operand; an address other than the one the walker
        reads (``cp.async``'s second) as the value of its base plus offset."""
        if type(o) is Addr:
            return self._address_value(o)
        return super()._any(o)

    def _address_value(self, a) -> str:
        q = self.q
        if a.extra:
            raise Unsupported("an address with extra items")
        b = a.base
        if type(b) is Reg:
            v, w = self.reg(b.name), self.width(b.name)
        elif type(b) is Sym and b.index is None:
            v, w = q.var(f"sym.{b.name}.64", 64), 64
            a = replace(a, offset=a.offset + b.offset)
        else:
            v, w = q.define(lit(0, 64), 64), 64
            imm = operand_facts.immediate(b)
            if type(imm) is not int:
                raise Unsupported("an address form not modelled")
            a = replace(a, offset=a.offset + imm)
        return q.define(f"(bvadd {v} {lit(a.offset, w)})", w) if a.offset % (1 << w) else v

    def snapshot(self) -> BlockTerms:
        """The state now (copies: the encoder may run on); ``memory`` has every space."""
        o = self.out
        return BlockTerms(dict(self.regs), {s: self.memory(s) for s in SPACES}, list(o.events),
                          list(o.collectives), list(o.accesses), warp_wide=list(o.warp_wide))


__all__ = ["PathEncoder"]
