"""Opcode semantics as dispatch tables.

Each module here covers one family of instructions and exports ``OPS``, a
dict from opcode to a *compile function* ``(instruction, decoder) -> run``
(see :mod:`ptxopt.interp.decode`). A compile function reads the modifiers
once, refuses any it does not implement (``decoder.mods(allowed)`` raises
:class:`~ptxopt.interp.errors.UnsupportedInstruction`), and returns a closure
that does the work for a selection of threads. The table below is the union;
an opcode missing from it decodes to a step that raises when reached.
"""

from __future__ import annotations

from ptxopt.interp.ops import arith, bits, compare, control, convert, floatfn, memory, tensor, warp

OPS: dict = {}
for _m in (arith, floatfn, bits, compare, convert, memory, warp, tensor, control):
    for _k, _v in _m.OPS.items():
        if _k in OPS:
            raise RuntimeError(f"opcode {_k} defined twice ({_m.__name__})")
        OPS[_k] = _v

__all__ = ["OPS"]
