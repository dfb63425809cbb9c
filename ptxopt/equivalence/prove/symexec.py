"""Symbolic execution of one basic block into the shared value graph.

A block starts from the induction hypothesis: every register holds its
``livein`` node (the same node in both kernels), memory is the block's entry
memory. Each instruction then updates a register map and the block's
:class:`~ptxopt.equivalence.prove.memory_versions.MemoryState`:

* **pure** instructions (:func:`ptxopt.ptx.operand_facts.role`) become ``op`` nodes
  whose key is the full opcode, so rounding, saturation, ``.ftz``, ``.wide``
  and the types are part of the operator; a register-to-register ``mov`` of
  one width is the identity;
* ``ld``/``st`` are split into per-lane scalar accesses at ``address +
  lane * element size`` (a ``.v4`` load and its four scalar loads give the
  same nodes); cache operators and eviction hints are not part of the key
  (:func:`ptxopt.ptx.opcodes.is_perf_hint`: they change no value), ``.nc``,
  the space and the type are;
* ``prefetch`` changes nothing; it is recorded as an access so that the
  matcher can check it touches only bytes the original block accesses;
* everything else -- barriers, fences, atomics, volatile or ordered
  accesses, calls, clock reads, textures, any opcode ptxopt does not know --
  is an **ordering point**: an ``event`` node holding its operands, its guard
  and the whole memory before it; its results are projections of it;
* warp collectives (``shfl``, ``vote``...) form their own ordered chain;
* a warp-wide ``.sync.aligned`` read of shared memory (``ldmatrix``,
  :data:`ptxopt.ptx.opcodes.WARP_ALIGNED_READS`) is a ``wread`` node of its
  operands, its guard, the epoch and *every* store of the segment that may
  alias its space (its rows' addresses come from other lanes, so no offset
  rules them out): it moves freely among loads, collectives and stores to
  other spaces, and not across a store it may see or an ordering point. Its
  nodes are part of the block's collective observable, as a set (the same
  reads, in any order, each seeing the same memory), so a dead one is still
  compared (it can fault);
* a guard ``@p``/``@!p`` makes a register write an ``ite`` and is part of
  store, event and collective nodes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ptxopt.ptx import opcodes, operand_facts

# operand node types: only val/address, which evaluate operands (everything else reads operand_facts)
from ptxopt.ptx.ir import Addr, Imm, Instruction, Neg, Pair, ParenList, Reg, Sym, Vec
from ptxopt.equivalence.prove.memory_versions import MemoryState
from ptxopt.equivalence.prove.values import Graph

_LANE_SPLIT = frozenset({"ld", "ldu", "st"})
_VECTOR_MODS = frozenset(opcodes.VECTOR_WIDTH)
# ``ld.lu`` on a local address may discard the line after reading it (PTX ISA
# "Cache Operators": last use), so a later read of it is undefined: adding or
# removing ``.lu`` is not modelled as value-preserving, it stays in the key.
_LAST_USE = "lu"


@dataclass(slots=True)
class Access:
    """One memory lane (or a prefetch), for the matcher's fault check.

    ``vector``: for a lane of a ``.v2``/``.v4`` access, ``(address node of
    the whole vector, total bytes, base operand, offset as written)``; None
    for scalars. ``base``/``offset``: the instruction's address operand as
    written (the walker's base ``(kind, name)`` and offset), for the alignment analysis."""

    kind: str  # "ld", "st" or "prefetch"
    space: str
    addr: int
    size: int
    guard: int | None
    epoch: int  # the last ordering point before it: an access never crosses one
    vector: tuple | None = None
    base: object = None
    offset: int = 0


@dataclass(slots=True)
class BlockRun:
    regs: dict[str, int]
    memory: int  # the mem node at the end of the block
    collectives: int  # the last collective (or the block's collective entry)
    terminator: tuple | None
    accesses: list[Access] = field(default_factory=list)


def semantic_key(ins: Instruction, lanes: bool = False) -> str:
    """The opcode with the modifiers that can change a value: cache operators
    and cache-policy qualifiers of ``ld``/``ldu``/``st`` are dropped, and so
    are vector widths when the access is split into lanes (``lanes``)."""
    if ins.opcode in opcodes.CACHE_ANNOTATED:
        mods = [m for m in ins.modifiers
                if (m == _LAST_USE or not opcodes.is_perf_hint(m)) and not (lanes and m in _VECTOR_MODS)]
        return ".".join([ins.opcode, *mods])
    return ins.full_opcode


class BlockExecutor:
    """Runs blocks of one function of one kernel (see the module doc)."""

    def __init__(self, graph: Graph, oracle, reg_bits) -> None:
        self.g = graph
        self.oracle = oracle
        self.reg_bits = reg_bits  # register name -> declared width in bits (or None)

    def begin(self, tag, regs: dict[str, int] | None = None) -> None:
        """Fresh state for a run from ``tag``'s entry (a block index, or a
        path's tag): its ``entry`` memory and ``centry`` collective nodes,
        registers ``regs`` (else each reads its ``livein`` node), no reads or
        accesses yet."""
        self.block = tag
        self.regs: dict[str, int] = dict(regs or {})
        self.mem = MemoryState(self.g, self.oracle, self.g.node("entry", tag))
        self.coll = self.g.node("centry", tag)
        self.warp_reads: set[int] = set()
        self.accesses: list[Access] = []

    def run(self, block_index: int, instructions: list[Instruction]) -> BlockRun:
        self.begin(block_index)
        terminator = None
        last = len(instructions) - 1
        for k, ins in enumerate(instructions):
            if k == last and ins.opcode in opcodes.TERMINATORS:
                terminator = self._terminator(ins)
                break
            self._step(ins)
        return BlockRun(self.regs, self.mem.state(), self.collectives(), terminator, self.accesses)

    def collectives(self) -> int:
        """The collective observable: the ordered chain, with the set of warp-wide reads when there are any."""
        if not self.warp_reads:
            return self.coll
        return self.g.node("cwith", self.coll, frozenset(self.warp_reads))

    # -- operands -----------------------------------------------------------

    def reg(self, name: str) -> int:
        v = self.regs.get(name)
        if v is None:
            if opcodes.is_special_reg(name):
                return self.g.node("sreg", name)
            v = self.g.node("livein", self.block, name)
        return v

    def val(self, o) -> int:
        g = self.g
        t = type(o)
        if t is Reg:
            return self.reg(o.name)
        if t is Imm or isinstance(o, Imm):
            return g.imm(o)
        if t is Sym:
            if o.offset == 0 and o.index is None:
                return g.node("sym", o.name)
            return g.node("symx", o.name, o.offset, o.index)
        if t is Neg:
            return g.node("not", self.reg(o.reg.name))
        if t is Vec:
            return g.node("vec", *(self.val(i) for i in o.items))
        if t is Pair:
            return g.node("vec", self.val(o.first), self.val(o.second))
        if t is Addr:
            return self.address(o)
        if t is ParenList:
            return g.node("list", *(self.val(i) for i in o.items))
        return g.node("opaque", str(o))

    def address(self, a: Addr) -> int:
        g = self.g
        if a.extra:
            return g.node("addrx", self.val(a.base), a.offset, tuple(self.val(e) for e in a.extra))
        b = a.base
        t = type(b)
        if t is Reg:
            return g.addr(self.reg(b.name), a.offset)
        if t is Sym:
            if b.index is not None:
                return g.node("addrx", self.val(b), a.offset, ())
            return g.addr(g.node("sym", b.name), a.offset + b.offset)
        try:
            return g.addr(g.node("abs"), int(b.value()) + a.offset)
        except (TypeError, ValueError):
            return g.node("addrx", self.val(b), a.offset, ())

    def guard(self, ins: Instruction) -> int | None:
        if ins.guard is None:
            return None
        return self.g.node("guard", self.reg(ins.guard), ins.guard_neg)

    def write(self, name: str, value: int, guard: int | None) -> None:
        if guard is not None:
            value = self.g.ite(guard, value, self.reg(name))
        self.regs[name] = value

    # -- instructions ---------------------------------------------------------

    def _step(self, ins: Instruction) -> None:
        op = ins.opcode
        f = operand_facts.facts(ins)
        a = f.address
        if op in opcodes.PREFETCHES and ins.modifiers and ins.modifiers[0] in ("global", "local") \
                and len(ins.operands) == 1 and a is not None and a.kind != "other":
            self.accesses.append(Access("prefetch", a.space, self.address(a.operand), 1, self.guard(ins),
                                        self.mem.epoch))
            return
        # the walker makes a read of %clock/%warpid... (at any depth) an ordering point
        role = f.role
        if op in opcodes.WARP_ALIGNED_READS and role == "load" and self._warp_read(ins):
            return
        if role == "pure":
            self._pure(ins)
        elif role == "collective":
            self._collective(ins)
        elif op in _LANE_SPLIT and role in ("load", "store") and self._lanes(ins, role):
            return
        else:
            self._event(ins)

    def _pure(self, ins: Instruction) -> None:
        ops = ins.operands
        f = operand_facts.facts(ins)
        n = f.ndest
        guard = self.guard(ins)
        dests = f.dests
        if ins.opcode == "mov" and len(ops) == 2:
            d, src = operand_facts.reg_name(ops[0]), operand_facts.reg_name(ops[1])
            if d is not None and src is not None and not opcodes.is_special_reg(src):
                t = opcodes.value_type(ins)
                w = opcodes.TYPE_BITS.get(t) if t else None
                if w is not None and self.reg_bits(d) == w == self.reg_bits(src):
                    self.write(d, self.reg(src), guard)
                    return
        srcs = tuple(self.val(o) for o in ops[n:])
        if ins.opcode in opcodes.CARRY_IN:
            srcs += (self.reg(opcodes.CARRY_FLAG),)
        if ins.opcode in opcodes.ACCUMULATES_IN_PLACE:
            srcs += tuple(self.reg(d) for d in dests if d)
        value = self.g.op(ins.full_opcode, srcs)
        carry = opcodes.writes_carry(ins)
        if len(dests) == 1 and not carry:
            if dests[0] is not None:
                self.write(dests[0], value, guard)
            return
        for i, d in enumerate(dests):
            if d is not None:
                self.write(d, self.g.node("proj", value, i), guard)
        if carry:
            self.write(opcodes.CARRY_FLAG, self.g.node("proj", value, "cc"), guard)

    def _collective(self, ins: Instruction) -> None:
        f = operand_facts.facts(ins)
        guard = self.guard(ins)
        srcs = tuple(self.val(o) for o in ins.operands[f.ndest:])
        self.coll = self.g.node("coll", ins.full_opcode, srcs, guard, self.mem.epoch, self.coll)
        self._results(self.coll, f.dests, guard)

    def _warp_read(self, ins: Instruction) -> bool:
        """An ``ldmatrix.sync.aligned`` as a ``wread`` node (module doc); False
        for any other shape (then it is an ordering point, as before)."""
        f = operand_facts.facts(ins)
        if not opcodes.is_warp_aligned(ins) or f.address is None:
            return False
        guard = self.guard(ins)
        srcs = tuple(self.val(o) for o in ins.operands[f.ndest:])
        node = self.g.node("wread", ins.full_opcode, srcs, guard, self.mem.epoch, self.mem.space_deps(f.address.space))
        self.warp_reads.add(node)
        self._results(node, f.dests, guard)
        return True

    def _lanes(self, ins: Instruction, role: str) -> bool:
        """A weak ``ld``/``ldu``/``st`` as per-lane scalar accesses; False when
        its shape is not the plain one (then it is an ordering point)."""
        ops = ins.operands
        t = opcodes.value_type(ins)
        if len(ops) != 2 or t is None or t == "pred":
            return False
        store = role == "store"
        a, v = (ops[0], ops[1]) if store else (ops[1], ops[0])
        fa = operand_facts.address(ins)
        if fa is None or fa.operand is not a or fa.kind == "other":
            return False
        width = opcodes.vector_width(ins)
        vec = operand_facts.vector_items(v)
        items = vec if vec is not None else (v,)
        if len(items) != width or (width > 1 and vec is None):
            return False  # (a braced single register, Triton's ``{ %r1 }``, is that register)
        size = max(1, opcodes.TYPE_BITS[t] // 8)
        space = fa.space
        for item in items:
            if not (operand_facts.reg_name(item) is not None or (store and operand_facts.is_immediate(item))
                    or (not store and operand_facts.is_sink(item))):
                return False
        key = semantic_key(ins, lanes=True)
        guard = self.guard(ins)
        base = self.address(a)
        bn = self.g.nodes[base]
        vector = (base, size * width, (fa.kind, fa.name), fa.offset) if width > 1 else None
        kind = "st" if store else "ld"
        if store:
            values = [self.val(i) for i in items]
        for lane, item in enumerate(items):
            addr = self.g.addr(bn[1], bn[2] + lane * size) if lane else base
            self.accesses.append(Access(kind, space, addr, size, guard, self.mem.epoch, vector, (fa.kind, fa.name),
                                        fa.offset))
            if store:
                self.mem.store(key, space, addr, size, values[lane], guard)
            elif operand_facts.reg_name(item) is not None:
                self.write(item.name, self.mem.load(key, space, addr, size), guard)
        return True

    def _event(self, ins: Instruction) -> None:
        f = operand_facts.facts(ins)
        guard = self.guard(ins)
        dests = f.dests
        vals = tuple(self.val(o) for o in ins.operands[f.ndest:])
        reads = tuple(self.reg(r) for r in f.uses if r != ins.guard)
        e = self.mem.event(semantic_key(ins), (vals, reads), guard)
        self._results(e, dests, guard)
        if ins.opcode in opcodes.CARRY_CLOBBERS:
            # the carry flag is not preserved across a call: an addc after it reads something else
            self.write(opcodes.CARRY_FLAG, self.g.node("proj", e, "cc"), guard)

    def _results(self, node: int, dests, guard: int | None) -> None:
        """Each destination register of ``dests`` (None: a sink) gets its projection of ``node``."""
        for i, d in enumerate(dests):
            if d is not None:
                self.write(d, self.g.node("proj", node, i), guard)

    def _terminator(self, ins: Instruction) -> tuple:
        ops = tuple(("label", n) if (n := operand_facts.label_name(o)) is not None else self.val(o)
                    for o in ins.operands)
        return (ins.full_opcode, ops, self.guard(ins))
