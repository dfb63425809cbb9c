"""Comparison and selection: setp set selp slct.

Float comparisons follow PTX: ``eq ne lt le gt ge`` are *ordered* (false when
either operand is NaN, ``ne`` included), ``equ neu ltu leu gtu geu`` are
unordered (true when either is NaN), ``num`` is "neither NaN" and ``nan``
"either NaN". Integer ``lo ls hi hs`` are the unsigned orders.
"""

from __future__ import annotations

import numpy as np

from ptxopt.interp import dtypes, fp
from ptxopt.interp.ops.op_helpers import elementwise, one_type
from ptxopt.ptx.ir import Pair

ORDERED = {
    "eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
    "gt": np.greater, "ge": np.greater_equal,
}
UNSIGNED = {"lo": np.less, "ls": np.less_equal, "hi": np.greater, "hs": np.greater_equal}
UNORDERED = {"equ": "eq", "neu": "ne", "ltu": "lt", "leu": "le", "gtu": "gt", "geu": "ge"}
BOOL = {"and": np.logical_and, "or": np.logical_or, "xor": np.logical_xor}
CMPS = set(ORDERED) | set(UNSIGNED) | set(UNORDERED) | {"num", "nan"}


def compare_fn(cmp: str, t: str):
    """``fn(a, b) -> bool array`` for comparison ``cmp`` on type ``t``."""
    if dtypes.kind(t) != "f":
        if cmp in UNSIGNED:
            f = UNSIGNED[cmp]
            n = dtypes.bits(t)
            u = dtypes.UINT[n]
            return lambda a, b: f(a.view(u), b.view(u))
        if cmp not in ORDERED:
            raise KeyError(cmp)
        return ORDERED[cmp]
    if cmp == "num":
        return lambda a, b: ~(np.isnan(a) | np.isnan(b))
    if cmp == "nan":
        return lambda a, b: np.isnan(a) | np.isnan(b)
    if cmp in ORDERED:
        f = ORDERED[cmp]
        if cmp == "ne":
            return lambda a, b: (a != b) & ~(np.isnan(a) | np.isnan(b))
        return f
    if cmp in UNORDERED:
        f = ORDERED[UNORDERED[cmp]]
        return lambda a, b: f(a, b) | np.isnan(a) | np.isnan(b)
    raise KeyError(cmp)


def _float_view(t: str):
    """Comparisons of f16/bf16 go through float64 (exact)."""
    if t in ("f16", "bf16"):
        return "b16", lambda x: fp.from_bits16(x, t)
    return t, None


def _parse(ins, d):
    types = d.mods(CMPS | set(BOOL) | {"ftz"})
    cmps = [m for m in ins.modifiers if m in CMPS]
    bops = [m for m in ins.modifiers if m in BOOL]
    if len(cmps) != 1 or len(bops) > 1:
        raise d.unsupported("comparison modifiers")
    return types, cmps[0], (bops[0] if bops else None), "ftz" in ins.modifiers


def c_setp(ins, d):
    types, cmp, bop, ftz = _parse(ins, d)
    t = one_type(d, types)
    if t.endswith("x2"):
        raise d.unsupported("packed setp")
    ops = ins.operands
    if (len(ops) != 4 if bop else len(ops) != 3):
        raise d.unsupported("operand count")
    rt, conv = _float_view(t)
    try:
        f = compare_fn(cmp, "f64" if conv else t)
    except KeyError:
        raise d.unsupported(f"comparison .{cmp} on .{t}") from None
    ra, rb = d.read(ops[1], rt), d.read(ops[2], rt)
    rc = d.pred(ops[3]) if bop else None
    bf = BOOL[bop] if bop else None
    dst = ops[0]
    if type(dst) is Pair:
        wp, wq = d.write(dst.first, "pred"), d.write(dst.second, "pred")
    else:
        wp, wq = d.write(dst, "pred"), None
    flush = ftz and t == "f32"

    def run(fr, sel):
        a, b = ra(fr, sel), rb(fr, sel)
        if conv is not None:
            a, b = conv(a), conv(b)
        elif flush:
            a, b = fp.flush(a), fp.flush(b)
        with np.errstate(invalid="ignore"):
            r = f(a, b)
        if bf is not None:
            c = rc(fr, sel)
            p, q = bf(r, c), bf(~r, c)
        else:
            p, q = r, ~r
        n = _count(fr, sel)
        wp(fr, sel, _full(p, n))
        if wq is not None:
            wq(fr, sel, _full(q, n))

    return run


def _count(fr, sel):
    return fr.cta.T if type(sel) is slice else len(sel)


def _full(x, n):
    x = np.asarray(x)
    if x.shape != (n,):
        x = np.broadcast_to(x, (n,))
    return x


def c_set(ins, d):
    types, cmp, bop, ftz = _parse(ins, d)
    if len(types) != 2:
        raise d.unsupported("set needs .dtype.stype")
    dt, st = types
    ops = ins.operands
    rt, conv = _float_view(st)
    f = compare_fn(cmp, "f64" if conv else st)
    ra, rb = d.read(ops[1], rt), d.read(ops[2], rt)
    rc = d.pred(ops[3]) if bop else None
    bf = BOOL[bop] if bop else None
    w = d.write(ops[0], dt)
    vd = dtypes.value_dtype(dt)
    if dt == "f32":
        one = np.float32(1.0)
    elif dtypes.kind(dt) == "f":
        raise d.unsupported(f"set.{dt}")
    else:
        one = vd.type(-1) if dt[0] == "s" else np.iinfo(vd).max

    def run(fr, sel):
        a, b = ra(fr, sel), rb(fr, sel)
        if conv is not None:
            a, b = conv(a), conv(b)
        elif ftz and st == "f32":
            a, b = fp.flush(a), fp.flush(b)
        with np.errstate(invalid="ignore"):
            r = f(a, b)
        if bf is not None:
            r = bf(r, rc(fr, sel))
        w(fr, sel, np.where(r, one, vd.type(0)).astype(vd))

    return run


def c_selp(ins, d):
    t = one_type(d, d.mods(set()))
    bt = "b" + str(dtypes.bits(t)) if t != "pred" else t
    return elementwise(d, ins, bt, (bt, bt, "pred"), lambda a, b, c: np.where(c, a, b))


def c_slct(ins, d):
    types = d.mods({"ftz"})
    if len(types) != 2:
        raise d.unsupported("slct needs .dtype.ctype")
    dt, ct = types
    bt = "b" + str(dtypes.bits(dt))
    ftz = "ftz" in ins.modifiers

    def slct(a, b, c):
        if ct == "f32" and ftz:
            c = fp.flush(c)
        return np.where(c >= 0, a, b)

    return elementwise(d, ins, bt, (bt, bt, ct), slct)


OPS = {"setp": c_setp, "set": c_set, "selp": c_selp, "slct": c_slct}
