"""Which registers an instruction names without a declaration in scope.

ptxas rejects a module that uses a register no ``.reg`` declares (``%r20``
where ``%r<20>`` declares ``%r0 .. %r19``). The prover reads a module's
text, not ptxas's answer, so without this check it would prove a
candidate equivalent that does not assemble (an undeclared register is an
input it knows nothing about: :func:`ptxopt.equivalence.prove.prove`).

PTX scoping (the ISA manual, "Scope"): a ``{ }`` block's declarations are
visible in it and in the blocks nested inside it; a function's parameters
(``.reg`` parameters of a ``.func`` included) in its body; module-level
variables everywhere (their names may start with ``%`` too). A
declaration counts from where it is written on: ptxas rejects a use above
it (checked with the cases of ``tests/ptx/test_declared.py``).

Not registers: special registers (``%tid.x``), the sink ``_``, the
condition-code flags the operand model names ``%cc.*`` (``add.cc`` writes
an implicit carry), and a vector register's component (``%v.x`` is ``%v``).
"""

from __future__ import annotations

from ptxopt.ptx import opcodes, operand_facts
from ptxopt.ptx.ir import Block, Decl, Function, Instruction, Module

#: Component suffixes of a vector register (``.x``..``.w``, ``.r``..``.a``).
_COMPONENTS = frozenset("xyzwrgba")


def _declared(items) -> set[str]:
    out: set[str] = set()
    for it in items:
        if type(it) is Decl:
            for d in it.items:
                out.update(d.names() if it.space == ".reg" else (d.name,))
    return out


def _is_register_use(name: str, scope: set[str]) -> bool:
    """``name`` needs a declaration and none is in ``scope``."""
    if name in scope or name == "_" or name.startswith("%cc.") or opcodes.is_special_reg(name):
        return False
    base, dot, comp = name.rpartition(".")
    return not (dot and comp in _COMPONENTS and base in scope)


def undeclared_register(fn: Function, module: Module) -> tuple[str, Instruction] | None:
    """The first register ``fn`` names with no declaration in scope, and the
    instruction naming it; None when every one is declared (or ``fn`` has no body)."""
    if fn.body is None:
        return None
    scope = _declared(i for i in module.items if type(i) is Decl)
    scope |= _declared((*(fn.params or ()), *(fn.ret_params or ())))
    return _walk(fn.body, scope)


def _walk(block: Block, outer: set[str]) -> tuple[str, Instruction] | None:
    scope = set(outer)
    for it in block.items:
        if type(it) is Decl:
            scope |= _declared((it,))
        elif type(it) is Block:
            hit = _walk(it, scope)
            if hit is not None:
                return hit
        elif type(it) is Instruction:
            defs, uses = operand_facts.defs_uses(it)
            for name in (*defs, *uses):
                if _is_register_use(name, scope):
                    return name, it
    return None


__all__ = ["undeclared_register"]
