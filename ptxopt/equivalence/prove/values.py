"""The hash-consed value graph both kernels are executed into.

Why hash-consing: the prover runs the original and the candidate into *one*
graph, so two values are the same expression exactly when they are the same
node id. Comparing a live-out register, a store or a branch condition is an
integer comparison, whatever the size of the expression behind it.

A node is a tuple ``(kind, *args)``; its id is its index in
:attr:`Graph.nodes`. What each kind's arguments are is fixed by the kind, so
an int argument is unambiguous (a node id in one kind, a constant in another):

=========  ===================================================================
``imm``    ``(imm, key)``: an immediate, ``key`` canonical for its literal form
``int``    ``(int, value)``: an integer the prover computed (folded), unsigned
           at the width of the instruction that produced it
``sym``    ``(sym, name)``: the address of a variable/parameter, or a label
``sreg``   ``(sreg, name)``: a special register that does not change while the
           kernel runs (``%tid.x``; clocks are events, not values)
``livein`` ``(livein, block, name)``: a register's value at a block's entry,
           shared by both kernels (the induction hypothesis)
``op``     ``(op, key, *operands)``: a pure instruction; ``key`` is the opcode
           with every modifier that changes the result (``.rn``, ``.sat``,
           ``.ftz``, ``.wide``, the types...) so they are part of the operator
``proj``   ``(proj, node, i)``: result ``i`` of a multi-result node
``ite``    ``(ite, guard, then, else)``: a guarded register update
``guard``  ``(guard, pred, negated)``
``vec``    ``(vec, *items)``: a braced source operand ``{%r1, %r2}``
``addr``   ``(addr, base, offset)``: ``base`` a node, ``offset`` an int
``load``   ``(load, key, addr, size, epoch, deps)``: see :mod:`.memory_versions`
``store``  ``(store, key, addr, size, value, guard, epoch, deps)``
``event``  ``(event, key, operands, guard, state)``: an ordering point
``coll``   ``(coll, key, operands, guard, epoch, prev)``: a warp collective
``mem``    ``(mem, epoch, stores)``: the memory after a run of a block
=========  ===================================================================

Nothing is rewritten unless it is provably the same function: integer
``add``/``sub``/``mul.lo``/``and``/``or``/``xor``/``shl`` of two constants
fold at the instruction's declared width (wraparound), and a 64-bit ``add``
of a constant folds into an address offset (addresses wrap at 64 bits too).
Floating point is never folded or reassociated, and no operator is treated
as commutative: ``fma(a, b, c)`` and ``fma(b, a, c)`` are different nodes,
which costs proofs, never soundness.
"""

from __future__ import annotations

from ptxopt.ptx.opcodes import TYPE_BITS

# Integer operators folded on constants: (name, modifiers allowed besides the type).
_FOLD = {
    "add": (), "sub": (), "and": (), "or": (), "xor": (), "shl": (), "mul": ("lo",),
}
_INT_TYPES = frozenset(f"{k}{w}" for k in "bus" for w in (16, 32, 64))


class Graph:
    """One hash-consing table: equal tuples get one id."""

    __slots__ = ("nodes", "table")

    def __init__(self) -> None:
        self.nodes: list[tuple] = []
        self.table: dict[tuple, int] = {}

    def __len__(self) -> int:
        return len(self.nodes)

    def node(self, *key) -> int:
        i = self.table.get(key)
        if i is None:
            i = self.table[key] = len(self.nodes)
            self.nodes.append(key)
        return i

    def kind(self, i: int) -> str:
        return self.nodes[i][0]

    # -- constructors -----------------------------------------------------

    def imm(self, imm) -> int:
        return self.node("imm", imm_key(imm))

    def const(self, value: int) -> int:
        return self.node("int", value)

    def op(self, key: str, operands: tuple[int, ...]) -> int:
        folded = self._fold(key, operands)
        if folded is not None:
            return folded
        return self.node("op", key, *operands)

    def ite(self, guard: int, then: int, other: int) -> int:
        if then == other:
            return then  # both arms the same value: the guard cannot matter
        return self.node("ite", guard, then, other)

    def addr(self, base: int, offset: int) -> int:
        """``base + offset`` as an address, with 64-bit constant adds folded in."""
        for _ in range(64):
            n = self.nodes[base]
            if n[0] == "op" and len(n) == 4 and n[1] in ("add.s64", "add.u64", "add.b64"):
                c = self.int_value(n[3])
                if c is not None:
                    base, offset = n[2], (offset + c) % (1 << 64)
                    continue
            break
        return self.node("addr", base, _signed64(offset))

    # -- constants ----------------------------------------------------------

    def int_value(self, i: int) -> int | None:
        """The integer a node is known to hold, as written (not truncated)."""
        n = self.nodes[i]
        if n[0] == "int":
            return n[1]
        if n[0] == "imm" and n[1][0] == "i":
            return n[1][1]
        return None

    def _fold(self, key: str, operands: tuple[int, ...]) -> int | None:
        if len(operands) != 2:
            return None
        name, *mods = key.split(".")
        allowed = _FOLD.get(name)
        if allowed is None or len(mods) != len(allowed) + 1 or mods[:-1] != list(allowed) \
                or mods[-1] not in _INT_TYPES:
            return None
        a, b = self.int_value(operands[0]), self.int_value(operands[1])
        if a is None or b is None:
            return None
        w = TYPE_BITS[mods[-1]]
        mask = (1 << w) - 1
        a &= mask
        if name == "shl":
            b &= 0xFFFFFFFF  # the shift amount is a .u32 whatever the type
            r = (a << b) if b < w else 0
        else:
            b &= mask
            r = {"add": a + b, "sub": a - b, "and": a & b, "or": a | b, "xor": a ^ b,
                 "mul": a * b}[name]
        return self.const(r & mask)

    # -- printing -------------------------------------------------------------

    def show(self, i: int, depth: int = 3) -> str:
        """A short human-readable form of node ``i`` (for reasons)."""
        n = self.nodes[i]
        k = n[0]
        if k == "imm":
            return str(n[1][-1])
        if k == "int":
            return str(n[1])
        if k in ("sym", "sreg"):
            return n[1]
        if k == "livein":
            return f"{n[2]}@entry"
        if depth <= 0:
            return "..."
        if k == "op":
            return f"{n[1]}(" + ", ".join(self.show(x, depth - 1) for x in n[2:]) + ")"
        if k == "addr":
            return f"[{self.show(n[1], depth - 1)}{'+' + str(n[2]) if n[2] else ''}]"
        if k == "load":
            return f"ld.{n[1]}{self.show(n[2], depth - 1)}"
        if k == "proj":
            return f"{self.show(n[1], depth - 1)}#{n[2]}"
        if k == "ite":
            return f"({self.show(n[1], depth - 1)} ? {self.show(n[2], depth - 1)} : " \
                   f"{self.show(n[3], depth - 1)})"
        if k == "guard":
            return ("!" if n[2] else "") + self.show(n[1], depth - 1)
        return f"<{k}>"


def _signed64(x: int) -> int:
    x %= 1 << 64
    return x - (1 << 64) if x >= 1 << 63 else x


def imm_key(imm) -> tuple:
    """A canonical key for an immediate operand (:class:`~ptxopt.ptx.ir.Imm`):
    equal keys mean equal literals.

    Integers by value; ``0f``/``0d`` literals by their bit pattern (so NaN
    payloads are kept); decimal floats by their exact double value. Forms
    that could mean the same number differently written (``1.0`` and
    ``0f3F800000``) get different keys: that only costs a proof."""
    t = imm.text.strip()
    body = t[1:] if t.startswith("-") else t
    low = body[:2].lower()
    if low in ("0f", "0d"):
        return (low, t.startswith("-"), int(body[2:], 16))
    try:
        v = imm.value()
    except Exception:  # noqa: BLE001 - an unreadable literal is kept as text
        return ("t", t)
    if isinstance(v, float):
        return ("x", v.hex())
    return ("i", int(v))
