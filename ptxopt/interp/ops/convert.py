"""Data movement and conversion: mov cvt cvta isspacep.

``mov`` copies bits, packs a vector of narrower registers into one wide value
(``mov.b64 %rd, {%lo, %hi}``: the first element is the least significant)
or unpacks one. ``cvt`` converts values: integer narrowing truncates and
``.sat`` clamps; integer to float rounds as the rounding modifier says;
float to integer needs an integer rounding (``.rni .rzi .rmi .rpi``) and
always saturates, NaN giving 0 (PTX ISA); float to float rounds with
``.rn/.rz/.rm/.rp`` (narrowing) or to an integral value (``.rni`` ...);
``.ftz`` flushes f32 subnormal inputs and results, ``.sat`` clamps to [0, 1].
``cvta`` moves between a state space and the generic window
(:mod:`ptxopt.interp.device_memory`).
"""

from __future__ import annotations

import numpy as np

from ptxopt.interp import dtypes, fp
from ptxopt.interp.dtypes import UINT
from ptxopt.interp.device_memory import GLOBAL_BASE, WINDOW
from ptxopt.interp.ops.op_helpers import IROUND, ROUND, elementwise, one_type, pack16
from ptxopt.ptx.ir import Vec

F64 = np.float64


# --------------------------------------------------------------------------
# mov
# --------------------------------------------------------------------------


def c_mov(ins, d):
    t = one_type(d, d.mods(set()))
    dst, src = ins.operands
    if type(dst) is Vec or type(src) is Vec:
        return _mov_vector(ins, d, t, dst, src)
    if t == "pred":
        return elementwise(d, ins, "pred", ("pred",), lambda a: a)
    bt = "b" + str(dtypes.bits(t))
    return elementwise(d, ins, bt, (bt,), lambda a: a)


def _mov_vector(ins, d, t, dst, src):
    n = dtypes.bits(t)
    if type(dst) is Vec and type(src) is Vec:
        raise d.unsupported("vector to vector mov")
    vec = dst if type(dst) is Vec else src
    k = len(vec.items)
    eb = n // k
    if eb * k != n or eb not in (8, 16, 32):
        raise d.unsupported(f"{k}-element vector for .{t}")
    et = "b" + str(eb)
    wide = UINT[n]
    if type(src) is Vec:
        rs = [d.read(o, et) for o in src.items]
        w = d.write(dst, "b" + str(n))

        def pack(fr, sel):
            acc = rs[0](fr, sel).astype(wide)
            for i in range(1, k):
                acc = acc | (rs[i](fr, sel).astype(wide) << wide.type(eb * i))
            w(fr, sel, acc)

        return pack
    r = d.read(src, "b" + str(n))
    ws = [d.write(o, et) for o in dst.items]
    mask = wide.type((1 << eb) - 1)
    narrow = UINT[eb]

    def unpack(fr, sel):
        v = r(fr, sel)
        for i, w in enumerate(ws):
            w(fr, sel, ((v >> wide.type(eb * i)) & mask).astype(narrow))

    return unpack


# --------------------------------------------------------------------------
# cvt
# --------------------------------------------------------------------------


def _to_f64(x: np.ndarray, t: str) -> np.ndarray:
    if t == "bf16":
        return fp.from_bits16(x, "bf16")
    return x.astype(F64)


def _int_to_f64_exact(x: np.ndarray, t: str):
    """``(r, e)`` with ``r + e`` exactly the integer (64-bit safe)."""
    if dtypes.bits(t) <= 32:
        return x.astype(F64), None
    u = x.view(np.uint64)
    lo = (u & np.uint64(0xFFFFFFFF)).astype(F64)
    if t[0] == "s":
        hi = (x >> np.int64(32)).astype(F64) * 4294967296.0
    else:
        hi = (u >> np.uint64(32)).astype(F64) * 4294967296.0
    return fp.two_sum(hi, lo)


def _sat_int(v: np.ndarray, t: str) -> np.ndarray:
    """Float values (already integral) -> integer type ``t``, saturating, NaN -> 0."""
    lo, hi = dtypes.int_range(t)
    vd = dtypes.value_dtype(t)
    with np.errstate(invalid="ignore"):
        v = np.where(np.isnan(v), 0.0, v)
        over = v >= float(hi + 1)  # hi + 1 is a power of two: exact in float64
        under = v < float(lo)
        out = np.where(over | under, 0.0, v).astype(vd)
        out = np.where(over, vd.type(hi), out)
        out = np.where(under, vd.type(lo), out)
    return out.astype(vd)


IRND_FN = {"rn": np.rint, "rz": np.trunc, "rm": np.floor, "rp": np.ceil}


def c_cvt(ins, d):
    allowed = set(ROUND) | set(IROUND) | {"ftz", "sat", "relu", "satfinite", "rna"}
    types = d.mods(allowed)
    flags = set(m for m in ins.modifiers if m not in types)
    if len(types) != 2:
        raise d.unsupported("cvt needs .dtype.atype")
    dt, at = types
    if dt in ("f16x2", "bf16x2"):
        return _cvt_pair(ins, d, dt, at, flags)
    if len(ins.operands) != 2:
        raise d.unsupported("operand count")
    kd, ka = dtypes.kind(dt), dtypes.kind(at)
    frnd = [m for m in flags if m in ROUND or m == "rna"]
    irnd = [IROUND[m] for m in flags if m in IROUND]
    ftz, sat = "ftz" in flags, "sat" in flags
    if flags - {"ftz", "sat", *frnd, *[m for m in flags if m in IROUND]}:
        raise d.unsupported("modifier ." + " .".join(sorted(flags)))
    rd_t = "b16" if at == "bf16" else at
    wr_t = "b16" if dt == "bf16" else dt
    if dt in ("tf32", "e4m3", "e5m2", "e4m3x2", "e5m2x2") or at in ("tf32", "e4m3x2", "e5m2x2"):
        if dt == "tf32" and at == "f32":
            return _cvt_tf32(ins, d, frnd, flags)
        raise d.unsupported(f"cvt.{dt}.{at}")

    # integer <- integer
    if kd != "f" and ka != "f":
        if frnd or irnd or ftz:
            raise d.unsupported("rounding on an integer conversion")
        lo, hi = dtypes.int_range(dt)
        vd = dtypes.value_dtype(dt)

        def i2i(a):
            return _clip_int(a, lo, hi, vd) if sat else a.astype(vd)

        return elementwise(d, ins, dt, (at,), i2i)

    # float <- integer
    if kd == "f" and ka != "f":
        if irnd:
            raise d.unsupported("integer rounding for int-to-float")
        mode = frnd[0] if frnd else "rn"

        def i2f(a):
            r, e = _int_to_f64_exact(a, at)
            return _finish_float(fp.round_to(dt if dt != "f64" else "f64", r, e, mode), dt, ftz, sat)

        return elementwise(d, ins, wr_t, (rd_t,), i2f)

    # integer <- float
    if kd != "f" and ka == "f":
        if not irnd or frnd:
            raise d.unsupported("float-to-int needs .rni/.rzi/.rmi/.rpi")
        fn = IRND_FN[irnd[0]]

        def f2i(a):
            x = _to_f64(a, at)
            if ftz and at == "f32":
                x = fp.flush(x, "f32")
            return _sat_int(fn(x), dt)

        return elementwise(d, ins, dt, (rd_t,), f2i)

    # float <- float
    if irnd:
        fn = IRND_FN[irnd[0]]
        if dt != at:
            raise d.unsupported("integer rounding between float types")

        def f2f_int(a):
            x = _to_f64(a, at)
            if ftz:
                x = fp.flush(x, "f32" if at == "f32" else at)
            with np.errstate(invalid="ignore"):
                return _finish_float(fn(x), dt, ftz, sat)

        return elementwise(d, ins, wr_t, (rd_t,), f2f_int)
    narrowing = dtypes.bits(dt) < dtypes.bits(at) or (dt == "bf16" and at == "f16") or (
        dt == "f16" and at == "bf16")
    if narrowing and not frnd:
        raise d.unsupported(f"cvt.{dt}.{at} needs a rounding modifier")
    mode = frnd[0] if frnd else "rn"

    def f2f(a):
        x = _to_f64(a, at)
        if ftz and at == "f32":
            x = fp.flush(x, "f32")
        r = fp.round_to(dt, x, None, mode) if dt != "f64" else x
        return _finish_float(r, dt, ftz, sat)

    return elementwise(d, ins, wr_t, (rd_t,), f2f)


def _clip_int(a, lo, hi, vd):
    """Clamp integers to ``[lo, hi]`` (``cvt.sat`` between integer types)."""
    if a.dtype == np.uint64:
        return np.minimum(a, np.uint64(min(hi, (1 << 64) - 1))).astype(vd)
    return np.clip(a.astype(np.int64), max(lo, -(1 << 63)), min(hi, (1 << 63) - 1)).astype(vd)


def _finish_float(x64: np.ndarray, dt: str, ftz: bool, sat: bool) -> np.ndarray:
    """Representable float64 values -> ``dt`` (with .sat and .ftz)."""
    if sat:
        x64 = np.where(np.isnan(x64), 0.0, np.clip(x64, 0.0, 1.0))
    fmt = "f32" if dt == "f32" else dt
    out = fp.to_format(x64, fmt, ftz=ftz and dt == "f32")
    return out


def _cvt_pair(ins, d, dt, at, flags):
    if at != "f32" or len(ins.operands) != 3:
        raise d.unsupported(f"cvt.{dt}.{at}")
    extra = flags - {"rn", "rz", "rm", "rp", "relu", "satfinite"}
    if extra:
        raise d.unsupported("modifier ." + " .".join(sorted(extra)))
    modes = [m for m in flags if m in ROUND]
    if len(modes) != 1:
        raise d.unsupported("cvt to a packed type needs .rn/.rz")
    mode = modes[0]
    fmt = "f16" if dt == "f16x2" else "bf16"
    relu, satfinite = "relu" in flags, "satfinite" in flags

    def one(x):
        x64 = x.astype(F64)
        r = fp.round_to(fmt, x64, None, mode)
        if satfinite:
            big = np.ldexp(2.0 - np.ldexp(1.0, 1 - fp.FORMATS[fmt][0]), fp.FORMATS[fmt][2])
            r = np.where(np.isnan(r), r, np.clip(r, -big, big))
        if relu:
            r = np.where(np.isnan(r), r, np.maximum(r, 0.0))
        return fp.to_bits16(r, fmt)

    # cvt.rn.f16x2.f32 d, a, b: a goes to the upper half, b to the lower
    return elementwise(d, ins, "b32", ("f32", "f32"), lambda a, b: pack16(one(b), one(a)))


def _cvt_tf32(ins, d, frnd, flags):
    extra = flags - {"rna", "rn", "rz", "satfinite", "relu"}
    if extra or len(frnd) != 1:
        raise d.unsupported("cvt.tf32 modifiers")
    mode = frnd[0]

    def tf32(a):
        r = fp.round_to("tf32", a.astype(F64), None, mode)
        return fp.to_format(r, "tf32").view(np.uint32)

    return elementwise(d, ins, "b32", ("f32",), tf32)


# --------------------------------------------------------------------------
# cvta / isspacep
# --------------------------------------------------------------------------

SPACES = ("global", "shared", "local", "const", "param")


def c_cvta(ins, d):
    types = d.mods(set(SPACES) | {"to"} | {"shared::cta", "shared::cluster", "param::entry"})
    t = one_type(d, types)
    spaces = [m.split("::")[0] for m in ins.modifiers if m.split("::")[0] in SPACES]
    if len(spaces) != 1 or t not in ("u32", "u64", "b32", "b64"):
        raise d.unsupported()
    win = WINDOW[spaces[0]]
    to = "to" in ins.modifiers
    n = dtypes.bits(t)
    ut = UINT[n]
    delta = ut.type((-win if to else win) & ((1 << n) - 1))
    if win == 0:
        return elementwise(d, ins, t, (t,), lambda a: a)
    return elementwise(d, ins, t, (t,), lambda a: a + delta)


def c_isspacep(ins, d):
    types = d.mods(set(SPACES) | {"shared::cta", "shared::cluster", "param::entry", "param::kernel"})
    if types:
        raise d.unsupported()
    space = [m.split("::")[0] for m in ins.modifiers][0]
    if space == "global":
        lo, hi = GLOBAL_BASE, WINDOW["local"]
    else:
        lo, hi = WINDOW[space], WINDOW[space] + (1 << 40)
    return elementwise(d, ins, "pred", ("u64",),
                       lambda a: (a >= np.uint64(lo)) & (a < np.uint64(hi)))


OPS = {"mov": c_mov, "cvt": c_cvt, "cvta": c_cvta, "isspacep": c_isspacep}
