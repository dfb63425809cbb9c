"""Static data: the sizes, alignment and initial bytes of declared
variables, and immediates as typed values.

Both are needed before anything runs (the program lays out every variable
once, the decoder turns each immediate into a one-element array once), and
both follow the same literal rules: ``0fXXXXXXXX``/``0dXXXXXXXXXXXXXXXX`` are
exact bit patterns, integer literals wrap to the type's width, other numbers
(and constant expressions such as ``1 + 2``) are values converted to the type.
An initialiser may name another variable (``.u64 p = table+8`` or
``generic(table)``), which takes that variable's address.
"""

from __future__ import annotations

import re

import numpy as np

from ptxopt.ptx.constexpr import ConstExprError
from ptxopt.interp import dtypes
from ptxopt.interp.dtypes import UINT
from ptxopt.interp.errors import InterpError, UnsupportedInstruction
from ptxopt.ptx.ir import ConstExpr, Decl, Imm


# --------------------------------------------------------------------------
# declarations
# --------------------------------------------------------------------------


def decl_elem_bytes(decl: Decl) -> int:
    t = decl.dtype
    n = max(1, dtypes.bits(t[1:]) // 8) if t else 1
    for a in decl.attrs:
        if a in (".v2", ".v4", ".v8"):
            n *= int(a[2:])
    return n


def decl_size(decl: Decl, item) -> int | None:
    """Bytes of one declared variable; None for ``name[]`` (extern/unsized)."""
    n = decl_elem_bytes(decl)
    for d in item.dims:
        if d == "":
            return None
        n *= int(Imm(d).value())
    return n


def decl_align(decl: Decl) -> int:
    return decl.align or decl_elem_bytes(decl)


_SYMBOL_INIT = re.compile(r"^(generic\()?\s*([A-Za-z_$%][\w$%.]*)\s*(\))?\s*(?:\+\s*(-?\d+))?$")
# a byte of an address: 0xff00(foo) is byte 1 of foo's address, 0xff(generic(foo)) byte 0 of its generic one
_MASK_INIT = re.compile(r"^(0[xX][0-9a-fA-F]+|[1-9]\d*)\((generic\()?([A-Za-z_$%][\w$%.]*)\)?\)$")


def decl_init(decl: Decl, item, symbol=None) -> bytes | None:
    """Bytes of a variable's initialiser (zero-padded to its size).
    ``symbol(name, generic)`` gives addresses for initialisers that name
    variables (``.u64 p = table+8``, ``generic(table)``)."""
    init = item.init if getattr(item, "init", None) is not None else (
        decl.init if item is decl.items[-1] else None)
    if init is None:
        return None
    t = decl.dtype[1:] if decl.dtype else "b8"
    flat: list[str] = []

    def walk(x):
        if isinstance(x, str):
            flat.append(x)
        else:
            for y in x:
                walk(y)

    walk(init)
    out = bytearray()
    for text in flat:
        text = text.strip()
        mm = _MASK_INIT.match(text) if symbol is not None else None
        if mm:
            mask = int(mm.group(1), 0)
            shift = (mask & -mask).bit_length() - 1
            addr = symbol(mm.group(3), bool(mm.group(2)))
            if mask != 0xFF << shift or shift % 8 or shift > 56 or addr is None:
                raise UnsupportedInstruction(f"initialiser {text!r} of {item.name}: not a byte mask of a "
                                             "known variable")
            out += ((addr >> shift) & 0xFF).to_bytes(max(1, dtypes.bits(t) // 8), "little")
            continue
        sm = _SYMBOL_INIT.match(text)
        if sm and symbol is not None and not text[:1].isdigit():
            addr = symbol(sm.group(2), bool(sm.group(1)))
            if addr is None:
                raise UnsupportedInstruction(f"initialiser {text!r} of {item.name}: unknown symbol")
            addr += int(sm.group(4) or 0)
            out += (addr & ((1 << dtypes.bits(t)) - 1)).to_bytes(max(1, dtypes.bits(t) // 8), "little")
            continue
        try:
            op = Imm(text) if _HEXF.match(text) else ConstExpr(text)
            arr = imm_array(op, t)
        except (ValueError, TypeError, InterpError, ConstExprError) as e:
            raise UnsupportedInstruction(f"initialiser {text!r} of {item.name} is not supported") from e
        out += arr.tobytes()
    size = decl_size(decl, item)
    if size is not None:
        out = out[:size] + bytes(max(0, size - len(out)))
    return bytes(out)


# --------------------------------------------------------------------------
# immediates
# --------------------------------------------------------------------------

_HEXF = re.compile(r"^-?0[fFdD][0-9a-fA-F]+$")


def imm_array(op: Imm, t: str) -> np.ndarray:
    """A one-element array holding immediate ``op`` as a value of type ``t``."""
    text = op.text
    k = dtypes.kind(t)
    if k == "p":
        return np.array([bool(op.value())])
    vd = dtypes.value_dtype(t)
    nb = dtypes.bits(t)
    if _HEXF.match(text):
        neg = text.startswith("-")
        body = text.lstrip("-")
        raw = int(body[2:], 16)
        if body[1] in "fF":
            b32 = raw & 0xFFFFFFFF
            if neg:
                b32 ^= 0x80000000
            if k == "f" and t in ("f32", "tf32") or (k in "bus" and nb == 32):
                return np.array([b32], dtype=np.uint32).view(vd) if vd != UINT[32] else np.array(
                    [b32], dtype=np.uint32)
            fv = np.array([b32], dtype=np.uint32).view(np.float32).astype(np.float64)
        else:
            b64 = raw & 0xFFFFFFFFFFFFFFFF
            if neg:
                b64 ^= 1 << 63
            if t == "f64" or (k in "bus" and nb == 64):
                arr = np.array([b64], dtype=np.uint64)
                return arr.view(vd) if vd != UINT[64] else arr
            fv = np.array([b64], dtype=np.uint64).view(np.float64)
        return _float_to(fv, t, k, nb)
    v = op.value()
    if isinstance(v, float):
        return _float_to(np.array([v]), t, k, nb)
    if k == "f" and t in dtypes.FLOAT:
        return np.array([v], dtype=np.float64).astype(vd)
    mask = (1 << nb) - 1
    return np.array([int(v) & mask], dtype=UINT[nb]).view(vd)


def _float_to(fv: np.ndarray, t: str, k: str, nb: int) -> np.ndarray:
    if t in dtypes.FLOAT:
        return fv.astype(dtypes.FLOAT[t])
    if nb == 32:
        return fv.astype(np.float32).view(UINT[32]).view(dtypes.value_dtype(t))
    if nb == 64:
        return fv.view(UINT[64]).view(dtypes.value_dtype(t))
    if nb == 16:
        return fv.astype(np.float16).view(np.uint16).view(dtypes.value_dtype(t))
    raise InterpError(f"float literal for .{t}")
