"""``loop_version{check=align,width=2|4}``: version a counted single-block
loop on a runtime test, with a vectorised fast copy.

A row-per-thread loop walks its global arrays one element per iteration
(``x[i]``, ``y[i]``): ``width`` iterations touch ``width`` contiguous
elements of each array, which one ``ld.global.v2/v4`` / ``st.global.v2/v4``
could move, if the addresses were aligned to the vector and no store of one
iteration changed what a later one loads. Neither is known from the PTX when
the pointers arrive at run time, so the pass tests both at run time::

    L:        q = the next width-1 exit tests all stay in the loop (unroll's check)
                  and every merged access's address is aligned to its vector
                  and each store's window of width elements meets no other
                  access's window (or is the very slots it loads, before storing)
              @!q bra L_slow
              width copies of the body, each array's accesses merged into one
              vector access (loads at the first copy, stores at the last)
              bra L_latch
    L_slow:   the original body
    L_latch:  @p bra L            // the original branch, the original exit

The test runs at the top of every trip and reads the addresses the trip is
about to touch (the address arithmetic before each access copied into fresh
registers: pure integer instructions only), so it decides on what is really
accessed: a misaligned row takes the original iteration, which moves the
pointers one element on, and the next trip tests again. Each side is the
original under its condition -- ``width`` original iterations whose dropped
exit tests stay in the loop, or one iteration -- which is exactly what the
loop proof (:mod:`ptxopt.equivalence.prove.loop_sim`) checks, with no
assumption: the merged accesses' alignment and the windows' disjointness
are in its path condition.

Each merged access must advance by exactly its element size per iteration
(its address, as an affine form of the registers at the top of the trip, in
copy ``j`` is the one of copy 0 plus ``j`` elements): a grid-stride loop, a
gather or a column walk is refused with the reason. Store/access pairs
whose distance is a constant are decided here (the same slots loaded before
stored, or windows apart) and need no runtime test.

Refused, with the reason: what ``unroll``'s guarded form refuses (the trip
count's form, several blocks, nested scopes, declarations), a global or
generic memory instruction other than a scalar weak ``ld.global``/``st.global``
of 4 bytes (8 with ``width=2``) -- weak ``ld``/``st`` of the shared, local,
const and param spaces never touch global bytes and stay in place, unmerged,
in every copy (a row staged in shared memory) --, an address that is not register-based, not 64-bit or
not contiguous across iterations, a constant-distance overlap, an address
computed by something other than pure integer arithmetic, and a barrier,
fence or warp collective in the loop: the runtime test reads per-thread
addresses, so it is not uniform across the block (refused as such), and
even a uniform test would move accesses across the barrier (refused too).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar

from ptxopt.ptx import opcodes, operand_facts
from ptxopt.analysis.uniform import nonuniform_registers
from ptxopt.ptx.emit import format_instruction
from ptxopt.ptx.ir import Addr, Imm, Instruction, Label, Neg, Pair, Reg, Vec
from ptxopt.passes.base import ChangeReport, FunctionPass, Refused, check
from ptxopt.analysis.manager import manager_or_default
from ptxopt.passes.families import UNROLL
from ptxopt.passes.registry import declare
from ptxopt.passes.unroll import _declared, _fresh, _nounroll, _parse_snippet, counted_single_block_loop, exit_check
from ptxopt.passes.vectorize import candidate, declared_bits

#: opcodes copied into the runtime test when an address depends on them (pure integer arithmetic)
_SLICEABLE = frozenset({"mov", "add", "sub", "mul", "mad", "shl", "shr", "cvt", "cvta", "and", "or", "xor"})
_SIZES = {2: (4, 8), 4: (4,)}
#: state spaces whose weak ``ld``/``st`` never touch global bytes (a generic address may): left unmerged,
#: in place in every copy, so moving the merged global accesses across them reorders disjoint bytes only
_OTHER_SPACES = frozenset({"shared", "local", "const", "param"})


@dataclass(frozen=True)
class _Site:
    """One merged access: its position in the body, the instruction, element bytes."""

    k: int
    ins: Instruction
    store: bool
    size: int

    @property
    def addr(self) -> Addr:
        return self.ins.operands[0] if self.store else self.ins.operands[1]

    @property
    def value(self):
        return self.ins.operands[1] if self.store else self.ins.operands[0]


@declare
@dataclass(frozen=True)
class LoopVersion(FunctionPass):
    """``loop_version{check=align,width=W}``: see the module doc."""

    kind: ClassVar[str] = "loop_version"
    aliases: ClassVar[dict[str, dict]] = {"loop_version_2": {"check": "align", "width": 2},
                                           "loop_version_4": {"check": "align", "width": 4}}
    family: ClassVar[str] = UNROLL  # the loop-restructuring family: at most one of unroll and loop_version
    choices: ClassVar[dict] = {"check": ("align",), "width": (2, 4)}
    structural: ClassVar[bool] = True  # it rewrites loops: proved before ``run`` writes it
    check: str
    width: int

    @property
    def description(self) -> str:
        return (f"counted single-block loops get a fast copy of {self.width} iterations with their contiguous "
                f"global accesses merged into .v{self.width}, taken per trip when a runtime test shows the "
                "addresses aligned and the store windows disjoint; else the original iteration")

    def run_function(self, fn, report: ChangeReport, module, analyses=None) -> None:
        analyses = manager_or_default(analyses)
        cfg = analyses.cfg(fn)
        info = analyses.loops(fn)
        labels = {s.name for s in fn.body.items if type(s) is Label}
        types = declared_bits(fn)
        nonuniform = nonuniform_registers(cfg)
        first_label = next((k for k, s in enumerate(fn.body.items) if type(s) is Label), len(fn.body.items))
        nounroll = "at module level" if any(_nounroll(d) for d in module.items) else \
            "on the function" if any(_nounroll(s) for s in fn.body.items[:first_label]) else None
        plans = []
        for n, lp in enumerate(info.loops):
            hdr = cfg.blocks[lp.header]
            line = hdr.instructions[0].line if hdr.instructions else 0
            try:
                check(nounroll is None, f'.pragma "nounroll" {nounroll}')
                plans.append(self._plan(fn, cfg, lp, n, labels, types, nonuniform) + (line,))
            except Refused as r:
                report.refuse(fn.name, line, f"loop {hdr.label or lp.header}: {r}")
        decls: list[str] = []
        for label_at, branch_at, new, regs, what, line in sorted(plans, key=lambda p: p[0], reverse=True):
            fn.body.items[label_at + 1:branch_at + 1] = new
            decls = regs + decls
        for *_, what, line in sorted(plans, key=lambda p: p[0]):
            report.change(fn.name, line, what)
        if decls:
            fn.body.items[0:0] = _parse_snippet(decls)

    # -- planning ------------------------------------------------------------------

    def _plan(self, fn, cfg, lp, n, labels, types, nonuniform):
        hdr = cfg.blocks[lp.header]
        w = self.width
        items, label_at, branch_at, br = counted_single_block_loop(fn, cfg, lp, "versioned")
        stmts = items[label_at + 1:branch_at]
        check(lp.test is None or not lp.test.reads_previous,
              "the exit test reads the previous iteration's value (not provable yet)")
        body = [s for s in stmts if type(s) is Instruction]
        sites = self._sites(body)
        check(sites, "no global load or store in the loop (nothing to merge)")
        for s in sites:
            a = operand_facts.address(s.ins)
            check(a.kind == "reg" and types.get(a.name) == 64,
                  f"line {s.ins.line}: the address of {s.ins.full_opcode} is not a 64-bit register")
        groups = _groups(body, sites, w, _iv(lp))
        c = w // groups[0].g  # copies of the body per trip
        check(lp.trip.kind != "constant" or lp.trip.value >= c,
              f"the trip count {lp.trip.value} is below the {c} iterations of a trip (the fast copy would never run)")
        forms = _forms(body, c, _iv(lp))
        for gr in groups:
            for k, off in gr.members:
                f0 = forms[0][k]
                for j in range(1, c):
                    fj = forms[j].get(k)
                    check(fj is not None and _sub(fj, f0) == ((), j * gr.g * gr.size),
                          f"line {body[k].line}: {body[k].full_opcode} does not advance by one element "
                          f"({gr.size} bytes) per iteration (a strided, gathered or grid-stride access)")
        pfx = f"%lv{n}_"
        taken = _declared(fn.body)
        while any(t.startswith(pfx) for t in taken):
            pfx = pfx[:-1] + "x_"
        guard, decls, q, inputs, pairs = self._guard(cfg, lp, body, groups, forms[0], types, pfx, c)
        if lp.barriers or lp.collectives:
            odd = sorted(r for r in inputs if r in nonuniform)
            check(not odd, f"a barrier, warp collective or .sync.aligned instruction in the loop, and the runtime "
                           f"test reads per-thread values ({', '.join(odd[:3])}): not uniform across the block")
            check(False, "a barrier, warp collective or .sync.aligned instruction in the loop: the merged accesses "
                         "would cross it")
        slow = _fresh(labels, f"{hdr.label}_slow")
        labels.add(slow)
        latch = _fresh(labels, f"{hdr.label}_latch")
        labels.add(latch)
        fast, fdecls = self._fast(body, groups, pfx, c)
        line = hdr.instructions[0].line if hdr.instructions else 0
        pre = [replace(x, line=line) for x in _parse_snippet(guard + [f"@!{q} bra {slow};"])]
        post = _parse_snippet([f"bra {latch};", f"{slow}:"])
        new = pre + fast + post + list(stmts) + _parse_snippet([f"{latch}:"]) + [br]
        nl = sum(1 for s in sites if not s.store)
        what = (f"loop {hdr.label}: {c} iteration{'s' if c != 1 else ''} per trip with {nl} load"
                f"{'s' if nl != 1 else ''} and {len(sites) - nl} store{'s' if len(sites) - nl != 1 else ''} merged "
                f"into .v{w}" + (" while the exit test allows them," if c > 1 else " when")
                + f" the addresses are {w}-element aligned"
                + (f" and {pairs} store window{'s' if pairs != 1 else ''} disjoint" if pairs else "")
                + f", else one original iteration ({slow})")
        return label_at, branch_at, new, decls + fdecls, what

    def _sites(self, body: list[Instruction]) -> list[_Site]:
        sizes = _SIZES[self.width]
        out = []
        for k, ins in enumerate(body):
            role = operand_facts.role(ins)
            if role in ("load", "store") and ins.opcode in ("ld", "st") and opcodes.space_of(ins) in _OTHER_SPACES:
                continue  # weak, another state space than the merged global bytes: kept in place in every copy
            if role in ("load", "store"):
                check(candidate(ins) == (), f"line {ins.line}: {ins.full_opcode} is not a scalar weak global "
                                            "access (only ld.global/st.global are merged)")
                check(ins.guard is None, f"line {ins.line}: a predicated {ins.full_opcode}")
                size = opcodes.TYPE_BITS[opcodes.value_type(ins)] // 8
                check(size in sizes, f"line {ins.line}: {ins.full_opcode} moves {size} bytes "
                                     f"(.v{self.width} merges {' or '.join(map(str, sizes))}-byte elements)")
                check(ins.opcode == "st" or operand_facts.scalar_reg(ins.operands[0]) is not None,
                      f"line {ins.line}: {ins.full_opcode} has no single destination register")
                out.append(_Site(k, ins, ins.opcode == "st", size))
            elif role == "collective" or opcodes.is_barrier(ins):
                continue  # the loop's barriers and collectives: refused with the uniformity of the test
            elif role == "order":
                check(False, f"line {ins.line}: {ins.full_opcode} orders memory (the merged accesses would "
                             "cross it)")
        return out

    def _guard(self, cfg, lp, body, groups, forms0, types, pfx, c):
        """The runtime test's lines, declarations, predicate, the registers it reads, and how many
        store windows it tests at run time."""
        w = self.width
        if c > 1:
            lines, decls, q = exit_check(cfg, lp, c, pfx)
        else:
            lines, decls, q = [], [f".reg .pred {pfx}p<1>;"], f"{pfx}p0"
        conds: list[str] = []
        fresh = _Fresh(pfx + "g", types)
        addr: dict[int, str] = {}  # group index -> register holding its window's address at copy 0
        inputs: set[str] = set()
        for i, gr in enumerate(groups):
            sl, reg, used = _slice(body, gr.first, gr.base, fresh)
            lines += sl
            inputs |= used
            if gr.o0:
                r = fresh.new(".b64")
                lines.append(f"add.s64 {r}, {reg}, {gr.o0};")
                reg = r
            addr[i] = reg
        # alignment: every merged address is a multiple of its vector's bytes
        by_bytes: dict[int, list[str]] = {}
        for i, gr in enumerate(groups):
            by_bytes.setdefault(gr.size * w, []).append(addr[i])
        for nbytes, regs in sorted(by_bytes.items()):
            acc = regs[0]
            for r in regs[1:]:
                t = fresh.new(".b64")
                lines.append(f"or.b64 {t}, {acc}, {r};")
                acc = t
            t, p = fresh.new(".b64"), fresh.new(".pred")
            lines += [f"and.b64 {t}, {acc}, {nbytes - 1};", f"setp.eq.b64 {p}, {t}, 0;"]
            conds.append(p)
        # the windows of a store and any other access: disjoint, or the same slots in a safe order
        pairs = 0
        for si, sg in enumerate(groups):
            if not sg.store:
                continue
            for oi, og in enumerate(groups):
                if oi == si or (og.store and oi < si):
                    continue  # itself, or a pair of stores tested from the other side
                ns, no = sg.size * w, og.size * w
                # the same slots are fine for two stores (each merged at its last member, so each slot is
                # written last by the store the body writes it with last) and for loads that each come
                # before the store of their slot (earlier copies store other slots)
                same_ok = og.size == sg.size and (og.store or og.loads_before(sg))
                d = _sub(forms0[og.first], forms0[sg.first])
                d = (d[0], d[1] + og.o0 - og.off_first - sg.o0 + sg.off_first)
                s_ins, o_ins = body[sg.first], body[og.first]
                if not d[0]:
                    dist = d[1]
                    check((dist == 0 and same_ok) or dist >= ns or dist <= -no,
                          f"line {s_ins.line}: {s_ins.full_opcode} and line {o_ins.line}: {o_ins.full_opcode} are "
                          f"{dist} bytes apart: within one trip's {w} elements"
                          + (" (stored before loaded)" if dist == 0 and not og.store else ""))
                    continue
                if ns == no and same_ok:
                    continue  # both windows aligned to their size: the same slots or disjoint, either is fine
                pairs += 1
                p = fresh.new(".pred")
                if ns == no:  # both aligned to the window's size: disjoint unless equal
                    lines.append(f"setp.ne.s64 {p}, {addr[oi]}, {addr[si]};")
                else:
                    t = fresh.new(".b64")
                    lines += [f"sub.s64 {t}, {addr[oi]}, {addr[si]};", f"add.s64 {t}, {t}, {no - 1};",
                              f"setp.ge.u64 {p}, {t}, {ns + no - 1};"]
                    if same_ok:
                        e = fresh.new(".pred")
                        lines += [f"setp.eq.s64 {e}, {addr[oi]}, {addr[si]};", f"or.pred {p}, {p}, {e};"]
                conds.append(p)
        if c > 1:
            lines += [f"and.pred {q}, {q}, {p};" for p in conds]
        else:
            lines += [f"mov.pred {q}, {conds[0]};"] + [f"and.pred {q}, {q}, {p};" for p in conds[1:]]
        return lines, decls + fresh.decls, q, inputs, pairs

    def _fast(self, body, groups, pfx, c):
        """The fast copy: ``c`` copies of the body with each group's ``width`` accesses merged."""
        w = self.width
        fresh = _Fresh(pfx + "v", {})
        member = {k: (i, m) for i, gr in enumerate(groups) for m, (k, _) in enumerate(gr.members)}
        vals = {i: [fresh.new("." + opcodes.value_type(body[gr.first])) for _ in range(w)]
                for i, gr in enumerate(groups)}
        saved = {i: fresh.new(".b64") for i, gr in enumerate(groups) if gr.store}
        out: list[str] = []
        for j in range(c):
            for k, ins in enumerate(body):
                if k not in member:
                    out.append(format_instruction(ins))
                    continue
                i, m = member[k]
                gr = groups[i]
                slot = j * gr.g + m
                vec = Vec(tuple(Reg(v) for v in vals[i]))
                mv = _mov_type(opcodes.value_type(ins))
                a = operand_facts.address(ins)
                if not gr.store:
                    if j == 0 and k == gr.first:
                        at = replace(ins, operands=(ins.operands[0], Addr(Reg(a.name), gr.o0), *ins.operands[2:]))
                        out.append(format_instruction(_vector(at, w, vec)))
                    out.append(f"mov.{mv} {operand_facts.scalar_reg(ins.operands[0])}, {vals[i][slot]};")
                    continue
                if j == 0 and k == gr.first:
                    out.append(f"mov.b64 {saved[i]}, {a.name};")
                out.append(f"mov.{mv} {vals[i][slot]}, {_text(operand_facts.unbrace(ins.operands[1]))};")
                if j == c - 1 and k == gr.last:
                    at = replace(ins, operands=(Addr(Reg(saved[i]), gr.o0), *ins.operands[1:]))
                    out.append(format_instruction(_vector(at, w, vec)))
        line = body[0].line if body else 0
        return [replace(x, line=line) if type(x) is Instruction else x for x in _parse_snippet(out)], fresh.decls


@dataclass
class _Group:
    """The accesses of one array in one iteration: ``g`` consecutive elements of ``size`` bytes
    (``members``: body positions and their byte offsets, by offset), from one base register;
    ``width / g`` iterations make one vector window."""

    store: bool
    size: int
    base: str
    members: list  # (body position, offset from the base register), by offset

    @property
    def g(self) -> int:
        return len(self.members)

    @property
    def o0(self) -> int:
        return self.members[0][1]

    @property
    def first(self) -> int:
        return min(k for k, _ in self.members)

    @property
    def last(self) -> int:
        return max(k for k, _ in self.members)

    @property
    def off_first(self) -> int:
        return next(o for k, o in self.members if k == self.first)

    def loads_before(self, st: "_Group") -> bool:
        """Every slot of this (load) group is loaded before ``st`` stores it."""
        return all(lk < sk for (lk, _), (sk, _) in zip(self.members, st.members))


def _iv(lp) -> tuple[str, bool] | None:
    """The exit test's induction variable and whether its compare is signed, when the compare is
    ordered: the runtime test then keeps the variable from wrapping in that signedness within a
    trip (a != test only bounds the distance to the bound, so a widened index may still wrap)."""
    from ptxopt.analysis.loops import _INT_TYPES
    from ptxopt.passes.unroll import _NEG

    t = lp.test
    if t is None or (t.cmp if t.stay_when else _NEG[t.cmp]) in ("ne", "eq"):
        return None
    return t.iv.reg, _INT_TYPES[t.ty][1]


def _groups(body, sites, w: int, iv) -> list[_Group]:
    """The sites grouped by array: same kind, element size and modifiers, the same address up to a
    constant (copy 0's affine forms), consecutive elements within one iteration, advancing by what
    one iteration covers; refuses what does not fit (module doc)."""
    forms = _forms(body, 2, iv)
    groups: dict[tuple, list] = {}
    for s in sites:
        f0, f1 = forms[0].get(s.k), forms[1].get(s.k)
        check(f0 is not None, f"line {s.ins.line}: the address of {s.ins.full_opcode} is not an affine "
                              "function of the registers at the top of the iteration")
        d = _sub(f1, f0) if f1 is not None else None
        check(d is not None and not d[0] and d[1] > 0,
              f"line {s.ins.line}: {s.ins.full_opcode} does not advance by one element ({s.size} bytes) per "
              "iteration (a strided, gathered or grid-stride access)")
        key = (s.store, s.size, s.ins.modifiers, f0[0], d[1])
        groups.setdefault(key, []).append((f0[1], s))
    out = []
    for (store, size, _, _, step), ms in groups.items():
        ms.sort(key=lambda x: x[0])
        offs = [o for o, _ in ms]
        if len(set(offs)) != len(offs) or any(b - a != size for a, b in zip(offs, offs[1:])) \
                or step != size * len(ms):
            s0 = ms[0][1]
            if len(ms) == 1:
                check(False, f"line {s0.ins.line}: {s0.ins.full_opcode} does not advance by one element "
                             f"({size} bytes) per iteration (a strided, gathered or grid-stride access)")
            check(False, f"line {s0.ins.line}: {len(ms)} accesses of {s0.ins.full_opcode} to one array are not "
                         f"{len(ms)} consecutive elements that advance by {size * len(ms)} bytes per iteration")
        regs = {operand_facts.address(s.ins).name for _, s in ms}
        s0 = ms[0][1]
        check(len(regs) == 1, f"line {s0.ins.line}: the {len(ms)} accesses to one array use several base "
                              "registers")
        base = regs.pop()
        ks = [s.k for _, s in ms]
        check(not any(base in operand_facts.defs_uses(body[k])[0] for k in range(min(ks), max(ks))),
              f"line {s0.ins.line}: the base register {base} changes between the accesses to one array")
        out.append(_Group(store, size, base, [(s.k, operand_facts.address(s.ins).offset) for _, s in ms]))
    gs = {gr.g for gr in out}
    check(len(gs) == 1, "the arrays cover different numbers of elements per iteration "
                        f"({', '.join(map(str, sorted(gs)))})")
    g = gs.pop()
    check(g <= w and w % g == 0, f"an iteration covers {g} elements of each array: not a divisor of .v{w}'s {w} "
                                 "(wider iterations are not split into several vectors)")
    out.sort(key=lambda gr: gr.first)
    return out


# -- helpers --------------------------------------------------------------------------------


class _Fresh:
    """Fresh register names ``pfx`` + a counter, with their declarations."""

    def __init__(self, pfx: str, bits: dict) -> None:
        self.pfx, self.n, self.decls, self.bits = pfx, 0, [], bits

    def new(self, ty: str) -> str:
        name = f"{self.pfx}{self.n}"
        self.n += 1
        self.decls.append(f".reg {ty} {name};")
        return name


def _mov_type(ty: str) -> str:
    return ty if ty.startswith(("f", "b")) else "b" + ty[1:]


def _text(op) -> str:
    from ptxopt.ptx.emit import _op

    return _op(op)


def _vector(ins: Instruction, w: int, vec: Vec) -> Instruction:
    mods = list(ins.modifiers)
    t = opcodes.value_type(ins)
    at = len(mods) - 1 - mods[::-1].index(t)
    mods.insert(at, f"v{w}")
    ops = (ins.operands[0], vec, *ins.operands[2:]) if ins.opcode == "st" else (vec, *ins.operands[1:])
    return replace(ins, modifiers=tuple(mods), operands=ops)


def _slice(body: list[Instruction], k: int, reg: str, fresh: _Fresh) -> tuple[list[str], str, set[str]]:
    """The instructions before ``body[k]`` that ``reg``'s value there depends on, copied onto fresh
    registers (to compute it at the top of the trip): lines, the register holding the value, and the
    registers the copy reads from before the loop body writes them."""
    needed, marked = {reg}, []
    for i in range(k - 1, -1, -1):
        ins = body[i]
        d, u = operand_facts.defs_uses(ins)
        if not set(d) & needed:
            continue
        check(ins.opcode in _SLICEABLE and ins.guard is None and operand_facts.role(ins) == "pure"
              and len(d) == 1, f"line {ins.line}: an address depends on {ins.full_opcode} (not pure integer "
                               "arithmetic the runtime test could repeat)")
        needed = (needed - set(d)) | {r for r in u if not opcodes.is_special_reg(r)}
        marked.append(i)
    cur: dict[str, str] = {}
    lines = []
    for i in reversed(marked):
        ins = body[i]
        (dst,) = operand_facts.defs_uses(ins)[0]
        bits = fresh.bits.get(dst)
        check(bits in (16, 32, 64), f"line {ins.line}: the address register {dst} has no plain integer width")
        new = fresh.new(f".b{bits}")
        renamed = _rename(ins, cur)
        renamed = replace(renamed, operands=(Reg(new), *renamed.operands[1:]))
        lines.append(format_instruction(renamed))
        cur[dst] = new
    return lines, cur.get(reg, reg), needed


def _rename(ins: Instruction, names: dict[str, str]) -> Instruction:
    def one(o):
        t = type(o)
        if t is Reg:
            return Reg(names.get(o.name, o.name))
        if t is Addr:
            return replace(o, base=one(o.base), extra=tuple(one(x) for x in o.extra))
        if t is Vec:
            return Vec(tuple(one(x) for x in o.items))
        if t is Neg:
            return Neg(one(o.reg))
        if t is Pair:
            return Pair(one(o.first), one(o.second))
        return o
    return replace(ins, operands=(ins.operands[0], *(one(o) for o in ins.operands[1:])))


# -- affine forms of registers at the top of the trip ----------------------------------------
# A form is (terms, const): terms a sorted tuple of (register at the top of the trip, coefficient).
# Widths are not modelled: the forms only choose what to merge; the proof decides.


def _sub(a, b):
    acc = dict(a[0])
    for r, c in b[0]:
        acc[r] = acc.get(r, 0) - c
    return tuple(sorted((r, c) for r, c in acc.items() if c)), a[1] - b[1]


def _scale(a, m):
    return tuple((r, c * m) for r, c in a[0] if c * m), a[1] * m


def _forms(body: list[Instruction], w: int, iv: tuple[str, bool] | None) -> list[dict[int, tuple]]:
    """For copies 0 .. w-1 of the body run one after another: each access's address form.
    A widening (``mul.wide``, ``mad.wide``, a widening ``cvt``) is followed only for a value of the
    exit test's induction variable ``iv`` (register, signed) widened with the test's signedness:
    the runtime test keeps that variable from wrapping within a trip, nothing else is known not to
    wrap (``mul.wide.u32`` of a counter tested signed jumps by 2**32 across -1 -> 0)."""
    env: dict[str, tuple | None] = {}

    def widened(ins, src):
        f = val(src)
        types = [m for m in ins.modifiers if m in opcodes.TYPE_BITS]
        signed = (types[-1] if types else "u").startswith("s")
        ok = iv is not None and f is not None and len(f[0]) == 1 and f[0][0][0] == iv[0] and signed == iv[1]
        return f if ok else None

    def val(o):
        o = operand_facts.unbrace(o)
        if type(o) is Imm or operand_facts.is_immediate(o):
            c = operand_facts.immediate(o)
            return ((), c) if type(c) is int else None
        r = operand_facts.reg_name(o)
        if r is None or opcodes.is_special_reg(r):
            return None
        return env[r] if r in env else (((r, 1),), 0)

    out = []
    for _ in range(w):
        here: dict[int, tuple] = {}
        for k, ins in enumerate(body):
            role = operand_facts.role(ins)
            if role in ("load", "store"):
                a = operand_facts.address(ins)
                if a is not None and a.kind == "reg":
                    f = val(Reg(a.name))
                    if f is not None:
                        here[k] = (f[0], f[1] + a.offset)
            d, _ = operand_facts.defs_uses(ins)
            if not d:
                continue
            new = None
            ops = ins.operands
            if ins.guard is None and len(d) == 1 and role == "pure" and "sat" not in ins.modifiers \
                    and not any(m in opcodes.FLOAT_TYPES for m in ins.modifiers):
                op = ins.opcode
                types = [m for m in ins.modifiers if m in opcodes.TYPE_BITS]
                wide = "wide" in ins.modifiers or (op == "cvt" and len(types) == 2 and
                                                    opcodes.TYPE_BITS[types[0]] > opcodes.TYPE_BITS[types[1]])
                if op in ("mov", "cvt") and len(ops) == 2:
                    new = widened(ins, ops[1]) if wide else val(ops[1])
                elif op in ("add", "sub") and len(ops) == 3:
                    a, b = val(ops[1]), val(ops[2])
                    if a is not None and b is not None:
                        new = _sub(a, _scale(b, -1) if op == "add" else b)
                elif op == "mul" and len(ops) == 3 and ("lo" in ins.modifiers or "wide" in ins.modifiers):
                    a, b = val(ops[1]), val(ops[2])
                    if wide and a is not None and b is not None:
                        a, b = (widened(ins, ops[1]) if a[0] else a), (widened(ins, ops[2]) if b[0] else b)
                    if a is not None and b is not None and (not a[0] or not b[0]):
                        new = _scale(b, a[1]) if not a[0] else _scale(a, b[1])
                elif op == "shl" and len(ops) == 3:
                    a, b = val(ops[1]), val(ops[2])
                    if a is not None and b is not None and not b[0] and 0 <= b[1] < 64:
                        new = _scale(a, 1 << b[1])
                elif op == "mad" and len(ops) == 4 and ("lo" in ins.modifiers or "wide" in ins.modifiers):
                    a, b, c = val(ops[1]), val(ops[2]), val(ops[3])
                    if wide and a is not None and b is not None:
                        a, b = (widened(ins, ops[1]) if a[0] else a), (widened(ins, ops[2]) if b[0] else b)
                    if a is not None and b is not None and c is not None and (not a[0] or not b[0]):
                        m = _scale(b, a[1]) if not a[0] else _scale(a, b[1])
                        new = _sub(m, _scale(c, -1))
            for r in d:
                env[r] = new
        out.append(here)
    return out


__all__ = ["LoopVersion"]
