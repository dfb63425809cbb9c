"""``swp_ld{distance=1|2}``: software-pipelined global loads -- the load of
iteration ``i+d`` is issued in iteration ``i`` into rotating registers, so
``d`` iterations of latency are hidden behind the loop's own work.

The loop (:func:`ptxopt.analysis.loops.find_loops`) must be one block
``L: body; @p bra L``, entered only by falling through from the block before
it. A load is pipelined when it is an ``ld.global`` (no
``.volatile``/``.relaxed``/``.acquire``...) whose address -- and guard, for
a masked load ``@%p ld`` -- is a pure function
of the loop's basic induction variables (``add iv, iv, step``, the step an
immediate or a register the loop never writes) and of loop invariants,
through pure integer instructions of the body. Then the address of iteration
``i+k`` is computed at the top of iteration ``i`` by the same instructions on
the induction variables advanced ``k`` times (each advance a copy of the
variable's own update, so it wraps exactly as the loop does)::

    (preheader)  R_0 = ld [addr(0)]; @stay(0) R_1 = ld [addr(1)]          (d = 2)
    L:           q = stay(i) & .. & stay(i+d-1)   // iteration i+d will run
                 @q R_d = ld [addr(i+d)]
                 ... body, the load replaced by  mov dst, R_0; R_0 = R_1; .. R_{d-1} = R_d
                 @p bra L

A masked load's prefetch is also predicated on its own guard computed for
iteration ``i+d``, and the ``mov`` that replaces it keeps the original guard
(where the original loaded nothing, the destination keeps its value).

``stay(i+k)`` is the loop's own exit test computed for iteration ``i+k``
(its instructions, copied the same way): the continuation condition of that
iteration, exactly. So a load of iteration ``i+d`` runs if and only if
iteration ``i+d`` runs (the epilogue's loads are predicated off: nothing is
read that the original does not read), and every short trip count is handled
by the same predicates: a loop of one iteration runs only ``R_0``'s load, one
of ``d`` iterations runs no load from inside the loop. No second copy of the
loop is needed for short trip counts.

Memory must not change between the early load and the iteration that used to
issue it: the loop may hold no store, atomic or async copy that
:func:`ptxopt.analysis.alias.may_alias` does not separate from the load once
register bases are forgotten (the loop facts' ``carried_mem``), and no
barrier, fence, warp collective, call or ordered access at all (another
thread's store becomes visible only through them).

The result is proved, not sampled: :mod:`ptxopt.equivalence.prove.swp_sim`
finds, from the two kernels alone, the invariant that each rotating register
holds what a load of the original reads some iterations later, shows it
inductive, and that every early load is one the original makes in an
iteration that runs (``run`` writes nothing it cannot prove).

Refused, with the reason: a loop of several blocks, a loop entered by a
branch, an exit test or an address that depends on a value loaded in the loop
(or on anything but induction variables and invariants), a load whose guard
depends on a loaded value, a load another thread could change in the loop (a store that may alias it, a
barrier or fence, an atomic), no load to pipeline.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar

from ptxopt.ptx import opcodes, operand_facts
from ptxopt.ptx.ir import Addr, Decl, Instruction, Label, Module, Neg, Pair, Reg, Vec
from ptxopt.passes.base import ChangeReport, FunctionPass, Refused, check
from ptxopt.analysis.manager import manager_or_default
from ptxopt.passes.families import UNROLL
from ptxopt.passes.registry import declare
from ptxopt.passes.unroll import _declared, _parse_snippet

#: pure integer and predicate opcodes an address or exit-test slice may use
_SLICE_OPS = frozenset({"add", "sub", "mul", "mad", "mul24", "mad24", "shl", "shr", "and", "or", "xor", "not",
                        "neg", "min", "max", "mov", "cvt", "cvta", "setp", "selp", "abs", "bfe"})
#: special registers that are the same all through a launch (others, e.g. %clock, are not invariants)
_STEADY_SPECIAL = ("%tid", "%ntid", "%ctaid", "%nctaid", "%laneid", "%nsmid", "%gridid")
_FLOAT = opcodes.FLOAT_TYPES
#: writes the loop facts' memory pairs do not see (calls, async copies, surfaces): refused outright
_WRITES_UNTRACKED = frozenset({"call", "cp", "sust", "sured", "suatom", "stmatrix", "tensormap"}) | opcodes.ASYNC_COPIES


def _regs_of(op) -> list[str]:
    t = type(op)
    if t is Reg:
        return [op.name]
    if t is Addr:
        return ([op.base.name] if type(op.base) is Reg else []) + [r for e in op.extra for r in _regs_of(e)]
    if t is Vec:
        return [r for e in op.items for r in _regs_of(e)]
    if t is Neg:
        return [op.reg.name]
    if t is Pair:
        return _regs_of(op.first) + [op.second.name]
    return []


def _rename(op, m: dict[str, str]):
    t = type(op)
    if t is Reg:
        return Reg(m.get(op.name, op.name))
    if t is Addr:
        return replace(op, base=_rename(op.base, m), extra=tuple(_rename(e, m) for e in op.extra))
    if t is Vec:
        return Vec(tuple(_rename(e, m) for e in op.items))
    if t is Neg:
        return Neg(Reg(m.get(op.reg.name, op.reg.name)))
    if t is Pair:
        return Pair(_rename(op.first, m), Reg(m.get(op.second.name, op.second.name)))
    return op


def _dests(ins) -> list[str] | None:
    """The load's destination registers (None: a form not handled)."""
    d = ins.operands[0] if ins.operands else None
    if type(d) is Reg:
        return [d.name]
    if type(d) is Vec and all(type(x) is Reg for x in d.items):
        return [x.name for x in d.items]
    return None


class _Loop:
    """One single-block loop's body and what the slices need."""

    def __init__(self, cfg, lp, prefix: str) -> None:
        self.cfg, self.lp, self.prefix = cfg, lp, prefix
        blk = cfg.blocks[lp.header]
        self.first = blk.start
        self.iids = list(blk.iids)
        self.written: dict[str, list[int]] = {}
        for i in self.iids:
            for r in cfg.du[i][0]:
                self.written.setdefault(r, []).append(i)
        self.ivs = {}  # reg -> (update instruction, step operand index)
        for iv in lp.ivs:
            ins = cfg.instructions[iv.update]
            if self.written.get(iv.reg) != [iv.update] or ins.guard is not None or ins.opcode not in ("add", "sub") \
                    or len(ins.operands) != 3 or any(m in _FLOAT or m == "cc" for m in ins.modifiers):
                continue
            srcs = [operand_facts.reg_name(o) for o in ins.operands[1:]]
            if srcs[0] == iv.reg and srcs[1] != iv.reg:
                k = 2
            elif ins.opcode == "add" and srcs[1] == iv.reg and srcs[0] != iv.reg:
                k = 1
            else:
                continue
            step = srcs[k - 1]
            if step is not None and step in self.written:
                continue
            self.ivs[iv.reg] = (iv.update, k)
        self.n = 0
        self.types: dict[str, str | None] = {}
        self._last_reads = None

    def fresh(self, tag: str) -> str:
        self.n += 1
        return f"{self.prefix}{tag}{self.n}"

    def slice(self, at: int, regs: list[str], what: str) -> list[int]:
        """The body instructions (iids, in order) that compute ``regs`` as read
        at iid ``at`` from induction variables and invariants; Refused otherwise."""
        need: set[int] = set()

        def visit(r: str, at: int, depth: int) -> None:
            check(depth < 64, f"{what} is computed by too long a chain")
            if r.startswith("%") and opcodes.is_special_reg(r):
                check(r.startswith(_STEADY_SPECIAL), f"{what} reads {r}, which changes during the launch")
                return
            defs = self.written.get(r)
            if not defs or r in self.ivs:
                return
            check(len(defs) == 1, f"{what} reads {r}, written {len(defs)} times in the loop")
            d = defs[0]
            ins = self.cfg.instructions[d]
            check(d < at, f"{what} reads {r} from the previous iteration (line {ins.line})")
            if ins.opcode in opcodes.LOADS:
                raise Refused(f"{what} depends on a value loaded in the loop (line {ins.line})")
            check(ins.opcode in _SLICE_OPS and ins.guard is None and "cc" not in ins.modifiers
                  and not any(m in _FLOAT for m in ins.modifiers),
                  f"{what} depends on {ins.full_opcode} at line {ins.line} (only unguarded integer arithmetic "
                  f"of induction variables and invariants is computed ahead)")
            if d in need:
                return
            need.add(d)
            for u in self.cfg.du[d][1]:
                visit(u, d, depth + 1)

        for r in regs:
            visit(r, at, 0)
        return sorted(need)

    def emit_slice(self, need: list[int], ahead: int, out: list, line: int, cache: dict) -> dict[str, str]:
        """Copies of ``need`` computing iteration ``i+ahead``'s values from the
        induction variables' values now (iteration ``i``'s top); returns the
        register map to apply to a reader."""
        cfg = self.cfg

        def iv_value(reg: str, k: int) -> str:
            if k == 0:
                return reg
            key = (reg, k)
            if key not in cache:
                prev = iv_value(reg, k - 1)
                upd_iid, _ = self.ivs[reg]
                upd = cfg.instructions[upd_iid]
                dst = self.fresh("v")
                self.types[dst] = cfg.reg_types.get(reg)
                ops = (Reg(dst),) + tuple(_rename(o, {reg: prev}) for o in upd.operands[1:])
                out.append(replace(upd, operands=ops, line=line))
                cache[key] = dst
            return cache[key]

        def reads(at: int, m: dict[str, str]) -> dict[str, str]:
            got = dict(m)
            for u in cfg.du[at][1]:
                if u in self.ivs:
                    got[u] = iv_value(u, ahead + (1 if self.ivs[u][0] < at else 0))
            return got

        m: dict[str, str] = {}
        for d in need:
            if (d, ahead) in cache:  # already computed for this iteration (a slice two loads share)
                m.update(cache[(d, ahead)])
                continue
            ins = cfg.instructions[d]
            mm = reads(d, m)
            f = operand_facts.facts(ins)
            new = {r: self.fresh("s") for r in cfg.du[d][0]}
            ops = tuple(_rename(o, new) for o in ins.operands[:f.ndest]) + \
                tuple(_rename(o, mm) for o in ins.operands[f.ndest:])
            out.append(replace(ins, operands=ops, line=line))
            for r, n in new.items():
                self.types[n] = self.cfg.reg_types.get(r)
            m.update(new)
            cache[(d, ahead)] = new
        self._last_reads = reads
        return m


@declare
@dataclass(frozen=True)
class SwpLd(FunctionPass):
    """``swp_ld{distance=D}``: see the module doc."""

    kind: ClassVar[str] = "swp_ld"
    aliases: ClassVar[dict[str, dict]] = {"swp_ld_1": {"distance": 1}, "swp_ld_2": {"distance": 2}}
    family: ClassVar[str] = UNROLL  # one loop rewrite per pipeline (its proof covers one)
    choices: ClassVar[dict] = {"distance": (1, 2)}
    structural: ClassVar[bool] = True  # it rewrites loops: proved (:mod:`.swp_sim`) before ``run`` writes it
    distance: int

    @property
    def description(self) -> str:
        return f"global loads in single-block loops are issued {self.distance} iteration" \
               f"{'s' if self.distance > 1 else ''} ahead into rotating registers, predicated on that " \
               f"iteration running"

    def run_function(self, fn, report: ChangeReport, module: Module, analyses=None) -> None:
        analyses = manager_or_default(analyses)
        cfg = analyses.cfg(fn)
        info = analyses.loops(fn)
        taken = _declared(fn.body)
        plans = []
        for n, lp in enumerate(info.loops):
            hdr = cfg.blocks[lp.header]
            line = hdr.instructions[0].line if hdr.instructions else 0
            prefix = f"%swp{n}_"
            while any(t.startswith(prefix) for t in taken):
                prefix = prefix[:-1] + "x_"
            try:
                plans.append(self._plan(fn, cfg, lp, prefix, report))
            except Refused as r:
                report.refuse(fn.name, line, f"loop {hdr.label or lp.header}: {r}")
        decls: list[str] = []
        for label_at, end_at, top_at, pro, top, repl, what, line, regs in sorted(plans, key=lambda p: p[0],
                                                                                 reverse=True):
            items = fn.body.items
            body = items[top_at:end_at]
            new_body = []
            for s in body:
                new_body += repl.get(id(s), [s])
            items[top_at:end_at] = top + new_body
            items[label_at:label_at] = pro
            decls = regs + decls
        for p in sorted(plans, key=lambda p: p[0]):
            report.change(fn.name, p[7], p[6])
        if decls:
            fn.body.items[0:0] = _parse_snippet(decls)

    def _plan(self, fn, cfg, lp, prefix: str, report: ChangeReport):
        d = self.distance
        hdr = cfg.blocks[lp.header]
        check(lp.blocks == frozenset({lp.header}), f"the loop has {len(lp.blocks)} blocks (only single-block "
                                                   f"loops are pipelined)")
        check(hdr.label is not None and len(hdr.labels) == 1, "the loop's block has no single label")
        check(all(len(cfg.sites[i]) == 1 for i in hdr.iids), "the loop holds a nested { } scope")
        items = fn.body.items
        label_at = next((k for k, s in enumerate(items) if type(s) is Label and s.name == hdr.label), None)
        check(label_at is not None, "the loop's label is not a top-level statement")
        br = hdr.instructions[-1]
        check(br.opcode == "bra" and br.guard is not None and cfg.branch_targets(br) == [hdr.label],
              "the loop does not end in its conditional branch back")
        others = [p for p in hdr.preds if p != lp.header]
        check(others == [lp.header - 1], "the loop is entered from more than one place (or by a branch)")
        before = cfg.blocks[lp.header - 1].terminator
        check(before is None or (before.opcode == "bra" and before.guard is not None
                                 and cfg.branch_targets(before) != [hdr.label]),
              "the loop is entered by a branch (the preheader must fall through into it)")
        for i in hdr.iids:
            ins = cfg.instructions[i]
            role = operand_facts.facts(ins).role
            check(not opcodes.is_barrier(ins), f"a barrier or fence in the loop ({ins.full_opcode}, line {ins.line})")
            check(role != "collective", f"a warp collective in the loop (line {ins.line})")
            check(not opcodes.is_atomic(ins) and ins.opcode not in _WRITES_UNTRACKED,
                  f"{ins.full_opcode} in the loop (line {ins.line})")
            check(not (opcodes.is_memory(ins) and set(ins.modifiers) & opcodes.ORDERED_MEM_MODS),
                  f"an ordered or volatile access in the loop (line {ins.line})")
        body = _Loop(cfg, lp, prefix)
        # the exit test, computed ahead: its predicate's slice as read by the branch
        branch_iid = hdr.iids[-1]
        pred = br.guard
        test_need = body.slice(branch_iid, [pred], "the exit test")
        check(pred in body.written, "the exit test's predicate is not computed in the loop")
        loads = []
        why = []
        stored = {a for s, a in lp.carried_mem}
        for i in hdr.iids:
            ins = cfg.instructions[i]
            if ins.opcode != "ld" or "global" not in ins.modifiers:
                continue
            try:
                gneed = body.slice(i, [ins.guard], f"the guard of the load at line {ins.line}") \
                    if ins.guard is not None else []
                dests = _dests(ins)
                check(dests, f"the load at line {ins.line} has a destination form not handled")
                check(i not in stored, f"a store in the loop may alias the load at line {ins.line}")
                addr = ins.operands[1] if len(ins.operands) > 1 else None
                check(type(addr) is Addr and not addr.extra, f"the load at line {ins.line} has no plain address")
                need = body.slice(i, _regs_of(addr), f"the address of the load at line {ins.line}")
                check(all(cfg.reg_types.get(r) for r in dests), f"the load at line {ins.line} writes an "
                                                                 f"undeclared register")
                loads.append((i, ins, dests, need, gneed))
            except Refused as r:
                why.append(str(r))
        if not loads:
            raise Refused("no load to pipeline" + (f": {why[0]}" + (f" (and {len(why) - 1} more)" if len(why) > 1
                                                                     else "") if why else " (no global load)"))
        for w in why:
            report.refuse(fn.name, hdr.instructions[0].line, f"loop {hdr.label}: {w}")
        line = hdr.instructions[0].line
        rot: dict[int, list[list[str]]] = {}  # load iid -> R_0..R_d, each a list (one per destination)
        regs: list[str] = []
        for i, ins, dests, *_ in loads:
            rot[i] = [[body.fresh("r") for _ in dests] for _ in range(d + 1)]
            for k in range(d + 1):
                for r, dst in zip(rot[i][k], dests):
                    body.types[r] = cfg.reg_types.get(dst)

        def stay(ahead: int, out: list, cache: dict) -> str:
            """A predicate register: iteration i+ahead's exit test stays in the loop."""
            m = body.emit_slice(test_need, ahead, out, line, cache)
            mm = body._last_reads(branch_iid, m)
            p = mm.get(pred, pred)
            if br.guard_neg:
                q = body.fresh("p")
                body.types[q] = "pred"
                out.append(Instruction("not", ("pred",), (Reg(q), Reg(p)), line=line))
                return q
            return p

        def issue(ahead: int, dst_k: int, guard: str | None, out: list, cache: dict) -> None:
            for i, ins, dests, need, gneed in loads:
                m = body.emit_slice(need, ahead, out, line, cache)
                mm = body._last_reads(i, m)
                g = guard
                if ins.guard is not None:  # the load's own guard, computed for that iteration
                    gm = body._last_reads(i, body.emit_slice(gneed, ahead, out, line, cache))
                    own = gm.get(ins.guard, ins.guard)
                    if ins.guard_neg:
                        q = body.fresh("p")
                        body.types[q] = "pred"
                        out.append(Instruction("not", ("pred",), (Reg(q), Reg(own)), line=line))
                        own = q
                    g = own if guard is None else self._all([guard, own], out, body, line)
                dst = Vec(tuple(Reg(r) for r in rot[i][dst_k])) if len(dests) > 1 else Reg(rot[i][dst_k][0])
                out.append(replace(ins, operands=(dst, _rename(ins.operands[1], mm)), guard=g, guard_neg=False,
                                   line=line))

        # prologue: iterations 0 .. d-1 from the values the loop starts with
        pro: list = []
        cache: dict = {}
        issue(0, 0, None, pro, cache)
        for k in range(1, d):
            conds = [stay(j, pro, cache) for j in range(k)]
            issue(k, k, self._all(conds, pro, body, line), pro, cache)
        # the top of every iteration: iteration i+d, predicated on it running
        top: list = []
        cache = {}
        conds = [stay(j, top, cache) for j in range(d)]
        issue(d, d, self._all(conds, top, body, line), top, cache)
        repl = {}
        for i, ins, dests, *_ in loads:
            R = rot[i]
            # under the load's own guard: where the original did not load, the destination keeps its value
            seq = [Instruction("mov", (f"b{_bits(body.types[R[0][j]])}",), (Reg(dst), Reg(R[0][j])), ins.guard,
                               ins.guard_neg, line=ins.line) for j, dst in enumerate(dests)]
            for k in range(d):
                seq += [Instruction("mov", (f"b{_bits(body.types[R[k][j]])}",), (Reg(R[k][j]), Reg(R[k + 1][j])),
                                    line=ins.line) for j in range(len(dests))]
            repl[id(ins)] = seq
        for r, t in body.types.items():
            check(t is not None, f"register {r} would have no declared type")
            regs.append(f".reg .{t} {r};")
        top_at = label_at + 1
        while type(items[top_at]) is Decl:  # a leading ``.pragma`` stays first in the loop
            top_at += 1
        end_at = cfg.sites[branch_iid][0] + 1
        what = (f"loop {hdr.label}: {len(loads)} load{'s' if len(loads) != 1 else ''} issued {d} iteration"
                f"{'s' if d != 1 else ''} ahead (lines {', '.join(str(x[1].line) for x in loads)})")
        return label_at, end_at, top_at, pro, top, repl, what, line, regs

    @staticmethod
    def _all(conds: list[str], out: list, body: _Loop, line: int) -> str:
        if len(conds) == 1:
            return conds[0]
        q = body.fresh("p")
        body.types[q] = "pred"
        out.append(Instruction("and", ("pred",), (Reg(q), Reg(conds[0]), Reg(conds[1])), line=line))
        for c in conds[2:]:
            out.append(Instruction("and", ("pred",), (Reg(q), Reg(q), Reg(c)), line=line))
        return q


def _bits(t: str | None) -> int:
    return opcodes.TYPE_BITS.get(t, 32) if t else 32


__all__ = ["SwpLd"]
