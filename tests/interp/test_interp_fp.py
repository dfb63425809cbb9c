"""Floating-point semantics: the true FMA, directed rounding, conversions,
flush-to-zero, NaN rules and comparisons, with exact expected bit patterns.

References are computed exactly with :class:`fractions.Fraction`, never with
the float64 shortcut the interpreter must not take.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from ptxopt.interp import fp
from ptxopt.interp.snippets import elementwise

F32 = np.float32


def u32(x):
    return np.asarray(x, dtype=np.float32).view(np.uint32)


def f32_from_bits(b):
    return np.array(b, dtype=np.uint32).view(np.float32)


def exact_round_f32(q: Fraction, mode: str) -> float:
    """Reference rounding of an exact rational to float32 (normal range)."""
    if q == 0:
        return 0.0
    c = np.float32(float(q))
    cands = []
    x = c
    for _ in range(3):
        x = np.nextafter(x, F32(-np.inf))
    for _ in range(7):
        if np.isfinite(x):
            cands.append(float(x))
        x = np.nextafter(x, F32(np.inf))
    lo = max(v for v in cands if Fraction(v) <= q)
    hi = min(v for v in cands if Fraction(v) >= q)
    if lo == hi:
        return lo
    if mode == "rz":
        return lo if q > 0 else hi
    if mode == "rm":
        return lo
    if mode == "rp":
        return hi
    dl, dh = q - Fraction(lo), Fraction(hi) - q
    if dl != dh:
        return lo if dl < dh else hi
    return lo if int(u32(lo)) % 2 == 0 else hi


# --------------------------------------------------------------------------
# fma
# --------------------------------------------------------------------------


def test_fma_double_rounding_case():
    # a*a = 1 + 2^-11 + 2^-24 is a float32 midpoint; + 2^-80 lifts it just
    # above, so the fused result rounds up. Rounding the sum to float64 first
    # lands exactly on the midpoint and ties to even (down): the classic bug.
    a = F32(1 + 2 ** -12)
    c = F32(2.0 ** -80)
    naive = F32(np.float64(a) * np.float64(a) + np.float64(c))
    assert int(u32(naive)) == 0x3F801000
    out = elementwise("fma.rn.f32 %d, %a, %b, %c;",
                      {"a": ("f32", [a, -a, a]), "b": ("f32", [a, a, a]), "c": ("f32", [c, -c, -c])},
                      {"d": "f32"})["d"]
    # -(a*a) - c mirrors the first; a*a - c lies just below the midpoint: ties-to-even is right
    assert [hex(int(x)) for x in u32(out)] == ["0x3f801001", "0xbf801001", "0x3f801000"]
    # and mad.rn.f32 is the same fused operation
    out = elementwise("mad.rn.f32 %d, %a, %a, %c;", {"a": ("f32", [a]), "c": ("f32", [c])}, {"d": "f32"})["d"]
    assert int(u32(out)[0]) == 0x3F801001


@pytest.mark.parametrize("mode", ["rn", "rz", "rm", "rp"])
def test_fma_matches_exact_rounding(mode):
    rng = np.random.default_rng(7)
    n = 400
    a = rng.standard_normal(n).astype(F32)
    b = rng.standard_normal(n).astype(F32)
    c = (rng.standard_normal(n) * 2.0 ** rng.integers(-40, 8, n)).astype(F32)
    # near-midpoint cases
    a[:150] = (1 + rng.integers(0, 2 ** 12, 150) * 2.0 ** -12).astype(F32)
    b[:150] = a[:150]
    c[:150] = (rng.choice([-1, 1], 150) * 2.0 ** rng.integers(-90, -30, 150)).astype(F32)
    got = fp.fma_f32(a, b, c, mode)
    want = [exact_round_f32(Fraction(float(x)) * Fraction(float(y)) + Fraction(float(z)), mode)
            for x, y, z in zip(a, b, c)]
    assert np.array_equal(u32(got), u32(np.array(want, dtype=F32)))


def test_fma_one_lane_at_a_time_matches_exact_rounding():
    """One-element arrays (a one-thread kernel) mostly take fma_f32's quick
    path -- no error term unless the float64 sum is a float32 midpoint; the
    near-midpoint ones here take the general path on their own."""
    rng = np.random.default_rng(11)
    n = 300
    a = (rng.standard_normal(n) * 2.0 ** rng.integers(-60, 60, n)).astype(F32)
    b = (rng.standard_normal(n) * 2.0 ** rng.integers(-60, 60, n)).astype(F32)
    c = (rng.standard_normal(n) * 2.0 ** rng.integers(-100, 100, n)).astype(F32)
    a[:60] = (1 + rng.integers(0, 2 ** 12, 60) * 2.0 ** -12).astype(F32)
    b[:60] = a[:60]
    c[:60] = (rng.choice([-1, 1], 60) * 2.0 ** rng.integers(-90, -30, 60)).astype(F32)
    for x, y, z in zip(a, b, c):
        got = fp.fma_f32(np.array([x]), np.array([y]), np.array([z]))
        want = exact_round_f32(Fraction(float(x)) * Fraction(float(y)) + Fraction(float(z)), "rn")
        assert int(u32(got)[0]) == int(u32(np.array([want], dtype=F32))[0]), (x, y, z)


def test_fma_specials_and_signed_zero():
    inf, nan = np.inf, np.nan
    a = np.array([inf, 0, 1, 1, -1, 0], F32)
    b = np.array([0, inf, 1, 1, 1, -1], F32)
    c = np.array([1, 1, nan, -1, 1, 0], F32)
    got = fp.fma_f32(a, b, c)
    assert [hex(int(x)) for x in u32(got)] == ["0x7fffffff", "0x7fffffff", "0x7fffffff", "0x0", "0x0", "0x0"]
    # exact zero sums are -0 only when rounding toward minus infinity
    got = fp.fma_f32(np.array([1], F32), np.array([1], F32), np.array([-1], F32), "rm")
    assert int(u32(got)[0]) == 0x80000000


def test_fma_f64_is_fused():
    a = 1 + 2.0 ** -30
    c = -(1 + 2.0 ** -29)
    out = elementwise("fma.rn.f64 %d, %a, %a, %c;", {"a": ("f64", [a]), "c": ("f64", [c])}, {"d": "f64"})["d"]
    assert out[0] == 2.0 ** -60  # a*a + c exactly; unfused gives 0


# --------------------------------------------------------------------------
# add / mul / div / sqrt with rounding modes and ftz
# --------------------------------------------------------------------------


def test_add_directed_rounding():
    a = np.array([1.0, -1.0, 1.0, 1.0], F32)
    b = np.array([2.0 ** -30] * 4, F32)
    ops = {m: elementwise(f"add.{m}.f32 %d, %a, %b;", {"a": ("f32", a), "b": ("f32", b)}, {"d": "f32"})["d"]
           for m in ("rn", "rz", "rm", "rp")}
    assert hex(int(u32(ops["rn"])[0])) == "0x3f800000"
    assert hex(int(u32(ops["rp"])[0])) == "0x3f800001"
    assert hex(int(u32(ops["rz"])[1])) == "0xbf7fffff"  # -1 + tiny, toward zero
    assert hex(int(u32(ops["rp"])[1])) == "0xbf7fffff"  # toward +inf
    assert hex(int(u32(ops["rm"])[1])) == "0xbf800000"  # toward -inf
    assert hex(int(u32(ops["rm"])[0])) == "0x3f800000"


def test_div_sqrt_rcp_correctly_rounded():
    rng = np.random.default_rng(3)
    a = rng.uniform(0.1, 10, 200).astype(F32)
    b = rng.uniform(0.1, 10, 200).astype(F32)
    for mode in ("rn", "rz", "rm", "rp"):
        got = elementwise(f"div.{mode}.f32 %d, %a, %b;", {"a": ("f32", a), "b": ("f32", b)}, {"d": "f32"})["d"]
        want = [exact_round_f32(Fraction(float(x)) / Fraction(float(y)), mode) for x, y in zip(a, b)]
        assert np.array_equal(u32(got), u32(np.array(want, F32))), mode
    got = elementwise("sqrt.rn.f32 %d, %a;", {"a": ("f32", a)}, {"d": "f32"})["d"]
    for x, r in zip(a, got):  # r is the nearest: (r - ulp/2)^2 <= x <= (r + ulp/2)^2
        up, dn = np.nextafter(r, F32(np.inf)), np.nextafter(r, F32(0))
        lo = (Fraction(float(r)) + Fraction(float(dn))) / 2
        hi = (Fraction(float(r)) + Fraction(float(up))) / 2
        assert lo * lo <= Fraction(float(x)) <= hi * hi
    got = elementwise("rcp.rn.f32 %d, %a;", {"a": ("f32", a)}, {"d": "f32"})["d"]
    want = [exact_round_f32(1 / Fraction(float(x)), "rn") for x in a]
    assert np.array_equal(u32(got), u32(np.array(want, F32)))


def test_ftz_flushes_inputs_and_results():
    sub = f32_from_bits([0x00000005, 0x80000005])
    one = np.array([1.0, 1.0], F32)
    plain = elementwise("mul.f32 %d, %a, %b;", {"a": ("f32", sub), "b": ("f32", one)}, {"d": "f32"})["d"]
    ftz = elementwise("mul.ftz.f32 %d, %a, %b;", {"a": ("f32", sub), "b": ("f32", one)}, {"d": "f32"})["d"]
    assert [int(x) for x in u32(plain)] == [5, 0x80000005]
    assert [int(x) for x in u32(ftz)] == [0, 0x80000000]  # sign-preserving zero
    tiny = np.array([2.0 ** -100, -(2.0 ** -100)], F32)
    small = np.array([2.0 ** -30, 2.0 ** -30], F32)
    res = elementwise("mul.ftz.f32 %d, %a, %b;", {"a": ("f32", tiny), "b": ("f32", small)}, {"d": "f32"})["d"]
    assert [int(x) for x in u32(res)] == [0, 0x80000000]  # subnormal result flushed


def test_sat_clamps():
    a = np.array([1.5, -0.5, np.nan, 0.25], F32)
    got = elementwise("add.sat.f32 %d, %a, %b;", {"a": ("f32", a), "b": ("f32", np.zeros(4, F32))},
                      {"d": "f32"})["d"]
    assert got.tolist() == [1.0, 0.0, 0.0, 0.25]
    got = elementwise("cvt.sat.f32.f32 %d, %a;", {"a": ("f32", a)}, {"d": "f32"})["d"]
    assert got.tolist() == [1.0, 0.0, 0.0, 0.25]


def test_min_max_nan_rules():
    nan = np.nan
    a = np.array([nan, nan, 1.0, -0.0, 0.0], F32)
    b = np.array([1.0, nan, nan, 0.0, -0.0], F32)
    mn = elementwise("min.f32 %d, %a, %b;", {"a": ("f32", a), "b": ("f32", b)}, {"d": "f32"})["d"]
    mx = elementwise("max.f32 %d, %a, %b;", {"a": ("f32", a), "b": ("f32", b)}, {"d": "f32"})["d"]
    mxn = elementwise("max.NaN.f32 %d, %a, %b;", {"a": ("f32", a), "b": ("f32", b)}, {"d": "f32"})["d"]
    assert [hex(int(x)) for x in u32(mn)] == ["0x3f800000", "0x7fffffff", "0x3f800000", "0x80000000", "0x80000000"]
    assert [hex(int(x)) for x in u32(mx)] == ["0x3f800000", "0x7fffffff", "0x3f800000", "0x0", "0x0"]
    assert [hex(int(x)) for x in u32(mxn)][:3] == ["0x7fffffff"] * 3


def test_neg_abs_copysign_are_bit_operations():
    a = f32_from_bits([0x7FC00001, 0x3F800000, 0x80000000])
    neg = elementwise("neg.f32 %d, %a;", {"a": ("f32", a)}, {"d": "f32"})["d"]
    ab = elementwise("abs.f32 %d, %a;", {"a": ("f32", a)}, {"d": "f32"})["d"]
    assert [hex(int(x)) for x in u32(neg)] == ["0xffc00001", "0xbf800000", "0x0"]
    assert [hex(int(x)) for x in u32(ab)] == ["0x7fc00001", "0x3f800000", "0x0"]
    cs = elementwise("copysign.f32 %d, %a, %b;",
                     {"a": ("f32", np.array([-1, 1], F32)), "b": ("f32", np.array([2, -3], F32))},
                     {"d": "f32"})["d"]
    assert cs.tolist() == [-2.0, 3.0]  # value of b, sign of a


# --------------------------------------------------------------------------
# setp / testp
# --------------------------------------------------------------------------

CASES = [(1.0, 2.0), (2.0, 1.0), (1.0, 1.0), (np.nan, 1.0)]
EXPECT = {  # per case above
    "eq": [0, 0, 1, 0], "ne": [1, 1, 0, 0], "lt": [1, 0, 0, 0], "le": [1, 0, 1, 0],
    "gt": [0, 1, 0, 0], "ge": [0, 1, 1, 0],
    "equ": [0, 0, 1, 1], "neu": [1, 1, 0, 1], "ltu": [1, 0, 0, 1], "leu": [1, 0, 1, 1],
    "gtu": [0, 1, 0, 1], "geu": [0, 1, 1, 1], "num": [1, 1, 1, 0], "nan": [0, 0, 0, 1],
}


@pytest.mark.parametrize("cmp", sorted(EXPECT))
def test_setp_float_ordered_and_unordered(cmp):
    a = np.array([c[0] for c in CASES], F32)
    b = np.array([c[1] for c in CASES], F32)
    got = elementwise(f"setp.{cmp}.f32 %p, %a, %b;", {"a": ("f32", a), "b": ("f32", b)}, {"p": "pred"})["p"]
    assert got.astype(int).tolist() == EXPECT[cmp]


def test_setp_pair_and_bool_combine():
    a = np.array([1, 5, 1, 5], np.int32)
    b = np.array([3, 3, 3, 3], np.int32)
    c = np.array([1, 1, 0, 0], np.uint8)
    got = elementwise("setp.lt.and.s32 %p|%q, %a, %b, %c;", {"a": ("s32", a), "b": ("s32", b), "c": ("pred", c)},
                      {"p": "pred", "q": "pred"})
    assert got["p"].tolist() == [True, False, False, False]
    assert got["q"].tolist() == [False, True, False, False]
    unsigned = elementwise("setp.lo.u32 %p, %a, %b;", {"a": ("u32", [0xFFFFFFFF, 1]), "b": ("u32", [1, 2])},
                           {"p": "pred"})["p"]
    signed = elementwise("setp.lt.s32 %p, %a, %b;", {"a": ("s32", [-1, 1]), "b": ("s32", [1, 2])},
                         {"p": "pred"})["p"]
    assert unsigned.tolist() == [False, True] and signed.tolist() == [True, True]


def test_testp():
    a = np.array([1.0, np.inf, np.nan, 1e-40, 0.0], F32)
    want = {"finite": [1, 0, 0, 1, 1], "infinite": [0, 1, 0, 0, 0], "number": [1, 1, 0, 1, 1],
            "notanumber": [0, 0, 1, 0, 0], "normal": [1, 0, 0, 0, 0], "subnormal": [0, 0, 0, 1, 0]}
    for op, w in want.items():
        got = elementwise(f"testp.{op}.f32 %p, %a;", {"a": ("f32", a)}, {"p": "pred"})["p"]
        assert got.astype(int).tolist() == w, op


# --------------------------------------------------------------------------
# cvt
# --------------------------------------------------------------------------


def test_cvt_float_narrowing_modes():
    x = np.array([1 + 2 ** -24, 1 + 2 ** -24 + 2 ** -50, -(1 + 2 ** -23 + 2 ** -30)])
    res = {m: elementwise(f"cvt.{m}.f32.f64 %d, %a;", {"a": ("f64", x)}, {"d": "f32"})["d"]
           for m in ("rn", "rz", "rm", "rp")}
    assert [hex(int(v)) for v in u32(res["rn"])] == ["0x3f800000", "0x3f800001", "0xbf800001"]
    assert hex(int(u32(res["rz"])[2])) == "0xbf800001"
    assert hex(int(u32(res["rm"])[2])) == "0xbf800002"
    assert hex(int(u32(res["rp"])[0])) == "0x3f800001"


def test_cvt_int_to_float_no_double_rounding():
    v = np.array([2 ** 53 + 2 ** 29 + 1, -(2 ** 53 + 2 ** 29 + 1), 2 ** 24 + 1], np.int64)
    got = elementwise("cvt.rn.f32.s64 %d, %a;", {"a": ("s64", v)}, {"d": "f32"})["d"]
    assert got.astype(np.float64).tolist() == [2.0 ** 53 + 2 ** 30, -(2.0 ** 53 + 2 ** 30), 2.0 ** 24]
    u = np.array([2 ** 64 - 1], np.uint64)
    got = elementwise("cvt.rz.f32.u64 %d, %a;", {"a": ("u64", u)}, {"d": "f32"})["d"]
    assert hex(int(u32(got)[0])) == "0x5f7fffff"


def test_cvt_float_to_int_saturates_and_rounds():
    x = np.array([3e9, -3e9, np.nan, 2.5, 3.5, -2.5, np.inf], F32)
    rzi = elementwise("cvt.rzi.s32.f32 %d, %a;", {"a": ("f32", x)}, {"d": "s32"})["d"]
    rni = elementwise("cvt.rni.s32.f32 %d, %a;", {"a": ("f32", x)}, {"d": "s32"})["d"]
    rmi = elementwise("cvt.rmi.s32.f32 %d, %a;", {"a": ("f32", x)}, {"d": "s32"})["d"]
    rpi = elementwise("cvt.rpi.s32.f32 %d, %a;", {"a": ("f32", x)}, {"d": "s32"})["d"]
    assert rzi.tolist() == [2147483647, -2147483648, 0, 2, 3, -2, 2147483647]
    assert rni.tolist()[3:6] == [2, 4, -2]
    assert rmi.tolist()[3:6] == [2, 3, -3]
    assert rpi.tolist()[3:6] == [3, 4, -2]
    u = elementwise("cvt.rzi.u32.f32 %d, %a;", {"a": ("f32", np.array([-1.5, 5e9], F32))}, {"d": "u32"})["d"]
    assert u.tolist() == [0, 4294967295]
    big = elementwise("cvt.rzi.s64.f64 %d, %a;", {"a": ("f64", [1e300, -1e300, 2.0 ** 62])}, {"d": "s64"})["d"]
    assert big.tolist() == [2 ** 63 - 1, -(2 ** 63), 2 ** 62]


def test_cvt_half_precision():
    x = np.array([65520.0, 65519.0, 1 + 2 ** -11, 1 + 2 ** -11 + 2 ** -20, 2 ** -25], F32)
    h = elementwise("cvt.rn.f16.f32 %d, %a;", {"a": ("f32", x)}, {"d": "f16"})["d"]
    assert [hex(int(v)) for v in h.view(np.uint16)] == ["0x7c00", "0x7bff", "0x3c00", "0x3c01", "0x0"]
    pair = elementwise("cvt.rn.f16x2.f32 %d, %a, %b;",
                       {"a": ("f32", np.array([1.0], F32)), "b": ("f32", np.array([2.0], F32))},
                       {"d": "b32"})["d"]
    assert hex(int(pair[0])) == "0x3c004000"  # a in the upper half, b in the lower
    back = elementwise("cvt.f32.f16 %d, %a;", {"a": ("f16", np.array([0.5, -65504], np.float16))}, {"d": "f32"})["d"]
    assert back.tolist() == [0.5, -65504.0]


def test_cvt_integers():
    got = elementwise("cvt.s64.s32 %d, %a;", {"a": ("s32", [-5, 7])}, {"d": "s64"})["d"]
    assert got.tolist() == [-5, 7]
    got = elementwise("cvt.u32.u64 %d, %a;", {"a": ("u64", [2 ** 40 + 3])}, {"d": "u32"})["d"]
    assert got.tolist() == [3]
    got = elementwise("cvt.sat.s8.s32 %d, %a;", {"a": ("s32", [300, -300, 5])}, {"d": "s16"})["d"]
    assert got.tolist() == [127, -128, 5]
    got = elementwise("cvt.u16.u32 %d, %a;", {"a": ("u32", [0x12345])}, {"d": "u16"})["d"]
    assert got.tolist() == [0x2345]


def test_half_arithmetic_packed():
    a = np.array([0x3C00_4000], np.uint32)  # (hi 1.0, lo 2.0)
    b = np.array([0x3C00_3C00], np.uint32)  # (1.0, 1.0)
    got = elementwise("add.f16x2 %d, %a, %b;", {"a": ("b32", a), "b": ("b32", b)}, {"d": "b32"})["d"]
    assert hex(int(got[0])) == "0x40004200"  # (2.0, 3.0)
    got = elementwise("fma.rn.f16x2 %d, %a, %b, %b;", {"a": ("b32", a), "b": ("b32", b)}, {"d": "b32"})["d"]
    assert hex(int(got[0])) == "0x40004200"


def test_round_to_matches_brute_force_for_f16():
    rng = np.random.default_rng(11)
    x = rng.standard_normal(300) * 2.0 ** rng.integers(-20, 16, 300)
    for mode in ("rn", "rz", "rm", "rp"):
        got = fp.round_to("f16", x, None, mode).astype(np.float16)
        for v, g in zip(x, got):
            h = np.float16(v)
            cands = [np.nextafter(h, np.float16(-np.inf)), h, np.nextafter(h, np.float16(np.inf))]
            cands = [float(c) for c in cands if np.isfinite(c)]
            lo = max(c for c in cands if c <= v)
            hi = min(c for c in cands if c >= v)
            want = {"rz": lo if v > 0 else hi, "rm": lo, "rp": hi}.get(mode, float(h))
            assert float(g) == want, (mode, v)


def _grid_and_midpoints(fmt: str, rng) -> np.ndarray:
    """float64 values that tempt a rounding to ``fmt``: every grid value's midpoint with its upper
    neighbour, one float64 ulp either side of it, float32 roundings of it, random values across the
    format's range (subnormals, overflow boundary), and the specials."""
    with np.errstate(all="ignore"):  # the NaN patterns
        if fmt == "f16":
            grid = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(np.float16).astype(np.float64)
        else:  # bf16: every pattern's float32 value
            grid = (np.arange(1 << 16, dtype=np.uint32) << np.uint32(16)).view(np.float32).astype(np.float64)
    grid = grid[np.isfinite(grid)]
    grid = np.unique(grid)
    mid = (grid[:-1] + grid[1:]) / 2
    _, emin, emax = fp.FORMATS[fmt]
    top = np.ldexp(2.0 - np.ldexp(1.0, 1 - fp.FORMATS[fmt][0]), emax)
    edge = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, top, -top, top * (1 + 2 ** -12), top * (1 + 2 ** -8),
                     np.ldexp(1.0, emax + 1), np.ldexp(1.0, emin), np.ldexp(1.0, emin - 12), 1e300, -1e-300])
    rand = rng.standard_normal(20000) * np.ldexp(1.0, rng.integers(emin - 14, emax + 2, 20000))
    return np.concatenate([grid, mid, np.nextafter(mid, np.inf), np.nextafter(mid, -np.inf),
                           mid.astype(np.float32).astype(np.float64), edge, rand])


@pytest.mark.parametrize("fmt", ["f16", "bf16"])
def test_round_to_nearest_fast_path_is_the_general_rounding(fmt):
    """round_to's fast paths (numpy's f16 cast, the bf16 bit trick) give the integer-arithmetic
    rounding's bits on every midpoint of the format's grid and its neighbours, subnormals, the overflow
    boundary and the specials (NaNs: a NaN either way)."""
    x = _grid_and_midpoints(fmt, np.random.default_rng(5))
    with np.errstate(all="ignore"):
        fast = fp.round_to(fmt, x, None, "rn")
        slow = fp._round_general(fmt, x, None, "rn")
    nan = np.isnan(slow)
    assert np.array_equal(np.isnan(fast), nan)
    diff = np.flatnonzero(fast[~nan].view(np.uint64) != slow[~nan].view(np.uint64))
    assert diff.size == 0, [(x[~nan][i], fast[~nan][i], slow[~nan][i]) for i in diff[:5]]
    assert fp.round_to(fmt, np.float64(1.0) + 2.0 ** -30, None, "rn") == 1.0  # 0-d input
