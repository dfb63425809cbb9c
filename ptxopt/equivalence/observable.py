"""What the equivalence check can observe of a module.

Thirteen of the twenty passes change only *performance annotations*: cache
operators on global loads and stores (``cache_*``, ``st_cache_*``), the
register budget (``maxnreg_*``), and the two prefetch passes, which insert
``prefetch.global.L1/L2 [addr]`` on addresses the kernel already holds. The
interpreter gives none of these a meaning (cache operators and eviction
hints are accepted and ignored, ``prefetch`` is a no-op, header directives
are never read), so running it on such a candidate can only reproduce the
original's outputs, four launches later.

:func:`observable_form` prints a module with exactly those annotations
removed (and comments and ``.loc`` lines, which nothing executes). When a
candidate's form equals the original's, the evaluator records equivalence
``hints-only`` -- equal by construction -- and skips the runs. Anything else
a pass changed (an instruction, an operand, a declaration, the order) makes
the forms differ and the candidate is run as before, so a buggy hint pass
that also touched the code is still caught.

What this gives up is nothing the dynamic check could see: on hardware an
``ld.global.ca`` can read a stale L1 line written by another CTA where
``.cg`` would not, but the interpreter models one coherent memory and would
call both equal anyway. ``tests/evaluate/test_evaluate_observable.py`` runs the
interpreter on the hint-only variants of corpus kernels and checks that it
agrees.
"""

from __future__ import annotations

from ptxopt.ptx.ir import Block, Comment, Function, Instruction, Loc, Module
from ptxopt.ptx.opcodes import (
    CACHE_ANNOTATED, CACHE_OPERATORS, PERF_ONLY_DIRECTIVES, PREFETCHES, is_perf_hint,
)

# The ISA facts (which modifiers are hints, which directives only steer
# ptxas) live in ptxopt.ptx.opcodes; .nc and .volatile change what a load may
# return and are kept.


def _instruction(ins: Instruction) -> Instruction | None:
    if ins.opcode in PREFETCHES:
        return None
    if ins.opcode in CACHE_ANNOTATED:
        mods = tuple(m for m in ins.modifiers if not is_perf_hint(m))
        if len(mods) != len(ins.modifiers):
            return ins.with_modifiers(mods)
    return ins


def _block(block: Block) -> Block:
    items = []
    for item in block.items:
        t = type(item)
        if t is Block:
            items.append(_block(item))
        elif t is Instruction:
            ins = _instruction(item)
            if ins is not None:
                items.append(ins)
        elif t is not Comment and t is not Loc:
            items.append(item)
    return Block(items, block.line)


def _function(fn: Function) -> Function:
    out = fn.copy()
    out.directives = tuple(d for d in fn.directives if d.name.lstrip(".") not in PERF_ONLY_DIRECTIVES)
    if fn.body is not None:
        out.body = _block(fn.body)
    return out


def observable_form(module: Module) -> str:
    """The printed module without the annotations the interpreter ignores
    (see the module doc); equal forms mean equal outputs on every input."""
    from ptxopt.ptx.emit import emit

    items = [_function(i) if type(i) is Function else i for i in module.items if type(i) is not Comment]
    return emit(Module(module.version, module.target, module.address_size, items))


__all__ = ["observable_form", "CACHE_OPERATORS", "PERF_ONLY_DIRECTIVES"]
