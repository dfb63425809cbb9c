"""A Triton kernel's argument names and types, from its TTIR.

Triton's stage functions receive the MLIR module, not the Python signature;
the entry's ``tt.func public @name(%x_ptr: !tt.ptr<f32> loc(...), %n: i32
loc(...))`` header keeps both (constexpr arguments and arguments the JIT
specialised to a constant are gone, exactly as in the PTX parameter list).
The same header opens the ``NAME.source`` file of Triton's cache
directory. :func:`parse_signature` reads it; nothing else of the IR is used.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_FUNC = re.compile(r"tt\.func\s+public\s+@([A-Za-z_][\w$]*)\s*\(")
_ARG = re.compile(r"%([\w$.-]+)\s*:\s*")


@dataclass(frozen=True)
class Arg:
    name: str
    type: str  # TTIR type: "!tt.ptr<f32>", "i32", "f32", "i64" ...

    @property
    def is_pointer(self) -> bool:
        return self.type.startswith("!tt.ptr")

    @property
    def element(self) -> str:
        """``f32`` for ``!tt.ptr<f32>``, the type itself for a scalar."""
        m = re.match(r"!tt\.ptr<([^,>]+)", self.type)
        return m.group(1).strip() if m else self.type

    @property
    def short(self) -> str:
        """Triton's own spelling: ``*fp32``, ``i32``."""
        e = self.element
        e = {"f32": "fp32", "f16": "fp16", "f64": "fp64", "bf16": "bf16"}.get(e, e)
        return f"*{e}" if self.is_pointer else e


def _split_args(text: str, start: int) -> list[str]:
    """The comma-separated items of the parenthesised list opening at
    ``start`` (nested ``()``, ``<>``, ``{}``, ``[]`` and strings respected)."""
    depth, out, cur, i, quote = 0, [], [], start, False
    while i < len(text):
        ch = text[i]
        if quote:
            cur.append(ch)
            if ch == "\\":
                cur.append(text[i + 1] if i + 1 < len(text) else "")
                i += 1
            elif ch == '"':
                quote = False
        elif ch == '"':
            quote = True
            cur.append(ch)
        elif ch in "(<{[":
            depth += 1
            cur.append(ch)
        elif ch in ")>}]":
            if depth == 0:
                item = "".join(cur).strip()
                if item:
                    out.append(item)
                return out
            depth -= 1
            cur.append(ch)
        elif ch == "," and depth == 0:
            out.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
        i += 1
    return out


def _type_of(item: str) -> str:
    """``!tt.ptr<f32> {tt.divisibility = 16 : i32} loc(...)`` -> ``!tt.ptr<f32>``."""
    depth, out = 0, []
    for ch in item:
        if depth == 0 and ch in " {" and out:
            break
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        out.append(ch)
    return "".join(out).strip()


def parse_signature(ttir: str, kernel: str | None = None) -> list[Arg] | None:
    """The arguments of ``kernel`` (default: the first public ``tt.func``),
    or None when the text has no such function."""
    for m in _FUNC.finditer(ttir):
        if kernel is not None and m.group(1) != kernel:
            continue
        args = []
        for item in _split_args(ttir, m.end()):
            a = _ARG.match(item)
            if a is None:
                return None
            args.append(Arg(a.group(1), _type_of(item[a.end():])))
        return args
    return None


__all__ = ["Arg", "parse_signature"]
