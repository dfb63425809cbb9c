"""Vectorize global accesses (``vec_ld``, ``vec_st``) and undo it (``split_ld``).

``vec_ld`` merges 2 or 4 scalar ``ld.global`` of one element type from one base
at contiguous byte offsets into one ``.v2``/``.v4`` load placed where the first
member was; ``vec_st`` does the same for ``st.global``, placed where the last
member was. ``.v4`` is preferred, then ``.v2``; 64-bit elements get ``.v2``
only; a group starts at an offset aligned to its size. Destinations
(sources) keep their registers, in address order.

A group is merged only when ALL of these hold (otherwise the report names the
first rule that failed, for that group):

* **Same shape.** Same opcode modifiers (space, cache operator, ``.nc``,
  eviction hints...), same element type, same trailing operands (cache
  policy), same guard (``@%p`` / ``@!%p``) with the guard register not written
  between the members, same base register *version* (not written between).
  An address register defined by an unguarded 64-bit ``add``/``sub`` of an
  immediate in the same straight-line region (Triton's ``add.s64 %rdK,
  %rdB, C``, chains of them included) counts as its base plus the constant
  (rule 5 of :mod:`ptxopt.analysis.alias`); the merged access is addressed
  from the register of the member it replaces in place (the first load, the
  last store), which holds its value there. Triton's braced scalars
  (``ld.global.b32 { %r1 }, ...``) are scalars.
  Only weak accesses are candidates (``.volatile``/``.relaxed``... are
  ordering points).
* **One straight-line region.** No label, branch, call, ``ret``/``exit``,
  barrier, fence, atomic, async copy, strong access or unknown opcode (the
  ``order`` role of :mod:`ptxopt.ptx.opcodes`), and no ``{ }`` scope boundary,
  lies between the members.
* **Alignment proven** for the effective address: ``.v2`` needs 2 x element
  size, ``.v4`` 4 x element size (:class:`~ptxopt.analysis.alignment.Alignment`).
* **Memory order kept.** A load moves up to the first member: no store that may
  alias it (:func:`ptxopt.analysis.alias.may_alias`; a store through the same
  base version to a disjoint constant range does not) lies in between. A store
  moves down to the last member: no load or store that may alias it lies in
  between.
* **Registers kept.** A moved load's destination is neither read nor written
  between the first member and it, and no two members load into one register;
  a moved store's source is not written between it and the last member.

Every check is against the instructions a member actually crosses, so groups
legal one by one are legal together. A merge can remove the hazard that
refused another group (it moves instructions), so a pass repeats its rounds
until nothing changes: a second application is a no-op. Alignment comes from
``.ptr .align N`` on pointer parameters (or the ``assume_align`` option) and
``.align`` on variables, traced through the address arithmetic
(:class:`~ptxopt.analysis.alignment.Alignment`); nothing is silently assumed.
Each pass is one linear scan per round with per-register definition/use
positions and per-region memory accesses: no dependency DAG (~13 ms CPU on
the 5k-instruction ``gemm_tile_16x16x16``).

``split_ld`` writes one scalar load per element at ``base + i * size`` (no
load for a ``_`` sink) in place of each weak ``.v2``/``.v4`` ``ld.global``; it
refuses when a destination is also read by the load (its address, guard or
cache policy) or appears twice. ``vec_ld`` after ``split_ld`` gives the
original back when the alignment is provable and the vector had no sinks.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, field, replace
from typing import ClassVar

from ptxopt.ptx import opcodes, operand_facts
from ptxopt.analysis.alias import (CHAIN_OPCODES, Access, address_of, constant_step, may_alias,
                                   noalias_params, overlapping_symbols, pointer_roots)
from ptxopt.analysis.alignment import Alignment, Fact, lowbit
from ptxopt.analysis.manager import AnalysisManager, manager_or_default
from ptxopt.ptx.ir import Addr, Block, Decl, Function, Instruction, Label, Module, Vec, iter_decls
from ptxopt.ptx.operand_facts import Address
from ptxopt.passes.base import ChangeReport, FunctionPass, Refused, check
from ptxopt.passes.families import VECTORIZE
from ptxopt.passes.registry import declare

# ---------------------------------------------------------------------------
# The scan: candidates, straight-line regions, def/use positions
# ---------------------------------------------------------------------------


@dataclass(eq=False)
class _Member:
    iid: int
    ins: Instruction
    addr: Addr  # the address operand as written (rewritten for the merged access)
    offset: int
    value: str | None  # destination (load) or source (store) register; None: an immediate source
    operand: object  # the value operand itself
    access: Access
    base: tuple = ()  # the canonical base (kind, name): the address's, or the start of an add chain


@dataclass(eq=False)
class _Region:
    """A straight-line stretch between two ordering points."""

    runs: list[dict[int, _Member]] = field(default_factory=list)  # offset -> member, per key
    keys: list[tuple] = field(default_factory=list)
    mem: list[tuple[int, Access, Instruction]] = field(default_factory=list)
    mem_iids: list[int] = field(default_factory=list)
    end: str = ""  # what closed it: "bar.sync at line 12", "label $L1"


class _Scan:
    """One walk over a function body collecting what the legality rules ask."""

    def __init__(self, fn: Function, store: bool, analyses: AnalysisManager | None = None) -> None:
        self.store = store
        self.instrs: list[Instruction] = []
        self.slots: list[tuple[list, int]] = []
        self.defs_at: dict[str, list[int]] = {}
        self.uses_at: dict[str, list[int]] = {}
        self.regions: list[_Region] = []
        self.untrusted: set[str] = set()
        self.roots = pointer_roots_of(fn, analyses)
        # (register, version) -> (canonical base key, base register, byte offset): a 64-bit
        # ``add R, B, C`` earlier in the *current* region (see :meth:`_link`)
        self.chain: dict[tuple[str, int], tuple[tuple, str, int]] = {}
        self._base_reg: dict[int, str] = {}  # iid -> canonical base register, when not its own
        self._region = _Region()
        self._open: dict[tuple, int] = {}  # key -> index into region.runs
        self._walk(fn.body)
        self._close("the end of the function")

    def _close(self, why: str) -> None:
        self._region.end = why
        self.regions.append(self._region)
        self._region = _Region()
        self._open = {}
        self.chain = {}  # a chain is only trusted inside the straight-line region that computed it

    def _walk(self, block: Block) -> None:
        # The hot loop (5k instructions for the largest tile): locals, no calls
        # for the common register-only instruction.
        items = block.items
        instrs, slots, da, ua = self.instrs, self.slots, self.defs_at, self.uses_at
        track_uses = not self.store  # only moved loads ask who reads a register
        facts, prefetches, chain_opcodes = operand_facts.facts, opcodes.PREFETCHES, CHAIN_OPCODES
        for i, s in enumerate(items):
            t = type(s)
            if t is Label:
                self._close(f"label {s.name}")
                continue
            if t is Block:
                self._close(f"a {{ }} scope at line {s.line}")
                for d in s.items:
                    if type(d) is Decl and d.space == ".reg":
                        self.untrusted.update(n for it in d.items for n in it.names())
                self._walk(s)
                self._close(f"the end of a {{ }} scope at line {s.line}")
                continue
            if t is not Instruction:
                continue
            iid = len(instrs)
            instrs.append(s)
            slots.append((items, i))
            f = facts(s)
            role = f.role
            if role == "order":
                self._close(f"{s.full_opcode} at line {s.line}")
            elif (role == "load" or role == "store") and s.opcode not in prefetches:
                self._memory(iid, s, role == "store")
            defs, uses = f.defs, f.uses
            link = self._link(s) if s.opcode in chain_opcodes else None
            if track_uses:
                for r in uses:
                    lst = ua.get(r)
                    if lst is None:
                        ua[r] = [iid]
                    elif lst[-1] != iid:
                        lst.append(iid)
            for r in defs:
                lst = da.get(r)
                if lst is None:
                    da[r] = [iid]
                elif lst[-1] != iid:
                    lst.append(iid)
            if link is not None:
                self.chain[(defs[0], len(da[defs[0]]))] = link

    def _canonical(self, reg: str) -> tuple[tuple, str, int]:
        """``(key, base register, offset)`` of the value ``reg`` holds now."""
        v = self.version(reg)
        hit = self.chain.get((reg, v))
        return hit if hit is not None else (("reg", reg, v), reg, 0)

    def _link(self, ins: Instruction) -> tuple[tuple, str, int] | None:
        """``R``'s value for a link ``R = B + C`` (:func:`ptxopt.analysis.alias.constant_step`):
        the canonical base of B as it is *before* this instruction, its
        register, and the summed offset; None when it is not a link."""
        step = constant_step(ins)
        if step is None:
            return None
        _d, src, c = step
        key, base, off = self._canonical(src)
        off += c
        if not -(1 << 31) <= off < (1 << 31):
            return None
        return key, base, off

    def version(self, reg: str) -> int:
        """How many times ``reg`` has been written so far in the walk."""
        return len(self.defs_at.get(reg, ()))

    def def_instructions(self, reg: str) -> list[Instruction]:
        """The instructions that write ``reg``, in order."""
        ins = self.instrs
        return [ins[k] for k in self.defs_at.get(reg, ())]

    def _memory(self, iid: int, ins: Instruction, is_store: bool) -> None:
        addr = address_of(ins)
        acc = self._access(iid, ins, is_store, addr)
        if is_store or self.store:  # loads only matter when stores move
            self._region.mem.append((iid, acc, ins))
            self._region.mem_iids.append(iid)
        if is_store != self.store or addr is None:
            return
        shape = candidate(ins)
        if shape is None:
            return
        operand = ins.operands[1] if self.store else ins.operands[0]
        value = operand_facts.scalar_reg(operand)
        if not self.store and value in addr.regs:
            return  # a load that overwrites its own base ends the base version
        extra = tuple(self.version(r) for o in shape for r in operand_facts.operand_regs(o))
        key = (acc.base, ins.modifiers, ins.guard, ins.guard_neg,
               self.version(ins.guard) if ins.guard else 0, shape, extra)
        base = ("reg", self._base_reg[iid]) if iid in self._base_reg else (addr.kind, addr.name)
        m = _Member(iid, ins, addr.operand, acc.offset, value, operand, acc, base)
        region = self._region
        k = self._open.get(key)
        if k is None or acc.offset in region.runs[k]:
            self._open[key] = k = len(region.runs)
            region.runs.append({})
            region.keys.append(key)
        region.runs[k][acc.offset] = m

    def _access(self, iid: int, ins: Instruction, is_store: bool, addr: Address | None) -> Access:
        """The access as the alias rules see it; offsets are the walker's
        (normalised modulo the address width) plus an add chain's."""
        base, off = None, 0
        if addr is not None:
            if addr.kind == "reg":
                base, reg, off = self._canonical(addr.name)
                off += addr.offset
                if reg != addr.name:
                    self._base_reg[iid] = reg
            elif addr.kind == "sym":
                base, off = ("sym", addr.name), addr.offset
        root = self.roots.get(addr.name) if addr is not None and addr.kind == "reg" else None
        return Access(iid, is_store, opcodes.mem_space(ins), base, off,
                      opcodes.access_bytes(ins), root)

    # -- range queries -------------------------------------------------------

    def first_between(self, positions: list[int] | None, lo: int, hi: int) -> int | None:
        """The first position in ``positions`` strictly between lo and hi."""
        if not positions:
            return None
        k = bisect_right(positions, lo)
        return positions[k] if k < len(positions) and positions[k] < hi else None


def facts_of(ins: Instruction):
    return operand_facts.facts(ins)


def declared_bits(fn: Function) -> dict[str, int | None]:
    """Register name -> declared width in bits (``.reg .b32 %r<9>``); None
    for a name declared with two widths in different scopes."""
    out: dict[str, int | None] = {}
    for d in iter_decls(fn.body):
        if d.space != ".reg" or d.dtype is None:
            continue
        bits = opcodes.TYPE_BITS.get(d.dtype[1:])
        for it in d.items:
            for n in it.names():
                out[n] = bits if out.get(n, bits) == bits else None
    return out


def pointer_roots_of(fn: Function, analyses: AnalysisManager | None = None) -> dict[str, str]:
    """Pointer-parameter roots, only needed (and computed) with ``.noalias`` params."""
    if not noalias_params(fn):
        return {}
    return pointer_roots(manager_or_default(analyses).cfg(fn))


def candidate(ins: Instruction) -> tuple | None:
    """For a scalar, weak, typed ``ld.global``/``st.global`` with a register or
    symbol base: the operands after the address/value (must match across a
    group). None for anything else."""
    if ins.opcode not in ("ld", "st") or opcodes.space_of(ins) != "global":
        return None
    if operand_facts.role(ins) not in ("load", "store") or opcodes.vector_width(ins) != 1:
        return None
    t = opcodes.value_type(ins)
    if t is None or opcodes.TYPE_BITS[t] not in (8, 16, 32, 64):
        return None
    ops = ins.operands
    if len(ops) < 2:
        return None
    addr, value = (ops[0], ops[1]) if ins.opcode == "st" else (ops[1], ops[0])
    a = address_of(ins)
    if a is None or a.operand is not addr or a.kind not in ("reg", "sym"):
        return None
    # ``{ %r1 }`` (Triton writes every scalar access with braces) is ``%r1``
    if operand_facts.scalar_reg(value) is None and not (ins.opcode == "st" and operand_facts.is_immediate(value)):
        return None
    return tuple(ops[2:])


# ---------------------------------------------------------------------------
# Planning and checking groups
# ---------------------------------------------------------------------------


class _Unaligned(Refused):
    """The group's alignment is not proven."""


def _addr_text(m: _Member, offset: int) -> str:
    return str(replace(m.addr, offset=m.addr.offset + offset - m.offset, plus_zero=False))


class _Vectorizer:
    """One round of vec_ld / vec_st over one function: scan, plan, check, rewrite."""

    def __init__(self, fn: Function, module: Module, store: bool, assume_align: int,
                 analyses: AnalysisManager | None = None) -> None:
        self.fn, self.store = fn, store
        self.scan = _Scan(fn, store, analyses)
        self.align = Alignment(fn, module, self.scan.def_instructions, assume_align,
                                frozenset(self.scan.untrusted))
        self.noalias = noalias_params(fn)
        self.overlap = overlapping_symbols(fn, module)
        self.reg_bits = declared_bits(fn)
        self.edits: dict[int, tuple[list, dict[int, object]]] = {}
        self.leftover: list[tuple[int, int, _Member]] = []  # (region, run, member)
        self.changes: list[tuple[int, str]] = []
        self.refusals: list[tuple[int, str]] = []
        self.hazards = False  # a group was refused for something another merge may remove

    def run(self) -> None:
        for ri, region in enumerate(self.scan.regions):
            for k, run in enumerate(region.runs):
                self._plan(ri, region, k, run)
        self._explain_leftovers()
        self.refusals.sort(key=lambda x: x[0])
        for items, changes in self.edits.values():
            items[:] = [changes.get(i, s) for i, s in enumerate(items) if changes.get(i, s) is not None]

    def _refuse(self, line: int, why: str) -> None:
        self.refusals.append((line, why))

    def _base_fact(self, m: _Member) -> Fact:
        return self.align.of_base(*m.base)

    def _plan(self, ri: int, region: _Region, k: int, run: dict[int, _Member]) -> None:
        """Greedy over ascending offsets: the widest legal aligned group first."""
        first = next(iter(run.values()))
        size = opcodes.TYPE_BITS[opcodes.value_type(first.ins)] // 8
        fact = self._base_fact(first)
        widths = (4, 2) if 4 * size <= 16 else (2,)
        merged: set[int] = set()
        explained: set[int] = set()  # covered by a reported refusal
        reported: set[str] = set()
        dead: set[int] = set()  # refused for alignment that no narrower group has either
        for o in sorted(run):
            if o in merged or o in dead or o in explained and (o + fact[1]) % (2 * size):
                continue
            for w in widths:
                window = [o + j * size for j in range(w)]
                if (o + fact[1]) % (w * size) or any(x not in run or x in merged for x in window):
                    continue
                group = [run[x] for x in window]
                try:
                    self._check(group, size, fact, region)
                except Refused as r:
                    self.hazards |= not isinstance(r, _Unaligned)
                    if str(r) not in reported:
                        reported.add(str(r))
                        self._refuse(self._anchor(group).ins.line, str(r))
                    explained.update(window)
                    if isinstance(r, _Unaligned) and fact[0] < 2 * size:
                        dead.update(window)
                        break
                    continue
                self._merge(group, size)
                merged.update(window)
                break
        for o, m in run.items():
            if o not in merged and o not in explained:
                self.leftover.append((ri, k, m))

    def _anchor(self, group: list[_Member]) -> _Member:
        return max(group, key=lambda m: m.iid) if self.store else min(group, key=lambda m: m.iid)

    def _check(self, group: list[_Member], size: int, fact: Fact, region: _Region) -> None:
        g0 = group[0]
        w = len(group)
        need = w * size
        vt = opcodes.value_type(g0.ins)
        m, r = fact
        at = (r + g0.offset) % m
        known = min(m, lowbit(at)) if at else m
        if known < need:
            why = self.align.explain(g0.base[1]) if g0.base[0] == "reg" \
                else f"{g0.base[1]} is declared .align {fact[0]}"
            have = "nothing is known" if known == 1 else f"only {known} bytes are proven"
            raise _Unaligned(f"alignment of {_addr_text(g0, g0.offset)} not proven: .v{w}.{vt} needs "
                             f"{need} bytes, {have}: {why}")
        scan = self.scan
        anchor = self._anchor(group)
        # PTX vector operands hold registers of one width: ptxas rejects
        # ``{%r1, %rs2}`` although a scalar ld.u16 may write either
        regs = [x.value for x in group if x.value is not None]
        widths = {self.reg_bits.get(r) for r in regs}
        if len(widths) > 1:
            shown = ", ".join(f"{r} ({self.reg_bits.get(r) or '?'}-bit)" for r in regs)
            raise Refused(f"vector elements must have one register width: {shown}")
        if not self.store:
            dests = [x.value for x in group]
            dup = next((d for d in dests if dests.count(d) > 1), None)
            check(dup is None, f"destination {dup} is loaded twice")
        iids = region.mem_iids
        for x in group:
            if x is anchor:
                continue
            lo, hi = (x.iid, anchor.iid) if self.store else (anchor.iid, x.iid)
            if self.store:
                if x.value is not None:
                    d = scan.first_between(scan.defs_at.get(x.value), lo, hi)
                    if d is not None:
                        raise Refused(f"source {x.value} of the store to {_addr_text(x, x.offset)} "
                                      f"is written at line {scan.instrs[d].line} before the last "
                                      "store of the group")
            else:
                reg = x.value
                for what, at in (("written", scan.defs_at), ("read", scan.uses_at)):
                    d = scan.first_between(at.get(reg), lo, hi)
                    if d is not None:
                        raise Refused(f"destination {reg} of the load from "
                                      f"{_addr_text(x, x.offset)} is {what} at line "
                                      f"{scan.instrs[d].line} after the first load of the group")
            k = bisect_right(iids, lo)
            while k < len(iids) and iids[k] < hi:
                _, acc, other = region.mem[k]
                k += 1
                if other is x.ins or (not self.store and not acc.store):
                    continue
                if may_alias(x.access, acc, self.noalias, self.overlap):
                    raise Refused(f"{other.full_opcode} at line {other.line} may alias "
                                  f"{_addr_text(x, x.offset)}")

    def _merge(self, group: list[_Member], size: int) -> None:
        g0 = group[0]
        anchor = self._anchor(group)
        w = len(group)
        mods = list(g0.ins.modifiers)
        t = opcodes.value_type(g0.ins)
        at = len(mods) - 1 - mods[::-1].index(t)
        mods.insert(at, f"v{w}")
        vec = Vec(tuple(operand_facts.unbrace(x.operand) for x in group))
        rest = g0.ins.operands[2:]
        # The anchor's own address register holds its value where the merged
        # access goes; through an add chain the members' registers may not
        # (defined later, or redefined), so address the group from it.
        addr = replace(anchor.addr, offset=anchor.addr.offset + g0.offset - anchor.offset,
                       plus_zero=anchor.addr.plus_zero and g0.offset == anchor.offset)
        ops = (addr, vec, *rest) if self.store else (vec, addr, *rest)
        new = replace(anchor.ins, modifiers=tuple(mods), operands=ops)
        for x in group:
            items, i = self.scan.slots[x.iid]
            self.edits.setdefault(id(items), (items, {}))[1][i] = new if x is anchor else None
        span = f"{_addr_text(g0, g0.offset)}..{_addr_text(group[-1], group[-1].offset)}"
        self.changes.append((anchor.ins.line, f"{w} x {g0.ins.full_opcode} {span} -> {new.full_opcode}"))

    def _explain_leftovers(self) -> None:
        """Why scalar accesses that had a would-be partner stayed scalar: an
        ordering point in between, mixed shapes, or a gap."""
        by_base: dict[tuple, list[tuple[int, int, _Member]]] = {}
        by_name: dict[str, list[tuple[int, int, _Member]]] = {}
        for ri, k, m in self.leftover:
            by_base.setdefault(m.access.base, []).append((ri, k, m))
            if m.access.base and m.access.base[0] == "reg":
                by_name.setdefault(m.access.base[1], []).append((ri, k, m))
        regions = self.scan.regions
        verb = "stored" if self.store else "loaded"
        for ri, k, m in self.leftover:
            size = opcodes.TYPE_BITS[opcodes.value_type(m.ins)] // 8
            phase = m.offset + self._base_fact(m)[1]
            if phase % size:
                continue
            partner = m.offset + size if (phase // size) % 2 == 0 else m.offset - size
            here, there = _addr_text(m, m.offset), _addr_text(m, partner)
            hit = next(((rj, kj, n) for rj, kj, n in by_base[m.access.base]
                        if n.offset == partner and (rj, kj) != (ri, k)), None)
            if hit is None and m.access.base and m.access.base[0] == "reg":
                moved = next((n for rj, _, n in by_name[m.access.base[1]] if rj == ri
                              and n.offset == partner and n.access.base != m.access.base), None)
                if moved is not None:
                    a, b = sorted((m, moved), key=lambda x: x.iid)
                    if a is m:
                        self._refuse(m.ins.line, f"base {m.access.base[1]} is written "
                                                 f"between {here} and {there}")
                    continue
            if hit is None:
                run = regions[ri].runs[k]
                if any(o != m.offset and abs(o - m.offset) < 4 * size for o in run):
                    self._refuse(m.ins.line, f"{m.ins.full_opcode} {here}: not contiguous, "
                                             f"its aligned partner {there} is not {verb}")
                continue
            rj, kj, n = hit
            if n.iid < m.iid or rj == ri and regions[rj].keys[kj] == regions[ri].keys[k]:
                continue  # reported from the earlier one / the same access repeated
            if rj != ri:
                why = f"{regions[ri].end} lies between {here} and {there}"
            elif m.ins.modifiers != n.ins.modifiers:
                why = f"mixed accesses: {m.ins.full_opcode} {here} and {n.ins.full_opcode} {there}"
            elif (m.ins.guard, m.ins.guard_neg) != (n.ins.guard, n.ins.guard_neg):
                why = f"different guards on {here} and {there}"
            elif m.ins.guard:
                why = f"guard {m.ins.guard} is written between {here} and {there}"
            else:
                why = f"different trailing operands on {here} and {there}"
            self._refuse(m.ins.line, why)


# ---------------------------------------------------------------------------
# split_ld
# ---------------------------------------------------------------------------


def split_load(ins: Instruction) -> list[Instruction] | None:
    """Scalar loads for a weak ``.v2``/``.v4`` ``ld.global`` (raises
    :class:`Refused`); None for instructions that are not candidates."""
    if ins.opcode != "ld" or opcodes.space_of(ins) != "global" or opcodes.vector_width(ins) == 1:
        return None
    w = opcodes.vector_width(ins)
    check(operand_facts.role(ins) == "load", f"{ins.full_opcode}: only weak loads are split")
    check(w in (2, 4), f"{ins.full_opcode}: only .v2 and .v4 loads are split")
    ops = ins.operands
    items = operand_facts.vector_items(ops[0])
    fa = address_of(ins)
    t = opcodes.value_type(ins)
    check(items is not None and len(ops) > 1 and fa is not None and fa.operand is ops[1] and t is not None
          and len(items) == w, f"{ins.full_opcode}: unexpected operands")
    addr = fa.operand
    names = [operand_facts.reg_name(i) for i in items]
    regs = [r for r in names if r is not None]
    check(len(regs) + sum(1 for i in items if operand_facts.is_sink(i)) == w,
          f"{ins.full_opcode}: destinations must be registers or _")
    dup = next((r for r in regs if regs.count(r) > 1), None)
    check(dup is None, f"{ins.full_opcode}: destination {dup} appears twice")
    read = set(fa.regs) | {ins.guard} | {r for o in ops[2:] for r in operand_facts.regs_in(o)}
    check(regs, f"{ins.full_opcode}: every destination is a sink")
    clash = next((r for r in regs if r in read), None)
    check(clash is None, f"{ins.full_opcode}: destination {clash} is also read by the load")
    size = opcodes.TYPE_BITS[t] // 8
    mods = tuple(m for m in ins.modifiers if m not in ("v2", "v4"))
    out = []
    for j, item in enumerate(items):
        if names[j] is None:
            continue
        a = addr if j == 0 else replace(addr, offset=addr.offset + j * size, plus_zero=False)
        out.append(replace(ins, modifiers=mods, operands=(item, a, *ops[2:])))
    return out


# ---------------------------------------------------------------------------
# The passes
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class _Vectorize(FunctionPass):
    """``assume_align=N``: the user asserts every global pointer parameter is
    aligned to N bytes (a pointer-sized parameter of an ``.entry`` that an
    address derives from); 0, the default, asserts nothing."""

    family: ClassVar[str] = VECTORIZE
    stores: ClassVar[bool] = False
    assume_align: int = 0

    def __post_init__(self) -> None:
        super().__post_init__()
        a = self.assume_align
        if a < 0 or (a and a & (a - 1)):
            raise ValueError(f"assume_align must be 0 or a power of two, not {a}")

    def run_function(self, fn, report: ChangeReport, module: Module, analyses=None) -> None:
        # Merging moves instructions; a hazard that refused one group may be
        # gone afterwards, so repeat until nothing changes (idempotence).
        # A refusal stands unless a later round merged at its line.
        analyses = manager_or_default(analyses)
        changes: list[tuple[int, str]] = []
        refusals: list[list[tuple[int, str]]] = []
        for _ in range(8):
            v = _Vectorizer(fn, module, self.stores, self.assume_align, analyses)
            v.run()
            changes += v.changes
            merged_now = {line for line, _ in v.changes}
            refusals = [[x for x in r if x[0] not in merged_now] for r in refusals]
            refusals.append(v.refusals)
            if not (v.changes and v.hazards):
                break
        for line, what in changes:
            report.change(fn.name, line, what)
        for line, why in sorted(dict.fromkeys(x for r in refusals for x in r), key=lambda x: x[0]):
            report.refuse(fn.name, line, why)


@declare
@dataclass(frozen=True)
class VecLd(_Vectorize):
    kind: ClassVar[str] = "vec_ld"
    conflicts: ClassVar[dict[str, str]] = {"split_ld": "vec_ld and split_ld undo each other"}
    description: ClassVar[str] = ("merge scalar ld.global at contiguous aligned offsets of one base "
                                  "into .v2/.v4 loads")


@declare
@dataclass(frozen=True)
class VecSt(_Vectorize):
    kind: ClassVar[str] = "vec_st"
    stores: ClassVar[bool] = True
    description: ClassVar[str] = ("merge scalar st.global at contiguous aligned offsets of one base "
                                  "into .v2/.v4 stores")


@declare
@dataclass(frozen=True)
class SplitLd(FunctionPass):
    kind: ClassVar[str] = "split_ld"
    family: ClassVar[str] = VECTORIZE
    description: ClassVar[str] = "expand .v2/.v4 global loads into one scalar load per element"

    def run_function(self, fn, report: ChangeReport, module: Module) -> None:
        edits: list[tuple[list, int, list[Instruction]]] = []
        _collect_splits(fn.body, fn.name, report, edits)
        for items, i, new in reversed(edits):
            items[i:i + 1] = new


def _collect_splits(block: Block, fn: str, report: ChangeReport, edits: list) -> None:
    for i, s in enumerate(block.items):
        if type(s) is Block:
            _collect_splits(s, fn, report, edits)
            continue
        if type(s) is not Instruction:
            continue
        try:
            new = split_load(s)
        except Refused as r:
            report.refuse(fn, s.line, str(r))
            continue
        if new is not None:
            edits.append((block.items, i, new))
            report.change(fn, s.line, f"{s.full_opcode} -> {len(new)} x {new[0].full_opcode}")


def census(module: Module, store: bool) -> str:
    """Why ``vec_ld`` (``store=False``) or ``vec_st`` has nothing to do in
    ``module``, in one line: how many global accesses there are and what
    kind (already vectors, not candidates, scalars), and for scalars that
    share a base value (address chains followed) but are too far apart,
    their spacing -- Triton without a divisibility hint spreads a block
    over the threads, so one thread's elements are ``32 * num_warps *
    size`` bytes apart. For reports when the pass neither changed nor
    refused anything."""
    op = "st" if store else "ld"
    vec: dict[int, int] = {}
    other = scalar = 0
    gaps: dict[int, int] = {}  # smallest spacing within a same-base run -> scalars in such runs
    for fn in module.functions:
        if fn.body is None:
            continue
        for ins in _instructions(fn.body):
            if ins.opcode != op or opcodes.space_of(ins) != "global":
                continue
            w = opcodes.vector_width(ins)
            if w > 1:
                vec[w] = vec.get(w, 0) + 1
            elif candidate(ins) is None:
                other += 1
            else:
                scalar += 1
        if scalar:
            for region in _Scan(fn, store).regions:
                by_base: dict[tuple, dict[int, _Member]] = {}  # guards and shapes aside
                for run in region.runs:
                    for o, m in run.items():
                        by_base.setdefault(m.access.base, {})[o] = m
                for members in by_base.values():
                    if len(members) < 2:
                        continue
                    offs = sorted(members)
                    gap = min(b - a for a, b in zip(offs, offs[1:]))
                    size = opcodes.TYPE_BITS[opcodes.value_type(members[offs[0]].ins)] // 8
                    if gap > size:
                        gaps[gap] = gaps.get(gap, 0) + len(members)
    total = sum(vec.values()) + other + scalar
    if not total:
        return f"no {op}.global in the kernel"
    parts = [f"{n} already .v{w}" for w, n in sorted(vec.items(), reverse=True)]
    if other:
        parts.append(f"{other} not weak typed scalars with a register/symbol address")
    strided = sum(gaps.values())
    for gap, n in sorted(gaps.items()):
        parts.append(f"{n} scalar on one base (address chains followed) but {gap} bytes apart, not contiguous")
    if scalar - strided > 0:
        parts.append(f"{scalar - strided} scalar without a same-guard, same-base partner at an adjacent "
                     "aligned offset")
    return f"nothing to merge among {total} {op}.global: " + ", ".join(parts)


def _instructions(block: Block):
    for s in block.items:
        if type(s) is Block:
            yield from _instructions(s)
        elif type(s) is Instruction:
            yield s
