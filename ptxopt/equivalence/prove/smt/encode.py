"""Bit-vector semantics of one straight-line PTX block, as SMT terms.

This is the part of the SMT check that does *not* share code with the
structural prover (:mod:`ptxopt.equivalence.prove.symexec`/:mod:`~ptxopt.equivalence.prove.values`):
each instruction is read from the PTX (its operand facts from
:mod:`ptxopt.ptx.operand_facts`, as everywhere) and given its meaning here.

What a block is, as terms:

* **registers**: every register holds a bit-vector of its declared width
  (predicates and the carry flag: 1 bit). At block entry a register holds the
  free variable ``in.<block>.<name>``, the same variable in both kernels (the
  induction hypothesis of :mod:`ptxopt.equivalence.prove.match`).
* **integer, bit and predicate operations** at the instruction's type width,
  wrapping; ``shl``/``shr`` shift by a ``.u32`` amount (an amount at least the
  width gives 0, or the sign for ``shr.s``); ``mul.hi``/``.wide`` through a
  double-width product; ``add.cc``/``addc``/``sub.cc``/``subc``/``mad.cc``/``madc``
  through the carry flag (``sub`` sets it on a borrow, as ``subc`` consumes
  it: ``d = a - (b + CF)``).
* **floating point** (and anything a float type touches: ``cvt`` to or from a
  float, ``setp`` on floats) is an uninterpreted function keyed by the
  opcode with *all* its modifiers and the operand widths: equal only for the
  same operator on the same bits, in the same operand order; no identity of
  real arithmetic is assumed. ``mov``, ``selp`` and loads/stores of floats move
  bits and are exact.
* **memory**: one byte array per state space, and one more, ``global.nc``,
  that every read-only load reads (:data:`ptxopt.ptx.opcodes.READ_ONLY_LOADS`:
  ``ld.global.nc``, ``ldu``), untouched by stores (``global``, ``shared``,
  ``local``, ``param``, ``const``: distinct memories), indexed by the address
  modulo the space's address width (32 bits for ``shared``/``local``: an
  address in a 64-bit register is truncated, which can only make two
  accesses *more* likely to alias), little-endian. Generic addresses, which
  may point into several of them, are ``unsupported``.
* **warp-wide instructions** (``.sync.aligned``: the whole warp executes the
  same instruction, by the ISA): ``ldmatrix`` (:data:`ptxopt.ptx.opcodes.WARP_ALIGNED_READS`)
  reads rows of shared memory that other lanes address, and ``mma`` (in
  :mod:`.paths`) multiplies fragments that other lanes hold, so a lane's
  result is not a function of its own operands. Each is recorded with its
  operands, guard and (a read) the memory of its space
  (:attr:`BlockTerms.warp_wide`); its results are free variables named by
  exactly those *terms* (:meth:`Query.content_id`), so two of them share
  results only when their inputs are the same terms -- equal in every state
  of every lane, not merely equal in one lane's state (which would let the
  solver equate two whose other lanes differ). The checker requires the same
  set of them in both kernels, in any order (as
  :mod:`ptxopt.equivalence.prove.symexec`'s ``wread``): they move among loads,
  collectives, each other and stores to other spaces, but a read not across a
  store to its space (another memory term) or an ordering point (a fresh
  memory). Shuffles stay an ordered chain: ``shfl.sync`` is not ``.aligned``,
  so threads at two different shuffles may pair.
* **ordering points** (barriers, fences, atomics, volatile accesses, calls,
  collectives, clock reads, any opcode not given a meaning here that the
  walker does not call pure): recorded with their operands, guard and the
  memory before them; after one, every space's memory and every result is a
  fresh variable, the same in both kernels, indexed by its position. The
  checker then requires both kernels to reach the same ordering points with
  the same operands and memory.

Anything else -- an opcode, modifier, operand form or width mix this module
does not model -- raises :class:`Unsupported`: never a guess.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from ptxopt.ptx import opcodes, operand_facts
from ptxopt.equivalence.prove.smt.terms import Query, lit

SPACES = {"global": 64, "shared": 32, "local": 32, "param": 64, "const": 64, "global.nc": 64}
_FLOAT = frozenset({"f16", "f16x2", "bf16", "bf16x2", "tf32", "f32", "f64", "e4m3", "e5m2", "e4m3x2", "e5m2x2"})
_FLOAT_OPS = frozenset({"add", "sub", "mul", "fma", "mad", "div", "rcp", "sqrt", "rsqrt", "ex2", "lg2", "sin",
                        "cos", "tanh", "min", "max", "abs", "neg", "copysign"})
_INT_CMP = {"eq": "=", "ne": "distinct", "lt": "bvslt", "le": "bvsle", "gt": "bvsgt", "ge": "bvsge",
            "lo": "bvult", "ls": "bvule", "hi": "bvugt", "hs": "bvuge"}
_UNSIGNED_CMP = {"lt": "bvult", "le": "bvule", "gt": "bvugt", "ge": "bvuge"}
_BOOL_OPS = {"and": "bvand", "or": "bvor", "xor": "bvxor"}
_LANE_OPS = frozenset({"ld", "ldu", "st"})
CARRY = opcodes.CARRY_FLAG


class Unsupported(Exception):
    """A construct the SMT encoding does not model (the message says which)."""


@dataclass
class Event:
    key: str
    labels: tuple
    operands: list[str]
    guard: str | None
    memory: dict[str, str]
    line: int


@dataclass
class Access:
    """One load, store or prefetch instruction, for the fault obligations:
    ``size`` bytes at ``addr`` in ``space`` (a vector: the whole vector, which
    must be aligned to ``size``; a prefetch: 1 byte, no alignment) under
    ``guard``, after ``epoch`` ordering points of its block."""

    kind: str  # "ld", "st" or "prefetch"
    space: str
    size: int
    epoch: int
    addr: str
    guard: str | None
    values: list = field(default_factory=list)  # the lanes' values (for counterexamples only)


@dataclass
class BlockTerms:
    regs: dict[str, str]
    memory: dict[str, str]
    events: list[Event] = field(default_factory=list)
    collectives: list[Event] = field(default_factory=list)
    accesses: list[Access] = field(default_factory=list)
    terminator: tuple | None = None
    warp_wide: list[Event] = field(default_factory=list)


def _identity(e: Event) -> tuple:
    """What a warp-wide instruction's results are a function of: its opcode,
    operand, guard and memory terms (its results' names and the set compared
    by :func:`warp_wide_differ` both come from this one tuple)."""
    return (e.key, tuple(e.operands), e.guard, tuple(e.memory.items()))


def warp_wide_differ(ro: BlockTerms, rc: BlockTerms) -> str:
    """'' when both kernels ran the same warp-wide instructions (as a set: the
    same opcode, operand, guard and memory terms, in any order), else which
    one the other lacks."""
    seen = {_identity(e) for e in ro.warp_wide}, {_identity(e) for e in rc.warp_wide}
    for mine, theirs, who, other in ((rc.warp_wide, seen[0], "candidate", "original"),
                                     (ro.warp_wide, seen[1], "original", "candidate")):
        for e in mine:
            if _identity(e) not in theirs:
                return (f"the {who}'s warp-wide {e.key.split('.')[0]} at line {e.line} ({e.key}) is not one the "
                        f"{other} makes (the same operand and guard terms{' on the same memory' if e.memory else ''})")
    return ""


def _tbits(t: str) -> int:
    return opcodes.TYPE_BITS[t]


def _kind(t: str) -> str:
    return "f" if t in _FLOAT else "p" if t == "pred" else t[0]


class BlockEncoder:
    """Encodes blocks of one function of one kernel into a shared :class:`Query`.

    ``reg_bits(name)``: a register's declared width (None: undeclared)."""

    def __init__(self, q: Query, reg_bits) -> None:
        self.q = q
        self.reg_bits = reg_bits

    # -- entry points --------------------------------------------------------------

    def run(self, block: int, instructions) -> BlockTerms:
        self.b = block
        self.regs: dict[str, str] = {}
        self.epoch = 0
        self.mem: dict[str, str] = {}
        self.out = BlockTerms(self.regs, self.mem)
        last = len(instructions) - 1
        for k, ins in enumerate(instructions):
            try:
                if k == last and ins.opcode in opcodes.TERMINATORS:
                    self.out.terminator = self._terminator(ins)
                    break
                self._step(ins)
            except Unsupported as e:
                raise Unsupported(f"line {ins.line}: {ins.full_opcode}: {e}") from None
        return self.out

    def width(self, name: str) -> int:
        if name == CARRY:
            return 1
        w = self.reg_bits(name)
        if w is None:
            raise Unsupported(f"register {name} has no declared width")
        return w

    def reg(self, name: str) -> str:
        v = self.regs.get(name)
        if v is None:
            v = self.q.var(f"in.{self.b}.{name}", self.width(name))
        return v

    def memory(self, space: str) -> str:
        m = self.mem.get(space)
        if m is None:
            m = self.q.array(f"mem.{self.b}.{space}.{self.epoch}", SPACES[space])
        return m

    # -- operands --------------------------------------------------------------------

    def read(self, o, t: str, wide: bool = False) -> str:
        """Operand ``o`` as a value of type ``t``; ``wide``: a wider register
        gives its low bits (``ld``/``st``/``cvt`` allow it)."""
        q = self.q
        w = _tbits(t)
        o = operand_facts.unbrace(o)
        r = operand_facts.reg_name(o)
        if r is not None:
            if opcodes.is_special_reg(r):
                return q.var(f"sreg.{r}.{w}", w)
            v = self.reg(r)
            rw = self.width(r)
            if rw == w:
                return v
            if wide and rw > w:
                return q.define(f"((_ extract {w - 1} 0) {v})", w)
            raise Unsupported(f"{r} is {rw} bits, read as .{t}")
        if operand_facts.is_immediate(o):
            from ptxopt.equivalence.prove.values import (
                imm_key,  # the literal's canonical reading (not a semantics)
            )

            k = imm_key(o)
            if _kind(t) == "f" or (k[0] == "0f" and w == 32) or (k[0] == "0d" and w == 64):
                return q.define(lit(_float_bits(k, w), w), w)
            if k[0] != "i":
                raise Unsupported(f"a non-integer immediate as .{t}")
            return q.define(lit(k[1], w), w)
        s = operand_facts.symbol(o)
        if s is not None and _kind(t) != "f":
            base = q.var(f"sym.{s[0]}.{w}", w)
            return q.define(f"(bvadd {base} {lit(s[1], w)})", w) if s[1] else base
        items = operand_facts.vector_items(o)
        if items is not None and len(items) > 1 and w % len(items) == 0:
            part = w // len(items)
            pt = next((f"b{part}" for _ in [0] if f"b{part}" in opcodes.TYPE_BITS), None)
            if pt is None:
                raise Unsupported("a vector of odd-width parts")
            vals = [self.read(i, pt) for i in items]
            return q.define(f"(concat {' '.join(reversed(vals))})", w)
        raise Unsupported(f"operand form not modelled as .{t}")

    def address(self, fa) -> tuple[str, str]:
        """(space, index term) of an address operand (walker facts)."""
        space = fa.space
        if space not in SPACES:
            raise Unsupported(f"{space} addresses")
        aw = SPACES[space]
        q = self.q
        if fa.kind == "reg":
            v = self.reg(fa.name)
            rw = self.width(fa.name)
            if rw > aw:
                v = q.define(f"((_ extract {aw - 1} 0) {v})", aw)
            elif rw < aw:
                raise Unsupported(f"a {rw}-bit base register for a {aw}-bit {space} address")
        elif fa.kind == "sym":
            v = q.var(f"sym.{fa.name}.64", 64)
            if aw < 64:
                v = q.define(f"((_ extract {aw - 1} 0) {v})", aw)
        elif fa.kind == "imm":
            return space, q.define(lit(fa.offset, aw), aw)
        else:
            raise Unsupported("an address form not modelled")
        return space, (q.define(f"(bvadd {v} {lit(fa.offset, aw)})", aw) if fa.offset % (1 << aw) else v)

    def guard(self, ins) -> str | None:
        if ins.guard is None:
            return None
        g = self.reg(ins.guard)
        if self.width(ins.guard) != 1:
            raise Unsupported("a guard that is not a predicate")
        return self.q.define(f"(bvnot {g})", 1) if ins.guard_neg else g

    def write(self, name: str | None, value: str, guard: str | None, signed: bool = False,
              wide: bool = False) -> None:
        if name is None:
            return
        if opcodes.is_special_reg(name):
            raise Unsupported("a write to a special register")
        rw, vw = self.width(name), self.q.width[value]
        if vw != rw:
            if not (wide and rw > vw):
                raise Unsupported(f"a {vw}-bit result into {rw}-bit {name}")
            value = self.q.define(f"((_ {'sign' if signed else 'zero'}_extend {rw - vw}) {value})", rw)
        if guard is not None:
            value = self.q.define(f"(ite (= {guard} #b1) {value} {self.reg(name)})", rw)
        self.regs[name] = value

    # -- instructions --------------------------------------------------------------------

    def _step(self, ins) -> None:
        f = operand_facts.facts(ins)
        op = ins.opcode
        if op in opcodes.PREFETCHES:
            fa = f.address
            if not (ins.modifiers and ins.modifiers[0] in ("global", "local")) or fa is None:
                raise Unsupported("a prefetch form not modelled")
            space, addr = self.address(fa)
            self.out.accesses.append(Access("prefetch", space, 1, self.epoch, addr, self.guard(ins)))
            return
        if op in opcodes.WARP_ALIGNED_READS and f.role == "load" and f.address is not None \
                and opcodes.is_warp_aligned(ins):
            self._warp_wide(ins, f)
        elif f.role == "pure":
            self._pure(ins, f)
        elif f.role in ("load", "store") and op in _LANE_OPS:
            self._access(ins, f, f.role == "store")
        elif f.role == "collective":
            self._collective(ins, f)
        else:
            self._event(ins, f)

    def _collective(self, ins, f) -> None:
        """A warp collective (``shfl``, ``vote``...): its own ordered chain, no
        memory (as in :mod:`ptxopt.equivalence.prove.symexec`); its results are fresh
        variables indexed by its position in the chain, the same in both kernels."""
        g = self.guard(ins)
        vals = [self._any(o) for o in ins.operands[f.ndest:]]
        n = len(self.out.collectives)
        self.out.collectives.append(Event(ins.full_opcode, (), vals, g, {}, ins.line))
        for i, d in enumerate(f.dests):
            if d is not None:
                self.write(d, self.q.var(f"coll.{self.b}.{n}.{i}.{d}", self.width(d)), g)

    def _warp_wide(self, ins, f) -> None:
        """A ``.sync.aligned`` warp-wide instruction (module doc): no ordering
        point, no lane access; its results are named by its opcode, operand,
        guard and (a read: ``f.address``) memory terms."""
        g = self.guard(ins)
        fa = f.address
        vals, memory = [], {}
        if fa is not None:
            space, addr = self.address(fa)
            vals.append(addr)
            memory[space] = self.memory(space)
        vals += [self._any(o) for o in ins.operands[f.ndest:] if fa is None or o is not fa.operand]
        e = Event(ins.full_opcode, (), vals, g, memory, ins.line)
        self.out.warp_wide.append(e)
        n = self.q.content_id(_identity(e))
        for i, d in enumerate(f.dests):
            if d is not None:
                self.write(d, self.q.var(f"wide.{n}.{i}.{self.width(d)}", self.width(d)), g)

    def _pure(self, ins, f) -> None:
        q = self.q
        op = ins.opcode
        mods = list(ins.modifiers)
        t = opcodes.value_type(ins)
        g = self.guard(ins)
        srcs = ins.operands[f.ndest:]
        dests = f.dests
        if t is None:
            raise Unsupported("no type")
        w = _tbits(t)
        k = _kind(t)
        if op == "mov":
            if len(srcs) != 1:
                raise Unsupported("mov shape")
            v = self.read(srcs[0], t)
            items = operand_facts.vector_items(ins.operands[0])
            if items is not None and len(items) > 1:  # unpack: mov.b64 {%r1, %r2}, %rd1
                part = w // len(items)
                for i, d in enumerate(items):
                    self.write(operand_facts.reg_name(d), q.define(
                        f"((_ extract {part * (i + 1) - 1} {part * i}) {v})", part), g)
                return
            self._one(dests, v, g)
            return
        if op == "selp":
            a, b, c = (self.read(s, x) for s, x in zip(srcs, (t, t, "pred")))
            self._one(dests, q.define(f"(ite (= {c} #b1) {a} {b})", w), g)
            return
        if op == "cvt":
            self._cvt(ins, f, g)
            return
        if op == "cvta":
            if len(srcs) != 1:
                raise Unsupported("cvta shape")
            self._one(dests, q.uf(ins.full_opcode, [self.read(srcs[0], t)], w), g)
            return
        if op == "setp":
            self._setp(ins, f, g)
            return
        if k == "f":
            if op not in _FLOAT_OPS:
                raise Unsupported("a float operation not modelled")
            self._one(dests, q.uf(ins.full_opcode, [self.read(s, t) for s in srcs], w), g)
            return
        if k == "p":
            if op in _BOOL_OPS and len(srcs) == 2:
                a, b = (self.read(s, t) for s in srcs)
                self._one(dests, q.define(f"({_BOOL_OPS[op]} {a} {b})", 1), g)
            elif op == "not" and len(srcs) == 1:
                self._one(dests, q.define(f"(bvnot {self.read(srcs[0], t)})", 1), g)
            else:
                raise Unsupported("a predicate operation not modelled")
            return
        self._integer(ins, f, g, t, w, k, mods, srcs, dests)

    def _one(self, dests, v: str, g) -> None:
        if len(dests) != 1:
            raise Unsupported("destination shape")
        self.write(dests[0], v, g)

    def _integer(self, ins, f, g, t, w, k, mods, srcs, dests) -> None:
        q = self.q
        op = ins.opcode
        flags = [m for m in mods if m != t]
        cc = opcodes.writes_carry(ins)
        if cc:
            flags.remove(opcodes.CARRY_OUT_MODIFIER)
        signed = k == "s"

        def need(allowed: set) -> None:
            bad = [m for m in flags if m not in allowed]
            if bad:
                raise Unsupported(f"modifier .{bad[0]}")

        if op in ("add", "sub", "addc", "subc"):
            need(set())
            a, b = (self.read(s, t) for s in srcs)
            cin = self.reg(CARRY) if op in ("addc", "subc") else lit(0, 1)
            self._add(dests, a, b, cin, op.startswith("sub"), cc, g, w)
            return
        if op in ("mul", "mad", "madc"):
            need({"lo", "hi", "wide"})
            if len(flags) != 1:
                raise Unsupported("mul/mad needs exactly one of .lo/.hi/.wide")
            mode = flags[0]
            a, b = (self.read(s, t) for s in srcs[:2])
            ext = "sign_extend" if signed else "zero_extend"
            p = q.define(f"(bvmul ((_ {ext} {w}) {a}) ((_ {ext} {w}) {b}))", 2 * w)
            rw = 2 * w if mode == "wide" else w
            prod = p if mode == "wide" else q.define(
                f"((_ extract {2 * w - 1 if mode == 'hi' else w - 1} {w if mode == 'hi' else 0}) {p})", w)
            if op == "mul":
                if cc:
                    raise Unsupported("mul.cc")
                self._one(dests, prod, g)
                return
            c = self.read(srcs[2], f"b{rw}")
            cin = self.reg(CARRY) if op == "madc" else lit(0, 1)
            self._add(dests, prod, c, cin, False, cc, g, rw)
            return
        if cc:
            raise Unsupported(".cc on this opcode")
        if op in ("and", "or", "xor") and len(srcs) == 2:
            need(set())
            a, b = (self.read(s, t) for s in srcs)
            self._one(dests, q.define(f"(bv{op} {a} {b})", w), g)
        elif op == "not" and len(srcs) == 1:
            need(set())
            self._one(dests, q.define(f"(bvnot {self.read(srcs[0], t)})", w), g)
        elif op == "cnot" and len(srcs) == 1:
            need(set())
            a = self.read(srcs[0], t)
            self._one(dests, q.define(f"(ite (= {a} {lit(0, w)}) {lit(1, w)} {lit(0, w)})", w), g)
        elif op == "neg" and len(srcs) == 1 and k == "s":
            need(set())
            self._one(dests, q.define(f"(bvneg {self.read(srcs[0], t)})", w), g)
        elif op in ("shl", "shr") and len(srcs) == 2:
            need(set())
            a, n = self.read(srcs[0], t), self.read(srcs[1], "u32")
            if w < 32:
                big = f"(bvuge {n} {lit(w, 32)})"
                nw = q.define(f"((_ extract {w - 1} 0) {n})", w)
            else:
                big = "false"
                nw = q.define(f"((_ zero_extend {w - 32}) {n})", w) if w > 32 else n
            if op == "shl":
                body = f"(bvshl {a} {nw})"
                over = lit(0, w)
            elif k == "s":
                body = f"(bvashr {a} {nw})"
                over = f"(bvashr {a} {lit(w - 1, w)})"
            else:
                body = f"(bvlshr {a} {nw})"
                over = lit(0, w)
            # bvshl/bvlshr/bvashr already saturate at amounts >= w at width w; narrower types
            # truncated the amount, so amounts >= w are handled before truncation
            self._one(dests, q.define(f"(ite {big} {over} {body})", w), g)
        elif op in ("min", "max") and len(srcs) == 2 and k in "us":
            need(set())
            a, b = (self.read(s, t) for s in srcs)
            cmp = ("bvslt" if signed else "bvult") if op == "min" else ("bvsgt" if signed else "bvugt")
            self._one(dests, q.define(f"(ite ({cmp} {a} {b}) {a} {b})", w), g)
        elif op == "abs" and len(srcs) == 1 and k == "s":
            need(set())
            a = self.read(srcs[0], t)
            self._one(dests, q.define(f"(ite (bvslt {a} {lit(0, w)}) (bvneg {a}) {a})", w), g)
        elif op == "bfe" and len(srcs) == 3 and k in "us" and w in (32, 64):
            need(set())
            self._one(dests, self._bfe(self.read(srcs[0], t), self.read(srcs[1], "u32"),
                                       self.read(srcs[2], "u32"), w, signed), g)
        else:
            raise Unsupported("an integer operation not modelled")

    def _bfe(self, a: str, b: str, c: str, w: int, signed: bool) -> str:
        """PTX ``bfe``: ``len`` bits from ``pos`` (both the low 8 bits of their
        operand), zero- or sign-filled above; the sign is bit
        ``min(pos + len - 1, w - 1)`` and 0 when ``len`` is 0."""
        q = self.q

        def low8(x: str) -> str:
            return q.define(f"((_ zero_extend {w - 8}) ((_ extract 7 0) {x}))", w)

        pos, ln = low8(b), low8(c)
        wl = lit(w, w)
        room = q.define(f"(ite (bvuge {pos} {wl}) {lit(0, w)} (bvsub {wl} {pos}))", w)
        n = q.define(f"(ite (bvult {ln} {room}) {ln} {room})", w)
        mask = q.define(f"(ite (bvuge {n} {wl}) {lit(-1, w)} (bvsub (bvshl {lit(1, w)} {n}) {lit(1, w)}))", w)
        field = q.define(f"(bvand (bvlshr {a} {pos}) {mask})", w)
        if not signed:
            return field
        top = q.define(f"(bvsub (bvadd {pos} {ln}) {lit(1, w)})", w)
        idx = q.define(f"(ite (bvugt {top} {lit(w - 1, w)}) {lit(w - 1, w)} {top})", w)
        sbit = q.define(f"(ite (= {ln} {lit(0, w)}) #b0 ((_ extract 0 0) (bvlshr {a} {idx})))", 1)
        return q.define(f"(ite (= {sbit} #b1) (bvor {field} (bvnot {mask})) {field})", w)

    def _add(self, dests, a, b, cin, sub, cc, g, w) -> None:
        """``a + b + cin`` or ``a - (b + cin)`` at width ``w``; the carry flag
        (the carry out, or the borrow) when ``cc``."""
        q = self.q
        za, zb, zc = (f"((_ zero_extend {n}) {x})" for n, x in ((1, a), (1, b), (w, cin)))
        if sub:
            s = q.define(f"(bvsub (bvsub {za} {zb}) {zc})", w + 1)
            cout = q.define(f"(ite (bvult {za} (bvadd {zb} {zc})) #b1 #b0)", 1)
        else:
            s = q.define(f"(bvadd (bvadd {za} {zb}) {zc})", w + 1)
            cout = q.define(f"((_ extract {w} {w}) {s})", 1)
        self._one(dests, q.define(f"((_ extract {w - 1} 0) {s})", w), g)
        if cc:
            self.write(CARRY, cout, g)

    def _cvt(self, ins, f, g) -> None:
        q = self.q
        types = [m for m in ins.modifiers if m in opcodes.TYPE_BITS]
        if len(types) != 2 or len(ins.operands) != 2:
            raise Unsupported("cvt shape")
        dt, st = types
        dw, sw = _tbits(dt), _tbits(st)
        if _kind(dt) == "f" or _kind(st) == "f":
            v = q.uf(ins.full_opcode, [self.read(ins.operands[1], st, wide=True)], dw)
            self._one(f.dests, v, g)
            return
        if _kind(dt) == "p" or _kind(st) == "p" or len(ins.modifiers) != 2:
            raise Unsupported("cvt modifiers (saturation, rounding) or predicates")
        v = self.read(ins.operands[1], st, wide=True)
        if dw > sw:
            v = q.define(f"((_ {'sign' if _kind(st) == 's' else 'zero'}_extend {dw - sw}) {v})", dw)
        elif dw < sw:
            v = q.define(f"((_ extract {dw - 1} 0) {v})", dw)
        self.write(f.dests[0] if len(f.dests) == 1 else None, v, g, signed=_kind(dt) == "s", wide=True)

    def _setp(self, ins, f, g) -> None:
        q = self.q
        t = opcodes.value_type(ins)
        mods = [m for m in ins.modifiers if m != t]
        boolop = next((m for m in mods if m in _BOOL_OPS), None)
        srcs = ins.operands[f.ndest:]
        if len(srcs) != (3 if boolop else 2) or not mods:
            raise Unsupported("setp shape")
        a, b = (self.read(s, t) for s in srcs[:2])
        if _kind(t) == "f":
            key = ".".join(["setp", *[m for m in ins.modifiers if m != boolop]])
            c = q.uf(key, [a, b], 1)
        else:
            cmp = mods[0]
            if len([m for m in mods if m != boolop]) != 1 or cmp not in _INT_CMP:
                raise Unsupported("setp modifiers")
            fn = _UNSIGNED_CMP.get(cmp, _INT_CMP[cmp]) if _kind(t) != "s" else _INT_CMP[cmp]
            c = q.define(f"(ite ({fn} {a} {b}) #b1 #b0)", 1)
        nc = q.define(f"(bvnot {c})", 1)
        if boolop:
            x = self.read(srcs[2], "pred")
            c = q.define(f"({_BOOL_OPS[boolop]} {c} {x})", 1)
            nc = q.define(f"({_BOOL_OPS[boolop]} {nc} {x})", 1)
        dests = f.dests
        if not 1 <= len(dests) <= 2:
            raise Unsupported("setp destinations")
        self.write(dests[0], c, g)
        if len(dests) == 2:
            self.write(dests[1], nc, g)

    # -- memory ------------------------------------------------------------------------

    def _access(self, ins, f, store: bool) -> None:
        q = self.q
        t = opcodes.value_type(ins)
        fa = f.address
        ops = ins.operands
        if t is None or t == "pred" or fa is None or len(ops) != 2:
            raise Unsupported("access shape")
        if "lu" in ins.modifiers:
            # ld.lu may discard the line after reading it (PTX ISA, cache operators): a later
            # read of those bytes is undefined, which a byte array does not express
            raise Unsupported(".lu (last use)")
        space, addr = self.address(fa)
        aw = SPACES[space]
        width = opcodes.vector_width(ins)
        v = ops[1] if store else ops[0]
        items = operand_facts.vector_items(operand_facts.unbrace(v)) if width > 1 else None
        items = items if items is not None else (v,)
        if len(items) != width:
            raise Unsupported("vector shape")
        w = _tbits(t)
        size = max(1, w // 8)
        if size * 8 != w:
            raise Unsupported("sub-byte types")
        g = self.guard(ins)
        access = Access("st" if store else "ld", space, size * width, self.epoch, addr, g)
        self.out.accesses.append(access)
        if not store and opcodes.is_read_only_load(ins):
            # the read-only path (every form: ld.global.nc, ldu; opcodes.READ_ONLY_LOADS): data
            # no store of this kernel reaches, so a separate memory (a read-only load and a
            # coherent one of one address are not assumed to agree)
            if space != "global":
                raise Unsupported(f"a read-only load of {space} memory")
            space = f"{space}.nc"
        m = self.memory(space)
        signed = _kind(t) == "s"
        for lane, item in enumerate(items):
            base = q.define(f"(bvadd {addr} {lit(lane * size, aw)})", aw) if lane else addr
            idx = [q.define(f"(bvadd {base} {lit(i, aw)})", aw) if i else base for i in range(size)]
            if store:
                val = self.read(item, t, wide=True)
                access.values.append(val)
                new = m
                for i, ix in enumerate(idx):
                    new = q.define(f"(store {new} {ix} ((_ extract {8 * i + 7} {8 * i}) {val}))", -aw)
                m = q.define(f"(ite (= {g} #b1) {new} {m})", -aw) if g is not None else new
            else:
                if operand_facts.is_sink(item):
                    continue
                name = operand_facts.reg_name(operand_facts.unbrace(item))
                if name is None:
                    raise Unsupported("a load into something other than a register")
                bytes_ = [f"(select {m} {ix})" for ix in idx]
                val = q.define(f"(concat {' '.join(reversed(bytes_))})" if size > 1 else bytes_[0], w)
                access.values.append(val)
                self.write(name, val, g, signed=signed, wide=True)
        if store:
            self.mem[space] = m

    def _event(self, ins, f) -> None:
        """An ordering point (module doc)."""
        q = self.q
        g = self.guard(ins)
        labels, vals = [], []
        fa = f.address
        for o in ins.operands[f.ndest:]:
            if fa is not None and o is fa.operand:
                vals.append(self.address(fa)[1])
                continue
            name = operand_facts.label_name(o)
            if name is not None:  # a label, callee or variable: the same name is the same thing
                labels.append(name)
                continue
            vals.append(self._any(o))
        # every register it reads, wherever it appears (an accumulator read in place: wgmma)
        vals += [self.reg(r) for r in f.uses if r != ins.guard and not opcodes.is_special_reg(r)]
        snapshot = {s: self.memory(s) for s in SPACES}
        self.out.events.append(Event(ins.full_opcode, tuple(labels), vals, g, snapshot, ins.line))
        self.epoch += 1
        self.mem.clear()
        for i, d in enumerate(f.dests):
            if d is not None:
                self.write(d, q.var(f"ev.{self.b}.{self.epoch}.{i}.{d}", self.width(d)), g)
        if ins.opcode in opcodes.CARRY_CLOBBERS:
            self.write(CARRY, q.var(f"ev.{self.b}.{self.epoch}.cc", 1), g)

    def _any(self, o) -> str:
        """An operand of an ordering point, at its own width (immediates: 64 bits)."""
        r = operand_facts.reg_name(operand_facts.unbrace(o))
        if r is not None:
            # a special register read by an ordering point (a clock): the same read in both
            # kernels, since both must reach the same ordering points in the same order
            return self.q.var(f"sreg.{r}.{self.b}.{self.epoch}", 64) if opcodes.is_special_reg(r) else self.reg(r)
        if operand_facts.is_immediate(o):
            return self.read(o, "b64")
        items = operand_facts.vector_items(o)
        if items is not None:
            return self.q.define(f"(concat {' '.join(self._any(i) for i in items)})",
                                 sum(self.q.width[self._any(i)] for i in items))
        raise Unsupported("an ordering point's operand form")

    def _terminator(self, ins) -> tuple:
        ops = []
        for o in ins.operands:
            name = operand_facts.label_name(o)
            ops.append(("label", name) if name is not None else self._any(o))
        return (ins.full_opcode, tuple(x for x in ops if isinstance(x, tuple)),
                [x for x in ops if not isinstance(x, tuple)], self.guard(ins))


def _float_bits(k: tuple, w: int) -> int:
    """The bits of a float literal at width ``w``; Unsupported unless exact."""
    if k[0] in ("0f", "0d"):
        if k[1]:
            raise Unsupported("a negated hexadecimal float literal")
        if (k[0] == "0f" and w != 32) or (k[0] == "0d" and w != 64):
            raise Unsupported("a float literal of another width")
        return k[2]
    if k[0] == "x":
        v = float.fromhex(k[1])
        if w == 64:
            return struct.unpack("<Q", struct.pack("<d", v))[0]
        if w == 32:
            bits = struct.unpack("<I", struct.pack("<f", v))[0]
            if struct.unpack("<f", struct.pack("<I", bits))[0] != v:
                raise Unsupported("a decimal float literal not exact in f32")
            return bits
    raise Unsupported("a float literal form not modelled")


__all__ = ["SPACES", "BlockEncoder", "BlockTerms", "Unsupported"]
