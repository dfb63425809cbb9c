"""Integer arithmetic, shifts, bit manipulation, selection and moves, with
exact expected values (references computed with Python integers)."""

from __future__ import annotations

import numpy as np
import pytest

from ptxopt.interp.snippets import elementwise

M32 = (1 << 32) - 1
M64 = (1 << 64) - 1


def run1(op, ins, outs):
    return elementwise(op, ins, outs)


def test_add_sub_wrap_and_saturate():
    r = run1("add.u32 %d, %a, %b;", {"a": ("u32", [M32, 5]), "b": ("u32", [1, 7])}, {"d": "u32"})["d"]
    assert r.tolist() == [0, 12]
    r = run1("sub.s32 %d, %a, %b;", {"a": ("s32", [-2 ** 31]), "b": ("s32", [1])}, {"d": "s32"})["d"]
    assert r.tolist() == [2 ** 31 - 1]
    r = run1("add.sat.s32 %d, %a, %b;", {"a": ("s32", [2 ** 31 - 1, -2 ** 31]), "b": ("s32", [5, -5])},
             {"d": "s32"})["d"]
    assert r.tolist() == [2 ** 31 - 1, -2 ** 31]
    r = run1("add.s64 %d, %a, %b;", {"a": ("s64", [2 ** 63 - 1]), "b": ("s64", [1])}, {"d": "s64"})["d"]
    assert r.tolist() == [-2 ** 63]


def test_mul_lo_hi_wide():
    a = [0x12345678, -7, 2 ** 31 - 1, -2 ** 31]
    b = [0x9ABCDEF0 - 2 ** 32, 3, 2 ** 31 - 1, -2 ** 31]
    ins = {"a": ("s32", a), "b": ("s32", b)}
    lo = run1("mul.lo.s32 %d, %a, %b;", ins, {"d": "s32"})["d"]
    hi = run1("mul.hi.s32 %d, %a, %b;", ins, {"d": "s32"})["d"]
    wide = run1("mul.wide.s32 %d, %a, %b;", ins, {"d": "s64"})["d"]
    for i, (x, y) in enumerate(zip(a, b)):
        p = x * y
        assert wide[i] == p
        assert lo[i] == np.int32(np.uint32(p & M32).view(np.int32))
        assert hi[i] == (p >> 32)
    ua = [M32, 0x80000000]
    ub = [M32, 3]
    hi = run1("mul.hi.u32 %d, %a, %b;", {"a": ("u32", ua), "b": ("u32", ub)}, {"d": "u32"})["d"]
    assert hi.tolist() == [(x * y) >> 32 for x, y in zip(ua, ub)]
    wide = run1("mul.wide.u16 %d, %a, %b;", {"a": ("u16", [65535]), "b": ("u16", [65535])}, {"d": "u32"})["d"]
    assert wide.tolist() == [65535 * 65535]


def test_mul_hi_64():
    rng = np.random.default_rng(5)
    a = rng.integers(-2 ** 63, 2 ** 63 - 1, 64, dtype=np.int64)
    b = rng.integers(-2 ** 63, 2 ** 63 - 1, 64, dtype=np.int64)
    a[:2] = [-2 ** 63, -1]
    b[:2] = [-2 ** 63, -2 ** 63]
    hs = run1("mul.hi.s64 %d, %a, %b;", {"a": ("s64", a), "b": ("s64", b)}, {"d": "s64"})["d"]
    assert hs.tolist() == [(int(x) * int(y)) >> 64 for x, y in zip(a, b)]
    ua, ub = a.view(np.uint64), b.view(np.uint64)
    hu = run1("mul.hi.u64 %d, %a, %b;", {"a": ("u64", ua), "b": ("u64", ub)}, {"d": "u64"})["d"]
    assert hu.tolist() == [(int(x) * int(y)) >> 64 for x, y in zip(ua, ub)]


def test_mad_variants():
    ins = {"a": ("s32", [100000, -3]), "b": ("s32", [300000, 5]), "c": ("s32", [7, -1])}
    lo = run1("mad.lo.s32 %d, %a, %b, %c;", ins, {"d": "s32"})["d"]
    hi = run1("mad.hi.s32 %d, %a, %b, %c;", ins, {"d": "s32"})["d"]
    assert lo.tolist() == [np.int64(100000 * 300000 + 7).astype(np.int32), -16]
    assert hi.tolist() == [((100000 * 300000) >> 32) + 7, -1 + (-15 >> 32)]
    w = run1("mad.wide.s32 %d, %a, %b, %c;", {"a": ("s32", [-100000]), "b": ("s32", [300000]),
                                              "c": ("s64", [2 ** 40])}, {"d": "s64"})["d"]
    assert w.tolist() == [-100000 * 300000 + 2 ** 40]
    r = run1("mul24.lo.u32 %d, %a, %b;", {"a": ("u32", [0x1FFFFFF]), "b": ("u32", [2])}, {"d": "u32"})["d"]
    assert r.tolist() == [(0xFFFFFF * 2) & M32]


def test_div_rem_truncate_toward_zero():
    a = [-7, 7, -7, -2 ** 31, 5]
    b = [2, -2, -2, -1, 0]
    q = run1("div.s32 %d, %a, %b;", {"a": ("s32", a), "b": ("s32", b)}, {"d": "s32"})["d"]
    r = run1("rem.s32 %d, %a, %b;", {"a": ("s32", a), "b": ("s32", b)}, {"d": "s32"})["d"]
    assert q.tolist()[:4] == [-3, -3, 3, -2 ** 31]
    assert r.tolist()[:4] == [-1, 1, -1, 0]
    assert q.tolist()[4] == -1 and r.tolist()[4] == 5  # division by zero: documented values
    q = run1("div.u32 %d, %a, %b;", {"a": ("u32", [M32, 9]), "b": ("u32", [2, 0])}, {"d": "u32"})["d"]
    assert q.tolist() == [M32 // 2, M32]


def test_carry_chain_adds_64_bits_from_32():
    pairs = [(M32, 1), (0x80000000, 0x80000000), (5, 6)]
    hi_a = [1, 2, M32]
    hi_b = [2, 3, 0]
    op = "add.cc.u32 %lo, %a, %b;\n\taddc.u32 %hi, %c, %e;"
    out = run1(op, {"a": ("u32", [p[0] for p in pairs]), "b": ("u32", [p[1] for p in pairs]),
                    "c": ("u32", hi_a), "e": ("u32", hi_b)}, {"lo": "u32", "hi": "u32"})
    for i, (x, y) in enumerate(pairs):
        full = ((hi_a[i] << 32) | x) + ((hi_b[i] << 32) | y)
        assert out["lo"][i] == full & M32
        assert out["hi"][i] == (full >> 32) & M32
    op = "sub.cc.u32 %lo, %a, %b;\n\tsubc.u32 %hi, %c, %e;"
    out = run1(op, {"a": ("u32", [0]), "b": ("u32", [1]), "c": ("u32", [5]), "e": ("u32", [2])},
               {"lo": "u32", "hi": "u32"})
    assert (out["lo"][0], out["hi"][0]) == (M32, 2)


@pytest.mark.parametrize("amount", [0, 1, 31, 32, 33, 255, M32])
def test_shifts_clamp(amount):
    a32 = [0x80000001, 0x7FFFFFFF]
    ins = {"a": ("b32", a32), "b": ("u32", [amount] * 2)}
    shl = run1("shl.b32 %d, %a, %b;", ins, {"d": "b32"})["d"]
    shr = run1("shr.u32 %d, %a, %b;", {"a": ("u32", a32), "b": ("u32", [amount] * 2)}, {"d": "u32"})["d"]
    sar = run1("shr.s32 %d, %a, %b;", {"a": ("s32", [-5, 5]), "b": ("u32", [amount] * 2)}, {"d": "s32"})["d"]
    k = min(amount, 32)
    assert shl.tolist() == [(x << k) & M32 if k < 32 else 0 for x in a32]
    assert shr.tolist() == [x >> k if k < 32 else 0 for x in a32]
    assert sar.tolist() == [-5 >> min(k, 31), 5 >> min(k, 31)]
    s64 = run1("shl.b64 %d, %a, %b;", {"a": ("b64", [1]), "b": ("u32", [amount])}, {"d": "b64"})["d"]
    assert s64.tolist() == [(1 << amount) & M64 if amount < 64 else 0]


def test_funnel_shift():
    a, b = 0x89ABCDEF, 0x01234567
    out = run1("shf.l.wrap.b32 %d, %a, %b, %c;", {"a": ("b32", [a] * 3), "b": ("b32", [b] * 3),
                                                  "c": ("u32", [4, 36, 0])}, {"d": "b32"})["d"]
    full = (b << 32) | a
    assert out.tolist() == [((full << n) >> 32) & M32 for n in (4, 4, 0)]
    out = run1("shf.r.clamp.b32 %d, %a, %b, %c;", {"a": ("b32", [a] * 3), "b": ("b32", [b] * 3),
                                                   "c": ("u32", [4, 40, 32])}, {"d": "b32"})["d"]
    assert out.tolist() == [(full >> n) & M32 for n in (4, 32, 32)]


def test_bit_counts():
    x = [0, 1, 0x80000000, M32, 0x00F0F000]
    assert run1("popc.b32 %d, %a;", {"a": ("b32", x)}, {"d": "u32"})["d"].tolist() == [bin(v).count("1") for v in x]
    assert run1("clz.b32 %d, %a;", {"a": ("b32", x)}, {"d": "u32"})["d"].tolist() == [32 - v.bit_length() for v in x]
    assert run1("brev.b32 %d, %a;", {"a": ("b32", x)}, {"d": "b32"})["d"].tolist() == \
        [int(f"{v:032b}"[::-1], 2) for v in x]
    bf = run1("bfind.u32 %d, %a;", {"a": ("u32", x)}, {"d": "u32"})["d"]
    assert bf.tolist() == [M32 if v == 0 else v.bit_length() - 1 for v in x]
    bs = run1("bfind.s32 %d, %a;", {"a": ("s32", [-1, -2, 5, 0])}, {"d": "u32"})["d"]
    assert bs.tolist() == [M32, 0, 2, M32]
    sa = run1("bfind.shiftamt.u32 %d, %a;", {"a": ("u32", [1, 0x80000000])}, {"d": "u32"})["d"]
    assert sa.tolist() == [31, 0]
    c64 = run1("clz.b64 %d, %a;", {"a": ("b64", [1, 2 ** 63, 0])}, {"d": "u32"})["d"]
    assert c64.tolist() == [63, 0, 64]


def _bfe_ref(a, pos, ln, signed, n=32):
    pos &= 0xFF
    ln &= 0xFF
    sbit = 0
    if signed and ln:
        sbit = (a >> min(pos + ln - 1, n - 1)) & 1
    d = 0
    for i in range(n):
        bit = (a >> (pos + i)) & 1 if (i < ln and pos + i <= n - 1) else sbit
        d |= bit << i
    return d


def test_bfe_bfi():
    rng = np.random.default_rng(2)
    a = rng.integers(0, 2 ** 32, 64, dtype=np.uint64).astype(np.uint32)
    pos = rng.integers(0, 40, 64).astype(np.uint32)
    ln = rng.integers(0, 40, 64).astype(np.uint32)
    pos[:3], ln[:3] = [0, 31, 40], [32, 5, 3]
    u = run1("bfe.u32 %d, %a, %b, %c;", {"a": ("u32", a), "b": ("u32", pos), "c": ("u32", ln)}, {"d": "u32"})["d"]
    s = run1("bfe.s32 %d, %a, %b, %c;", {"a": ("s32", a.view(np.int32)), "b": ("u32", pos), "c": ("u32", ln)},
             {"d": "s32"})["d"]
    for i in range(64):
        assert int(u[i]) == _bfe_ref(int(a[i]), int(pos[i]), int(ln[i]), False)
        assert int(s.view(np.uint32)[i]) == _bfe_ref(int(a[i]), int(pos[i]), int(ln[i]), True)
    f = run1("bfi.b32 %d, %a, %b, %c, %e;", {"a": ("b32", [0xF, 0xFFFF]), "b": ("b32", [0, M32]),
                                             "c": ("u32", [4, 30]), "e": ("u32", [4, 8])}, {"d": "b32"})["d"]
    assert f.tolist() == [0xF0, M32]


def test_prmt_and_lop3():
    a, b = 0x33221100, 0x77665544
    r = run1("prmt.b32 %d, %a, %b, %c;", {"a": ("b32", [a] * 3), "b": ("b32", [b] * 2 + [0x77665584]),
                                          "c": ("b32", [0x3210, 0x7654, 0x0C40])}, {"d": "b32"})["d"]
    # selector nibbles pick bytes of {b, a}; bit 3 of a nibble replicates the byte's sign
    assert r.tolist() == [a, b, 0x00FF8400]
    r = run1("prmt.b32.f4e %d, %a, %b, %c;", {"a": ("b32", [a]), "b": ("b32", [b]), "c": ("b32", [1])},
             {"d": "b32"})["d"]
    assert r.tolist() == [0x44332211]
    rng = np.random.default_rng(4)
    x, y, z = (rng.integers(0, 2 ** 32, 16, dtype=np.uint64).astype(np.uint32) for _ in range(3))
    for lut, fn in ((0x96, lambda p, q, s: p ^ q ^ s), (0xE8, lambda p, q, s: (p & q) | (p & s) | (q & s)),
                    (0x80, lambda p, q, s: p & q & s), (0xF0, lambda p, q, s: p), (0x0F, lambda p, q, s: ~p)):
        r = run1(f"lop3.b32 %d, %a, %b, %c, {lut};", {"a": ("b32", x), "b": ("b32", y), "c": ("b32", z)},
                 {"d": "b32"})["d"]
        assert r.tolist() == [fn(int(p), int(q), int(s)) & M32 for p, q, s in zip(x, y, z)], hex(lut)


def test_selp_slct_not_cnot_logic():
    r = run1("selp.b32 %d, %a, %b, %p;", {"a": ("b32", [1, 1]), "b": ("b32", [2, 2]), "p": ("pred", [1, 0])},
             {"d": "b32"})["d"]
    assert r.tolist() == [1, 2]
    r = run1("slct.u32.s32 %d, %a, %b, %c;", {"a": ("u32", [1, 1]), "b": ("u32", [2, 2]), "c": ("s32", [0, -1])},
             {"d": "u32"})["d"]
    assert r.tolist() == [1, 2]
    r = run1("not.b32 %d, %a;", {"a": ("b32", [0])}, {"d": "b32"})["d"]
    assert r.tolist() == [M32]
    r = run1("cnot.b32 %d, %a;", {"a": ("b32", [0, 9])}, {"d": "b32"})["d"]
    assert r.tolist() == [1, 0]
    r = run1("xor.pred %q, %p, %o;", {"p": ("pred", [1, 1, 0]), "o": ("pred", [1, 0, 0])}, {"q": "pred"})["q"]
    assert r.tolist() == [False, True, False]


def test_mov_pack_unpack_and_widths():
    r = run1("mov.b64 %d, {%a, %b};", {"a": ("b32", [0x11111111]), "b": ("b32", [0x22222222])}, {"d": "b64"})["d"]
    assert r.tolist() == [0x2222222211111111]
    r = run1("mov.b32 {%lo, %hi}, %a;", {"a": ("b32", [0xAAAABBBB])}, {"lo": "b16", "hi": "b16"})
    assert (int(r["lo"][0]), int(r["hi"][0])) == (0xBBBB, 0xAAAA)
    # a narrow load into a wide register extends by the load's signedness
    r = run1("cvt.s32.s8 %d, %a;", {"a": ("s16", [0x80])}, {"d": "s32"})["d"]
    assert r.tolist() == [-128]
    r = run1("abs.s32 %d, %a;", {"a": ("s32", [-5, -2 ** 31])}, {"d": "s32"})["d"]
    assert r.tolist() == [5, -2 ** 31]
    r = run1("neg.s32 %d, %a;", {"a": ("s32", [5])}, {"d": "s32"})["d"]
    assert r.tolist() == [-5]
    r = run1("min.u32 %d, %a, %b;", {"a": ("u32", [M32]), "b": ("u32", [1])}, {"d": "u32"})["d"]
    assert r.tolist() == [1]
    r = run1("max.s32 %d, %a, %b;", {"a": ("s32", [-1]), "b": ("s32", [1])}, {"d": "s32"})["d"]
    assert r.tolist() == [1]


def test_immediates_as_float_bits():
    r = elementwise("add.f32 %d, %a, 0f3F800000;", {"a": ("f32", [1.0])}, {"d": "f32"})["d"]
    assert r.tolist() == [2.0]
    r = elementwise("mov.b32 %d, 0f40490FDB;", {"a": ("f32", [0.0])}, {"d": "b32"})["d"]
    assert r.tolist() == [0x40490FDB]
    r = elementwise("add.f64 %d, %a, 0d3FF0000000000000;", {"a": ("f64", [1.0])}, {"d": "f64"})["d"]
    assert r.tolist() == [2.0]
