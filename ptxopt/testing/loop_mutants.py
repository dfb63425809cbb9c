"""Mutants of unrolled loops: the bugs an unroller makes, which the
verifier must catch.

:func:`loop_mutants` unrolls ``entry`` with ``unroll{factor=F}`` and breaks
each unrolled loop in one of these ways:

* ``remainder_bound`` (guarded form) -- the guard checks ``F-2`` steps
  ahead instead of ``F-1``: a trip of ``F`` copies also runs when only
  ``F-1`` iterations remain, one iteration too many. Shows only at trip
  counts ``= F-1 (mod F)`` near the end: a launch whose trip count is a
  multiple of ``F`` never sees it;
* ``dropped_guard`` (guarded form) -- the ``@!q bra L_last`` is deleted:
  every trip runs ``F`` copies, as if the trip count were a multiple of
  ``F``;
* ``off_by_one_step`` -- the induction variable's update in the first copy
  steps one more (``add %r, %r, 1`` -> ``2``);
* ``dropped_copy`` (exact form) -- one of the ``F`` copies is deleted
  (``F-1`` iterations per trip).

Each is a real change of the loop's function for some trip count; the
interpreter must say ``differ`` once it runs the loop at its boundary trip
counts (:mod:`ptxopt.equivalence.boundary`), and the prover must never say
``proved``.
"""

from __future__ import annotations

from dataclasses import replace

from ptxopt.ptx.ir import Imm, Instruction, Label, Module
from ptxopt.ptx.operand_facts import immediate, reg_name
from ptxopt.testing.mutants import Mutant

LOOP_OPERATORS = ("remainder_bound", "dropped_guard", "off_by_one_step", "dropped_copy")


def _items(module: Module, entry: str) -> list:
    return module.pick_entry(entry).body.items


def _guard_sites(items) -> list[tuple[int, int, int]]:
    """``(t1 add index, guard branch index, copies start)`` per guarded loop:
    the check the pass writes (``t1 = t0 +/- C`` on a ``%unrollN_1`` register,
    then ``@!%unrollN_p0 bra L_last``)."""
    out = []
    for k, s in enumerate(items):
        if type(s) is Instruction and s.opcode == "bra" and s.guard_neg and s.guard and "%unroll" in s.guard:
            pfx = s.guard[:-2]  # %unrollN_
            t1 = next((j for j in range(k - 1, max(k - 8, -1), -1) if type(items[j]) is Instruction
                       and items[j].operands and reg_name(items[j].operands[0]) == pfx + "1"), None)
            if t1 is not None:
                out.append((t1, k, k + 1))
    return out


def _iv_update(items, start: int, regs: set[str]) -> int | None:
    """The first ``add``/``sub`` of a register to itself by an immediate after ``start``."""
    for j in range(start, len(items)):
        s = items[j]
        if type(s) is Label:
            return None
        if type(s) is Instruction and s.opcode in ("add", "sub") and s.guard is None and len(s.operands) == 3 \
                and reg_name(s.operands[0]) == reg_name(s.operands[1]) \
                and type(immediate(s.operands[2])) is int and (not regs or reg_name(s.operands[0]) in regs):
            return j
    return None


def loop_mutants(module: Module, entry: str, factor: int = 4) -> list[Mutant]:
    """The mutants of ``entry`` unrolled by ``factor`` (module doc); empty
    when ``unroll`` changes nothing."""
    from ptxopt.passes.unroll import Unroll

    unrolled, rep = Unroll(factor=factor).apply(module)
    if not rep.changed:
        return []
    out: list[Mutant] = []
    items = _items(unrolled, entry)
    for t1, guard, start in _guard_sites(items):
        at = t1
        if not any(type(items[j]) is Instruction and items[j].opcode == "and" for j in range(t1, guard)):
            # a != test: t1 = distance, then q = t1 > span (no wrap check): the span shrinks
            at = next(j for j in range(t1 + 1, guard) if items[j].opcode == "setp")
        ins = items[at]
        c = immediate(ins.operands[2])
        step = c // (factor - 1)
        m = unrolled.copy()
        _items(m, entry)[at] = replace(ins, operands=ins.operands[:2] + (Imm(str(c - step)),))
        out.append(Mutant("remainder_bound", ins.line, f"guard checks {factor - 2} steps ahead, not {factor - 1}", m))
        m = unrolled.copy()
        del _items(m, entry)[guard]
        out.append(Mutant("dropped_guard", items[guard].line, "the guard before the copies is deleted", m))
    # the IV update of the first copy of each unrolled loop
    ivs = _ivs(module, entry)
    for label in _loop_labels(rep):
        k = next((i for i, s in enumerate(items) if type(s) is Label and s.name == label), None)
        if k is None or label not in ivs:
            continue
        j = _iv_update(items, k + 1, {ivs[label]})
        if j is None:
            continue
        ins = items[j]
        c = immediate(ins.operands[2])
        m = unrolled.copy()
        _items(m, entry)[j] = replace(ins, operands=ins.operands[:2] + (Imm(str(c + (1 if c >= 0 else -1))),))
        out.append(Mutant("off_by_one_step", ins.line, f"the first copy of {label} steps by "
                                                       f"{c + (1 if c >= 0 else -1)}", m))
    # exact form: drop one copy (the first instructions up to the first repeat of the loop's first line)
    for label in _exact_labels(rep):
        k = next((i for i, s in enumerate(items) if type(s) is Label and s.name == label), None)
        if k is None:
            continue
        first = items[k + 1]
        again = next((i for i in range(k + 2, len(items)) if items[i] is first or items[i] == first), None)
        if again is None:
            continue
        m = unrolled.copy()
        del _items(m, entry)[k + 1:again]
        out.append(Mutant("dropped_copy", first.line, f"one of the {factor} copies of {label} is deleted", m))
    return out


def _ivs(module: Module, entry: str) -> dict[str, str]:
    """Loop header label -> the induction variable its exit test counts
    (the update :func:`_iv_update` looks for; Triton's ``x = r + C; r = x``
    form has no such add and gets no ``off_by_one_step`` mutant)."""
    from ptxopt.analysis.loops import loops_of

    cfg, info = loops_of(module.pick_entry(entry))
    return {cfg.blocks[lp.header].label: lp.test.iv.reg for lp in info.loops
            if lp.test is not None and cfg.blocks[lp.header].label}


def _loop_labels(rep) -> set[str]:
    return {c.what.split(":", 1)[0].removeprefix("loop ").strip() for c in rep.changed}


def _exact_labels(rep) -> set[str]:
    return {c.what.split(":", 1)[0].removeprefix("loop ").strip() for c in rep.changed if " x " in c.what}


__all__ = ["LOOP_OPERATORS", "loop_mutants"]
