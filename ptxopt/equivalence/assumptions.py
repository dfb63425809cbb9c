"""Assumptions a candidate makes that no check here can establish.

One so far: a load on the read-only path (``ld.global.nc``) is only correct
when nothing writes its bytes while the kernel runs. The interpreter and the
prover model one coherent memory, so they see ``ld.global.nc`` as a plain
load and would call a forced rewrite ``equal``/``proved`` even where a
launch with aliasing buffers (``saxpy(x, x)``) reads stale data on a GPU.
:func:`unproven_nc` names the ``.nc`` loads of a candidate that the original
does not have and that :class:`ptxopt.analysis.readonly.ReadOnly` cannot
prove read-only; :func:`ptxopt.equivalence.decision.assumption_cap` turns
that into ``inconclusive`` ("assumes noalias"), unless the interpreter showed
on every launch it ran that those loads read only bytes the original itself
reads through ``.nc`` (:mod:`ptxopt.equivalence.nc_reads`: an unrolled loop
whose body holds nvcc's own ``.nc`` loads). :func:`nc_evidence` is that
rule; the interpreter check and the prover apply the same cap themselves
(:func:`ptxopt.equivalence.interpret.verify`, :func:`ptxopt.equivalence.prove.prove`,
``cap=True``), so no caller that skips ``decide`` reads the assumption as
``equal``/``proved`` (``tests/test_assumption_cap.py``).

``.nc`` stays observable (:mod:`ptxopt.equivalence.observable` keeps it), so
an ``.nc`` rewrite never takes the ``hints-only`` shortcut: a proven one is
proved or run like any other change, an unproven one is capped here.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from ptxopt import opcodes
from ptxopt.ir import Instruction, Module

#: How a capped verdict's note (or result's error) starts, in every report.
ASSUMES_NOALIAS = "assumes noalias"


def _key(ins: Instruction) -> tuple:
    """The load without ``.nc`` and hints: the same access in both modules."""
    mods = tuple(m for m in ins.modifiers if m != "nc" and m != "weak" and not opcodes.is_perf_hint(m))
    return ins.opcode, mods, ins.operands, ins.guard, ins.guard_neg


def _nc_loads(fn) -> list[Instruction]:
    return [i for i in fn.instructions() if i.opcode == "ld" and "nc" in i.modifiers]


@dataclass(frozen=True)
class NcAssumption:
    """The candidate's new ``.nc`` loads that no analysis proves read-only:
    ``why`` names the first and the writer that may reach it; ``functions``:
    every function holding one; ``device``: some are in a device function
    (whether its buffer is written depends on every caller);
    ``original_nc``: the original has ``.nc`` loads of its own;
    ``converts``: one of them is a load the original makes without ``.nc``
    (same operands: ``nc_ld{assume_noalias=1}``'s rewrite), which reads bytes
    the original reads through a coherent load."""

    why: str
    functions: frozenset
    device: bool
    original_nc: bool = False
    converts: bool = False

    def checkable(self, entry: str | None) -> bool:
        """Whether the interpreter's ``.nc`` footprints of ``entry``'s launches
        could show that these loads assume nothing the original does not
        (:mod:`ptxopt.equivalence.nc_reads`): they are all in that kernel (its
        launches run them all), and the original reads through ``.nc`` itself
        (otherwise any byte they read is new: recording would be wasted), and
        none is a plain load of the original turned into ``.nc`` (it reads what
        that load reads: never accounted for)."""
        return self.original_nc and not self.converts and not self.device and self.functions == {entry}


def unproven_nc_loads(original: Module, candidate: Module) -> NcAssumption | None:
    """The candidate's new ``.nc`` loads that are an assumption, or None when
    every one is proven read-only (module doc)."""
    from ptxopt.analysis.readonly import ReadOnly

    before = {f.name: f for f in original.functions if f.body is not None}
    why, where, device, converts = None, set(), False, False
    for fn in candidate.functions:
        if fn.body is None:
            continue
        loads = _nc_loads(fn)
        if not loads:
            continue
        orig = before.get(fn.name)
        new = Counter(_key(i) for i in loads) - Counter(_key(i) for i in (_nc_loads(orig) if orig else ()))
        if not new:
            continue
        if fn.kind != ".entry":
            ins = next(i for i in loads if new[_key(i)])
            why = why or (f"{ins.full_opcode} at {fn.name}:{ins.line} is in a device function: whether its buffer "
                          "is written depends on every caller")
            where.add(fn.name)
            device = True
            continue
        found = _first_unproven(ReadOnly(candidate, fn), loads, new)
        if found is None:
            continue
        ins, writer, unproven = found
        why = why or f"{ins.full_opcode} at {fn.name}:{ins.line} reads bytes {writer.describe()} may write"
        where.add(fn.name)
        converts = converts or (orig is not None and not unproven.isdisjoint(_plain_loads(orig)))
    if why is None:
        return None
    return NcAssumption(why, frozenset(where), device, any(_nc_loads(f) for f in before.values()), converts)


def _first_unproven(ro, loads: list[Instruction], new: Counter):
    """The first new ``.nc`` load (program order) that ``ro`` (the function's
    :class:`~ptxopt.analysis.readonly.ReadOnly`) cannot prove read-only, the
    writer that may reach it, and the keys of the new loads not proven
    read-only before it (it and every later one: the scan stops there); None
    when every new load is proven. ``new`` counts the new loads by key: of
    the candidate's loads with one key, the first ``new[key]`` are the ones
    checked (copies of one access are interchangeable)."""
    left = Counter(new)  # new loads by key not yet proven read-only
    for ins in loads:
        k = _key(ins)
        if not left[k]:
            continue
        w = ro.may_write(ins)
        if w is not None:
            return ins, w, {key for key, n in left.items() if n > 0}
        left[k] -= 1
    return None


def _plain_loads(fn) -> set:
    """The keys of ``fn``'s loads without ``.nc``."""
    return {_key(i) for i in fn.instructions() if i.opcode == "ld" and "nc" not in i.modifiers}


def nc_evidence(a: NcAssumption, result) -> tuple[str | None, str | None]:
    """What an interpreter ``result`` (a
    :class:`~ptxopt.equivalence.interpret.VerifyResult`, or None: no launch ran)
    shows about the assumption ``a``: ``(evidence, None)`` when its ``.nc``
    footprints lift the cap (the note to report: :mod:`ptxopt.equivalence.nc_reads`),
    else ``(None, why)``: why the assumption stands, to follow
    :data:`ASSUMES_NOALIAS`. The one rule behind every capped verdict
    (:func:`ptxopt.equivalence.decision.assumption_cap`,
    :func:`ptxopt.equivalence.interpret.verify`)."""
    ncr = getattr(result, "nc_reads", None)
    if ncr is None or not a.checkable(result.kernel):
        return None, a.why
    ev = ncr.evidence(result.trials)
    return (ev, None) if ev is not None else (None, f"{a.why} ({ncr.shortfall(result.trials)})")


def unproven_nc(original: Module, candidate: Module) -> str | None:
    """Why the candidate's new ``.nc`` loads are an assumption (the first one
    and its writer), or None when every one is proven read-only."""
    a = unproven_nc_loads(original, candidate)
    return a.why if a is not None else None


__all__ = ["ASSUMES_NOALIAS", "NcAssumption", "nc_evidence", "unproven_nc", "unproven_nc_loads"]
