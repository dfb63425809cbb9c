"""The operand walker: every per-instruction fact, from one walk, kept on the instruction.

Why one walker: analyses that look at operands on their own each stop at a
different depth. A clock read written as a vector,
``mov.b64 %rd5, {%clock, %clock_hi}``, was an ordering point for nobody and a
pure value for the prover, because the role test looked only at top-level
registers. Here one recursive walk descends into vectors, ``%p|%q`` pairs,
negated predicates, parenthesised call lists and address expressions
(``[base+off, extra...]``), once per instruction, and everything that
depends on operands is derived from it:

* ``defs``/``uses``: registers written and read, each once (special registers excluded:
  they are read-only hardware state; the carry flag included, see
  :data:`ptxopt.ptx.opcodes.CARRY_FLAG`);
* ``sregs``: every special register read, at any depth; ``impure_sreg``: one of
  them is a clock/counter or a relocatable register
  (:data:`ptxopt.ptx.opcodes.IMPURE_SREGS`), so two reads may differ;
* ``role``: ``pure``/``collective``/``load``/``store``/``order``; an impure
  special register anywhere makes the instruction an ordering point;
* ``address``: the first address operand as :class:`Address` -- space, base
  kind and name, offset normalised modulo the space's address width, access
  size;
* ``labels``: the symbols named at the top level (branch targets, callees).

Speed. The walk runs once per instruction of every freshly parsed module
(a cold pass on the 16x16x16 tile walks 5,127), so :func:`_walk` answers the
shapes compilers write most -- register-only operand lists, a register with
a register-based address or an immediate -- from slices, with what the
opcode and modifiers alone decide remembered per form (:class:`_Form`), and
leaves every other shape to the full walk, :func:`_walk_operands`.

Caching and invalidation. :class:`~ptxopt.ptx.ir.Instruction` and every operand
are frozen, and the facts are a pure function of them, so they are computed
lazily on first use and stored in the instruction's ``_facts`` slot
(excluded from equality, hashing and ``repr``). A pass never edits an
instruction: it builds a new one (``dataclasses.replace`` or the
constructor), whose slot starts empty because ``_facts`` is not an
``__init__`` field -- so an edited or created instruction can never carry
stale facts. ``tests/ptx/test_operand_facts.py`` checks this, and that no module
outside this one (and a short, justified allow-list) inspects operand node
types.
"""

from __future__ import annotations

from typing import NamedTuple

from ptxopt.ptx import opcodes
from ptxopt.ptx.ir import Addr, Imm, Instruction, Neg, Pair, ParenList, Reg, Sym, Vec
from ptxopt.support.bounded_memo import register

# ---------------------------------------------------------------------------
# Addresses modulo their width
# ---------------------------------------------------------------------------

#: The narrowest width an address of any space can be computed in (a 32-bit
#: register base, ``.address_size 32``). Two byte ranges off one base that are
#: disjoint modulo 2**32 are disjoint modulo 2**64 too (equal modulo 2**64
#: implies equal modulo 2**32), so alias rules decide disjointness here and
#: stay sound whatever the base register's width.
ALIAS_BITS = 32


def wrap(value: int, bits: int) -> int:
    """``value`` modulo ``2**bits`` as a signed integer in ``[-2**(bits-1), 2**(bits-1))``:
    ``[%r1+4294967292]`` and ``[%r1+-4]`` are the same bytes at 32 bits."""
    m = 1 << bits
    value %= m
    return value - m if value >= m >> 1 else value


#: Offsets (after :func:`wrap` to :data:`ALIAS_BITS`) strictly inside
#: ``(-ALIAS_WINDOW, ALIAS_WINDOW)``, with sizes up to ``ALIAS_WINDOW``, span
#: less than 2**32 bytes: two such ranges are disjoint on the circle of
#: addresses exactly when they are disjoint as integer ranges.
ALIAS_WINDOW = 1 << 30


def alias_offset(offset: int) -> int | None:
    """``offset`` modulo ``2**ALIAS_BITS`` (signed) when it lies in the window
    where integer comparison is exact; None otherwise (then the access may
    overlap anything off the same base)."""
    w = wrap(offset, ALIAS_BITS)
    return w if -ALIAS_WINDOW < w < ALIAS_WINDOW else None


def ranges_disjoint(oa: int, za: int | None, ob: int, zb: int | None) -> bool:
    """Are ``[oa, oa+za)`` and ``[ob, ob+zb)`` off one base disjoint for every
    address width (modulo 2**32, hence modulo 2**64)? False when unsure: a
    size unknown or an offset outside the exact window (:func:`alias_offset`)."""
    if za is None or zb is None or za > ALIAS_WINDOW or zb > ALIAS_WINDOW:
        return False
    a, b = alias_offset(oa), alias_offset(ob)
    if a is None or b is None:
        return False
    return a + za <= b or b + zb <= a


class Address(NamedTuple):
    """The first address operand of an instruction.

    ``kind``: ``reg`` (register base), ``sym`` (variable or parameter),
    ``imm`` (absolute address) or ``other`` (texture/surface coordinates
    ``[tex, {...}]``, an array element ``tbl[1]``, an unparsable immediate:
    nothing is known about it). ``offset``: the byte offset (the symbol's
    own ``+k`` included; for ``imm`` the absolute address) normalised by
    :func:`wrap` to ``width`` bits (:data:`ptxopt.ptx.opcodes.ADDRESS_BITS`).
    ``size``: bytes accessed or None. ``regs``: registers it reads.
    ``operand``: the operand itself, for rewriting and printing.
    """

    space: str
    kind: str
    name: str | None
    offset: int
    width: int
    size: int | None
    regs: tuple[str, ...]
    operand: Addr

    @property
    def key(self) -> tuple | None:
        """The base as the alias rules key it (registers without a version)."""
        if self.kind == "reg":
            return ("reg", self.name)
        if self.kind == "sym":
            return ("sym", self.name)
        if self.kind == "imm":
            return ("imm",)
        return None


class Facts(NamedTuple):
    """Everything the analyses, passes, interpreter and prover need to know
    about one instruction's operands (see the module doc)."""

    defs: tuple[str, ...]
    uses: tuple[str, ...]
    sregs: tuple[str, ...]
    impure_sreg: bool
    role: str
    address: Address | None
    labels: tuple[str, ...]
    #: registers each destination operand writes, in order (None: a ``_`` sink
    #: or a non-register item); empty when the instruction writes nothing
    dests: tuple[str | None, ...]
    #: how many leading operands are destinations (0 or 1: a vector, pair or
    #: call return list counts as one)
    ndest: int


def facts(ins: Instruction) -> Facts:
    """The facts of ``ins``, computed on first use and kept on it."""
    f = ins._facts
    if f is None:
        f = _walk(ins)
        _set_facts(ins, f)
    return f


#: the ``_facts`` slot's own setter: what ``object.__setattr__(ins, "_facts", f)``
#: does past the frozen dataclass's guard, at a quarter of its cost
_set_facts = Instruction.__dict__["_facts"].__set__


# ---------------------------------------------------------------------------
# Convenience readers (the answers most callers want)
# ---------------------------------------------------------------------------


def defs_uses(ins: Instruction) -> tuple[list[str], list[str]]:
    """Registers written and read (lists the caller owns). The guard
    predicate is a use; vector components and ``%p|%q`` pairs are all
    written; a store's address and data are uses; addresses are always uses.
    For ``call`` the parenthesised return list before the callee is written
    and everything after it is read."""
    f = facts(ins)
    return list(f.defs), list(f.uses)


def role(ins: Instruction) -> str:
    """Exactly one of ``pure``, ``collective``, ``load``, ``store``, ``order``
    (see :func:`_role`)."""
    return facts(ins).role


def address(ins: Instruction) -> Address | None:
    return facts(ins).address


def reads_special_reg(ins: Instruction) -> bool:
    return bool(facts(ins).sregs)


def regs_in(operand) -> list[str]:
    """Every register name read by or written to through ``operand``, at any depth."""
    out: list[str] = []
    _regs(operand, out)
    return out


def operand_regs(operand) -> list[str]:
    """The register names of one operand, special registers left out."""
    return [r for r in regs_in(operand) if not opcodes.is_special_reg(r)]


def reg_name(operand) -> str | None:
    """The name of a bare register operand (``%r1``, ``%tid.x``); None for
    anything else."""
    return operand.name if type(operand) is Reg else None


def is_immediate(operand) -> bool:
    """An immediate or constant expression, as written (parsable or not)."""
    return isinstance(operand, Imm)


def scalar_reg(operand) -> str | None:
    """The register a plain register operand names (``{%r1}`` counts: Triton
    braces every scalar); None for anything else."""
    if type(operand) is Vec and len(operand.items) == 1:
        operand = operand.items[0]
    return operand.name if type(operand) is Reg else None


def unbrace(operand):
    """``{ %r1 }`` is ``%r1`` (Triton braces every scalar access); anything
    else is itself."""
    if type(operand) is Vec and len(operand.items) == 1:
        return operand.items[0]
    return operand


def immediate(operand) -> int | float | None:
    """The value of an immediate operand; None for anything else or an
    unparsable constant."""
    if not isinstance(operand, Imm):
        return None
    try:
        return operand.value()
    except (TypeError, ValueError):
        return None


def symbol(operand) -> tuple[str, int] | None:
    """``(name, byte offset)`` of a symbol operand (``arr+8``), None for
    anything else or an array element ``tbl[1]``."""
    if type(operand) is Sym and operand.index is None:
        return operand.name, operand.offset
    return None


def label_name(operand) -> str | None:
    """The name of a plain symbol operand (a label, callee or variable)."""
    return operand.name if type(operand) is Sym else None


def vector_items(operand) -> tuple | None:
    """The items of a vector operand, None for anything else."""
    return operand.items if type(operand) is Vec else None


def is_sink(operand) -> bool:
    """``_``: a vector item or destination that discards its value."""
    return type(operand) is Sym and operand.name == "_"


# ---------------------------------------------------------------------------
# The walk
# ---------------------------------------------------------------------------


def _regs(o, out: list[str]) -> None:
    t = type(o)
    if t is Reg:
        out.append(o.name)
    elif t is Neg:
        out.append(o.reg.name)
    elif t is Pair:
        _regs(o.first, out)
        out.append(o.second.name)
    elif t is Vec or t is ParenList:
        for i in o.items:
            _regs(i, out)
    elif t is Addr:
        _regs(o.base, out)
        for e in o.extra:
            _regs(e, out)


def _dests(o, out: list) -> None:
    t = type(o)
    if t is Reg:
        out.append(o.name)
    elif t is Vec:
        for i in o.items:
            if type(i) in (Reg, Vec, Pair):
                _dests(i, out)
            else:
                out.append(None)
    elif t is Pair:
        _dests(o.first, out)
        out.append(o.second.name)
    else:
        out.append(None)


def _address(form: _Form, a: Addr) -> Address:
    space, width, size = form.space, form.width, form.size
    b = a.base
    t = type(b)
    if t is Reg and not a.extra:  # the common case, inlined
        return _address_new(Address, (space, "reg", b.name, wrap(a.offset, width), width, size, (b.name,), a))
    regs = tuple(regs_in(a))
    kind, name, off = "other", None, 0
    if not a.extra:
        if t is Reg:
            kind, name, off = "reg", b.name, a.offset
        elif t is Sym and b.index is None:
            kind, name, off = "sym", b.name, a.offset + b.offset
        elif isinstance(b, Imm):
            v = immediate(b)
            if type(v) is int:
                kind, off = "imm", v + a.offset
    return Address(space, kind, name, wrap(off, width), width, size, regs, a)


class _Form(NamedTuple):
    """What the walk needs of an instruction's opcode and modifiers alone."""

    ndest: int  # :func:`ptxopt.ptx.opcodes.dest_count` when the instruction has operands
    accumulates: bool  # its destinations are read too (``wgmma``)
    carry_in: bool
    carry_out: bool
    role: str  # :func:`_role` unless an impure special register is read
    plain: bool  # none of the three above (accumulates, carry_in, carry_out), and ndest < 2
    # an address operand's :class:`Address` fields that depend on the form alone
    space: str  # :func:`ptxopt.ptx.opcodes.mem_space`
    width: int  # its :data:`ptxopt.ptx.opcodes.ADDRESS_BITS`
    size: int | None  # :func:`ptxopt.ptx.opcodes.access_bytes`


#: (opcode, modifiers) -> :class:`_Form`: a kernel repeats a few forms
#: thousands of times (4,096 ``fma.rn.f32`` in the 16x16x16 tile)
_FORMS: dict[tuple[str, tuple[str, ...]], _Form] = register("front_end", "ptx.operand_facts._FORMS", {})


def _form(ins: Instruction) -> _Form:
    key = (ins.opcode, ins.modifiers)
    f = _FORMS.get(key)
    if f is None:
        bare = Instruction(ins.opcode, ins.modifiers, (None,))  # an operand: dest_count asks whether any
        n = opcodes.dest_count(bare)
        space = opcodes.mem_space(bare)
        acc, cin, cout = bool(n) and ins.opcode in opcodes.ACCUMULATES_IN_PLACE, ins.opcode in opcodes.CARRY_IN, \
            opcodes.writes_carry(bare)
        f = _FORMS[key] = _Form(n, acc, cin, cout, _role(bare, False), not (acc or cin or cout) and n < 2,
                                space, opcodes.ADDRESS_BITS.get(space, 64), opcodes.access_bytes(bare))
        if len(_FORMS) > 4096:  # a bound on odd inputs; the working set is a few dozen
            _FORMS.clear()
            _FORMS[key] = f
    return f


def _walk(ins: Instruction) -> Facts:
    ops = ins.operands
    op = ins.opcode
    form = _FORMS.get((op, ins.modifiers)) or _form(ins)
    if ops and op != "call":
        # the common case, every operand a register (4,096 of the 5,127
        # instructions of the 16x16x16 tile): slices instead of the walk
        names = [o.name for o in ops if type(o) is Reg]
        g = ins.guard
        if g is None and form.plain and len(names) == len(ops) and _SREGS.isdisjoint(names) \
                and "." not in "".join(names):
            # the commonest case of the next one: no guard, carry or accumulation
            n = form.ndest
            dests = tuple(names[:n])
            uses = tuple(names[n:])
            return _facts(Facts, (dests, uses if len(uses) < 2 or len(set(uses)) == len(uses)
                                  else tuple(dict.fromkeys(uses)), (), False, form.role, None, (), dests,
                                  1 if n else 0))
        if g:
            names.append(g)  # the guard is read, and checked with the rest
        if len(names) == len(ops) + bool(g) and _SREGS.isdisjoint(names) and "." not in "".join(names):
            n = form.ndest
            dests = tuple(names[:n])
            if g:
                uses = names[-1:]
                uses += names[n:-1]
            else:
                uses = names[n:]
            if form.accumulates and n:
                uses.extend(dests)
            if form.carry_in:
                uses.append(opcodes.CARRY_FLAG)
            defs = dests
            if form.carry_out:
                defs += (opcodes.CARRY_FLAG,)
            # each register once, in first-seen order (as below)
            return _facts(Facts, (defs if len(defs) < 2 or len(set(defs)) == len(defs) else tuple(dict.fromkeys(defs)),
                                  tuple(uses) if len(uses) < 2 or len(set(uses)) == len(uses)
                                  else tuple(dict.fromkeys(uses)), (), False,
                                  form.role, None, (), dests, 1 if n else 0))
        if len(ops) == 2 and len(names) == 1 + bool(g) and form.plain:
            f = _pair(ops, form, g)
            if f is not None:
                return f
    return _walk_operands(ins, form)


def _walk_operands(ins: Instruction, form: _Form) -> Facts:
    """The walk itself, every operand shape (what :func:`_walk`'s fast paths
    must agree with: ``tests/ptx/test_operand_facts_fast.py`` checks they do)."""
    ops = ins.operands
    op = ins.opcode
    defs: list[str] = []
    uses: list[str] = []
    if ins.guard:
        uses.append(ins.guard)
    dests: list = []
    ndest = 0
    addr = None
    labels: tuple[str, ...] = ()
    if op == "call":
        seen_callee = False
        for o in ops:
            t = type(o)
            if t is ParenList and not seen_callee:
                _regs(o, defs)
                if not ndest:
                    ndest = 1
                    for item in o.items:
                        _dests(item, dests)
            else:
                seen_callee = seen_callee or t is not ParenList
                _regs(o, uses)
                if t is Sym:
                    labels += (o.name,)
                elif t is Addr and addr is None:
                    addr = o
    else:
        n = form.ndest if ops else 0
        for i, o in enumerate(ops):
            t = type(o)
            if t is Reg:  # the common case, inlined
                if i < n:
                    defs.append(o.name)
                    dests.append(o.name)
                    ndest = 1
                else:
                    uses.append(o.name)
            elif t is Imm:
                continue
            elif t is Sym:
                labels += (o.name,)
                if i < n:
                    dests.append(None)
                    ndest = 1
            elif t is Addr:
                _regs(o, uses)
                if addr is None:
                    addr = o
            elif i < n:
                _regs(o, defs)
                _dests(o, dests)
                ndest = 1
            else:
                _regs(o, uses)
        if n and form.accumulates:
            uses.extend(defs)
    if form.carry_in:
        uses.append(opcodes.CARRY_FLAG)
    if form.carry_out:
        defs.append(opcodes.CARRY_FLAG)
    special = _SPECIAL
    sregs: tuple[str, ...] = ()
    impure = False
    for r in uses:
        sp = special.get(r)
        if sp is None:
            sp = special[r] = opcodes.is_special_reg(r)
        if sp:
            sregs = tuple(dict.fromkeys(x for x in uses if opcodes.is_special_reg(x)))
            uses = [x for x in uses if not opcodes.is_special_reg(x)]
            impure = any(x in opcodes.IMPURE_SREGS for x in sregs)
            break
    for r in defs:
        if opcodes.is_special_reg(r):
            defs = [x for x in defs if not opcodes.is_special_reg(x)]
            break
    # each register once, in first-seen order (``add %r1, %r2, %r2`` reads %r2 once)
    return _facts(Facts, (tuple(dict.fromkeys(defs)) if len(defs) > 1 else tuple(defs),
                          tuple(dict.fromkeys(uses)) if len(uses) > 1 else tuple(uses), sregs, impure,
                          "order" if impure else form.role,
                          _address(form, addr) if addr is not None else None, labels, tuple(dests), ndest))


def _pair(ops, form: _Form, g: str | None) -> Facts | None:
    """The walk's answer for ``ld %r, [%rd+8]``, ``st [%rd+8], %r`` (a
    register and a register-based address, what most memory instructions
    are) and ``mov %r, 1`` (an immediate is no register), or None for any
    other pair of operands."""
    o0, o1 = ops
    a = None
    if form.ndest == 1 and type(o0) is Reg and type(o1) is Addr:
        a, dest, data = o1, o0.name, None
    elif form.ndest == 0 and type(o0) is Addr and type(o1) is Reg:
        a, dest, data = o0, None, o1.name
    elif form.ndest == 1 and type(o0) is Reg and type(o1) is Imm:
        dest, data = o0.name, None
    else:
        return None
    uses = [g] if g else []
    if a is not None:
        b = a.base
        if type(b) is not Reg or a.extra:
            return None
        uses.append(b.name)
    if data is not None:
        uses.append(data)
    names = uses if dest is None else uses + [dest]
    if not _SREGS.isdisjoint(names) or "." in "".join(names):
        return None
    dests = (dest,) if dest is not None else ()
    return _facts(Facts, (dests, tuple(uses) if len(set(uses)) == len(uses) else tuple(dict.fromkeys(uses)), (),
                          False, form.role, None if a is None else _address(form, a), (), dests,
                          1 if dest is not None else 0))


_facts = _address_new = tuple.__new__  # Facts(*fields) without the generated __new__'s extra call


_SPECIAL: dict[str, bool] = {}

#: :func:`ptxopt.ptx.opcodes.is_special_reg` is ``name.split(".")[0] in SPECIAL_REGS``,
#: so names without a dot none of which is in the set are not special: the fast
#: path's test, without a per-name cache (which a cold measurement would clear)
_SREGS = opcodes.SPECIAL_REGS


def _role(ins: Instruction, impure_sreg: bool) -> str:
    """``order`` covers barriers, fences, atomics, async copies and
    ``st.async``, calls, branches, ``ret``/``exit``, volatile/relaxed/
    acquire/release accesses, any instruction reading a clock, counter or
    relocatable special register at any depth of its operands, and every
    opcode :mod:`ptxopt.ptx.opcodes` does not know."""
    op = ins.opcode
    if impure_sreg:
        return "order"
    if op in opcodes.PURE_OPCODES:
        return "pure"
    if op in opcodes.COLLECTIVE_OPCODES:
        return "collective"
    if op == "wmma":
        mods = ins.modifiers
        return "pure" if "mma" in mods else "load" if "load" in mods else "store" if "store" in mods else "order"
    is_ld = op in opcodes.LOADS or op in opcodes.PREFETCHES
    if is_ld or op in opcodes.STORES:
        if any(m in opcodes.ORDERED_MEM_MODS or m == "async" for m in ins.modifiers):
            return "order"  # st.async / red.async complete through an mbarrier
        return "load" if is_ld else "store"
    return "order"


__all__ = [
    "ALIAS_BITS",
    "ALIAS_WINDOW",
    "Address",
    "Facts",
    "address",
    "alias_offset",
    "defs_uses",
    "facts",
    "immediate",
    "is_immediate",
    "is_sink",
    "label_name",
    "operand_regs",
    "ranges_disjoint",
    "reads_special_reg",
    "reg_name",
    "regs_in",
    "role",
    "scalar_reg",
    "symbol",
    "unbrace",
    "vector_items",
    "wrap",
]
