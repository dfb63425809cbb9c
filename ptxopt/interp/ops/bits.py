"""Logic, shifts and bit manipulation: and or xor not cnot shl shr shf popc
clz brev bfind bfe bfi bmsk szext prmt lop3.

Shift amounts follow the ISA: ``shl``/``shr`` take an unsigned 32-bit amount
and amounts of the operand width or more give 0 (or all sign bits for
``shr.s``) instead of C's undefined behaviour; ``shf`` wraps (``.wrap``, the
amount modulo 32) or clamps (``.clamp``, at most 32). Bit-field positions and
lengths use their low 8 bits, as the ISA's pseudo-code says.
"""

from __future__ import annotations

import numpy as np

from ptxopt.interp import dtypes
from ptxopt.interp.dtypes import UINT
from ptxopt.interp.ops.op_helpers import elementwise, one_type

U64 = np.uint64


def _u(x):
    return x.view(UINT[x.dtype.itemsize * 8])


def mask_bits(length: np.ndarray) -> np.ndarray:
    """uint64 masks of ``length`` low ones (0..64)."""
    L = np.asarray(length, dtype=np.int64)
    m = (U64(1) << np.clip(L, 0, 63).astype(U64)) - U64(1)
    return np.where(L >= 64, U64(0xFFFFFFFFFFFFFFFF), m)


def bit_length(x: np.ndarray) -> np.ndarray:
    """Number of significant bits of unsigned values (0 for 0), as int64."""
    x = x.astype(U64)
    n = np.zeros(x.shape, dtype=np.int64)
    for s in (32, 16, 8, 4, 2, 1):
        big = (x >> U64(s)) != 0
        n += np.where(big, s, 0)
        x = np.where(big, x >> U64(s), x)
    return n + (x != 0)


_REV8 = np.array([int(f"{i:08b}"[::-1], 2) for i in range(256)], dtype=np.uint8)


def brev(x: np.ndarray) -> np.ndarray:
    u = np.ascontiguousarray(_u(x))
    b = _REV8[u.view(np.uint8).reshape(u.shape + (u.dtype.itemsize,))][..., ::-1]
    return np.ascontiguousarray(b).view(u.dtype).reshape(u.shape).view(x.dtype)


# --------------------------------------------------------------------------


def c_logic(ins, d, op):
    t = one_type(d, d.mods(set()))
    if t == "pred":
        fn = {"and": np.logical_and, "or": np.logical_or, "xor": np.logical_xor}[op]
        return elementwise(d, ins, "pred", ("pred", "pred"), fn)
    if dtypes.kind(t) == "f":
        raise d.unsupported()
    fn = {"and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}[op]
    return elementwise(d, ins, t, (t, t), fn)


def c_not(ins, d):
    t = one_type(d, d.mods(set()))
    if t == "pred":
        return elementwise(d, ins, "pred", ("pred",), np.logical_not)
    return elementwise(d, ins, t, (t,), np.invert)


def c_cnot(ins, d):
    t = one_type(d, d.mods(set()))
    return elementwise(d, ins, t, (t,), lambda a: (a == 0).astype(a.dtype))


def c_shift(ins, d, left):
    t = one_type(d, d.mods(set()))
    n = dtypes.bits(t)
    vd = dtypes.value_dtype(t)
    signed = t[0] == "s" and not left

    def shift(a, b):
        amt = b.astype(np.int64)
        big = amt >= n
        s = np.minimum(amt, n - 1).astype(vd if not signed else UINT[n]).astype(a.dtype)
        if left:
            return np.where(big, a.dtype.type(0), a << s).astype(a.dtype)
        if signed:
            return (a >> s).astype(a.dtype)  # amounts >= width: s = n-1 gives the sign fill
        return np.where(big, a.dtype.type(0), a >> s).astype(a.dtype)

    return elementwise(d, ins, t, (t, "u32"), shift)


def c_shf(ins, d):
    types = d.mods({"l", "r", "wrap", "clamp"})
    t = one_type(d, types)
    if t != "b32":
        raise d.unsupported(f"shf.{t}")
    left = "l" in ins.modifiers
    wrap = "wrap" in ins.modifiers

    def shf(a, b, c):
        n = (c & np.uint32(31)) if wrap else np.minimum(c, np.uint32(32))
        n = n.astype(U64)
        v = (b.astype(U64) << U64(32)) | a.astype(U64)
        if left:
            return ((v << n) >> U64(32)).astype(np.uint32)
        return (v >> n).astype(np.uint32)  # astype keeps the low 32 bits

    return elementwise(d, ins, "b32", ("b32", "b32", "u32"), shf)


def c_popc(ins, d):
    t = one_type(d, d.mods(set()))
    return elementwise(d, ins, "u32", (t,), lambda a: np.bitwise_count(_u(a)).astype(np.uint32))


def c_clz(ins, d):
    t = one_type(d, d.mods(set()))
    n = dtypes.bits(t)
    return elementwise(d, ins, "u32", (t,), lambda a: (n - bit_length(_u(a))).astype(np.uint32))


def c_brev(ins, d):
    t = one_type(d, d.mods(set()))
    return elementwise(d, ins, t, (t,), brev)


def c_bfind(ins, d):
    types = d.mods({"shiftamt"})
    t = one_type(d, types)
    n = dtypes.bits(t)
    shiftamt = "shiftamt" in ins.modifiers

    def bfind(a):
        u = _u(a)
        if t[0] == "s":
            u = np.where(a < 0, ~u, u)
        pos = bit_length(u) - 1
        none = pos < 0
        if shiftamt:
            pos = (n - 1) - pos
        return np.where(none, np.uint32(0xFFFFFFFF), pos.astype(np.int64) & 0xFFFFFFFF).astype(np.uint32)

    return elementwise(d, ins, "u32", (t,), bfind)


def c_bfe(ins, d):
    t = one_type(d, d.mods(set()))
    n = dtypes.bits(t)
    signed = t[0] == "s"
    vd = dtypes.value_dtype(t)

    def bfe(a, b, c):
        pos = (b & np.uint32(0xFF)).astype(np.int64)
        ln = (c & np.uint32(0xFF)).astype(np.int64)
        ua = _u(a).astype(U64)
        L = np.where(pos >= n, 0, np.minimum(ln, n - pos))
        field = (ua >> np.minimum(pos, 63).astype(U64)) & mask_bits(L)
        field = np.where(pos >= 64, U64(0), field)
        if signed:
            top = np.minimum(pos + ln - 1, n - 1)
            sbit = ((ua >> np.clip(top, 0, 63).astype(U64)) & U64(1)).astype(bool) & (ln != 0)
            field = np.where(sbit, field | ~mask_bits(L), field)
        return (field & mask_bits(np.full(1, n))).astype(UINT[n]).view(vd)

    return elementwise(d, ins, t, (t, "u32", "u32"), bfe)


def c_bfi(ins, d):
    t = one_type(d, d.mods(set()))
    n = dtypes.bits(t)

    def bfi(a, b, c, e):
        pos = (c & np.uint32(0xFF)).astype(np.int64)
        ln = (e & np.uint32(0xFF)).astype(np.int64)
        L = np.where(pos >= n, 0, np.minimum(ln, n - pos))
        p = np.minimum(pos, n - 1).astype(U64)
        m = mask_bits(L) << p
        ua, ub = _u(a).astype(U64), _u(b).astype(U64)
        f = (ub & ~m) | ((ua << p) & m)
        return (f & mask_bits(np.full(1, n))).astype(UINT[n]).view(a.dtype)

    return elementwise(d, ins, t, (t, t, "u32", "u32"), bfi)


def c_bmsk(ins, d):
    types = d.mods({"clamp", "wrap"})
    one_type(d, types)
    wrap = "wrap" in ins.modifiers

    def bmsk(a, b):
        a64, b64 = a.astype(np.int64), b.astype(np.int64)
        if wrap:
            a64, b64 = a64 & 31, b64 & 31
        else:
            a64, b64 = np.minimum(a64, 32), np.minimum(b64, 32)
        m = (mask_bits(b64) << np.minimum(a64, 63).astype(U64))
        m = np.where(a64 >= 32, U64(0), m)
        return (m & U64(0xFFFFFFFF)).astype(np.uint32)

    return elementwise(d, ins, "b32", ("u32", "u32"), bmsk)


def c_szext(ins, d):
    types = d.mods({"clamp", "wrap"})
    t = one_type(d, types)
    wrap = "wrap" in ins.modifiers

    def szext(a, b):
        w = (b.astype(np.int64) & 31) if wrap else np.minimum(b.astype(np.int64), 32)
        ua = a.view(np.uint32).astype(U64) & mask_bits(w)
        if t == "s32":
            sign = (ua >> np.clip(w - 1, 0, 63).astype(U64)) & U64(1)
            ua = np.where((w > 0) & (sign == 1), ua | ~mask_bits(w), ua)
        return (ua & U64(0xFFFFFFFF)).astype(np.uint32).view(dtypes.value_dtype(t))

    return elementwise(d, ins, t, (t, "u32"), szext)


# prmt modes: for selector c[1:0], the source byte of d.b0..d.b3
PRMT_MODES = {
    "f4e": [[0, 1, 2, 3], [1, 2, 3, 4], [2, 3, 4, 5], [3, 4, 5, 6]],
    "b4e": [[0, 7, 6, 5], [1, 0, 7, 6], [2, 1, 0, 7], [3, 2, 1, 0]],
    "rc8": [[0, 0, 0, 0], [1, 1, 1, 1], [2, 2, 2, 2], [3, 3, 3, 3]],
    "ecl": [[0, 1, 2, 3], [1, 1, 2, 3], [2, 2, 2, 3], [3, 3, 3, 3]],
    "ecr": [[0, 0, 0, 0], [0, 1, 1, 1], [0, 1, 2, 2], [0, 1, 2, 3]],
    "rc16": [[0, 1, 0, 1], [2, 3, 2, 3], [0, 1, 0, 1], [2, 3, 2, 3]],
}


def c_prmt(ins, d):
    types = d.mods(set(PRMT_MODES))
    one_type(d, types)
    modes = [m for m in ins.modifiers if m in PRMT_MODES]
    mode = modes[0] if modes else None

    def prmt(a, b, c):
        src = (a.astype(U64) | (b.astype(U64) << U64(32)))
        c = c.astype(np.int64)
        out = np.zeros(np.broadcast(a, b, c).shape, dtype=U64)
        for i in range(4):
            if mode is None:
                nib = (c >> (4 * i)) & 0xF
                sel = nib & 7
                byte = (src >> (sel * 8).astype(U64)) & U64(0xFF)
                sign = (nib & 8) != 0
                byte = np.where(sign, np.where(byte & U64(0x80), U64(0xFF), U64(0)), byte)
            else:
                table = np.array([row[i] for row in PRMT_MODES[mode]], dtype=np.int64)
                sel = table[c & 3]
                byte = (src >> (sel * 8).astype(U64)) & U64(0xFF)
            out |= byte << U64(8 * i)
        return out.astype(np.uint32)

    return elementwise(d, ins, "b32", ("b32", "b32", "b32"), prmt)


def c_lop3(ins, d):
    t = one_type(d, d.mods(set()))
    if t != "b32" or len(ins.operands) != 5:
        raise d.unsupported("lop3 form")
    lut = d.read(ins.operands[4], "b32")

    def lop3(a, b, c, lv):
        lv = int(np.asarray(lv).ravel()[0]) if np.size(lv) == 1 else None
        if lv is None:
            raise d.unsupported("non-immediate lop3 table")
        out = np.zeros(np.broadcast(a, b, c).shape, dtype=np.uint32)
        for k in range(8):
            if lv >> k & 1:
                ta = a if k & 4 else ~a
                tb = b if k & 2 else ~b
                tc = c if k & 1 else ~c
                out |= ta & tb & tc
        return out

    w = d.write(ins.operands[0], "b32")
    ra, rb, rc = (d.read(o, "b32") for o in ins.operands[1:4])
    return lambda fr, sel: w(fr, sel, lop3(ra(fr, sel), rb(fr, sel), rc(fr, sel), lut(fr, sel)))


OPS = {
    "and": lambda i, d: c_logic(i, d, "and"),
    "or": lambda i, d: c_logic(i, d, "or"),
    "xor": lambda i, d: c_logic(i, d, "xor"),
    "not": c_not,
    "cnot": c_cnot,
    "shl": lambda i, d: c_shift(i, d, True),
    "shr": lambda i, d: c_shift(i, d, False),
    "shf": c_shf,
    "popc": c_popc,
    "clz": c_clz,
    "brev": c_brev,
    "bfind": c_bfind,
    "bfe": c_bfe,
    "bfi": c_bfi,
    "bmsk": c_bmsk,
    "szext": c_szext,
    "prmt": c_prmt,
    "lop3": c_lop3,
}
