"""Control flow and CTA synchronisation: bra brx call ret exit bar barrier
trap, and the no-op hints (nanosleep, pmevent, griddepcontrol, setmaxnreg).

These compile to engine steps (:mod:`ptxopt.interp.engine` does the
scheduling); this module only decodes their operands.

Calls follow the PTX ABI as nvcc emits it: the caller declares ``.param``
variables in a ``{ }`` scope, stores the arguments, ``call (ret), f, (args)``
and loads the result. Arguments are copied byte for byte into the callee's
formal ``.param`` variables (one row per thread) and the return variable is
copied back; ``.reg`` formals and register/immediate arguments work too.
Indirect calls through a function pointer are not supported.
"""

from __future__ import annotations

import numpy as np

from ptxopt.interp import dtypes
from ptxopt.interp.step import BARRIER, BRANCH, BRX, CALL, EXIT, RET, Step
from ptxopt.interp.errors import BarrierError, KernelTrap, describe
from ptxopt.interp.ops import warp
from ptxopt.interp.cta_state import ALL
from ptxopt.ptx.ir import Imm, ParenList, Reg, Sym


def c_bra(ins, d):
    d.mods({"uni"})
    (target,) = ins.operands
    return Step(BRANCH, ins=ins, target=d.label(target))


def c_brx(ins, d):
    d.mods({"idx", "uni"})
    if "idx" not in ins.modifiers or len(ins.operands) != 2:
        raise d.unsupported()
    index, table = ins.operands
    names = d.branch_table(table)
    pcs = np.array([d.label(Sym(n)) for n in names], dtype=np.int64)
    ri = d.read(index, "u32")
    ins_ = ins

    def targets(fr, sel):
        n = fr.cta.T if sel is ALL else len(sel)
        i = np.broadcast_to(ri(fr, sel), (n,)).astype(np.int64)
        if (i >= len(pcs)).any():
            raise KernelTrap(f"{describe(ins_)}: branch index {int(i.max())} outside the "
                             f"{len(pcs)}-entry table")
        return pcs[i]

    return Step(BRX, targets, ins)


def c_ret(ins, d):
    d.mods({"uni"})
    return Step(RET, ins=ins)


def c_exit(ins, d):
    d.mods(set())
    return Step(EXIT, ins=ins)


def c_trap(ins, d):
    def trap(fr, sel):
        raise KernelTrap(f"{describe(ins)}: the kernel executed {ins.opcode}")

    return trap


def c_noop(ins, d):
    return lambda fr, sel: None


# --------------------------------------------------------------------------
# barriers
# --------------------------------------------------------------------------


class BarrierAux:
    """What the engine needs to know about a barrier instruction."""

    __slots__ = ("count", "fast", "id_reader", "ins", "id_const")

    def __init__(self, count, id_reader, ins, id_const=0):
        self.count = count
        self.fast = count is None
        self.id_reader = id_reader
        self.id_const = id_const
        self.ins = ins

    def barrier_id(self, fr, sel, idx) -> int:
        """The barrier these threads wait on (it must be the same for all)."""
        if self.id_reader is None:
            return self.id_const
        ids = np.asarray(self.id_reader(fr, sel))
        if ids.size > 1 and (ids != ids[0]).any():
            raise BarrierError(f"{describe(self.ins)}: threads name different barriers "
                               f"({sorted(set(int(x) for x in ids))[:4]})")
        return int(ids.ravel()[0])


def c_bar(ins, d):
    mods = ins.modifiers
    if "warp" in mods:
        d.mods({"warp", "sync"})
        return warp.c_bar_warp(ins, d)
    if "cluster" in mods:
        raise d.unsupported("cluster barriers")
    types = d.mods({"sync", "cta", "aligned", "red", "popc", "and", "or", "arrive"})
    if "arrive" in mods:
        raise d.unsupported("bar.arrive (producer/consumer barriers)")
    ops = list(ins.operands)
    red = "red" in mods
    release = None
    if red:
        rop = [m for m in mods if m in ("popc", "and", "or")]
        if len(rop) != 1:
            raise d.unsupported()
        rop = rop[0]
        dst, ops, pred = ops[0], ops[1:-1], ops[-1]
        wt = "u32" if rop == "popc" else "pred"
        if types and types != [wt]:
            raise d.unsupported()
        w = d.write(dst, wt)
        rp = d.pred(pred)

        def reduce_on_release(fr, sel, idx):
            p = np.broadcast_to(rp(fr, sel), (len(idx),))
            if rop == "popc":
                w(fr, sel, np.full(len(idx), int(p.sum()), dtype=np.uint32))
            elif rop == "and":
                w(fr, sel, np.full(len(idx), bool(p.all())))
            else:
                w(fr, sel, np.full(len(idx), bool(p.any())))

        release = reduce_on_release
    elif "sync" not in mods and mods not in ((), ("cta",)):
        raise d.unsupported()
    if not ops or len(ops) > 2:
        raise d.unsupported("barrier operands")
    bid = ops[0]
    id_reader = None if isinstance(bid, Imm) else d.read(bid, "u32")
    id_const = int(bid.value()) if isinstance(bid, Imm) else 0
    count = None
    if len(ops) == 2:
        if not isinstance(ops[1], Imm):
            raise d.unsupported("barrier thread count in a register")
        count = int(ops[1].value())
    st = Step(BARRIER, release, ins, aux=BarrierAux(count, id_reader, ins, id_const))
    return st


# --------------------------------------------------------------------------
# calls
# --------------------------------------------------------------------------


def c_call(ins, d):
    d.mods({"uni"})
    ops = list(ins.operands)
    rets: list = []
    if ops and type(ops[0]) is ParenList:
        rets = list(ops.pop(0).items)
    if not ops or type(ops[0]) is not Sym:
        raise d.unsupported("indirect call through a function pointer")
    callee = ops.pop(0).name
    args = list(ops.pop(0).items) if ops and type(ops[0]) is ParenList else []
    if ops:
        raise d.unsupported("call with a prototype (indirect call)")
    fn = d.program.functions.get(callee)
    if fn is None:
        if callee in BUILTINS:
            return BUILTINS[callee](ins, d, rets, args)
        raise d.unsupported(f"call to {callee}, which has no body in this module")
    formals = [(it, decl) for decl in (fn.params or ()) for it in decl.items]
    outs = [(it, decl) for decl in (fn.ret_params or ()) for it in decl.items]
    if len(formals) != len(args) or len(outs) != len(rets):
        raise d.unsupported(f"call to {callee}: {len(args)} arguments for {len(formals)} parameters")
    binders = [_binder(d, a, it, decl, into_callee=True) for a, (it, decl) in zip(args, formals)]
    unbinders = [_binder(d, r, it, decl, into_callee=False) for r, (it, decl) in zip(rets, outs)]

    def bind(fr, cf, sel):
        for b in binders:
            b(fr, cf, sel)

    def unbind(fr, cf, sel):
        for b in unbinders:
            b(fr, cf, sel)

    return Step(CALL, ins=ins, aux=(callee, bind, unbind))


def _binder(d, actual, formal_item, formal_decl, into_callee: bool):
    """Copy one argument into the callee (or one result out of it)."""
    name = formal_item.name
    t = formal_decl.dtype[1:] if formal_decl.dtype else "b8"
    if formal_decl.space == ".reg":
        rt = t

        if (type(actual) is Reg or isinstance(actual, Imm)) and into_callee:
            rd = d.read(actual, rt)

            def reg_in(fr, cf, sel):
                slot = _callee_reg(cf, name)
                v = rd(fr, sel)
                cf.r[slot][sel] = v.view(dtypes.UINT[dtypes.bits(rt)]) if rt != "pred" else v
            return reg_in
        if type(actual) is Reg and not into_callee:
            w = d.write(actual, rt)

            def reg_out(fr, cf, sel):
                slot = _callee_reg(cf, name)
                v = cf.r[slot][sel]
                w(fr, sel, v.view(dtypes.value_dtype(rt)) if rt != "pred" else v)
            return reg_out
        raise d.unsupported(f"argument {actual} for .reg parameter {name}")
    # a .param formal
    if type(actual) is Sym:
        if actual.name not in d.frame_syms:
            raise d.unsupported(f"argument {actual}: not a .param variable of the caller")
        aname = actual.name

        def copy(fr, cf, sel):
            src_fr, dst_fr = (fr, cf) if into_callee else (cf, fr)
            src_name, dst_name = (aname, name) if into_callee else (name, aname)
            src = _region(src_fr, src_name)
            dst = _region(dst_fr, dst_name)
            n = min(src.size, dst.size)
            rows = fr.cta.all_idx if sel is ALL else sel
            dst.data[rows, :n] = src.data[rows if src.per_thread else 0, :n]
        return copy
    if type(actual) is Reg or isinstance(actual, Imm):
        if into_callee:
            rd = d.read(actual, t)

            def val_in(fr, cf, sel):
                dst = _region(cf, name)
                v = np.asarray(rd(fr, sel))
                rows = fr.cta.all_idx if sel is ALL else sel
                raw = np.broadcast_to(v, (len(rows),)).view(np.uint8).reshape(len(rows), -1)
                dst.data[rows, : raw.shape[1]] = raw
            return val_in
        w = d.write(actual, t)
        vd = dtypes.value_dtype(t)
        nb = max(1, dtypes.bits(t) // 8)

        def val_out(fr, cf, sel):
            src = _region(cf, name)
            rows = fr.cta.all_idx if sel is ALL else sel
            raw = np.ascontiguousarray(src.data[rows, :nb])
            w(fr, sel, raw.view(vd).reshape(len(rows)))
        return val_out
    raise d.unsupported(f"call argument {actual}")


def _vprintf(ins, d, rets, args):
    """``printf`` writes to the host's console, never to a buffer: a no-op
    that returns 0."""
    if not rets:
        return lambda fr, sel: None
    if type(rets[0]) is not Sym or rets[0].name not in d.frame_syms:
        raise d.unsupported("vprintf result")
    name = rets[0].name

    def run(fr, sel):
        r = _region(fr, name)
        rows = fr.cta.all_idx if sel is ALL else sel
        r.data[rows, :4] = 0

    return run


def _assertfail(ins, d, rets, args):
    def run(fr, sel):
        raise KernelTrap(f"{describe(ins)}: a device-side assert failed")

    return run


BUILTINS = {"vprintf": _vprintf, "__assertfail": _assertfail}


def _region(fr, name):
    addr = fr.sym[name]
    r = fr.cta.mem.region_at(addr)
    if r is None:
        raise BarrierError(f"internal: no region for {name}")
    return r


def _callee_reg(cf, name):
    for n, slot in cf.fn.reg_formals + cf.fn.reg_returns:
        if n == name:
            return slot
    raise KeyError(name)


OPS = {
    "bra": c_bra,
    "brx": c_brx,
    "ret": c_ret,
    "exit": c_exit,
    "bar": c_bar,
    "barrier": c_bar,
    "call": c_call,
    "trap": c_trap,
    "brkpt": c_trap,
    "nanosleep": c_noop,
    "pmevent": c_noop,
    "griddepcontrol": c_noop,
    "setmaxnreg": c_noop,
}
