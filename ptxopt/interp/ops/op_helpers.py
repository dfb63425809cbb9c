"""Helpers shared by the opcode modules: building elementwise closures and
reading rounding/flush modifiers."""

from __future__ import annotations

import numpy as np

from ptxopt.interp import dtypes

ROUND = ("rn", "rz", "rm", "rp")
IROUND = {"rni": "rn", "rzi": "rz", "rmi": "rm", "rpi": "rp"}


def elementwise(d, ins, out_t: str, in_ts, fn, n_ops: int | None = None):
    """``d0 = fn(a, b, ...)`` with ``a, b...`` read as ``in_ts``."""
    ops = ins.operands
    if len(ops) != 1 + len(in_ts):
        raise d.unsupported(f"expected {1 + len(in_ts)} operands")
    w = d.write(ops[0], out_t)
    rs = [d.read(o, t) for o, t in zip(ops[1:], in_ts)]
    if len(rs) == 1:
        (a,) = rs
        return lambda fr, sel: w(fr, sel, fn(a(fr, sel)))
    if len(rs) == 2:
        a, b = rs
        return lambda fr, sel: w(fr, sel, fn(a(fr, sel), b(fr, sel)))
    if len(rs) == 3:
        a, b, c = rs
        return lambda fr, sel: w(fr, sel, fn(a(fr, sel), b(fr, sel), c(fr, sel)))
    if len(rs) == 4:
        a, b, c, e = rs
        return lambda fr, sel: w(fr, sel, fn(a(fr, sel), b(fr, sel), c(fr, sel), e(fr, sel)))
    raise d.unsupported("too many operands")


def one_type(d, types: list[str]) -> str:
    if len(types) != 1:
        raise d.unsupported(f"expected one type modifier, got {types}")
    return types[0]


def rounding(ins, default: str = "rn") -> str:
    for m in ins.modifiers:
        if m in ROUND:
            return m
    return default


def has_rounding(ins) -> bool:
    return any(m in ROUND for m in ins.modifiers)


def split16(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A packed ``x2`` value (uint32) -> (low half, high half) as uint16."""
    x = x.view(np.uint32) if x.dtype != np.uint32 else x
    return (x & np.uint32(0xFFFF)).astype(np.uint16), (x >> np.uint32(16)).astype(np.uint16)


def pack16(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    return lo.astype(np.uint32) | (hi.astype(np.uint32) << np.uint32(16))


def packed(fn):
    """Lift ``fn`` on 16-bit lanes to packed ``x2`` operands (uint32)."""

    def run(*xs):
        halves = [split16(x) for x in xs]
        lo = fn(*[h[0] for h in halves])
        hi = fn(*[h[1] for h in halves])
        return pack16(lo, hi)

    return run


def wide_type(t: str) -> str:
    """``s32 -> s64`` for ``.wide`` results."""
    return t[0] + str(dtypes.bits(t) * 2)


def as_unsigned(x: np.ndarray) -> np.ndarray:
    return x.view(dtypes.UINT[x.dtype.itemsize * 8])
