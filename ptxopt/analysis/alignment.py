"""Alignment of register values: congruences modulo powers of two.

Vectorising an access needs its effective address proven aligned to the
vector size (a misaligned ``.v4`` faults on hardware). This analysis says,
for every register of a function, what is known about its value modulo a
power of two, from ``.ptr .align N`` on pointer parameters (or an explicit
``assume_align``) and ``.align`` on variables, traced through the address
arithmetic. It never assumes anything it was not told.
"""

from __future__ import annotations

from typing import Callable

from ptxopt.ptx import opcodes
from ptxopt.ptx.ir import Decl, Function, Instruction, Module, iter_decls
from ptxopt.ptx.operand_facts import address, immediate, reg_name, symbol

# ---------------------------------------------------------------------------
# Alignment: congruences modulo powers of two
# ---------------------------------------------------------------------------
# A fact (M, r) says "the value is r modulo M", M a power of two, 0 <= r < M.
# (1, 0) knows nothing; None is "no value seen yet" (the optimistic start).

Fact = tuple[int, int]
UNKNOWN: Fact = (1, 0)
_TRACED = frozenset({"mov", "cvta", "add", "sub", "mul", "mad", "shl", "cvt", "and", "or", "selp"})


def lowbit(x: int) -> int:
    return x & -x


def _cap(f: Fact | None, bits: int) -> Fact | None:
    if f is None:
        return None
    m = min(f[0], 1 << bits)
    return m, f[1] % m


def _join(a: Fact | None, b: Fact | None) -> Fact | None:
    if a is None:
        return b
    if b is None:
        return a
    m = min(a[0], b[0])
    while m > 1 and (a[1] - b[1]) % m:
        m //= 2
    return m, a[1] % m


def _add(a: Fact | None, b: Fact | None, sign: int = 1) -> Fact | None:
    if a is None or b is None:
        return None
    m = min(a[0], b[0])
    return m, (a[1] + sign * b[1]) % m


def _mul(a: Fact | None, b: Fact | None) -> Fact | None:
    # (r1 + i*M1)(r2 + j*M2) = r1*r2 + r1*j*M2 + r2*i*M1 + i*j*M1*M2
    if a is None or b is None:
        return None
    (m1, r1), (m2, r2) = a, b
    m = m1 * m2
    if r1:
        m = min(m, lowbit(r1) * m2)
    if r2:
        m = min(m, lowbit(r2) * m1)
    return m, (r1 * r2) % m


def _and(a: Fact | None, b: Fact | None) -> Fact | None:
    if a is None or b is None:
        return None
    m = min(a[0], b[0])
    # known-zero low bits of either operand are zero in the result
    zeros = max(f[0] if not f[1] else lowbit(f[1]) for f in (a, b))
    if zeros > m:
        return zeros, 0
    return m, (a[1] & b[1]) % m


class Alignment:
    """What is known about register values modulo powers of two, in one function.

    Flow-insensitive and sound: a register's fact is the join over *all* its
    definitions in the function (any value it holds was written by one of
    them), solved optimistically (start from "no value yet", iterate to the
    fixed point) so that a pointer bumped by a multiple of 16 around a loop
    stays 16-aligned. Followed: ``ld.param`` of a pointer parameter (its
    ``.ptr .align N``, or ``assume_align``), addresses of variables (their
    ``.align``), ``mov``, ``cvta``, integer ``add``/``sub``/``mul``/``mad``
    (``.lo``/``.wide``), ``shl``, ``and``/``or``, ``selp`` and integer ``cvt``;
    anything else writes an unknown value. Registers declared in nested
    ``{ }`` scopes (which may shadow outer ones) are never trusted.
    """

    def __init__(self, fn: Function, module: Module, defs: Callable[[str], list[Instruction]],
                 assume_align: int, untrusted: frozenset[str]) -> None:
        self.fn = fn
        self.defs = defs
        self.assume = assume_align
        self.untrusted = untrusted
        self.params = {p.name: p for p in (fn.params or ())}
        self.ptr_types = (".u64", ".b64", ".s64") if (module.address_size or 64) == 64 \
            else (".u32", ".b32", ".s32")
        self.vars = variable_alignments(module, fn)
        self.facts: dict[str, Fact] = {}

    # -- queries -----------------------------------------------------------

    def of_reg(self, name: str) -> Fact:
        f = self.facts.get(name)
        if f is None:
            self._solve(name)
            f = self.facts[name]
        return f

    def of_base(self, kind: str, name: str | None) -> Fact:
        """The fact of an address base (:attr:`ptxopt.ptx.operand_facts.Address.kind`
        and name)."""
        if kind == "reg":
            return self.of_reg(name)
        if kind == "sym":
            return self.vars.get(name, UNKNOWN)
        return UNKNOWN

    def param_fact(self, name: str) -> Fact:
        p = self.params.get(name)
        if p is None or p.dtype not in self.ptr_types:
            return UNKNOWN
        a = p.align if p.is_ptr and p.align else 1
        if self.assume and self.fn.is_entry:
            a = max(a, self.assume)
        return (lowbit(a), 0)

    # -- solving -----------------------------------------------------------

    def _solve(self, name: str) -> None:
        order, seen, stack = [], {name}, [name]
        while stack:
            r = stack.pop()
            order.append(r)
            for ins in self.defs(r):
                if ins.opcode not in _TRACED:
                    continue
                for o in ins.operands[1:]:
                    n = reg_name(o)
                    if n is not None and n not in seen and n not in self.facts:
                        seen.add(n)
                        stack.append(n)
        cur: dict[str, Fact | None] = {r: None for r in order}
        get = lambda r: self.facts[r] if r in self.facts else cur.get(r, UNKNOWN)  # noqa: E731
        for _ in range(4 * len(order) + 70):  # each fact only goes down, 65 steps at most
            changed = False
            for r in order:
                new = self._reg_fact(r, get)
                if new != cur[r]:
                    cur[r] = new
                    changed = True
            if not changed:
                break
        else:
            cur = {r: UNKNOWN for r in order}
        for r in order:
            self.facts[r] = cur[r] or UNKNOWN

    def _reg_fact(self, r: str, get) -> Fact | None:
        ds = self.defs(r)
        if not ds or r in self.untrusted or opcodes.is_special_reg(r):
            return UNKNOWN
        out = None
        for ins in ds:
            out = _join(out, self.eval(ins, r, get))
            if out == UNKNOWN:
                break
        return out

    def eval(self, ins: Instruction, r: str, get) -> Fact | None:
        """The fact for the value ``ins`` writes to ``r``."""
        ops = ins.operands
        if not ops or reg_name(ops[0]) != r or ins.opcode == "call":
            return UNKNOWN  # vector/pair destinations, calls...
        op, mods = ins.opcode, ins.modifiers
        if op == "ld":
            a = address(ins)
            if a is not None and a.space == "param" and a.kind == "sym" and not a.offset:
                return self.param_fact(a.name)
            return UNKNOWN
        if op not in _TRACED or "sat" in mods:
            return UNKNOWN  # saturation clamps: no congruence survives it
        types = [m for m in mods if m in opcodes.TYPE_BITS]
        if not types or any(t in opcodes.FLOAT_TYPES or t == "pred" for t in types):
            return UNKNOWN
        bits = opcodes.TYPE_BITS[types[0]]
        if op == "cvt":
            if len(types) != 2:
                return UNKNOWN
            bits = min(bits, opcodes.TYPE_BITS[types[1]])
        if op in ("mul", "mad"):
            if "hi" in mods:
                return UNKNOWN
            if "wide" in mods:
                bits *= 2

        def val(o) -> Fact | None:
            n = reg_name(o)
            if n is not None:
                return get(n)  # special registers: UNKNOWN from the solver
            c = immediate(o)
            if type(c) is int:
                return (1 << bits, c % (1 << bits))
            sym = symbol(o)
            if sym is not None:
                a = self.vars.get(sym[0])
                return (a[0], sym[1] % a[0]) if a else UNKNOWN
            return UNKNOWN

        src = [val(o) for o in ops[1:]]
        if op in ("mov", "cvta", "cvt"):
            out = src[0] if len(src) == 1 else UNKNOWN
        elif op in ("add", "sub") and len(src) == 2:
            out = _add(src[0], src[1], 1 if op == "add" else -1)
        elif op == "mul" and len(src) == 2:
            out = _mul(src[0], src[1])
        elif op == "mad" and len(src) == 3:
            out = _add(_mul(src[0], src[1]), src[2])
        elif op == "shl" and len(src) == 2 and type(immediate(ops[2])) is int:
            k = immediate(ops[2])
            out = _mul(src[0], (1 << bits, (1 << k) % (1 << bits) if k < bits else 0))
        elif op == "and" and len(src) == 2:
            out = _and(src[0], src[1])
        elif op == "or" and len(src) == 2 and src[0] is not None and src[1] is not None:
            m = min(src[0][0], src[1][0])
            out = (m, (src[0][1] | src[1][1]) % m)
        elif op == "selp" and len(src) == 3:
            out = _join(src[0], src[1])
        else:
            out = UNKNOWN
        return _cap(out, bits)

    # -- explaining a failed proof ------------------------------------------

    def _better_without(self, ins: Instruction, r: str, operand: str, have: int) -> bool:
        """Would ``ins`` give ``r`` a stronger fact if ``operand`` were perfectly aligned?"""
        f = self.eval(ins, r, lambda n: (1 << 64, 0) if n == operand else self.of_reg(n))
        return (f or UNKNOWN)[0] > have

    def explain(self, name: str) -> str:
        """Why ``name`` is not known to be better aligned: the chain of
        definitions down to the weakest link."""
        steps: list[str] = []
        seen: set[str] = set()
        r = name
        while len(steps) < 6:
            if r in seen:
                steps.append(f"{r} depends on itself around a loop")
                break
            seen.add(r)
            ds = self.defs(r)
            if r in self.untrusted:
                steps.append(f"{r} is declared in a nested scope")
                break
            if not ds:
                steps.append(f"{r} is never written in {self.fn.name}")
                break
            get = self.of_reg
            worst = min(ds, key=lambda i: (self.eval(i, r, get) or UNKNOWN)[0])
            many = f" (one of {len(ds)} definitions)" if len(ds) > 1 else ""
            if worst.opcode == "ld" and opcodes.mem_space(worst) == "param":
                a = address(worst)
                pname = a.name if a is not None and a.kind == "sym" else str(worst.operands[1])
                p = self.params.get(pname)
                if p is None or p.dtype not in self.ptr_types:
                    steps.append(f"{r} is loaded from {pname}, not a pointer parameter{many}")
                elif p.is_ptr and p.align:
                    steps.append(f"{r} is loaded from {pname}, declared .align {p.align}{many}")
                else:
                    steps.append(f"{r} is loaded from {pname}, which declares no .ptr .align "
                                 f"(assume_align=N asserts one){many}")
                break
            if worst.opcode not in _TRACED:
                steps.append(f"{r} is written by {worst.full_opcode}{many}")
                break
            steps.append(f"{r} = {worst.full_opcode} "
                         + ", ".join(str(o) for o in worst.operands[1:]) + many)
            # follow the first operand whose weakness costs alignment here
            have = (self.eval(worst, r, get) or UNKNOWN)[0]
            nxt = next((n for n in map(reg_name, worst.operands[1:]) if n is not None
                        and self._better_without(worst, r, n, have)), None)
            if nxt is None or opcodes.is_special_reg(nxt):
                if nxt is not None:
                    steps.append(f"{nxt} is a special register")
                break
            r = nxt
        return "; ".join(steps)


def variable_alignments(module: Module, fn: Function) -> dict[str, Fact]:
    """Alignment of the variables ``fn`` can name (``.align`` or the element
    size), as facts about their address.

    A name declared more than once -- at module level and again in the
    function, or in a nested ``{ }`` scope that shadows an outer one -- gets
    the *smallest* of its declarations' alignments: an access to ``x`` inside
    the scope that redeclares it must not inherit the outer ``x``'s
    ``.align 16``."""
    out: dict[str, Fact] = {}
    decls = [i for i in module.items if type(i) is Decl]
    if fn.body is not None:
        decls += list(iter_decls(fn.body))
    for d in decls:
        if d.space not in (".global", ".const", ".shared", ".local"):
            continue
        a = d.align
        if a is None and d.dtype:
            a = max(1, opcodes.TYPE_BITS.get(d.dtype[1:], 8) // 8)
        for it in d.items:
            fact = (lowbit(a or 1), 0)
            old = out.get(it.name)
            out[it.name] = fact if old is None or fact[0] < old[0] else old
    return out
