"""Bit-exact IEEE arithmetic for the interpreter: rounding, FMA, flush-to-zero.

Why this module exists: numpy computes ``float32`` arithmetic correctly
rounded to nearest, but PTX also has directed roundings (``.rz .rm .rp``),
``.ftz``, half and bfloat16 formats, and a *fused* multiply-add. The tempting
shortcut, ``float32(float64(a) * b + c)``, is wrong: the product is exact in
float64 but the sum is rounded twice (to 53 bits, then to 24), which differs
from one rounding when the float64 sum lands exactly on a float32 midpoint.

The approach, used for every format and mode:

1. compute the result in float64 as ``r`` plus the exact error ``e`` of that
   float64 operation (:func:`two_sum`; a product of two float32 or smaller
   values is exact, so ``e`` comes from the final addition only), so that
   ``r + e`` is the exact real result;
2. round ``r + e`` once to the target format with :func:`round_to`, which
   works on the float64 bits with integer arithmetic and uses ``e`` only for
   its sign (``|e|`` is below half a float64 ulp of ``r``, so it can only
   break ties or move a value off an exact grid point).

For float32 round-to-nearest there is a fast path (:func:`fma_f32`): numpy's
``float64 -> float32`` cast is right unless ``e != 0`` and ``r`` is a float32
midpoint, and only those elements take the slow route. Division and square
root in other than round-to-nearest, and the float64 FMA, take an exact path
through :class:`fractions.Fraction` (correct, slow, rare in real kernels).

NaN results are the canonical NaN of the format (``0x7fffffff`` for f32),
which is what the GPU produces; sign-flipping operations (``neg``, ``abs``,
``copysign``) work on the bits and keep payloads.
"""

from __future__ import annotations

import contextlib
import contextvars
import zlib
from fractions import Fraction

import numpy as np

F64 = np.float64
F32 = np.float32

# format -> (precision including the implicit bit, min normal exponent, max exponent)
FORMATS = {
    "f64": (53, -1022, 1023),
    "f32": (24, -126, 127),
    "f16": (11, -14, 15),
    "bf16": (8, -126, 127),
    "tf32": (11, -126, 127),
}

CANONICAL_NAN = {"f32": 0x7FFFFFFF, "f16": 0x7FFF, "bf16": 0x7FFF, "f64": 0x7FFFFFFFFFFFFFFF}

_U = {"f32": np.uint32, "f16": np.uint16, "f64": np.uint64}


# --------------------------------------------------------------------------
# error-free transformations and correct rounding
# --------------------------------------------------------------------------


def two_sum(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``r = fl(a + b)`` and the exact error ``e = (a + b) - r`` (Knuth)."""
    r = a + b
    bb = r - a
    e = (a - (r - bb)) + (b - bb)
    return r, e


def round_to(fmt: str, r: np.ndarray, e=None, mode: str = "rn") -> np.ndarray:
    """Round the exact value ``r + e`` to ``fmt``; returns float64 values that
    are representable in ``fmt`` (or +-inf / NaN).

    ``r`` is a float64 array, ``e`` None or an array with ``|e|`` below half a
    float64 ulp of ``r`` whose *sign* says on which side of ``r`` the exact
    value lies. ``mode``: ``rn`` (nearest even), ``rna`` (nearest, ties away),
    ``rz``, ``rm``, ``rp``.
    """
    r = np.asarray(r, dtype=F64)
    if fmt == "f64":
        return _round_f64(r, e, mode)
    if e is None and mode == "rn" and fmt in _NEAREST:
        return _NEAREST[fmt](r)
    return _round_general(fmt, r, e, mode)


def _round_general(fmt: str, r: np.ndarray, e, mode: str) -> np.ndarray:
    """:func:`round_to` for every format but f64, on the float64 bits with integer arithmetic."""
    p, emin, emax = FORMATS[fmt]
    ee = np.zeros_like(r) if e is None else np.asarray(e, dtype=F64)
    with np.errstate(all="ignore"):
        neg = np.signbit(r)
        a = np.abs(r)
        ee = np.where(neg, -ee, ee)
        ee = np.where(np.isfinite(ee), ee, 0.0)
        m, ex = np.frexp(a)
        ex = ex.astype(np.int64) - 1
        # an exact power of two with a negative error lies in the binade below
        ex = ex - ((m == 0.5) & (ee < 0))
        qexp = np.maximum(ex, emin) - (p - 1)
        scaled = np.ldexp(a, -qexp)
        n = np.floor(scaled)
        frac = scaled - n
        below = (frac == 0) & (ee < 0)
        n = n - below
        inexact = (frac != 0) | (ee != 0)
        above_half = (frac > 0.5) | ((frac == 0.5) & (ee > 0)) | below
        tie = (frac == 0.5) & (ee == 0)
        if mode == "rn":
            up = above_half | (tie & (np.fmod(n, 2) == 1))
        elif mode == "rna":
            up = above_half | tie
        elif mode == "rz":
            up = np.zeros_like(inexact)
        elif mode == "rm":
            up = inexact & neg
        elif mode == "rp":
            up = inexact & ~neg
        else:
            raise ValueError(f"unknown rounding mode {mode!r}")
        val = np.ldexp(n + up, qexp)
        limit = np.ldexp(1.0, emax + 1)
        over = val >= limit
        if over.any():
            biggest = np.ldexp(2.0 - np.ldexp(1.0, 1 - p), emax)
            to_inf = {"rn": True, "rna": True, "rz": False}.get(mode)
            if to_inf is None:
                inf_here = neg if mode == "rm" else ~neg
            else:
                inf_here = np.full(r.shape, to_inf)
            val = np.where(over, np.where(inf_here, np.inf, biggest), val)
        out = np.copysign(val, np.where(neg, -1.0, 1.0))
        special = ~np.isfinite(r) | (r == 0)
        return np.where(special, r, out)


def _f16_nearest(r: np.ndarray) -> np.ndarray:
    """float64 -> f16, round to nearest even, no error term: numpy's cast rounds
    once from the float64 bits, subnormals and overflow included (checked against
    :func:`_round_general` in ``tests/interp/test_interp_fp.py``); NaNs stay as given."""
    with np.errstate(all="ignore"):
        out = r.astype(np.float16).astype(F64)
    return np.where(np.isnan(r), r, out)


_BF16_DROP = np.uint64((1 << 45) - 1)  # float64 fraction bits below a bfloat16's 7
_BF16_HALF = np.uint64((1 << 44) - 1)  # ... one less than half a bfloat16 ulp


def _bf16_nearest(r: np.ndarray) -> np.ndarray:
    """float64 -> bf16, round to nearest even, no error term: in bfloat16's
    normal range by the bit trick (add half an ulp less one, plus the kept
    lowest bit, then clear the dropped bits: a carry moves into the exponent,
    past the largest finite value to 2**128, which is infinite); the
    subnormal range by :func:`_round_general`; zeros, infinities and NaNs
    stay as given."""
    with np.errstate(all="ignore"):
        u = r.view(np.uint64)
        q = (u + _BF16_HALF + ((u >> np.uint64(45)) & np.uint64(1))) & ~_BF16_DROP
        out = q.view(F64)
        out = np.where(np.abs(out) >= 2.0 ** 128, np.copysign(np.inf, r), out)
        out = np.where(np.isfinite(r), out, r)
        tiny = (np.abs(r) < 2.0 ** -126) & (r != 0)
    if tiny.any():
        out = np.where(tiny, _round_general("bf16", r, None, "rn"), out)
    return out


#: round_to's fast paths: round to nearest even with no error term
_NEAREST = {"f16": _f16_nearest, "bf16": _bf16_nearest}


def _round_f64(r: np.ndarray, e, mode: str) -> np.ndarray:
    if e is None or mode in ("rn", "rna"):
        return r
    e = np.asarray(e, dtype=F64)
    with np.errstate(all="ignore"):
        finite = np.isfinite(r) & np.isfinite(e)
        if mode == "rm":
            step = finite & (e < 0)
            return np.where(step, np.nextafter(r, -np.inf), r)
        if mode == "rp":
            step = finite & (e > 0)
            return np.where(step, np.nextafter(r, np.inf), r)
        if mode == "rz":
            step = finite & (e != 0) & (np.signbit(e) != np.signbit(r))
            return np.where(step, np.nextafter(r, 0.0), r)
    raise ValueError(f"unknown rounding mode {mode!r}")


def _is_f32_midpoint(r: np.ndarray) -> np.ndarray:
    """True where float64 ``r`` lies exactly halfway between two float32s."""
    a = np.abs(r)
    normal = a >= 2.0 ** -126
    mid = normal & ((r.view(np.uint64) & np.uint64(0x1FFFFFFF)) == np.uint64(0x10000000))
    small = ~normal & (a != 0)
    if small.any():
        s = a * 2.0 ** 150  # odd multiples of 2**-150 are subnormal midpoints
        mid |= small & (np.floor(s) == s) & (np.fmod(s, 2.0) == 1.0)
    return mid


# --------------------------------------------------------------------------
# formats: float64 <-> storage bits
# --------------------------------------------------------------------------


def canon(x: np.ndarray, fmt: str = "f32") -> np.ndarray:
    """``x`` with every NaN replaced by the canonical NaN of ``fmt``."""
    nan = np.isnan(x)
    if not nan.any():
        return x
    x = np.array(x, copy=True)
    x.view(_U[fmt])[nan] = CANONICAL_NAN[fmt]
    return x


def flush(x: np.ndarray, fmt: str = "f32") -> np.ndarray:
    """Flush subnormals of ``fmt`` to sign-preserving zero (``.ftz``)."""
    tiny = np.ldexp(1.0, FORMATS[fmt][1])
    sub = (np.abs(x) < tiny) & (x != 0)
    if not sub.any():
        return x
    return np.where(sub, np.copysign(np.zeros_like(x), x), x)


def to_format(v64: np.ndarray, fmt: str, e=None, mode: str = "rn", ftz: bool = False) -> np.ndarray:
    """Round float64 values (+ error) to ``fmt``; returns values in the
    format's value dtype (float32/float16/float64) or bits (``bf16``: uint16,
    ``tf32``: float32 with the low 13 bits clear). NaNs become canonical."""
    if fmt == "f32" and mode == "rn" and e is None:
        out = v64.astype(F32)
    else:
        out = round_to(fmt, v64, e, mode)
    if fmt == "f32" or fmt == "tf32":
        out = np.asarray(out, dtype=F32)
        if ftz:
            out = flush(out, "f32")
        return canon(out, "f32")
    if fmt == "f16":
        out = np.asarray(out).astype(np.float16)
        if ftz:
            out = flush(out, "f16")
        return canon(out, "f16")
    if fmt == "bf16":
        out32 = np.asarray(out, dtype=F32)
        if ftz:
            out32 = flush(out32, "f32")
        b = (out32.view(np.uint32) >> np.uint32(16)).astype(np.uint16)
        b[np.isnan(out32)] = CANONICAL_NAN["bf16"]
        return b
    if fmt == "f64":
        out = np.asarray(out, dtype=F64)
        if ftz:
            out = flush(out, "f64")
        return canon(out, "f64")
    raise ValueError(fmt)


def to_bits16(v64: np.ndarray, fmt: str, e=None, mode: str = "rn", ftz: bool = False) -> np.ndarray:
    """Round to a 16-bit float format and return its bits (uint16)."""
    out = to_format(v64, fmt, e, mode, ftz)
    return out.view(np.uint16) if out.dtype != np.uint16 else out


def bf16_to_f32(b: np.ndarray) -> np.ndarray:
    """bfloat16 bits (uint16) -> float32 values (exact)."""
    return (np.asarray(b, dtype=np.uint32) << np.uint32(16)).view(F32)


def from_bits16(b: np.ndarray, fmt: str) -> np.ndarray:
    """16-bit float bits -> float64 values (``f16`` or ``bf16``)."""
    b = np.asarray(b, dtype=np.uint16)
    if fmt == "f16":
        return b.view(np.float16).astype(F64)
    return bf16_to_f32(b).astype(F64)


# --------------------------------------------------------------------------
# arithmetic
# --------------------------------------------------------------------------


_LOW29 = np.uint64(0x1FFFFFFF)  # float64 fraction bits below a float32's
_MID29 = np.uint64(0x10000000)  # ... holding exactly half a float32 ulp
_EXP64 = np.uint64(0x7FF0000000000000)
_TINY64 = np.uint64((1023 - 126) << 52)  # float64 exponent field of 2**-126


def fma_f32(a: np.ndarray, b: np.ndarray, c: np.ndarray, mode: str = "rn", ftz: bool = False):
    """A true fused multiply-add on float32 arrays: ``a*b + c`` rounded once."""
    with np.errstate(all="ignore"):
        if mode == "rn" and not ftz:
            # The common case, with no error term: rounding to float64 cannot
            # carry the exact sum across a float32 midpoint (every one is a
            # float64), so casting r is right unless r *is* a midpoint. Normal
            # midpoints are a bit pattern; subnormal-range, zero, infinite and
            # NaN sums take the general path below with everything else.
            r = a.astype(F64) * b.astype(F64) + c.astype(F64)
            bits = r.view(np.uint64)
            ex = bits & _EXP64
            if not (((bits & _LOW29) == _MID29) | (ex < _TINY64) | (ex == _EXP64)).any():
                return r.astype(F32)
        if ftz:
            a, b, c = flush(a), flush(b), flush(c)
        p = a.astype(F64) * b.astype(F64)  # exact: 24 + 24 bits <= 53
        c64 = c.astype(F64)
        r, e = two_sum(p, c64)
        if mode == "rn":
            out = r.astype(F32)
            cand = e != 0
            if cand.any():
                cand &= np.isfinite(e) & _is_f32_midpoint(r)
                if cand.any():
                    out = np.array(out, copy=True)
                    out[cand] = round_to("f32", r[cand], e[cand], "rn").astype(F32)
        else:
            e = np.where(np.isfinite(e), e, 0.0)
            out = round_to("f32", r, e, mode).astype(F32)
            out = _exact_zero_sign(out, r, e, p, c64, mode)
        if ftz:
            out = flush(out)
        return canon(out)


def _exact_zero_sign(out, r, e, x, y, mode):
    """IEEE: an exact zero sum of operands of opposite sign is +0, except in
    round-toward-minus where it is -0."""
    if mode != "rm":
        return out
    z = (r == 0) & (e == 0)
    if not z.any():
        return out
    neg = np.signbit(x) | np.signbit(y)
    return np.where(z, np.where(neg, F32(-0.0), F32(0.0)).astype(out.dtype), out)


def add_f32(a, b, mode="rn", ftz=False, negate_b=False):
    with np.errstate(all="ignore"):
        if ftz:
            a, b = flush(a), flush(b)
        if negate_b:
            b = -b
        if mode == "rn":
            out = (a.astype(F64) + b.astype(F64)).astype(F32)  # double rounding is harmless for +
        else:
            a64, b64 = a.astype(F64), b.astype(F64)
            r, e = two_sum(a64, b64)
            e = np.where(np.isfinite(e), e, 0.0)
            out = round_to("f32", r, e, mode).astype(F32)
            out = _exact_zero_sign(out, r, e, a64, b64, mode)
        if ftz:
            out = flush(out)
        return canon(out)


def mul_f32(a, b, mode="rn", ftz=False):
    with np.errstate(all="ignore"):
        if ftz:
            a, b = flush(a), flush(b)
        p = a.astype(F64) * b.astype(F64)  # exact
        out = p.astype(F32) if mode == "rn" else round_to("f32", p, None, mode).astype(F32)
        if ftz:
            out = flush(out)
        return canon(out)


def div_f32(a, b, mode="rn", ftz=False):
    with np.errstate(all="ignore"):
        if ftz:
            a, b = flush(a), flush(b)
        if mode == "rn":
            out = (a.astype(F64) / b.astype(F64)).astype(F32)  # correctly rounded (53 >= 2*24+2)
        else:
            out = _exact_elementwise(lambda x, y: x / y, np.true_divide, (a, b), "f32", mode)
        if ftz:
            out = flush(out)
        return canon(out)


def sqrt_f32(a, mode="rn", ftz=False):
    with np.errstate(all="ignore"):
        if ftz:
            a = flush(a)
        if mode == "rn":
            out = np.sqrt(a.astype(F64)).astype(F32)  # correctly rounded
        else:
            out = _exact_sqrt(a, "f32", mode)
        if ftz:
            out = flush(out)
        return canon(out)


def round_f16_op(fmt: str, op: str, args, mode="rn", ftz=False, sat=False, relu=False):
    """``add/sub/mul/fma/min/max`` on 16-bit float bits (``f16`` or ``bf16``):
    computed exactly in float64 (with the error term for fma), rounded once."""
    vals = [from_bits16(x, fmt) for x in args]
    with np.errstate(all="ignore"):
        if ftz:
            vals = [flush(v, fmt) for v in vals]
        e = None
        if op == "add":
            r, e = two_sum(vals[0], vals[1])
        elif op == "sub":
            r, e = two_sum(vals[0], -vals[1])
        elif op == "mul":
            r = vals[0] * vals[1]  # exact: 11 + 11 bits
        elif op == "fma":
            r, e = two_sum(vals[0] * vals[1], vals[2])
        else:
            raise ValueError(op)
        if e is not None:
            e = np.where(np.isfinite(e), e, 0.0)
        out = round_to(fmt, r, e, mode)
        if sat:
            out = np.where(np.isnan(out), 0.0, np.clip(out, 0.0, 1.0))
        if relu:
            out = np.where(np.isnan(out), out, np.maximum(out, 0.0))
        return to_bits16(out, fmt, None, "rn", ftz)


def f64_op(op: str, args, mode="rn"):
    """``add/sub/mul/div/sqrt/fma`` on float64 arrays. Round-to-nearest
    ``add/sub/mul/div/sqrt`` are numpy's (IEEE correct); the rest are exact."""
    with np.errstate(all="ignore"):
        if mode == "rn" and op in ("add", "sub", "mul", "div", "sqrt"):
            a = args[0]
            out = {"add": lambda: a + args[1], "sub": lambda: a - args[1],
                   "mul": lambda: a * args[1], "div": lambda: a / args[1],
                   "sqrt": lambda: np.sqrt(a)}[op]()
            return canon(out, "f64")
        if op in ("add", "sub"):
            b = args[1] if op == "add" else -args[1]
            r, e = two_sum(args[0], b)
            e = np.where(np.isfinite(e), e, 0.0)
            return canon(_round_f64(r, e, mode), "f64")
        if op == "sqrt":
            return canon(_exact_sqrt(args[0], "f64", mode), "f64")
        fn = {"mul": (lambda x, y: x * y, np.multiply),
              "div": (lambda x, y: x / y, np.true_divide),
              "fma": (lambda x, y, z: x * y + z, lambda x, y, z: x * y + z)}[op]
        return canon(_exact_elementwise(fn[0], fn[1], args, "f64", mode), "f64")


def _exact_elementwise(exact, approx, args, fmt, mode):
    """Apply ``exact`` on Fractions element by element and round once.
    ``approx`` (the float64 operation) supplies infinities, NaNs and signed
    zeros, which Fractions cannot represent."""
    arrs = np.broadcast_arrays(*[np.asarray(x, dtype=F64) for x in args])
    ref = approx(*arrs)
    out = np.empty(arrs[0].shape, dtype=F64)
    for i in np.ndindex(out.shape):
        xs = [float(a[i]) for a in arrs]
        if not all(np.isfinite(xs)) or not np.isfinite(ref[i]):
            out[i] = ref[i]
            continue
        try:
            q = exact(*[Fraction(x) for x in xs])
        except ZeroDivisionError:
            out[i] = ref[i]
            continue
        if q == 0:
            out[i] = _zero_sign(ref[i], mode, xs)
            continue
        out[i] = _round_fraction(q, fmt, mode)
    return out.astype(F32) if fmt == "f32" else out


def _zero_sign(ref, mode, xs):
    """Sign of an exactly-zero result. Products and quotients: the float64
    result is exact (an operand is zero). ``x*y + z``: IEEE addition rules."""
    if len(xs) < 3:
        return float(ref)
    x, y, z = xs
    psign = bool(np.signbit(x)) ^ bool(np.signbit(y))
    if (x == 0 or y == 0) and z == 0 and psign == bool(np.signbit(z)):
        return -0.0 if psign else 0.0
    return -0.0 if mode == "rm" else 0.0


def _round_fraction(q: Fraction, fmt: str, mode: str) -> float:
    r = float(q)  # CPython: correctly rounded to nearest
    diff = q - Fraction(r)
    e = 0.0 if diff == 0 else (np.nextafter(0.0, 1.0) if diff > 0 else -np.nextafter(0.0, 1.0))
    return float(round_to(fmt, np.array([r]), np.array([e]), mode)[0])


def _exact_sqrt(a, fmt, mode):
    a64 = np.asarray(a, dtype=F64)
    with np.errstate(all="ignore"):
        r = np.sqrt(a64)
    out = np.array(r, dtype=F64)
    for i in np.ndindex(out.shape):
        x, y = float(a64[i]), float(r[i])
        if not np.isfinite(y) or y == 0:
            continue
        diff = Fraction(x) - Fraction(y) ** 2
        e = 0.0 if diff == 0 else (np.nextafter(0.0, 1.0) if diff > 0 else -np.nextafter(0.0, 1.0))
        out[i] = round_to(fmt, np.array([y]), np.array([e]), mode)[0]
    return out.astype(F32) if fmt == "f32" else out


def min_max(a, b, is_max: bool, nan_mode: bool = False, fmt: str = "f32"):
    """PTX ``min``/``max``: a NaN operand is ignored (the other is returned),
    both NaN gives the canonical NaN; with ``.NaN`` any NaN propagates.
    ``-0.0`` is smaller than ``+0.0``."""
    with np.errstate(all="ignore"):
        an, bn = np.isnan(a), np.isnan(b)
        if is_max:
            pick_a = (a > b) | ((a == b) & ~np.signbit(a))
        else:
            pick_a = (a < b) | ((a == b) & np.signbit(a))
        out = np.where(pick_a, a, b)
        if nan_mode:
            out = np.where(an | bn, np.nan, out)
        else:
            out = np.where(an, b, np.where(bn, a, out))
        return canon(out.astype(a.dtype), fmt)


# --------------------------------------------------------------------------
# hardware-approximate functions
# --------------------------------------------------------------------------
# The GPU's special function unit gives results within a stated error; PTX
# does not define their bits (ptxopt.ptx.opcodes.APPROXIMATE_FLOAT_OPS). The
# interpreter models each approximate form as an *unknown* function within
# its error: the correctly rounded float64 value, moved by -1, 0 or +1 ulp
# by a hash of the form and the input bits (:func:`model_error`). The same
# form on the same inputs gives the same bits -- as the same hardware unit
# does -- so an original and a candidate that both compute ``rcp.approx.f32``
# of the same value agree; a candidate that computes it where the original
# computed ``rcp.rn.f32`` (or with ``.ftz`` added, or on other inputs whose
# exact results happen to coincide) disagrees on about two inputs in three,
# which a correctly rounded stand-in would have hidden. A difference that
# disappears under the plain correctly rounded stand-in
# (:func:`exact_approximations`) is one only the hardware's undocumented bits
# could settle: ptxopt.equivalence.interpret.verify reports it
# ``inconclusive``, naming the approximate instructions.

APPROX = {
    "ex2": np.exp2,
    "lg2": np.log2,
    "rcp": lambda x: 1.0 / x,
    "rsqrt": lambda x: 1.0 / np.sqrt(x),
    "sqrt": np.sqrt,
    "sin": np.sin,
    "cos": np.cos,
    "tanh": np.tanh,
}

_MODELLED = contextvars.ContextVar("ptxopt_interp_model_approximations", default=True)


@contextlib.contextmanager
def exact_approximations():
    """Within the block, approximate forms give the correctly rounded value
    (no modelled error): the stand-in a difference is attributed against."""
    token = _MODELLED.set(False)
    try:
        yield
    finally:
        _MODELLED.reset(token)


def form_key(form) -> int:
    """A stable 64-bit key of an instruction's precision form
    (:func:`ptxopt.ptx.opcodes.precision_form`): the same in every process."""
    return zlib.crc32(repr(form).encode()) * 0x9E3779B97F4A7C15 % (1 << 64) | 1


_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)


def _mix(h: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser (wrapping uint64 arithmetic)."""
    h = (h ^ (h >> np.uint64(30))) * _M1
    h = (h ^ (h >> np.uint64(27))) * _M2
    return h ^ (h >> np.uint64(31))


def _bits64(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x)
    u = x.view({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[x.dtype.itemsize])
    return u.astype(np.uint64)


#: value dtype -> (bits dtype, the bits of +infinity) of the formats model_error steps
_LAYOUT = {np.dtype(np.float32): (np.uint32, 0x7F800000), np.dtype(np.float64): (np.uint64, 0x7FF0000000000000)}


def model_error(key: int, out: np.ndarray, *args, fmt: str = "") -> np.ndarray:
    """``out`` (an approximate form's correctly rounded result: float32,
    float64, or ``fmt`` bits as uint16 for ``f16``/``bf16``) moved by -1, 0 or
    +1 ulp in magnitude, chosen by a hash of ``key`` (:func:`form_key`) and
    the bits of ``args`` (the inputs); zeros, infinities and NaNs stay (the
    manual defines them), and no finite result becomes zero or infinite.
    Unchanged inside :func:`exact_approximations`."""
    if not _MODELLED.get():
        return out
    out = np.asarray(out)
    if out.dtype == np.uint16:
        ut, inf, bits = np.uint16, (0x7C00 if fmt == "f16" else 0x7F80), out
    else:
        ut, inf = _LAYOUT[out.dtype]
        bits = out.view(ut)
    with np.errstate(all="ignore"):
        h = np.uint64(key)
        for x in args:
            h = _mix(np.broadcast_to(_bits64(x), out.shape) ^ h)
        step = (h % np.uint64(3)).astype(np.int64) - 1  # -1, 0, +1
        b = bits.view(np.int64) if ut is np.uint64 else bits.astype(np.int64)
        magnitude = (1 << (8 * out.dtype.itemsize - 1)) - 1
        mag = b & magnitude
        new = mag + step
        ok = (mag > 0) & (mag < inf) & (new > 0) & (new < inf)
        moved = np.where(ok, (b & ~magnitude) | new, b)
    if ut is np.uint64:
        return moved.view(np.uint64).view(out.dtype)
    return moved.astype(ut).view(out.dtype)


def approx_f32(fn: str, x: np.ndarray, ftz: bool = False, key: int = 0) -> np.ndarray:
    with np.errstate(all="ignore"):
        if ftz:
            x = flush(x)
        out = APPROX[fn](x.astype(F64)).astype(F32)
        if key:
            out = model_error(key, out, x)
        if ftz:
            out = flush(out)
        return canon(out)


def approx_div_f32(a, b, ftz=False, key: int = 0):
    with np.errstate(all="ignore"):
        if ftz:
            a, b = flush(a), flush(b)
        out = (a.astype(F64) / b.astype(F64)).astype(F32)
        if key:
            out = model_error(key, out, a, b)
        if ftz:
            out = flush(out)
        return canon(out)
