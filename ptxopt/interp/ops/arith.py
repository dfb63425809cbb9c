"""Integer and floating-point arithmetic: add sub mul mad fma div rem abs neg
min max mul24 mad24 sad copysign, and the carry chain (``.cc``, addc subc madc).

Integers wrap (numpy array arithmetic is modular in the operand dtype);
``.hi``/``.wide`` products are formed exactly (64x64 via 32-bit limbs).
Division by zero, which PTX leaves undefined, gives all ones for ``div`` and
the dividend for ``rem`` (deterministic; both sides of a comparison agree).

Floating point goes through :mod:`ptxopt.interp.fp` for exact rounding; f16
and bf16 (scalar and packed ``x2``) values are raw bits.
"""

from __future__ import annotations

import numpy as np

from ptxopt.ptx import opcodes
from ptxopt.interp import dtypes, fp
from ptxopt.interp.dtypes import UINT
from ptxopt.interp.ops.op_helpers import elementwise, one_type, packed, rounding, wide_type

U64 = np.uint64
MASK32 = U64(0xFFFFFFFF)
S32 = np.uint64(32)

FLOAT_MODS = {"rn", "rz", "rm", "rp", "ftz", "sat"}
F16_MODS = {"rn", "ftz", "sat", "relu", "oob"}


def _flags(ins, types):
    return set(m for m in ins.modifiers if m not in types)


def _refuse(d, flags, allowed):
    extra = flags - set(allowed)
    if extra:
        raise d.unsupported("modifier ." + " .".join(sorted(extra)))


# --------------------------------------------------------------------------
# exact integer products
# --------------------------------------------------------------------------


def mul_u64_full(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(high, low) 64-bit halves of the 128-bit product of uint64 arrays."""
    a = a.astype(U64)
    b = b.astype(U64)
    al, ah = a & MASK32, a >> S32
    bl, bh = b & MASK32, b >> S32
    p0, p1, p2, p3 = al * bl, al * bh, ah * bl, ah * bh
    mid = (p0 >> S32) + (p1 & MASK32) + (p2 & MASK32)
    lo = (p0 & MASK32) | (mid << S32)
    hi = p3 + (p1 >> S32) + (p2 >> S32) + (mid >> S32)
    return hi, lo


def mul_hi(a: np.ndarray, b: np.ndarray, t: str) -> np.ndarray:
    n = dtypes.bits(t)
    vd = dtypes.value_dtype(t)
    if n <= 32:
        wide = np.int64 if t[0] == "s" else np.uint64
        p = a.astype(wide) * b.astype(wide)
        return (p >> wide(n)).astype(vd)
    ua, ub = a.view(U64), b.view(U64)
    hi, _ = mul_u64_full(ua, ub)
    if t[0] == "s":
        hi = hi - np.where(a < 0, ub, U64(0)) - np.where(b < 0, ua, U64(0))
    return hi.view(vd)


def mul_wide(a, b, t):
    wt = wide_type(t)
    vd = dtypes.value_dtype(wt)
    return a.astype(vd) * b.astype(vd)


def _sat_add(a, b, t, sub=False):
    lo, hi = dtypes.int_range(t)
    r = a.astype(np.int64) - b.astype(np.int64) if sub else a.astype(np.int64) + b.astype(np.int64)
    return np.clip(r, lo, hi).astype(dtypes.value_dtype(t))


# --------------------------------------------------------------------------
# add / sub
# --------------------------------------------------------------------------


def c_add(ins, d, sub=False):
    types = d.mods(FLOAT_MODS | {"cc", "relu", "oob", "noftz"})
    t = one_type(d, types)
    flags = _flags(ins, types)
    k = dtypes.kind(t)
    if k != "f":
        _refuse(d, flags, {"sat", "cc"})
        if "cc" in flags:
            return _add_cc(ins, d, t, sub, carry_in=False, carry_out=True)
        if "sat" in flags:
            if t != "s32":
                raise d.unsupported(".sat needs .s32")
            return elementwise(d, ins, t, (t, t), lambda a, b: _sat_add(a, b, t, sub))
        if sub:
            return elementwise(d, ins, t, (t, t), lambda a, b: a - b)
        return elementwise(d, ins, t, (t, t), lambda a, b: a + b)
    mode = rounding(ins)
    ftz = "ftz" in flags
    sat = "sat" in flags
    if t == "f32":
        _refuse(d, flags, FLOAT_MODS)

        def f32(a, b):
            r = fp.add_f32(a, b, mode, ftz, negate_b=sub)
            return _saturate(r) if sat else r

        return elementwise(d, ins, t, (t, t), f32)
    if t == "f64":
        _refuse(d, flags, {"rn", "rz", "rm", "rp"})
        op = "sub" if sub else "add"
        return elementwise(d, ins, t, (t, t), lambda a, b: fp.f64_op(op, (a, b), mode))
    return _half(ins, d, t, flags, "sub" if sub else "add", 2)


def _saturate(r: np.ndarray) -> np.ndarray:
    """``.sat``: clamp to [0, 1]; NaN -> +0."""
    out = np.where(np.isnan(r), r.dtype.type(0), np.clip(r, r.dtype.type(0), r.dtype.type(1)))
    return out.astype(r.dtype)


def _half(ins, d, t, flags, op, nargs):
    """f16/bf16 arithmetic (scalar bits or packed x2)."""
    _refuse(d, flags, F16_MODS)
    if "oob" in flags:
        raise d.unsupported(".oob")
    if t in ("f16", "f16x2"):
        fmt = "f16"
    elif t in ("bf16", "bf16x2"):
        fmt = "bf16"
    else:
        raise d.unsupported(f"type .{t}")
    mode = rounding(ins)
    ftz, sat, relu = "ftz" in flags, "sat" in flags, "relu" in flags

    def lane(*xs):
        return fp.round_f16_op(fmt, op, xs, mode, ftz, sat, relu)

    fn = packed(lane) if t.endswith("x2") else lane
    bt = "b32" if t.endswith("x2") else "b16"
    return elementwise(d, ins, bt, (bt,) * nargs, fn)


def _add_cc(ins, d, t, sub, carry_in, carry_out):
    """Extended-precision add/sub with the carry flag (32/64-bit)."""
    if dtypes.bits(t) not in (32, 64):
        raise d.unsupported("carry chain on this width")
    cs = d.carry_slot()
    ops = ins.operands
    w = d.write(ops[0], t)
    ut = "u" + str(dtypes.bits(t))
    ra, rb = d.read(ops[1], ut), d.read(ops[2], ut)
    udt = UINT[dtypes.bits(t)]
    one = udt.type(1)

    def run(fr, sel):
        a, b = ra(fr, sel), rb(fr, sel)
        cin = fr.r[cs][sel].astype(udt) if carry_in else udt.type(0)
        if sub:
            # a - b - borrow; borrow out when a < b + borrow
            r = a - b - cin
            cout = (a < b) | ((a == b) & (cin == one))
        else:
            s1 = a + b
            r = s1 + cin
            cout = (s1 < a) | (r < s1)
        if carry_out:
            fr.r[cs][sel] = cout.astype(np.uint8) if np.ndim(cout) else np.uint8(cout)
        w(fr, sel, r.view(dtypes.value_dtype(t)))

    return run


def c_addc(ins, d, sub=False):
    types = d.mods({"cc"})
    t = one_type(d, types)
    return _add_cc(ins, d, t, sub, carry_in=True, carry_out="cc" in ins.modifiers)


# --------------------------------------------------------------------------
# mul / mad / fma
# --------------------------------------------------------------------------


def c_mul(ins, d):
    types = d.mods(FLOAT_MODS | {"lo", "hi", "wide", "relu"})
    t = one_type(d, types)
    flags = _flags(ins, types)
    if dtypes.kind(t) != "f":
        _refuse(d, flags, {"lo", "hi", "wide"})
        if "hi" in flags:
            return elementwise(d, ins, t, (t, t), lambda a, b: mul_hi(a, b, t))
        if "wide" in flags:
            return elementwise(d, ins, wide_type(t), (t, t), lambda a, b: mul_wide(a, b, t))
        return elementwise(d, ins, t, (t, t), lambda a, b: a * b)
    mode = rounding(ins)
    ftz, sat = "ftz" in flags, "sat" in flags
    if t == "f32":
        _refuse(d, flags, FLOAT_MODS)

        def f32(a, b):
            r = fp.mul_f32(a, b, mode, ftz)
            return _saturate(r) if sat else r

        return elementwise(d, ins, t, (t, t), f32)
    if t == "f64":
        _refuse(d, flags, {"rn", "rz", "rm", "rp"})
        return elementwise(d, ins, t, (t, t), lambda a, b: fp.f64_op("mul", (a, b), mode))
    return _half(ins, d, t, flags, "mul", 2)


def c_mad(ins, d):
    types = d.mods(FLOAT_MODS | {"lo", "hi", "wide", "cc"})
    flags = _flags(ins, types)
    t = one_type(d, types)
    if dtypes.kind(t) == "f":
        return c_fma(ins, d)  # mad.rnd.f32 is fused on sm_20+
    _refuse(d, flags, {"lo", "hi", "wide", "cc", "sat"})
    if "cc" in flags:
        return _mad_cc(ins, d, t, flags, carry_in=False, carry_out=True)
    if "sat" in flags:
        if not ("hi" in flags and t == "s32"):
            raise d.unsupported(".sat")
        return elementwise(d, ins, t, (t, t, t), lambda a, b, c: _sat_add(mul_hi(a, b, t), c, t))
    if "hi" in flags:
        return elementwise(d, ins, t, (t, t, t), lambda a, b, c: mul_hi(a, b, t) + c)
    if "wide" in flags:
        wt = wide_type(t)
        return elementwise(d, ins, wt, (t, t, wt), lambda a, b, c: mul_wide(a, b, t) + c)
    return elementwise(d, ins, t, (t, t, t), lambda a, b, c: a * b + c)


def _mad_cc(ins, d, t, flags, carry_in, carry_out):
    if dtypes.bits(t) not in (32, 64):
        raise d.unsupported("carry chain on this width")
    cs = d.carry_slot()
    ops = ins.operands
    w = d.write(ops[0], t)
    ra, rb, rc = (d.read(o, t) for o in ops[1:4])
    n = dtypes.bits(t)
    udt = UINT[n]
    hi = "hi" in flags

    def run(fr, sel):
        a, b, c = ra(fr, sel), rb(fr, sel), rc(fr, sel)
        p = mul_hi(a, b, t) if hi else a * b
        pu, cu = p.view(udt), c.view(udt)
        cin = fr.r[cs][sel].astype(udt) if carry_in else udt.type(0)
        s1 = pu + cu
        r = s1 + cin
        if carry_out:
            fr.r[cs][sel] = ((s1 < pu) | (r < s1)).astype(np.uint8)
        w(fr, sel, r.view(dtypes.value_dtype(t)))

    return run


def c_madc(ins, d):
    types = d.mods({"lo", "hi", "cc"})
    t = one_type(d, types)
    return _mad_cc(ins, d, t, _flags(ins, types), carry_in=True, carry_out="cc" in ins.modifiers)


def c_fma(ins, d):
    types = d.mods(FLOAT_MODS | {"relu", "oob"})
    t = one_type(d, types) if len(types) == 1 else None
    flags = _flags(ins, types)
    if t is None:
        raise d.unsupported("mixed-type fma")
    mode = rounding(ins)
    ftz, sat = "ftz" in flags, "sat" in flags
    if t == "f32":
        _refuse(d, flags, FLOAT_MODS)

        def f32(a, b, c):
            r = fp.fma_f32(a, b, c, mode, ftz)
            return _saturate(r) if sat else r

        return elementwise(d, ins, t, (t, t, t), f32)
    if t == "f64":
        _refuse(d, flags, {"rn", "rz", "rm", "rp"})
        return elementwise(d, ins, t, (t, t, t), lambda a, b, c: fp.f64_op("fma", (a, b, c), mode))
    return _half(ins, d, t, flags, "fma", 3)


def c_mul24(ins, d):
    types = d.mods({"lo", "hi"})
    t = one_type(d, types)
    hi = "hi" in ins.modifiers
    return elementwise(d, ins, t, (t, t), lambda a, b: _mul24(a, b, t, hi))


def c_mad24(ins, d):
    types = d.mods({"lo", "hi", "sat"})
    t = one_type(d, types)
    if "sat" in ins.modifiers:
        raise d.unsupported(".sat")
    hi = "hi" in ins.modifiers
    return elementwise(d, ins, t, (t, t, t), lambda a, b, c: _mul24(a, b, t, hi) + c)


def _mul24(a, b, t, hi):
    if t == "s32":
        a24 = ((a.astype(np.int64) << 40) >> 40)
        b24 = ((b.astype(np.int64) << 40) >> 40)
    else:
        a24 = a.astype(np.int64) & 0xFFFFFF
        b24 = b.astype(np.int64) & 0xFFFFFF
    p = a24 * b24
    r = (p >> 16) if hi else p
    return (r & 0xFFFFFFFF).astype(np.uint32).view(dtypes.value_dtype(t))


def c_sad(ins, d):
    t = one_type(d, d.mods(set()))

    def sad(a, b, c):
        diff = np.where(a > b, a - b, b - a)
        return diff.view(UINT[dtypes.bits(t)]).view(dtypes.value_dtype(t)) + c

    return elementwise(d, ins, t, (t, t, t), sad)


# --------------------------------------------------------------------------
# div / rem
# --------------------------------------------------------------------------


def int_div(a, b, t, rem=False):
    vd = dtypes.value_dtype(t)
    zero = b == 0
    bs = np.where(zero, vd.type(1), b)
    if t[0] == "s":
        n = dtypes.bits(t)
        if n < 64:
            a64, b64 = a.astype(np.int64), bs.astype(np.int64)
            q = np.abs(a64) // np.abs(b64)
            q = np.where((a64 < 0) != (b64 < 0), -q, q)
            r = a64 - q * b64
            out = (r if rem else q).astype(vd)  # wraps INT_MIN / -1
        else:
            big = (a == np.iinfo(np.int64).min) & (bs == -1)
            bs2 = np.where(big, np.int64(1), bs)
            with np.errstate(all="ignore"):
                q = np.abs(a) // np.abs(bs2)  # abs(INT_MIN) stays INT_MIN only when big
                q = np.where((a < 0) != (bs2 < 0), -q, q)
            q = np.where(big, a, q)
            r = np.where(big, np.int64(0), a - q * bs2)
            out = r if rem else q
    else:
        out = (a % bs) if rem else (a // bs)
    if rem:
        return np.where(zero, a, out).astype(vd)
    return np.where(zero, vd.type(-1) if t[0] == "s" else np.iinfo(vd).max, out).astype(vd)


def c_div(ins, d):
    types = d.mods(FLOAT_MODS | {"approx", "full"})
    t = one_type(d, types)
    flags = _flags(ins, types)
    if dtypes.kind(t) != "f":
        _refuse(d, flags, set())
        return elementwise(d, ins, t, (t, t), lambda a, b: int_div(a, b, t))
    ftz = "ftz" in flags
    if t == "f32":
        if "approx" in flags or "full" in flags:
            _refuse(d, flags, {"approx", "full", "ftz"})
            key = fp.form_key(opcodes.precision_form(ins))  # the hardware's bits: modelled (fp.model_error)
            return elementwise(d, ins, t, (t, t), lambda a, b: fp.approx_div_f32(a, b, ftz, key))
        _refuse(d, flags, {"rn", "rz", "rm", "rp", "ftz"})
        mode = rounding(ins)
        return elementwise(d, ins, t, (t, t), lambda a, b: fp.div_f32(a, b, mode, ftz))
    if t == "f64":
        _refuse(d, flags, {"rn", "rz", "rm", "rp"})
        mode = rounding(ins)
        return elementwise(d, ins, t, (t, t), lambda a, b: fp.f64_op("div", (a, b), mode))
    raise d.unsupported(f"div.{t}")


def c_rem(ins, d):
    t = one_type(d, d.mods(set()))
    if dtypes.kind(t) == "f":
        raise d.unsupported("rem on floats")
    return elementwise(d, ins, t, (t, t), lambda a, b: int_div(a, b, t, rem=True))


# --------------------------------------------------------------------------
# abs / neg / min / max / copysign
# --------------------------------------------------------------------------

SIGN = {"f32": np.uint32(0x80000000), "f64": np.uint64(1 << 63), "f16": np.uint16(0x8000),
        "bf16": np.uint16(0x8000)}


def _sign_op(t, op, ftz):
    """abs/neg on floats are sign-bit operations (NaN payloads kept)."""
    fmt = t[:-2] if t.endswith("x2") else t
    ut = UINT[16] if fmt in ("f16", "bf16") else UINT[dtypes.bits(fmt)]
    sign = ut.type(SIGN[fmt])

    def lane(x):
        x = x.view(ut)
        if ftz:
            if fmt == "f32":
                x = fp.flush(x.view(np.float32)).view(ut)
            elif fmt == "f16":
                x = fp.flush(x.view(np.float16), "f16").view(ut)
        return (x & ~sign) if op == "abs" else (x ^ sign)

    return packed(lane) if t.endswith("x2") else lane


def c_abs(ins, d, op="abs"):
    types = d.mods({"ftz", "relu"} if op == "abs" else {"ftz"})
    t = one_type(d, types)
    flags = _flags(ins, types)
    if dtypes.kind(t) != "f":
        _refuse(d, flags, set())
        if op == "abs":
            return elementwise(d, ins, t, (t,), lambda a: np.where(a < 0, -a, a).astype(a.dtype))
        return elementwise(d, ins, t, (t,), lambda a: (-a.view(UINT[dtypes.bits(t)])).view(a.dtype))
    _refuse(d, flags, {"ftz"})
    bt = "b" + str(dtypes.bits(t))
    return elementwise(d, ins, bt, (bt,), _sign_op(t, op, "ftz" in flags))


def c_neg(ins, d):
    return c_abs(ins, d, "neg")


def c_minmax(ins, d, is_max):
    types = d.mods({"ftz", "NaN", "relu", "xorsign", "abs"})
    t = one_type(d, types) if len(types) == 1 else None
    flags = _flags(ins, types)
    if t is None:
        raise d.unsupported("min/max type")
    k = dtypes.kind(t)
    if k != "f":
        _refuse(d, flags, {"relu"})
        fn = np.maximum if is_max else np.minimum
        if "relu" in flags:
            return elementwise(d, ins, t, (t, t), lambda a, b: np.maximum(fn(a, b), a.dtype.type(0)))
        if t.endswith("x2"):
            raise d.unsupported(f"{t}")
        return elementwise(d, ins, t, (t, t), fn)
    _refuse(d, flags, {"ftz", "NaN"})
    nan = "NaN" in flags
    ftz = "ftz" in flags
    if t in ("f32", "f64"):
        def mm(a, b):
            if ftz and t == "f32":
                a, b = fp.flush(a), fp.flush(b)
            return fp.min_max(a, b, is_max, nan, t)

        return elementwise(d, ins, t, (t, t), mm)
    fmt = "f16" if t.startswith("f16") else "bf16"

    def lane(a, b):
        av, bv = fp.from_bits16(a, fmt), fp.from_bits16(b, fmt)
        if ftz:
            av, bv = fp.flush(av, fmt), fp.flush(bv, fmt)
        r = fp.min_max(av, bv, is_max, nan, "f64")
        return fp.to_bits16(r, fmt)

    fn = packed(lane) if t.endswith("x2") else lane
    bt = "b32" if t.endswith("x2") else "b16"
    return elementwise(d, ins, bt, (bt, bt), fn)


def c_copysign(ins, d):
    t = one_type(d, d.mods(set()))
    if t not in ("f32", "f64"):
        raise d.unsupported(f"copysign.{t}")
    ut = UINT[dtypes.bits(t)]
    sign = ut.type(SIGN[t])
    bt = "b" + str(dtypes.bits(t))
    # copysign d, a, b: the value of b with the sign of a
    return elementwise(d, ins, bt, (bt, bt), lambda a, b: (b & ~sign) | (a & sign))


def c_dp(ins, d, two=False):
    """``dp4a``/``dp2a``: dot products of packed 8-bit (and 16-bit) lanes plus c."""
    types = d.mods({"lo", "hi"})
    if len(types) != 2:
        raise d.unsupported("dp needs .atype.btype")
    at, bt = types
    hi = "hi" in ins.modifiers

    def lanes(x, n, bits_, signed):
        u = x.view(np.uint32).astype(np.int64)
        out = []
        for i in range(n):
            v = (u >> (bits_ * i)) & ((1 << bits_) - 1)
            if signed:
                v = np.where(v >= (1 << (bits_ - 1)), v - (1 << bits_), v)
            out.append(v)
        return out

    def dp(a, b, c):
        if two:
            al = lanes(a, 2, 16, at[0] == "s")
            bl = lanes(b, 4, 8, bt[0] == "s")[2:] if hi else lanes(b, 4, 8, bt[0] == "s")[:2]
        else:
            al = lanes(a, 4, 8, at[0] == "s")
            bl = lanes(b, 4, 8, bt[0] == "s")
        acc = c.astype(np.int64)
        for x, y in zip(al, bl):
            acc = acc + x * y
        return (acc & 0xFFFFFFFF).astype(np.uint32).view(c.dtype)

    ct = "s32" if (at[0] == "s" or bt[0] == "s") else "u32"
    return elementwise(d, ins, ct, ("b32", "b32", ct), dp)


OPS = {
    "dp4a": c_dp,
    "dp2a": lambda i, d: c_dp(i, d, two=True),
    "add": c_add,
    "sub": lambda i, d: c_add(i, d, sub=True),
    "addc": c_addc,
    "subc": lambda i, d: c_addc(i, d, sub=True),
    "mul": c_mul,
    "mad": c_mad,
    "madc": c_madc,
    "fma": c_fma,
    "mul24": c_mul24,
    "mad24": c_mad24,
    "sad": c_sad,
    "div": c_div,
    "rem": c_rem,
    "abs": c_abs,
    "neg": c_neg,
    "min": lambda i, d: c_minmax(i, d, False),
    "max": lambda i, d: c_minmax(i, d, True),
    "copysign": c_copysign,
}
