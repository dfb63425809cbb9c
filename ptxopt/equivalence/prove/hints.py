"""When is a "hints-only" difference really free?

The evaluator, :func:`ptxopt.api.optimize` and the pass matrix call a
candidate ``hints-only`` -- equal by construction, nothing run -- when it
differs from the original only in annotations the interpreter ignores:
cache operators, eviction hints, prefetches, register budgets
(:func:`ptxopt.equivalence.observable.observable_form`). That argument is about
*values*; it says nothing about whether the inserted or changed instruction
is itself well formed. Two ways it may not be:

* ``prefetch_*`` inserted ``prefetch [%rd5]`` above the definition of
  ``%rd5``: the prefetch reads an undefined register (an arbitrary address;
  ptxas may accept it, the hardware prefetches garbage) and the compared
  form, which drops prefetches, hid it;
* a ``.v2`` access whose elements are registers of different widths
  (``{%r1, %rs2}``): ptxas rejects it.

:func:`hints_only_legal` is the extra condition: every register an inserted
or changed hint instruction reads is defined on every path before it (a
forward must-be-defined dataflow over the CFG; a guarded definition does not
count, it may not execute), and every vector operand of a memory access has
register elements of one declared width. When it fails, the candidate is
``inconclusive`` with the reason (the evaluator, the API) or ``broken`` (the
pass matrix): falling back to the interpreter would not help, it ignores
hints and could only say ``equal`` (and the prover splits a vector into
lanes, it does not see register widths).
"""

from __future__ import annotations

from ptxopt.ptx import opcodes
from ptxopt.analysis.cfg import CFG
from ptxopt.ptx.emit import format_instruction
from ptxopt.ptx.ir import Function, Instruction, Module, iter_instructions
from ptxopt.ptx.operand_facts import facts, reg_name, vector_items

_VECTOR_ACCESSES = frozenset({"ld", "ldu", "st"})

#: how callers start the note of a candidate refused the shortcut (then ``inconclusive``:
#: the interpreter ignores hints, so running it could only say ``equal``)
HINTS_ILL_FORMED = "differs from the original only in hints, but a hint is ill-formed"


def hints_only_legal(original: Module, candidate: Module) -> str | None:
    """None when the hints-only shortcut may be taken for ``candidate``
    (whose observable form already equals ``original``'s); else the reason."""
    fo = {f.name: f for f in original.functions if f.body is not None}
    for fn in candidate.functions:
        if fn.body is None:
            continue
        g = fo.get(fn.name)
        changed = _changed_hints(g, fn)
        if changed is None:
            return f"{fn.name}: the instructions do not correspond one to one"
        vectors = [ins for ins in iter_instructions(fn.body) if ins.opcode in _VECTOR_ACCESSES
                   and any(vector_items(o) is not None for o in ins.operands)]
        if not changed and not vectors:
            continue
        cfg = CFG(fn)
        why = _mixed_vector(cfg, vectors) or _undefined_reads(cfg, fn, changed)
        if why:
            return f"{fn.name}: {why}"
    return None


def _changed_hints(original: Function | None, candidate: Function) -> dict[int, frozenset[str] | None] | None:
    """The candidate's instructions a hint pass inserted or changed, by
    ``id()``, each with the registers whose definedness it must show: every
    register of a prefetch (None), and for an instruction that differs from
    the original's at the same position (prefetches set aside) the registers
    it reads that the original instruction did not -- a new cache operator
    reads nothing new, so an original that reads a register defined on only
    some paths is not the hint pass's doing."""
    cand = list(iter_instructions(candidate.body))
    out: dict[int, frozenset[str] | None] = {id(i): None for i in cand if i.opcode in opcodes.PREFETCHES}
    if original is None:
        return out | {id(i): None for i in cand}
    rest_c = [i for i in cand if i.opcode not in opcodes.PREFETCHES]
    rest_o = [i for i in iter_instructions(original.body) if i.opcode not in opcodes.PREFETCHES]
    if len(rest_c) != len(rest_o):
        return None
    for c, o in zip(rest_c, rest_o):
        if c != o:
            new = frozenset(facts(c).uses) - frozenset(facts(o).uses)
            if new:
                out[id(c)] = new
    return out


def _mixed_vector(cfg: CFG, vectors: list[Instruction]) -> str | None:
    for ins in vectors:
        for o in ins.operands:
            items = vector_items(o)
            if items is None:
                continue
            names = [reg_name(i) for i in items]
            widths = {opcodes.TYPE_BITS.get(t) for n in names if n is not None
                      and not opcodes.is_special_reg(n) and (t := cfg.reg_types.get(n))}
            widths.discard(None)
            if len(widths) > 1:
                shown = ", ".join(n if n is not None else str(i) for n, i in zip(names, items))
                return (f"the vector {{{shown}}} of `{ins.full_opcode}` mixes registers of "
                        f"{' and '.join(str(w) for w in sorted(widths))} bits")
    return None


def _undefined_reads(cfg: CFG, fn: Function, changed: dict[int, frozenset[str] | None]) -> str | None:
    """The first changed instruction that reads (of the registers ``changed``
    names for it) a register not defined on every path to it."""
    if not changed:
        return None
    params = frozenset(n for d in (fn.params or ()) if d.space == ".reg" for it in d.items for n in it.names())
    n = len(cfg.blocks)
    gen: list[frozenset[str]] = []
    for b in cfg.blocks:
        s = set()
        for iid in b.iids:
            if cfg.instructions[iid].guard is None:
                s.update(cfg.du[iid][0])
        gen.append(frozenset(s))
    top = None  # "every register": the identity of intersection
    out: list[frozenset[str] | None] = [top] * n
    entry = cfg.entry
    order = cfg.reverse_postorder()
    changed_flow = True
    while changed_flow:
        changed_flow = False
        for b in order:
            ins_ = _meet(params if b == entry else None, [out[p] for p in cfg.blocks[b].preds], b == entry)
            new = ins_ | gen[b] if ins_ is not None else None
            if new != out[b]:
                out[b] = new
                changed_flow = True
    for b in cfg.blocks:
        if not any(id(cfg.instructions[i]) in changed for i in b.iids):
            continue
        defined = set(_meet(params if b.index == entry else None,
                            [out[p] for p in b.preds], b.index == entry) or ())
        for iid in b.iids:
            ins = cfg.instructions[iid]
            defs, uses = cfg.du[iid]
            if id(ins) in changed:
                check = changed[id(ins)]
                missing = [r for r in uses if r not in defined and (check is None or r in check)]
                if missing:
                    return (f"`{' '.join(format_instruction(ins).split())}` reads {', '.join(missing)} before {'it is' if len(missing) == 1 else 'they are'}"
                            f" defined on every path to it (an inserted or changed hint must read defined registers)")
            if ins.guard is None:
                defined.update(defs)
    return None


def _meet(start: frozenset[str] | None, preds: list, is_entry: bool) -> frozenset[str] | None:
    """Intersection over the predecessors' outs (None is "every register",
    the value of a block not yet reached); the entry starts from ``start``."""
    acc = start if is_entry else None
    if is_entry and acc is None:
        acc = frozenset()
    for p in preds:
        if p is None:
            continue
        acc = p if acc is None else acc & p
    return acc


__all__ = ["HINTS_ILL_FORMED", "hints_only_legal"]
