"""PTX types as numpy dtypes.

Registers hold *bits*, not values: a ``.b32`` register may be written by
``add.f32`` and read by ``xor.b32`` (Triton does this everywhere), so register
storage is an unsigned integer array of the declared width (``bool`` for
predicates) and every read reinterprets it with ``ndarray.view`` in the
instruction's type. This module maps PTX type names to the dtype a value of
that type is computed in (:func:`value_dtype`) and to its bit container
(:data:`UINT`).

``bf16``, ``f16x2`` and ``bf16x2`` have no numpy arithmetic type; their values
travel as raw bits (``uint16``/``uint32``) and :mod:`ptxopt.interp.fp` converts.
"""

from __future__ import annotations

import numpy as np

from ptxopt.ptx.opcodes import TYPE_BITS

UINT = {8: np.dtype(np.uint8), 16: np.dtype(np.uint16), 32: np.dtype(np.uint32),
        64: np.dtype(np.uint64)}
SINT = {8: np.dtype(np.int8), 16: np.dtype(np.int16), 32: np.dtype(np.int32),
        64: np.dtype(np.int64)}
FLOAT = {"f16": np.dtype(np.float16), "f32": np.dtype(np.float32), "f64": np.dtype(np.float64)}
BOOL = np.dtype(np.bool_)

# Types whose values are raw bits (no numpy float type exists for them).
BITS_ONLY = frozenset({"bf16", "f16x2", "bf16x2", "tf32", "e4m3", "e5m2", "e4m3x2", "e5m2x2", "b128"})


def bits(t: str) -> int:
    """Width in bits of PTX type ``t`` (``pred`` counts as 1)."""
    try:
        return TYPE_BITS[t]
    except KeyError:
        raise KeyError(f"unknown PTX type .{t}") from None


def kind(t: str) -> str:
    """``s`` signed, ``u`` unsigned, ``b`` untyped bits, ``f`` float, ``p`` predicate."""
    if t == "pred":
        return "p"
    c = t[0]
    if c in "su":
        return c
    if c == "b" and not t.startswith("bf"):
        return "b"
    return "f"


def is_signed(t: str) -> bool:
    return t[0] == "s"


def is_float(t: str) -> bool:
    return kind(t) == "f"


def value_dtype(t: str) -> np.dtype:
    """The dtype values of type ``t`` are computed in."""
    if t == "pred":
        return BOOL
    if t in FLOAT:
        return FLOAT[t]
    n = bits(t)
    if t[0] == "s":
        return SINT[n]
    return UINT[n]


def storage_dtype(nbits: int) -> np.dtype:
    """Register container for a declared width (1 = predicate)."""
    return BOOL if nbits == 1 else UINT[nbits]


def int_range(t: str) -> tuple[int, int]:
    """Smallest and largest value of an integer type."""
    n = bits(t)
    if t[0] == "s":
        return -(1 << (n - 1)), (1 << (n - 1)) - 1
    return 0, (1 << n) - 1
