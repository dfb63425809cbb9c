"""The distinct global bytes one launch reads and writes, per buffer, from the kernel's address expressions.

Why: a roofline needs the bytes a launch must move between DRAM and the chip (a cold L2, as GPU
benchmarks flush it).  Per-thread traffic is no substitute: it counts data that threads share once per
thread, an upper bound on bytes and so no lower bound on time.  The footprint here is the UNION over
every thread, block and loop iteration of the bytes each global access touches -- never a sum of
per-block footprints.

How: every register is given an affine form ``base + sum(coef * var) + const`` in the launch's index
variables -- ``%tid.{x,y,z}`` in ``[0, ntid)``, ``%ctaid.{x,y,z}`` in ``[0, nctaid)`` and one counter
``k`` per loop in ``[0, trips)`` -- with ``%ntid``/``%nctaid`` and the launch's scalar parameters
substituted, and ``base`` a pointer parameter.  Loop counters come from the induction variables of
:mod:`ptxopt.analysis.loops`; the iterations a loop runs come from its one exit test (``iv CMP
bound``, monotone in ``k``) as a linear constraint, so a grid-stride loop whose trip depends on the
thread is exact.  An unrolled loop (``f`` copies per trip, one exit test per trip) is counted as the
loop it repeats (:mod:`ptxopt.analysis.reroll`, only where the copies provably run the original's
iterations), each copy's access taking the form of the access it repeats.  Each access is also
constrained by the branches that guard it (``setp`` of affine values: ``if (i < n)``) and by its own
guard predicate.

Register forms also see through Triton's lane arithmetic (``or`` of disjoint bits, ``and`` with a
mask that keeps every bit), bit fields of an index (``shr``/``and``/``bfe``/power-of-two ``div``
and ``rem`` split a variable into digits), pointers a loop advances through a chain of adds, and
``cp.async`` reads masked by ``selp size, 0, p``.

Values with alternatives -- ``selp`` of indices, ``min``/``max`` (a clamp), a register set on either
side of a guard (``mov r, a; @p add r, ...``), the start of nvcc's main loop after its peeled ``n % 4``
iterations -- are case variables: at each access they are replaced by every alternative, each under
the conditions that choose it, so an access becomes several that partition its threads (exact when
those conditions are affine; when they are not, or when the definitions that reach a use are merely
listed, the count is an upper bound).  A value that is not affine but bounded -- a mask or remainder
of a loaded word, a narrow load, a quotient by a constant that is not a power of two -- is a variable
over its range (:attr:`_Kernel.free`): counting over every value it may take is an upper bound, as is
a loop whose trip is bounded only through such a value or by one of several exits.

Counting the union of every access of a buffer,
exactly or not at all, is :mod:`ptxopt.analysis.affine_count`'s; bytes are also counted in 32-byte
sectors (buffers aligned to 256 B, as ``cudaMalloc`` gives them), the unit DRAM moves.

The answer's ``source`` per buffer:

* ``exact``: computed as above; it feeds the DRAM floor.
* ``extrapolated``: the addresses are bounded but not counted exactly (a guard or a choice on loaded
  data, a value known only by its range, a constraint over several variables at a size too large to
  enumerate): the count is an UPPER bound -- the accesses counted with the guards that were decided,
  else without, else the smaller of their address intervals' union and one width per execution -- so
  it sets no floor.
* ``unknown``: an address that is not bounded at all (a gather through loaded indices, a pointer loaded
  from memory, a loop whose trip is not found), or an access whose buffer is not found (then no buffer
  of the launch is exact: that access could touch any of them; the exact buffers' bytes still bound
  DRAM from below).

Known limits: integer wrap-around in address arithmetic is assumed not to happen (the forms are taken
over the integers), and a narrowing ``cvt`` is taken as lossless.  The test against the interpreter's
recorded bytes (tests/analysis/test_global_footprint.py) checks both on the check launches.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from ptxopt.analysis.affine_count import (SECTOR, Access, Form, Inexact, NotAffine, bounds, count_access, AfterEntry, NotEqual,
                                          sum_counts, count_union, upper_bound)
from ptxopt.analysis.cfg import dominates
from ptxopt.analysis.defuse import reaching_definitions
from ptxopt.analysis.loops import loops_of
from ptxopt.analysis.reroll import rerolled
from ptxopt.ptx.ir import Addr, Imm, Reg, Sym

SOURCES = ("counts", "exact", "extrapolated", "unknown")
_SPECIAL = {"%tid": "tid", "%ctaid": "ctaid"}
_DIMS = {"x": 0, "y": 1, "z": 2}
_INT = {"s8", "s16", "s32", "s64", "u8", "u16", "u32", "u64", "b8", "b16", "b32", "b64"}
_PTR_PARAM = {"u64", "b64", "s64"}
_NARROW = {"u8": (0, 255), "u16": (0, 65535), "s8": (-128, 127), "s16": (-32768, 32767)}
_WIDTH = {"8": 1, "16": 2, "32": 4, "64": 8, "128": 16}


# -- the per-function analysis --------------------------------------------------------------------


class _Kernel:
    def __init__(self, fn, grid, block, scalars: dict) -> None:
        self.fn = fn
        self.grid, self.block = tuple(grid), tuple(block)
        self.scalars = dict(scalars)
        self.params = {p.name: p for p in _params(fn)}
        self.cfg, self.info = loops_of(fn)
        cfg = self.cfg
        self.defs: dict[str, list[int]] = {}
        for iid, (defs, _) in enumerate(cfg.du):
            for r in defs:
                self.defs.setdefault(r, []).append(iid)
        self.idom = cfg.dominators()
        self.rd = reaching_definitions(cfg)
        self.loop_of_iid: dict[int, list[int]] = {}  # iid -> loops holding it, outermost first
        for li, lp in enumerate(self.info.loops):
            for i in lp.iids:
                self.loop_of_iid.setdefault(i, []).append(li)
        self.ivs: dict[str, list] = {}  # reg -> [(loop index, InductionVar)]: a register may count in several loops
        for li, lp in enumerate(self.info.loops):
            for iv in lp.ivs:
                self.ivs.setdefault(iv.reg, []).append((li, iv))
        self.ranges: dict[str, int] = {}
        for d, name in enumerate("xyz"):
            self.ranges[f"tid.{name}"] = self.block[d] if d < len(self.block) else 1
            self.ranges[f"ctaid.{name}"] = self.grid[d] if d < len(self.grid) else 1
        self.splits: dict[str, set] = {}  # variable -> the bits it is split at (digits)
        self.loop_cons: dict[int, tuple] = {}  # loop index -> (constraints before exit / after exit, branch iid)
        self._memo: dict = {}
        self._busy: set = set()
        self._probe: dict = {}  # register -> the symbol its header value stands for while its update is read
        self._chains: dict = {}  # header symbol -> (start, step, loop index)
        self.cases: dict = {}  # case variable -> (alternatives ((form, constraints), ...), why not exact)
        self._subs: dict = {}  # id(operand) -> its form in one alternative (while an operation is lifted)
        self.free: dict = {}  # variable known only by its range (and loop counters bounded through one) -> why
        for li in sorted(range(len(self.info.loops)), key=lambda i: self.info.loops[i].depth):
            self._loop_range(li)

    # -- forms ------------------------------------------------------------------------------------
    def kvar(self, li: int) -> str:
        lp = self.info.loops[li]
        return f"k:{self.cfg.blocks[lp.header].label or lp.header}"

    def operand(self, op, at: int) -> Form:
        if self._subs and id(op) in self._subs:
            return self._subs[id(op)]
        if isinstance(op, Imm):
            v = op.value()
            if not isinstance(v, int):
                raise NotAffine(f"float operand {op}")
            return Form(const=v)
        if isinstance(op, Reg):
            return self.reg(op.name, at)
        raise NotAffine(f"operand {op}")

    def reg(self, name: str, at: int) -> Form:
        if name.startswith("%"):
            head, _, dim = name.partition(".")
            if head in _SPECIAL and dim in _DIMS:
                return Form.of({f"{_SPECIAL[head]}.{dim}": 1})
            if head == "%ntid" and dim in _DIMS:
                return Form(const=self.ranges[f"tid.{dim}"])
            if head == "%nctaid" and dim in _DIMS:
                return Form(const=self.ranges[f"ctaid.{dim}"])
        mine = [(li, iv) for li, iv in self.ivs.get(name, ()) if at in self.info.loops[li].iids]
        if mine:
            return self._iv(name, at, *max(mine, key=lambda x: self.info.loops[x[0]].depth))
        sites = self.defs.get(name, [])
        if len(sites) > 1:
            sites = list(self.rd.reaching(at, name)) if at >= 0 else sites
        if name in self._probe and 2 <= len(sites) <= 4:
            return Form.of({self._probe[name]: 1})
        if 2 <= len(sites) <= 4 and at >= 0:
            try:
                return self._chain_iv(name, at, sites)
            except NotAffine as e:
                return self._join(name, at, sites, e)
        if len(sites) != 1:
            if at >= 0 and sites:
                return self._join(name, at, sites, NotAffine(
                    f"{name}: {len(sites)} definitions reach line {self.cfg.instructions[at].line}"))
            raise NotAffine(f"{name}: {len(sites)} definitions reach line {self.cfg.instructions[at].line}")
        return self._unprobe(self.at(sites[0]))

    def _unprobe(self, f: Form) -> Form:
        """``f`` with each header symbol ``h:NAME`` (outside its own probe) replaced by its value."""
        for v, c in f.terms:
            if v.startswith("h:") and v[2:] not in self._probe:
                if v not in self._chains:
                    raise NotAffine(f"{v[2:]}: not advanced by a constant step in its loop")
                init, step, li = self._chains[v]
                rest = Form.of({x: y for x, y in f.terms if x != v}, f.const, f.base)
                f = rest.add(init.add(Form.of({self.kvar(li): step})).scale(c) if c != 1 else
                             init.add(Form.of({self.kvar(li): step})))
                return self._unprobe(f)
        return f

    def _chain_iv(self, name: str, at: int, sites: list) -> Form:
        """A register that a loop advances through a chain of adds (``p1 = p + s; p2 = p1 + s; p = p2``:
        an unrolled pointer walk), read where both its start and its update reach: its value at the
        loop's header in iteration ``k``, ``start + step * k``.  Found by evaluating the update with the
        header's value as a symbol ``h:NAME``; NotAffine unless that gives ``h:NAME + constant``."""
        line = self.cfg.instructions[at].line
        lps = [li for li in self.loop_of_iid.get(at, []) if sum(s in set(self.info.loops[li].iids)
                                                                 for s in sites) == 1]
        if not lps:
            raise NotAffine(f"{name}: 2 definitions reach line {line}")
        li = lps[-1]
        inside = set(self.info.loops[li].iids)
        d_in = next(s for s in sites if s in inside)
        d_outs = sorted(s for s in sites if s not in inside)
        key = ("chain", name, li)
        if key not in self._memo:
            self._memo[key] = None
            sym = f"h:{name}"
            self._probe[name] = sym
            busy, self._busy = self._busy, set()  # the update read afresh, from the header's symbol
            try:
                upd = self.at(d_in)
            except NotAffine as e:
                self._memo[key] = e
            else:
                rest = Form.of({v: c for v, c in upd.terms if v != sym}, upd.const, upd.base)
                if upd.coefs.get(sym) != 1 or not rest.is_const and not (rest.base and not rest.terms):
                    self._memo[key] = NotAffine(f"{name}: not advanced by a constant step in its loop")
                else:
                    start = self.at(d_outs[0]) if len(d_outs) == 1 else self._join(  # a peeled loop ran first
                        name, d_in, d_outs, NotAffine(f"{name}: {len(sites)} definitions reach line {line}"))
                    self._memo[key] = (start, rest.const, d_in)
                    self._chains[sym] = (self._memo[key][0], rest.const, li)
            finally:
                del self._probe[name]
                self._busy = busy
        got = self._memo[key]
        if isinstance(got, Exception) or got is None:
            raise got if isinstance(got, Exception) else NotAffine(f"{name}: a cyclic definition")
        init, step, _ = got
        return init.add(Form.of({self.kvar(li): step}))

    def _chain_def(self, iid: int) -> Form | None:
        """The value of the one definition inside a loop of a register that a chain of adds advances
        (``i2 = i + s; ...; i = i2 + s`` of an unrolled grid-stride loop), read right after it: the
        header's value ``start + step * k`` plus the step.  None when ``iid`` is not such a definition
        (it is then evaluated as written; a chain is found from a use where the header's value reaches)."""
        ins = self.cfg.instructions[iid]
        if not ins.operands or not isinstance(ins.operands[0], Reg) or ins.opcode not in ("add", "sub", "mov"):
            return None
        name = ins.operands[0].name
        if name in self._probe:
            return None
        for li in reversed(self.loop_of_iid.get(iid, [])):
            if any(lj == li for lj, _ in self.ivs.get(name, ())):
                return None  # an induction variable of this loop: _iv
            inside = set(self.info.loops[li].iids)
            if [d for d in self.defs.get(name, []) if d in inside] != [iid]:
                continue
            for u in self.info.loops[li].iids:
                sites = list(self.rd.reaching(u, name))
                if iid in sites and 2 <= len(sites) <= 4:
                    try:
                        head = self._chain_iv(name, u, sites)
                    except NotAffine:
                        return None
                    _, step, _ = self._memo[("chain", name, li)]
                    return head.add(Form(const=step))
            return None
        return None

    def _iv(self, name: str, at: int, li: int, iv) -> Form:
        lp = self.info.loops[li]
        inside = set(lp.iids)
        outside = [i for i in self.defs.get(name, []) if i not in inside]
        if len(outside) == 1:
            init = self.at(outside[0])
        else:  # nvcc's remainder loop: the main loop starts where the peeled one stopped, or at the start
            head = iv.update
            # the definitions from outside that reach a use inside: those the loop starts from
            reach = sorted({d for u in lp.iids for d in self.rd.reaching(u, name) if d not in inside})
            err = NotAffine(f"induction variable {name} starts from {len(outside)} definitions")
            if not reach:
                raise err
            init = self.at(reach[0]) if len(reach) == 1 else self._join(name, head, reach, err)
        upd = self.cfg.instructions[iv.update]
        step = None
        for x, y in ((1, 2), (2, 1)):
            if len(upd.operands) == 3 and isinstance(upd.operands[x], Reg) and upd.operands[x].name == name:
                step = self.operand(upd.operands[y], iv.update)
        if step is None and iv.step.const is not None and upd.opcode == "mov":
            step = Form(const=iv.step.const)  # ``t = i + s; ...; i = t``: the loop analysis found the step
            upd = None
        if step is None or not step.is_const:
            raise NotAffine(f"induction variable {name}: step not constant at this launch")
        s = step.const * (-1 if upd is not None and upd.opcode == "sub" else 1)
        k = self.kvar(li)
        after = self._runs_before(iv.update, at)  # a use after the update sees the next iteration's value
        return init.add(Form.of({k: s}, s if after else 0))

    def at(self, iid: int) -> Form:
        if iid in self._memo:
            r = self._memo[iid]
            if isinstance(r, Exception):
                raise r
            return r
        if iid in self._busy:
            raise NotAffine("a cyclic definition")
        r = self._chain_def(iid)
        if r is not None:
            self._memo[iid] = r
            return r
        self._busy.add(iid)
        try:
            r = self._eval(self.cfg.instructions[iid], iid)
        except NotAffine as e:
            self._memo[iid] = e
            raise
        finally:
            self._busy.discard(iid)
        self._memo[iid] = r
        return r

    def _eval(self, ins, iid: int) -> Form:
        op, mods, ops = ins.opcode, ins.modifiers, ins.operands
        ty = next((m for m in reversed(mods) if m in _INT), None)
        if op == "ld" and "param" in mods:
            a = ops[1]
            if not isinstance(a, Addr) or not isinstance(a.base, Sym):
                raise NotAffine("ld.param of a computed address")
            name = a.base.name
            if name in self.scalars:
                v = self.scalars[name]
                if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
                    raise NotAffine(f"scalar {name} is not an integer")
                return Form(const=int(v))
            p = self.params.get(name)
            if p is not None and p.dtype in _PTR_PARAM and not a.offset:
                return Form(base=name)
            raise NotAffine(f"parameter {name} has no value at this launch")
        if op in ("mov", "cvta", "cvt") and len(ops) == 2:
            if op == "cvt" and not all(m in _INT for m in mods if m not in ("sat",)) or "sat" in mods:
                raise NotAffine("a float or saturating conversion")
            if op == "cvta" and "to" not in mods and "global" not in mods:
                raise NotAffine("a generic address conversion")
            src = [m for m in mods if m in _INT][-1:]
            try:
                return self.operand(ops[1], iid)
            except NotAffine as e:
                if op == "cvt" and src and src[0] in _NARROW:  # a narrow source bounds the value
                    return self._free(iid, *_NARROW[src[0]], f"{ins.full_opcode} of a value not affine ({e})")
                raise
        if op in ("ld", "ldu") and len(ops) == 2 and isinstance(ops[0], Reg) and ty in _NARROW and \
                not any(m in ("v2", "v4", "v8") for m in mods):
            return self._free(iid, *_NARROW[ty], f"{ins.full_opcode}: a loaded value known only by its type")
        if ty is None:
            raise NotAffine(f"{ins.full_opcode} is not integer arithmetic")
        if op in ("add", "sub") and len(ops) == 3 and "sat" not in mods and "cc" not in mods:
            return self.operand(ops[1], iid).add(self.operand(ops[2], iid), -1 if op == "sub" else 1)
        if op == "neg" and len(ops) == 2:
            return self.operand(ops[1], iid).scale(-1)
        if op in ("mul", "mad") and ("lo" in mods or "wide" in mods):
            a, b = self.operand(ops[1], iid), self.operand(ops[2], iid)
            if not a.is_const and not b.is_const:
                raise NotAffine("a product of two variables")
            p = b.scale(a.const) if a.is_const else a.scale(b.const)
            return p.add(self.operand(ops[3], iid)) if op == "mad" and len(ops) == 4 else p
        if op == "shl" and len(ops) == 3:
            sh = self.operand(ops[2], iid)
            if not sh.is_const or not 0 <= sh.const < 64:
                raise NotAffine("a shift by a variable")
            return self.operand(ops[1], iid).scale(1 << sh.const)
        if op in ("and", "or", "shr", "div", "rem", "bfe", "selp", "min", "max"):
            lifted = self._lift(ins, iid)
            if lifted is not None:
                return lifted
        if op == "and" and len(ops) == 3:
            try:
                return self._and_or(op, ops, iid)
            except NotAffine as e:
                for o in ops[1:]:
                    try:
                        m = self.operand(o, iid)
                    except NotAffine:
                        continue
                    if m.is_const and 0 <= m.const < 1 << 31:  # x & m is in [0, m] whatever x is
                        return self._free(iid, 0, m.const, f"{ins.full_opcode} {m.const} of an index not "
                                                           f"split exactly ({e})")
                raise
        if op in ("or", "and") and len(ops) == 3:
            return self._and_or(op, ops, iid)
        if op == "rem" and len(ops) == 3 and ty[0] == "u" and isinstance(ops[2], Imm) \
                and isinstance(ops[2].value(), int) and ops[2].value() > 0:
            try:
                return self._shift_div(op, ops, iid)
            except NotAffine as e:
                return self._free(iid, 0, ops[2].value() - 1, f"{ins.full_opcode} of a value not affine ({e})")
        return self._shift_div(op, ops, iid)

    def _lift(self, ins, iid: int) -> Form | None:
        """An operation that is not linear (a shift, a mask, a division) of a value with alternatives:
        the operation applied to each alternative, as a new case.  None when no operand has any."""
        srcs = [o for o in ins.operands[1:] if isinstance(o, (Reg, Imm))]
        try:
            forms = [self.operand(o, iid) for o in srcs]
        except NotAffine:
            return None
        if not any(v in self.cases for f in forms for v, _ in f.terms):
            return None
        alts, why = [], ""
        for f0, cs, w in self.expand(forms[0], forms[1:], values=len(forms) - 1):
            vals, cons = [f0] + cs[:len(forms) - 1], cs[len(forms) - 1:]
            self._subs = {id(o): v for o, v in zip(srcs, vals)}
            try:
                alts.append((self._eval(ins, iid), cons))
            finally:
                self._subs = {}
            why = why or w
        return self._case(f"{iid}", alts, why)

    def _free(self, iid: int, lo: int, hi: int, why: str) -> Form:
        """A value known only to lie in ``[lo, hi]`` (a mask or remainder of a value that is not affine,
        a narrow load): a variable ``f:IID`` over that range.  Counting over it counts every value it
        may take, so an access through it is an upper bound, never exact (:attr:`free`)."""
        var = f"f:{iid}"
        self.ranges[var] = hi - lo + 1
        self.free[var] = why
        return Form.of({var: 1}, lo)

    def _and_or(self, op: str, ops, iid: int) -> Form:
        """``or``/``and`` of an index: disjoint bits, a mask of contiguous bits, or ``x & -2^j`` (nvcc's
        round-down of a signed division) of an ``x >= 0``."""
        a, b = self.operand(ops[1], iid), self.operand(ops[2], iid)
        try:
            return self._bits(op, a, b)
        except NotAffine:
            for x, y in ((a, b), (b, a)):
                run = y.const >> ((y.const & -y.const).bit_length() - 1) if y.is_const and y.const > 0 else 0
                if op == "and" and run and run & (run + 1) == 0:  # a mask of contiguous bits [lo, lo + m)
                    lo = (y.const & -y.const).bit_length() - 1
                    return self._low(self._high(x, lo), run.bit_length()).scale(1 << lo)
                neg = -y.const if y.is_const and y.const < 0 else 0
                if op == "and" and neg and not neg & (neg - 1) and x.base is None and self._range(x)[0] >= 0:
                    j = neg.bit_length() - 1  # x & ~(2^j - 1): x rounded down to a multiple of 2^j
                    return self._high(x, j).scale(1 << j)
            raise

    def _digits(self, ins, ops, iid: int) -> Form:
        """``x >> m``, ``x / 2^m``, ``x % 2^m`` of an index ``x >= 0`` as digits of its variables."""
        op, ty = ins.opcode, next((m for m in reversed(ins.modifiers) if m in _INT), None)
        if not (op == "shr" or ty[0] == "u" or self._range(self.operand(ops[1], iid))[0] >= 0):
            raise NotAffine(f"{ins.full_opcode} of a value that may be negative")
        x, y = self.operand(ops[1], iid), self.operand(ops[2], iid)
        if not y.is_const or y.const <= 0 or (op != "shr" and y.const & (y.const - 1)):
            raise NotAffine(f"{ins.full_opcode} by a variable or a non-power of two")
        m = y.const if op == "shr" else y.const.bit_length() - 1
        return self._low(x, m) if op == "rem" else self._high(x, m)

    def _bounded_quotient(self, ins, ops, iid: int, err: NotAffine) -> Form:
        """A shift, quotient or remainder by a constant that is not a sum of digits (a divisor that is
        not a power of two, an index whose bits carry): a value known only by its range, from the
        range of an affine ``x >= 0``; ``err`` when that is not known either."""
        op = ins.opcode
        try:
            x, y = self.operand(ops[1], iid), self.operand(ops[2], iid)
            lo, hi = self._range(x) if x.base is None else (-1, -1)
        except NotAffine:
            raise err from None
        if not y.is_const or y.const <= 0 or lo < 0 or (op == "shr" and y.const >= 64):
            raise err
        c = y.const
        rng = {"shr": (lo >> c, hi >> c), "div": (lo // c, hi // c), "rem": (0, min(hi, c - 1))}[op]
        return self._free(iid, *rng, f"{ins.full_opcode} {c} of an index, known by its range ({err})")

    def _shift_div(self, op: str, ops, iid: int) -> Form:
        ins = self.cfg.instructions[iid]
        mods = ins.modifiers
        ty = next((m for m in reversed(mods) if m in _INT), None)
        if op in ("shr", "div", "rem") and len(ops) == 3:
            try:
                return self._digits(ins, ops, iid)
            except NotAffine as e:
                return self._bounded_quotient(ins, ops, iid, e)
        if op == "bfe" and len(ops) == 4 and ty[0] == "u":
            x, pos, ln = (self.operand(o, iid) for o in ops[1:])
            if not (pos.is_const and ln.is_const) or ln.const <= 0:
                raise NotAffine("bfe of variable bits")
            return self._low(self._high(x, pos.const), ln.const)
        if op == "selp" and len(ops) == 4 and isinstance(ops[3], Reg):
            a, b = self.operand(ops[1], iid), self.operand(ops[2], iid)
            try:
                alts = [(a, self.condition(ops[3].name, True, iid)), (b, self.condition(ops[3].name, False, iid))]
                why = ""
            except Inexact as e:
                alts, why = [(a, []), (b, [])], f"selp on a condition not decided ({e})"
            return self._case(iid, alts, why)
        if op in ("min", "max") and len(ops) == 3 and not any(m in mods for m in ("relu", "NaN", "xorsign")):
            try:
                a, b = self.operand(ops[1], iid), self.operand(ops[2], iid)
            except NotAffine as e:  # min.u(x, c) is in [0, c] whatever x is
                if op == "min" and ty[0] == "u":
                    for o in ops[1:]:
                        try:
                            c = self.operand(o, iid)
                        except NotAffine:
                            continue
                        if c.is_const and c.const >= 0:
                            return self._free(iid, 0, c.const, f"{ins.full_opcode} of a value not affine ({e})")
                raise
            why = ""
            if ty[0] == "u":  # an unsigned order equals the integer order only on values >= 0
                try:
                    if any(f.base is not None or self._range(f)[0] < 0 for f in (a, b)):
                        why = f"{op}.{ty} of values that may be negative"
                except NotAffine:
                    why = f"{op}.{ty} of values whose sign is not known"
            if a.base is not None or b.base is not None:
                raise NotAffine(f"{op} of a pointer")
            d = b.add(a, -1)  # b - a
            if op == "min":  # a where a <= b, else b
                alts = [(a, [d]), (b, [d.scale(-1).add(Form(const=-1))])]
            else:  # a where a >= b, else b
                alts = [(a, [d.scale(-1)]), (b, [d.add(Form(const=-1))])]
            return self._case(iid, [(f, [] if why else c) for f, c in alts], why)
        raise NotAffine(f"{ins.full_opcode} of an index")

    # -- values that are one of several forms: selp, min/max, joins of definitions ----------------------
    def _case(self, key, alts: list, why: str) -> Form:
        """A value that is one of ``alts`` (form, constraints under which it is the value); the
        constraints partition the launch when ``why`` is empty, else the value is only known to be one
        of the forms (``why`` says why: an access through it is an upper bound).  Returned as a case
        variable ``c:KEY`` that :meth:`expand` replaces by each alternative at the access."""
        if len(alts) == 1 and not alts[0][1]:
            return alts[0][0]
        var = f"c:{key}"
        while var in self.cases:  # one instruction lifted over several alternatives: one case each
            var += "'"
        self.cases[var] = (tuple((f, tuple(c)) for f, c in alts), why)
        return Form.of({var: 1})

    def _join(self, name: str, at: int, sites: list, err: NotAffine) -> Form:
        """``name`` where several definitions reach ``at`` (an if/else, a guarded overwrite, the start of
        nvcc's remainder loop): one of their values.  Exact when the later definition is guarded by a
        predicate (``mov r, a; @p op r, ...``: the value is the guarded one where ``p`` holds, else
        ``a``); otherwise an upper bound over the definitions' values.  Raises ``err`` when a
        definition's value is not affine (a loop-carried value among them)."""
        if len(sites) > 4:
            raise err
        key = ("join", name, tuple(sorted(sites)))
        if key in self._memo:
            got = self._memo[key]
            if isinstance(got, Exception):
                raise got
            return got
        self._memo[key] = err  # a join that reaches itself is not resolved
        try:
            forms = [self._unprobe(self.at(d)) for d in sites]
        except NotAffine as e:
            self._memo[key] = NotAffine(f"{err} (one of them: {e})")
            raise self._memo[key] from None
        alts, why = None, f"{name}: one of {len(sites)} definitions (which one is not decided)"
        if len(sites) == 2:
            d0, d1 = sorted(sites)
            g = self.cfg.instructions[d1]
            if (g.guard is not None and self.cfg.block_of[d0] == self.cfg.block_of[d1]
                    and self.loop_of_iid.get(d0, []) == self.loop_of_iid.get(d1, []) == self.loop_of_iid.get(at, [])
                    and self._runs_before(d1, at) and not any(name in _defs_of(self.cfg.instructions[i])
                                                              for i in range(d0 + 1, d1))):
                try:
                    alts = [(forms[sites.index(d1)], self.condition(g.guard, not g.guard_neg, d1)),
                            (forms[sites.index(d0)], self.condition(g.guard, g.guard_neg, d1))]
                    why = ""
                except Inexact:
                    alts = None
        if alts is None:
            alts = [(f, []) for f in forms]
        got = self._case(f"{name}@{at}", alts, why)
        self._memo[key] = got
        return got

    def expand(self, form: Form, cons: list, values: int = 0) -> list:
        """``(form, constraints, why)`` for each combination of the alternatives of the case variables in
        ``form`` and ``cons`` (infeasible ones left out); ``why`` is non-empty when an alternative's
        conditions were not decided (the access is then an upper bound).  The first ``values`` of
        ``cons`` are values expanded along (not constraints)."""
        if any(self._never(c) for c in cons[values:]):
            return []  # under a guard this launch never passes (a remainder loop of no iterations)
        todo, out = [(form, list(cons), "")], []
        while todo:
            f, cs, why = todo.pop()
            var = next((v for g in [f] + cs for v, _ in _form(g).terms if v in self.cases), None)
            if var is None:
                out.append((f, cs, why))
                continue
            alts, reason = self.cases[var]
            for af, acs in alts:
                nf = _subst(f, var, af)
                ncs, never = [], False
                for i, c in enumerate(cs):
                    nc = _subst(c, var, af)
                    never = never or (nc is not c and i >= values and self._never(nc))
                    ncs.append(nc)
                if never or any(self._never(c) for c in acs):
                    continue  # a combination no point of the launch reaches
                todo.append((nf, ncs + list(acs), why or reason))
            if len(out) + len(todo) > MAX_CASES:
                raise NotAffine(f"more than {MAX_CASES} cases of selp/min/max/joined values in one address")
        return out

    def _never(self, c) -> bool:
        """A plain constraint that no point of the launch satisfies."""
        if isinstance(c, NotEqual) and not c.form.terms:
            return c.form.const == 0
        if not isinstance(c, Form) or any(v not in self.ranges for v, _ in c.terms):
            return False
        return bounds(c, self.ranges)[1] < 0

    # -- bit fields of an index: split a variable into digits ------------------------------------------
    def _parts(self, x: Form):
        """``x`` as parts with disjoint bit ranges (no carries): ``(var, coef)`` with ``coef`` a power of
        two; NotAffine otherwise (a negative value, overlapping parts, an odd multiplier)."""
        if x.base is not None or x.const < 0 or any(c <= 0 or c & (c - 1) for _, c in x.terms):
            raise NotAffine("bits of an index that is not a sum of disjoint power-of-two parts")
        m = self._may_bits(Form(x.terms, 0))
        if m is None or m & x.const or sum(((1 << (c * (self.ranges[v] - 1)).bit_length()) - 1) & ~(c - 1)
                                           for v, c in x.terms) != m:
            raise NotAffine("bits of an index whose parts overlap")
        return x.terms

    def _split(self, var: str, k: int) -> tuple[str, str]:
        """``var`` (a variable or a digit ``X[a:b]``) as ``lo + 2^k * hi``: the digit names."""
        base, a, b = _digit(var)
        cut = a + k
        n = self.ranges[_digit_name(base, 0, None)]
        if n % (1 << cut):
            raise NotAffine(f"{base} (range {n}) does not split at bit {cut}")
        self.splits.setdefault(base, set()).add(cut)
        lo, hi = _digit_name(base, a, cut), _digit_name(base, cut, b)
        self.ranges[lo] = 1 << k
        self.ranges[hi] = (1 << (b - cut)) if b is not None else n >> cut
        return lo, hi

    def _high(self, x: Form, m: int) -> Form:
        """``x >> m`` for ``x >= 0`` made of disjoint power-of-two parts."""
        terms: dict = {}
        const = x.const >> m
        for v, c in self._parts(x):
            s = c.bit_length() - 1
            top = s + max(1, (self.ranges[v] - 1).bit_length())
            if s >= m:
                terms[v] = terms.get(v, 0) + (c >> m)
            elif top > m and self.ranges[v] > 1:
                _, hi = self._split(v, m - s)
                terms[hi] = terms.get(hi, 0) + 1
        return Form.of(terms, const)

    def _low(self, x: Form, m: int) -> Form:
        """``x mod 2^m`` for ``x >= 0`` made of disjoint power-of-two parts."""
        terms: dict = {}
        for v, c in self._parts(x):
            s = c.bit_length() - 1
            top = s + max(1, (self.ranges[v] - 1).bit_length())
            if top <= m or self.ranges[v] <= 1:
                terms[v] = terms.get(v, 0) + c
            elif s < m:
                lo, _ = self._split(v, m - s)
                terms[lo] = terms.get(lo, 0) + c
        return Form.of(terms, x.const & ((1 << m) - 1))

    def refine(self, f):
        """``f`` (a Form or a marker) over the final digits: a digit later split is a sum of its parts."""
        if not isinstance(f, Form):
            return type(f)(self.refine(f.form), *([f.k] if isinstance(f, AfterEntry) else []))
        terms: dict = {}
        for v, c in f.terms:
            base, a, b = _digit(v)
            cuts = sorted(p for p in self.splits.get(base, ()) if a < p and (b is None or p < b))
            if not cuts:
                terms[v] = terms.get(v, 0) + c
                continue
            edges = [a] + cuts + [b]
            for lo, hi in zip(edges, edges[1:]):
                d = _digit_name(base, lo, hi)
                if d not in self.ranges:
                    n = self.ranges[_digit_name(base, 0, None)]
                    self.ranges[d] = (1 << (hi - lo)) if hi is not None else n >> lo
                terms[d] = terms.get(d, 0) + c * (1 << (lo - a))
        return Form.of(terms, f.const, f.base)

    def _bits(self, op: str, a: Form, b: Form) -> Form:
        """``or`` of values with disjoint bits (an add), ``and`` with a mask that keeps every bit the
        value can have (the value itself): what Triton writes for ``pid * BLOCK | lane``."""
        if a.base is not None or b.base is not None:
            raise NotAffine(f"{op} of a pointer")
        ma, mb = self._may_bits(a), self._may_bits(b)
        if op == "or" and ma is not None and mb is not None and not ma & mb:
            return a.add(b)
        for x, mx, y in ((a, ma, b), (b, mb, a)):
            if op == "and" and y.is_const and y.const >= 0 and mx is not None and not mx & ~y.const:
                return x
        raise NotAffine(f"{op} of an index whose bits overlap")

    def _may_bits(self, f: Form) -> int | None:
        """The bits ``f`` may have set over the launch (None: it may be negative).  Terms whose bit
        ranges do not overlap add without carries; else the whole range up to the largest value."""
        if f.const < 0 or any(c < 0 for _, c in f.terms):
            return None
        hi = self._range(f)[1]
        parts = [f.const] + [((1 << (c * (self.ranges[v] - 1)).bit_length()) - 1) & ~((c & -c) - 1)
                             for v, c in f.terms if self.ranges[v] > 1]
        acc = 0
        for m in parts:
            if acc & m:
                low = min((c & -c) for _, c in f.terms) if f.terms else 1
                return ((1 << hi.bit_length()) - 1) & ~(low - 1) if not f.const & (low - 1) else \
                    (1 << hi.bit_length()) - 1
            acc |= m
        return acc

    def _range(self, f: Form) -> tuple[int, int]:
        try:
            return bounds(f, self.ranges_for(f))
        except Inexact as e:
            raise NotAffine(str(e)) from None

    # -- conditions ---------------------------------------------------------------------------------
    def condition(self, pred: str, want: bool, at: int) -> list[Form]:
        """Constraints (forms >= 0) equivalent to ``pred == want``; Inexact when not expressible."""
        sites = self.defs.get(pred, [])
        if len(sites) != 1:
            raise Inexact(f"predicate {pred} has {len(sites)} definitions")
        ins = self.cfg.instructions[sites[0]]
        if ins.opcode == "not" and len(ins.operands) == 2 and isinstance(ins.operands[1], Reg):
            return self.condition(ins.operands[1].name, not want, at)
        if ins.opcode in ("and", "or") and "pred" in ins.modifiers and len(ins.operands) == 3:
            conj = (ins.opcode == "and") == want  # and==true, or==false: both parts
            if not conj:
                raise Inexact("a disjunction of conditions")
            out = []
            for o in ins.operands[1:]:
                if not isinstance(o, Reg):
                    raise Inexact("a predicate operand")
                out += self.condition(o.name, want, sites[0])
            return out
        if ins.opcode != "setp" or len(ins.operands) != 3 or ins.guard is not None:
            raise Inexact(f"{ins.full_opcode} condition")
        cmp = next((m for m in ins.modifiers if m in _CMPS), None)
        ty = next((m for m in ins.modifiers if m in _INT), None)
        if cmp is None or ty is None or any(m in ("and", "or", "xor") for m in ins.modifiers):
            raise Inexact(f"{ins.full_opcode} condition")
        try:
            a, b = self.operand(ins.operands[1], sites[0]), self.operand(ins.operands[2], sites[0])
        except NotAffine as e:
            raise Inexact(f"a condition on a non-affine value ({e})") from None
        if not want:
            cmp = _NEGATE[cmp]
        if cmp in ("lo", "ls", "hi", "hs"):
            for f in (a, b):
                if f.base is not None or bounds(f, self.ranges_for(f))[0] < 0:
                    raise Inexact("an unsigned comparison of values that may be negative")
            cmp = {"lo": "lt", "ls": "le", "hi": "gt", "hs": "ge"}[cmp]
        d = b.add(a, -1)  # b - a
        if d.base is not None:
            raise Inexact("a comparison of a pointer with a number")
        if cmp == "lt":
            return [d.add(Form(const=-1))]
        if cmp == "le":
            return [d]
        if cmp == "gt":
            return [d.scale(-1).add(Form(const=-1))]
        if cmp == "ge":
            return [d.scale(-1)]
        if cmp == "eq":
            return [d, d.scale(-1)]
        return [NotEqual(d)]  # ne: kept as a marker, decided at counting time when it is constant

    def ranges_for(self, f: Form) -> dict:
        out = {}
        for v, _ in f.terms:
            if v not in self.ranges:
                raise Inexact(f"loop {v} has no trip count")
            out[v] = self.ranges[v]
        return out

    # -- loops --------------------------------------------------------------------------------------
    def _loop_range(self, li: int) -> None:
        """The range of loop ``li``'s counter and the constraint its exit test puts on an iteration."""
        lp = self.info.loops[li]
        k = self.kvar(li)
        if len(lp.exits) != 1:
            return self._multi_exit(li, k)
        got = self._exit_test(li, lp.exits[0], k)
        if got is None:
            return
        if got[0] == "ne":
            return self._ne_loop(li, got[1], k)
        _, c, br, last, free = got
        if free:
            self.free[k] = f"a trip bounded through {self.free[free]}"
        self.ranges[k] = max(1, last + 2)
        self.loop_cons[li] = (c, br)

    def _exit_test(self, li: int, exit_block: int, k: str):
        """``("lt", constraint, branch iid, last k the test lets pass, free variable bounding it)`` for a
        test that ends the loop as ``k`` grows, ``("ne", constraints)`` for a counted ``!=`` test, or
        None."""
        cfg = self.cfg
        lp = self.info.loops[li]
        blk = cfg.blocks[exit_block]
        term = blk.instructions[-1] if blk.instructions else None
        if term is None or term.opcode != "bra" or term.guard is None:
            return None
        br = blk.iids[-1]
        label = term.operands[0].name if isinstance(term.operands[0], Sym) else None
        target = cfg.label_block.get(label)
        stays_if_taken = target in lp.blocks
        want = stays_if_taken != term.guard_neg  # the predicate value that keeps the loop going
        try:
            cons = self.condition(term.guard, want, br)
        except Inexact:
            return None
        if len(cons) != 1 or isinstance(cons[0], NotEqual):
            return ("ne", cons)
        c = cons[0]
        # a bound through selp/min/max (``for (j = 0; j < min(n, i + 16); ...)``): the counter's range
        # is the largest over the alternatives; the test itself stays a constraint of each access
        try:
            alts = self.expand(c, [])
        except NotAffine:
            return None
        last, free = -1, None
        for ca, _, _ in alts:
            a = ca.coefs.get(k, 0)
            if a >= 0:
                return None  # not a loop whose test ends it as k grows
            rest = Form.of({v: x for v, x in ca.terms if v != k}, ca.const)
            try:
                hi = bounds(rest, self.ranges_for(rest))[1]
            except Inexact:
                return None
            # an iteration whose test passes runs the next one: the test at k holds for k <= hi // -a
            last = max(last, hi // -a if hi >= 0 else -1)
            free = free or next((v for v, _ in rest.terms if v in self.free), None)
        return ("lt", c, br, last, free)

    def _multi_exit(self, li: int, k: str) -> None:
        """A loop with several exits (nvcc unrolls a grid-stride loop by two with a test after each
        copy): its counter bounded by the tightest exit tested in every iteration (its block dominates
        every latch).  Which exit ends which thread's loop is not decided, so the range is an upper
        bound and the counter joins :attr:`free`."""
        lp = self.info.loops[li]
        if not lp.latches:
            return
        best = None
        for e in lp.exits:
            if not all(dominates(self.idom, e, t) for t in lp.latches):
                continue
            got = self._exit_test(li, e, k)
            if got is None or got[0] != "lt":
                continue
            if best is None or got[3] < best:
                best = got[3]
        if best is None:
            return
        self.ranges[k] = max(1, best + 2)
        self.loop_cons[li] = (None, None)
        self.free[k] = f"a loop with {len(lp.exits)} exits, its trip bounded by one of them"

    def _ne_loop(self, li: int, cons, k: str) -> None:
        """``setp.ne`` exit tests (counted loops): only a uniform, constant trip."""
        if len(cons) != 1 or not isinstance(cons[0], NotEqual):
            return
        d = cons[0].form
        a = d.coefs.get(k, 0)
        free = [v for v, _ in d.terms if v != k]
        if free and a and all(v in self.free for v in free):
            return self._ne_loop_bounded(li, d, k, a, free)
        if a == 0 or any(v != k for v, _ in d.terms):
            return
        # the loop goes on while a*k + const != 0 (the test seen at iteration k)
        if (-d.const) % a or -d.const // a < 0:
            return
        stop = -d.const // a
        self.ranges[k] = stop + 1
        self.loop_cons[li] = (None, None)

    def _ne_loop_bounded(self, li: int, d: Form, k: str, a: int, free: list) -> None:
        """A counted loop (``while (a*k + rest != 0)``) whose start is known only by its range (nvcc's
        peeled ``n % 4`` iterations): at most the largest trip over the values ``rest`` may take that
        reach the stop value; a value that never reaches it is taken as not entering the loop (it would
        run until the counter wraps).  The range is an upper bound (the counter joins :attr:`free`)."""
        rest = Form.of({v: x for v, x in d.terms if v != k}, d.const)
        try:
            lo, hi = bounds(rest, self.ranges_for(rest))
        except Inexact:
            return
        if hi - lo > MAX_FREE_TRIP:
            return
        stops = [-r // a for r in range(lo, hi + 1) if (-r) % a == 0 and -r // a >= 0]
        if not stops:
            return
        self.ranges[k] = max(stops) + 1
        self.loop_cons[li] = (None, None)
        self.free[k] = f"a trip bounded through {self.free[free[0]]}"

    def loop_constraints(self, iid: int) -> list[Form]:
        """The exit tests of the loops holding ``iid``: iteration ``k`` runs while the tests passed."""
        out = []
        for li in self.loop_of_iid.get(iid, []):
            k = self.kvar(li)
            if k not in self.ranges:
                continue
            c, br = self.loop_cons.get(li, (None, None))
            if c is None:
                continue
            # before the exit branch in the iteration: the test of iteration k-1 let k run
            out.append(c if self._runs_before(br, iid) else AfterEntry(c.substitute(k, -1), k))
        return out

    # -- accesses -----------------------------------------------------------------------------------
    def guards(self, iid: int) -> list[Form]:
        """Constraints of the conditional branches that decide whether ``iid`` runs (and its own guard)."""
        cfg = self.cfg
        out: list[Form] = []
        ins = cfg.instructions[iid]
        if ins.guard is not None:
            out += self.condition(ins.guard, not ins.guard_neg, iid)
        blk = cfg.block_of[iid]
        exits = {self.cfg.blocks[lp.exits[0]].iids[-1] for lp in self.info.loops if len(lp.exits) == 1}
        for b in cfg.blocks:
            term = b.instructions[-1] if b.instructions else None
            if term is None or term.opcode != "bra" or term.guard is None or b.index == blk and False:
                continue
            if not dominates(self.idom, b.index, blk) or b.index == blk:
                continue
            if b.iids[-1] in exits and b.index in self._loops_blocks(iid):
                continue  # the loop's own exit test: loop_constraints
            label = term.operands[0].name if isinstance(term.operands[0], Sym) else None
            taken = cfg.label_block.get(label)
            fall = [s for s in b.succs if s != taken]
            via_t = taken is not None and self._reaches(taken, blk, b.index)
            via_f = bool(fall) and self._reaches(fall[0], blk, b.index)
            if via_t == via_f:
                continue
            out += self.condition(term.guard, via_t != term.guard_neg, b.iids[-1])
        return out

    def _base_of(self, reg, at: int, depth: int = 0) -> str | None:
        """The pointer parameter an address that is not affine starts from (a gather's buffer): followed
        through moves, conversions and adds; None when not found or when its definitions disagree."""
        if depth > 64 or not isinstance(reg, Reg):
            return None
        sites = self.defs.get(reg.name, [])
        if len(sites) > 1:
            sites = [i for i in self.rd.reaching(at, reg.name) if i != at] or sites
        found = set()
        for d in sites:
            ins = self.cfg.instructions[d]
            if ins.opcode == "ld" and "param" in ins.modifiers:
                a = ins.operands[1]
                p = self.params.get(a.base.name) if isinstance(a, Addr) and isinstance(a.base, Sym) else None
                found.add(p.name if p is not None and p.dtype in _PTR_PARAM else None)
            elif ins.opcode in ("mov", "cvta", "cvt", "add", "sub", "mad") and len(ins.operands) >= 2:
                bases = {self._base_of(o, d, depth + 1) for o in ins.operands[1:] if isinstance(o, Reg)}
                bases.discard(None)
                found.add(bases.pop() if len(bases) == 1 else None)
            else:
                found.add(None)
        return found.pop() if len(found) == 1 else None

    def _src_size(self, op, width: int, iid: int, depth: int = 0) -> list:
        """Constraints under which a ``cp.async`` with a source size reads its ``width`` bytes (Triton
        masks with ``selp size, 0, p``, nested: a zero size reads nothing)."""
        if isinstance(op, Imm):
            if op.value() == width:
                return []
            raise Inexact("a cp.async reading part of its size")
        sites = self.defs.get(op.name, []) if isinstance(op, Reg) and depth < 16 else []
        ins = self.cfg.instructions[sites[0]] if len(sites) == 1 else None
        if ins is None or ins.opcode != "selp" or len(ins.operands) != 4 or not isinstance(ins.operands[3], Reg):
            raise Inexact("a cp.async source size not known")
        a, b, p = ins.operands[1], ins.operands[2], ins.operands[3].name
        if isinstance(b, Imm) and b.value() == 0:
            return self.condition(p, True, sites[0]) + self._src_size(a, width, sites[0], depth + 1)
        if isinstance(a, Imm) and a.value() == 0:
            return self.condition(p, False, sites[0]) + self._src_size(b, width, sites[0], depth + 1)
        raise Inexact("a cp.async source size not known")

    def _runs_before(self, a: int, b: int) -> bool:
        """Instruction ``a`` runs before ``b`` in the same loop iteration: same block and earlier, or
        ``a``'s block dominates ``b``'s (the text order says nothing: a rotated loop puts its latch
        before its header)."""
        ba, bb = self.cfg.block_of[a], self.cfg.block_of[b]
        if ba == bb:
            return a < b
        return dominates(self.idom, ba, bb)

    def _loops_blocks(self, iid: int) -> set:
        s: set = set()
        for li in self.loop_of_iid.get(iid, []):
            s |= self.info.loops[li].blocks
        return s

    def _reaches(self, start: int, goal: int, avoid: int) -> bool:
        key = ("reach", start, goal, avoid)
        if key in self._memo:
            return self._memo[key]
        seen, todo = {start}, [start]
        found = False
        while todo:
            b = todo.pop()
            if b == goal:
                found = True
                break
            for s in self.cfg.blocks[b].succs:
                if s != avoid and s not in seen:
                    seen.add(s)
                    todo.append(s)
        self._memo[key] = found
        return found

    def case_accesses(self) -> list[Access]:
        """Every global access, its forms over the final digits of the index variables; an instruction
        whose address has alternatives (selp, min/max, a guarded overwrite) is one access per
        alternative, each under the conditions that choose it (what the footprint counts)."""
        if "cases" not in self._memo:
            raw = self._accesses()
            self._memo["cases"] = [
                a if a.form is None else Access(a.iid, a.buffer, a.kind, self.refine(a.form), a.width,
                                                tuple(self.refine(c) for c in a.constraints), a.why, a.inexact)
                for a in raw]
        return self._memo["cases"]

    def accesses(self) -> list[Access]:
        """One access per global access instruction, in program order, with its address form where that
        is one affine form of the launch's variables (what a warp's lanes compute); ``form`` None, and
        ``why``, where it is not: several alternatives, a value known only by its range, or code this
        launch never runs."""
        out, by_iid = [], {}
        for a in self.case_accesses():
            by_iid.setdefault(a.iid, []).append(a)
        for iid, group in by_iid.items():
            a = group[0]
            why = ""
            if len(group) > 1:
                why = f"line {self.cfg.instructions[iid].line}: an address with {len(group)} alternatives"
            elif a.form is not None and any(isinstance(c, Form) and not c.terms and c.const < 0
                                            for c in a.constraints):
                why = f"line {self.cfg.instructions[iid].line}: not run at this launch"
            elif a.form is not None and any(_digit(v)[0] in self.free and _digit(v)[0].startswith("f:")
                                            for v, _ in a.form.terms):
                why = a.inexact or f"line {self.cfg.instructions[iid].line}: a value known only by its range"
            if why:
                buffers = {g.buffer for g in group}
                a = Access(iid, buffers.pop() if len(buffers) == 1 else None, a.kind, None, a.width, why=why)
            out.append(a)
        return out

    def _accesses(self) -> list[Access]:
        out = []
        for iid, ins in enumerate(self.cfg.instructions):
            kind = _kind(ins)
            if kind is None:
                if _other_global(ins):  # a global access this analysis does not model (bulk copies, tex)
                    out.append(Access(iid, None, "both", None, 0, why=f"line {ins.line}: {ins.full_opcode}"))
                continue
            addr = next((o for o in ins.operands if isinstance(o, Addr)), None)
            width = _width(ins)
            if ins.opcode == "cp":  # cp.async.*.shared.global [dst], [src], size: the source is read
                addrs = [o for o in ins.operands if isinstance(o, Addr)]
                size = ins.operands[2] if len(ins.operands) > 2 else None
                addr = addrs[1] if len(addrs) > 1 else None
                width = size.value() if isinstance(size, Imm) and isinstance(size.value(), int) else None
            if addr is None or width is None:
                out.append(Access(iid, None, kind, None, 0, why=f"line {ins.line}: {ins.full_opcode} without a plain address"))
                continue
            if isinstance(addr.base, Sym):
                if "global" in ins.modifiers:
                    continue  # a module .global variable: not a parameter buffer
                continue
            try:
                form = self.operand(addr.base, iid).add(Form(const=addr.offset))
            except NotAffine as e:
                base = self._base_of(addr.base, iid) if isinstance(addr.base, Reg) else None
                if base is not None or "global" in ins.modifiers or ins.opcode in ("red", "atom"):
                    out.append(Access(iid, base, kind, None, width, why=f"line {ins.line}: {e}"))
                continue
            inexact = ""
            try:
                try:
                    cons = self.guards(iid)
                except Inexact as e:  # an undecided guard is dropped: every thread taken (an upper bound)
                    cons, inexact = [], f"line {ins.line}: {e}"
                cons += self.loop_constraints(iid)
                if ins.opcode == "cp" and len(ins.operands) > 3:
                    try:
                        cons += self._src_size(ins.operands[3], width, iid)
                    except Inexact as e:
                        inexact = inexact or f"line {ins.line}: {e}"
                cases = self.expand(form, cons)
            except NotAffine as e:
                out.append(Access(iid, form.base, kind, None, width, why=f"line {ins.line}: {e}"))
                continue
            if not cases and form.base is not None and (_is_global(ins) or form.base in self.params):
                # never runs at this launch: the buffer is still listed, with no bytes
                out.append(Access(iid, form.base, kind, Form(base=form.base), width, (Form(const=-1),)))
            for f, cs, why in cases:
                if f.base is None:
                    if "global" in ins.modifiers:
                        out.append(Access(iid, None, kind, None, width,
                                          why=f"line {ins.line}: address without a buffer"))
                    continue
                if not _is_global(ins) and f.base not in self.params:
                    continue
                missing = [v for g in [f] + cs for v, _ in _form(g).terms if v not in self.ranges]
                if missing:
                    out.append(Access(iid, f.base, kind, None, width,
                                      why=f"line {ins.line}: loop {missing[0]} has no trip count"))
                    continue
                free = next((v for g in [f] + cs for v, _ in _form(g).terms if v in self.free), None)
                why = inexact or (f"line {ins.line}: {why}" if why else "") or \
                    (f"line {ins.line}: {self.free[free]}" if free else "")
                out.append(Access(iid, f.base, kind, f, width, tuple(cs), inexact=why))
        return out


MAX_CASES = 64  # alternatives one access may expand into
MAX_FREE_TRIP = 1 << 16  # values a counted loop's bounded start may take (each is tried)


def _form(c) -> Form:
    return c if isinstance(c, Form) else c.form


def _subst(c, var: str, alt: Form):
    """``c`` (a form or a marker) with ``var`` replaced by ``alt``."""
    if not isinstance(c, Form):
        f = _subst(c.form, var, alt)
        return c if f is c.form else type(c)(f, *([c.k] if isinstance(c, AfterEntry) else []))
    k = next((x for v, x in c.terms if v == var), 0)
    if not k:
        return c
    rest = Form.of({v: x for v, x in c.terms if v != var}, c.const, c.base)
    return rest.add(alt if k == 1 else alt.scale(k))


def _defs_of(ins) -> set:
    return {o.name for o in ins.operands[:1] if isinstance(o, Reg)}


def _digit(name: str) -> tuple[str, int, int | None]:
    """``X[a:b]`` -> (X, a, b); a plain variable is its whole ``[0:]``."""
    if name.endswith("]") and "[" in name:
        base, _, rng = name[:-1].rpartition("[")
        a, _, b = rng.partition(":")
        return base, int(a), (int(b) if b else None)
    return name, 0, None


def _digit_name(base: str, a: int, b: int | None) -> str:
    return base if a == 0 and b is None else f"{base}[{a}:{'' if b is None else b}]"


_CMPS = ("eq", "ne", "lt", "le", "gt", "ge", "lo", "ls", "hi", "hs")
_NEGATE = {"eq": "ne", "ne": "eq", "lt": "ge", "ge": "lt", "le": "gt", "gt": "le",
           "lo": "hs", "hs": "lo", "ls": "hi", "hi": "ls"}


def _params(fn):
    for d in fn.params or ():
        for it in d.items:
            yield _P(it.name, (d.dtype or "").lstrip("."))


@dataclass(frozen=True)
class _P:
    name: str
    dtype: str | None


def _kind(ins) -> str | None:
    op, mods = ins.opcode, ins.modifiers
    if op == "cp" and "async" in mods and "global" in mods and "bulk" not in mods and "tensor" not in mods:
        return "read"
    if any(m in ("shared", "local", "param", "const") for m in mods):
        return None
    if op in ("ld", "ldu"):
        return "read"
    if op == "st":
        return "write"
    if op in ("atom", "red"):
        return "both"
    if op == "cp" and "async" in mods and "global" in mods and "bulk" not in mods and "tensor" not in mods:
        return "read"
    return None


def _other_global(ins) -> bool:
    """An instruction that touches global memory in a way :func:`_kind` does not model."""
    op, mods = ins.opcode, ins.modifiers
    if op == "cp" and "async" in mods and "global" in mods:
        return "bulk" in mods or "tensor" in mods
    return op in ("tex", "tld4", "suld", "sust", "sured", "multimem") or (op == "cp" and "bulk" in mods)


def _is_global(ins) -> bool:
    return "global" in ins.modifiers or ins.opcode == "ldu"


def _width(ins) -> int | None:
    lanes = 1
    for m in ins.modifiers:
        if m in ("v2", "v4", "v8"):
            lanes = int(m[1:])
    for m in reversed(ins.modifiers):
        if m[:1] in "subf" and m[1:] in _WIDTH and m[0] != "f" or m in ("f16", "f32", "f64", "bf16", "f16x2",
                                                                          "bf16x2", "b128"):
            bits = {"f16": "16", "bf16": "16", "f16x2": "32", "bf16x2": "32", "f32": "32", "f64": "64",
                    "b128": "128"}.get(m, m[1:])
            return lanes * _WIDTH[bits]
    return None


# -- the answer ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BufferFootprint:
    """Distinct bytes (and 32-byte sectors) one launch reads and writes in one pointer parameter."""

    name: str
    source: str  # exact | extrapolated | unknown
    read_bytes: int | None = None
    write_bytes: int | None = None
    read_sectors: int | None = None
    write_sectors: int | None = None
    why: str = ""

    @property
    def dram_bytes(self) -> int | None:
        """What DRAM must move for this buffer (cold L2): every sector read once, every sector written once
        (the bytes where the sectors were not decided)."""
        if self.read_bytes is None or self.write_bytes is None:
            return None
        r = self.read_bytes if self.read_sectors is None else SECTOR * self.read_sectors
        w = self.write_bytes if self.write_sectors is None else SECTOR * self.write_sectors
        return r + w

    def to_json(self) -> dict:
        return {"name": self.name, "source": self.source, "read_bytes": self.read_bytes,
                "write_bytes": self.write_bytes, "read_sectors": self.read_sectors,
                "write_sectors": self.write_sectors, "dram_bytes": self.dram_bytes, "why": self.why}


@dataclass(frozen=True)
class LaunchFootprint:
    """The footprint of one launch: per buffer, the overall ``source`` (the weakest buffer's) and the
    DRAM floor's bytes (``floor_bytes``: the ``exact`` buffers' sectors read + written; None when no
    buffer is exact)."""

    buffers: tuple
    source: str
    floor_bytes: int | None
    notes: tuple = ()
    launch: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        return {"source": self.source, "floor_bytes": self.floor_bytes,
                "buffers": [b.to_json() for b in self.buffers], "notes": list(self.notes), "launch": self.launch}

    def describe(self) -> str:
        """One line for ``explain``."""
        n = len(self.buffers)
        exact = [b for b in self.buffers if b.source == "exact"]
        if self.floor_bytes is None:
            why = next((b.why for b in self.buffers if b.why), "")
            return f"footprint {self.source}: no DRAM floor" + (f" ({why})" if why else "")
        part = "" if len(exact) == n else f" ({len(exact)} of {n} buffers exact; the others: " + \
            "; ".join(f"{b.name} {b.source}" for b in self.buffers if b.source != "exact") + ")"
        return f"footprint {self.source}: DRAM floor {self.floor_bytes:,} B (distinct sectors read + written){part}"


def _dim3(v) -> tuple[int, int, int]:
    v = tuple(int(x) for x in v)
    return v + (1,) * (3 - len(v))


def _kernel_at(fn, grid, block, scalars: dict | None) -> "_Kernel":
    """``fn``'s address analysis at one launch (raises :class:`NotAffine`/:class:`Inexact`)."""
    return _Kernel(fn, _dim3(grid), _dim3(block), scalars or {})


def launch_footprint(fn, grid, block, scalars: dict | None = None) -> LaunchFootprint:
    """The footprint of ``fn`` (an entry :class:`~ptxopt.ptx.ir.Function`) launched on ``grid`` x
    ``block`` with ``scalars`` (parameter name -> value; integer ones matter)."""
    launch = {"grid": list(_dim3(grid)), "block": list(_dim3(block))}
    rolled = rerolled(fn)  # an unrolled loop counted as the loop it repeats (its accesses are that loop's)
    if rolled is not None:
        fn = rolled.fn
    try:
        k = _kernel_at(fn, grid, block, scalars)
        accs = k.case_accesses()
    except (NotAffine, Inexact, RecursionError) as e:
        return LaunchFootprint((), "unknown", None, (f"analysis failed: {e}",), launch)
    params = [p.name for p in _params(fn)]
    unknown_any = [a for a in accs if a.buffer is None]
    bufs = []
    for name in params:
        mine = [a for a in accs if a.buffer == name]
        if not mine:
            continue
        try:
            bufs.append(_buffer(name, mine, k.ranges))
        except (ArithmeticError, KeyError, ValueError, MemoryError) as e:  # never a crash: an unknown buffer
            bufs.append(BufferFootprint(name, "unknown", why=f"analysis failed: {type(e).__name__}: {e}"))
    notes = tuple(a.why for a in unknown_any)
    exact = [b for b in bufs if b.source == "exact" and b.dram_bytes is not None]
    if unknown_any:
        # an access whose buffer is not found may touch any buffer: no count is exact any more (each is
        # still a lower bound, so the floor stands), and the access adds bytes no count holds
        why = f"an access of an unknown buffer ({unknown_any[0].why})"
        bufs = [BufferFootprint(b.name, "unknown", b.read_bytes, b.write_bytes, b.read_sectors, b.write_sectors,
                                b.why or why) for b in bufs]
        bufs.append(BufferFootprint("?", "unknown", why=unknown_any[0].why))
    source = "exact"
    for b in bufs:
        if b.source == "unknown":
            source = "unknown"
        elif b.source == "extrapolated" and source == "exact":
            source = "extrapolated"
    # the exact buffers' sectors are a lower bound on what DRAM moves even where other accesses are not
    # known (they only add bytes)
    floor = sum(b.dram_bytes for b in exact) if exact else None
    if not bufs:
        floor = 0
    return LaunchFootprint(tuple(bufs), source, floor, notes, launch)


def _buffer(name: str, accs: list, ranges: dict) -> BufferFootprint:
    bad = next((a for a in accs if a.form is None), None)
    if bad is not None:
        return BufferFootprint(name, "unknown", why=bad.why)
    out: dict = {}
    source, why = "exact", ""
    for kind in ("read", "write"):
        mine = [a for a in accs if a.kind in (kind, "both") and not any(  # those that never run left out
            isinstance(c, Form) and not c.terms and c.const < 0 for c in a.constraints)]
        if not mine:
            out[kind] = (0, 0)
            continue
        inexact = next((a for a in mine if a.inexact), None)
        try:
            if inexact is not None:
                raise Inexact(inexact.inexact)
            out[kind] = count_union(mine, ranges)
        except Inexact as e:
            source, why = ("unknown" if source == "unknown" else "extrapolated"), str(e)
            # an upper bound: the accesses summed, each with the guards that were decided or else none
            try:
                out[kind] = _tighter(sum_counts([upper_bound(a, ranges) for a in mine]), _interval_union(mine, ranges))
            except KeyError:
                out[kind] = (None, None)
                source = "unknown"
    (rb, rs), (wb, ws) = out["read"], out["write"]
    return BufferFootprint(name, source, rb, wb, rs, ws, why)


def _interval_union(accs: list, ranges: dict) -> tuple[int, int]:
    """(bytes, sectors) of the union of the accesses' address intervals over the whole launch: an upper
    bound that, unlike a sum, never counts bytes twice when several accesses sweep one row."""
    spans = []
    for a in accs:
        f = Form.of(a.form.coefs, a.form.const)
        lo, hi = bounds(f, {v: ranges[v] for v, _ in f.terms})
        spans.append((lo, hi + a.width))
    nbytes, sect, end, send = 0, 0, None, None
    for lo, hi in sorted(spans):
        if end is None or lo > end:
            nbytes += hi - lo
        elif hi > end:
            nbytes += hi - end
        end = hi if end is None else max(end, hi)
        s0, s1 = lo // SECTOR, (hi - 1) // SECTOR + 1
        if send is None or s0 >= send:
            sect += s1 - s0
        elif s1 > send:
            sect += s1 - send
        send = s1 if send is None else max(send, s1)
    return nbytes, sect


def _tighter(a: tuple, b: tuple) -> tuple:
    """The smaller of two upper bounds, per part (a part None where it was not found)."""
    return tuple(x if y is None else y if x is None else min(x, y) for x, y in zip(a, b))


def footprint_of_text(ptx_text: str, entry: str | None, grid, block, scalars: dict | None = None) -> LaunchFootprint:
    """:func:`launch_footprint` of ``entry`` in a PTX text."""
    from ptxopt.ptx.parser import parse

    module = parse(ptx_text, "footprint")
    return launch_footprint(module.pick_entry(entry, "footprint"), grid, block, scalars)


__all__ = ["SECTOR", "SOURCES", "BufferFootprint", "LaunchFootprint", "launch_footprint", "footprint_of_text"]


def footprint_for_launch(module, entry: str | None, launch, counts_bytes: int | None = None) -> LaunchFootprint:
    """What the DRAM floor reads for a performance ``launch`` (anything with ``grid``/``block``/
    ``scalars``): the user's byte counts when given (source ``counts``: they override the analysis),
    else the kernel's footprint (:func:`launch_footprint`); ``unknown`` when the grid is unknown (the
    blocks are then assumed, not the user's).  ``module`` is a parsed module or PTX text."""
    grid, block = getattr(launch, "grid", None), getattr(launch, "block", None)
    if counts_bytes is not None:
        return LaunchFootprint((), "counts", int(counts_bytes), ("the user's per-buffer counts",),
                               {"grid": None if grid is None else list(grid), "block": list(block or ())})
    if grid is None or block is None:
        return LaunchFootprint((), "unknown", None, ("grid unknown: no footprint for an assumed grid",))
    if isinstance(module, str):
        from ptxopt.ptx.parser import parse

        module = parse(module, "footprint")
    return launch_footprint(module.pick_entry(entry, "footprint"), grid, block,
                            dict(getattr(launch, "scalars", None) or {}))


__all__ += ["footprint_for_launch"]


def trips_and_branches(fn, grid, block, scalars: dict | None = None) -> tuple[dict[int, int], dict[int, bool]]:
    """What one analysis of the launch decides for the arithmetic floor: the loops' trips
    (:func:`_uniform_trips`) and the branches every thread takes the same way (:func:`_decided_branches`)."""
    try:
        k = _kernel_at(fn, grid, block, scalars)
    except (NotAffine, Inexact, RecursionError):
        return {}, {}
    return _uniform_trips(k), _decided_branches(k)


def _uniform_trips(k: "_Kernel") -> dict[int, int]:
    """Per loop header (block index) whose exit test depends on no thread or block index: how many
    times the loop's counter takes a value per entry at this launch (at least the body's iterations
    plus one; the header-test form runs its body one time fewer)."""
    out = {}
    for li, lp in enumerate(k.info.loops):
        var = k.kvar(li)
        c, _ = k.loop_cons.get(li, (None, None))
        if var in k.ranges and var not in k.free and (c is None or all(v == var for v, _ in c.terms)):
            out[lp.header] = k.ranges[var]
    return out


def _decided_branches(k: "_Kernel") -> dict[int, bool]:
    """Per block (index) ending in a conditional branch that this launch decides for every thread (a
    test of scalars and launch sizes only, ``K > 0``): whether it is taken."""
    out = {}
    for b in k.cfg.blocks:
        term = b.instructions[-1] if b.instructions else None
        if term is None or term.opcode != "bra" or term.guard is None:
            continue
        try:
            cons = k.condition(term.guard, not term.guard_neg, b.iids[-1])
        except (Inexact, NotAffine):
            continue
        if any(not isinstance(c, Form) or c.terms for c in cons):
            continue
        out[b.index] = all(c.const >= 0 for c in cons)
    return out


__all__ += ["trips_and_branches"]


def access_forms(fn, grid, block, scalars: dict | None = None) -> list:
    """Every global access of ``fn`` at this launch with its address form over the final digits (``form``
    None where it is not affine, ``why`` says so); [] where the analysis fails.  For analyses of one
    warp's lanes (:mod:`ptxopt.sim.coalescing`: the per-lane strides that decide the sectors a warp's
    access touches)."""
    rolled = rerolled(fn)
    try:
        accs = _kernel_at(rolled.fn if rolled is not None else fn, grid, block, scalars).accesses()
    except (NotAffine, Inexact, RecursionError):
        return []
    if rolled is None:
        return accs
    # each copy of an unrolled body reads the addresses of the rolled body's access it repeats
    by_iid: dict[int, list] = {}
    for a in accs:
        by_iid.setdefault(a.iid, []).append(a)
    return [replace(a, iid=i) for i, r in enumerate(rolled.iid_map) if r is not None for a in by_iid.get(r, ())]


def digit_value(name: str, values: dict) -> int:
    """The value of variable ``name`` (a plain variable, or a digit ``X[a:b]``: bits ``a..b-1`` of X)
    when the plain variables take ``values`` (absent: 0)."""
    base, a, b = _digit(name)
    v = int(values.get(base, 0)) >> a
    return v if b is None else v & ((1 << (b - a)) - 1)


__all__ += ["access_forms", "digit_value"]
