"""PTX's vocabulary below the IR: the grammar file, state spaces, fundamental
types and numeric literals.

The IR (:mod:`ptxopt.ptx.ir`), the opcode tables (:mod:`ptxopt.ptx.opcodes`), the
constant-expression evaluator (:mod:`ptxopt.ptx.constexpr`) and the parser all
use these; keeping them here lets each import this module instead of one
another (``tests/project/test_import_contract.py``: no import cycles).
"""

from __future__ import annotations

import struct
from pathlib import Path

GRAMMAR_PATH = Path(__file__).parent / "grammar" / "ptx.lark"

STATE_SPACES = frozenset(
    {".reg", ".sreg", ".const", ".global", ".local", ".param", ".shared", ".tex", ".generic"}
)

# Fundamental types -> width in bits (PTX ISA §5.2).
TYPE_BITS: dict[str, int] = {
    "pred": 1,
    "b8": 8, "b16": 16, "b32": 32, "b64": 64, "b128": 128,
    "u8": 8, "u16": 16, "u32": 32, "u64": 64,
    "s8": 8, "s16": 16, "s32": 32, "s64": 64,
    "f16": 16, "f16x2": 32, "bf16": 16, "bf16x2": 32, "tf32": 32,
    "f32": 32, "f64": 64,
    "e4m3": 8, "e5m2": 8, "e4m3x2": 16, "e5m2x2": 16,
}


def parse_int(text: str) -> int:
    """Value of a PTX integer literal (decimal, hex, octal, binary, ``U`` suffix)."""
    t = text.rstrip("uU")
    neg = t.startswith("-")
    if neg:
        t = t[1:]
    if t[:2] in ("0x", "0X"):
        v = int(t[2:], 16)
    elif t[:2] in ("0b", "0B"):
        v = int(t[2:], 2)
    elif len(t) > 1 and t[0] == "0":
        v = int(t[1:], 8)
    else:
        v = int(t)
    return -v if neg else v


def is_float_literal(text: str) -> bool:
    """Whether the immediate ``text`` is a float literal (``0f...``, ``0d...``, ``1.5``, ``1e3``)."""
    t = text.lstrip("-")
    return t[:2] in ("0f", "0F", "0d", "0D") or "." in t or (
        ("e" in t or "E" in t) and not t.startswith(("0x", "0X"))
    )


def literal_value(text: str) -> int | float:
    """Numeric value of an immediate as written: int for integer literals, float for float literals."""
    t = text
    if t[:1] == "-" and t[1:3] in ("0f", "0F", "0d", "0D"):
        return -literal_value(t[1:])
    if t[:2] in ("0f", "0F"):
        return struct.unpack("<f", int(t[2:], 16).to_bytes(4, "little"))[0]
    if t[:2] in ("0d", "0D"):
        return struct.unpack("<d", int(t[2:], 16).to_bytes(8, "little"))[0]
    if is_float_literal(t):
        return float(t)
    return parse_int(t)


__all__ = ["GRAMMAR_PATH", "STATE_SPACES", "TYPE_BITS", "parse_int", "is_float_literal", "literal_value"]
