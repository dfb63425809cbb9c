"""Assumptions a candidate makes that no check here can establish.

Two: reading through the read-only path where the kernel may write, and
changing the precision of a float operation (:func:`precision_change`).

A load on the read-only path (``ld.global.nc``, ``ldu``, a texture fetch:
every form is one row of :data:`ptxopt.ptx.opcodes.READ_ONLY_LOADS`; "``.nc``" below
means any of them) is only correct
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
``equal``/``proved`` (``tests/equivalence/test_assumption_cap.py``).

``.nc`` stays observable (:mod:`ptxopt.equivalence.observable` keeps it), so
an ``.nc`` rewrite never takes the ``hints-only`` shortcut: a proven one is
proved or run like any other change, an unproven one is capped here.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from ptxopt.ptx import opcodes
from ptxopt.ptx.ir import Instruction, Module

#: How a capped verdict's note (or result's error) starts, in every report.
ASSUMES_NOALIAS = "assumes noalias"


def _key(ins: Instruction) -> tuple:
    """The load without ``.nc`` and hints, ``ldu`` as ``ld``: the same access
    in both modules, whichever read-only form reads it."""
    mods = tuple(m for m in ins.modifiers if m != "nc" and m != "weak" and not opcodes.is_perf_hint(m))
    return "ld" if ins.opcode == "ldu" else ins.opcode, mods, ins.operands, ins.guard, ins.guard_neg


def _nc_loads(fn) -> list[Instruction]:
    """Every load on the read-only path, whatever its form (:data:`ptxopt.ptx.opcodes.READ_ONLY_LOADS`)."""
    return [i for i in fn.instructions() if opcodes.is_read_only_load(i)]


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
    return {_key(i) for i in fn.instructions() if i.opcode == "ld" and not opcodes.is_read_only_load(i)}


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


#: How a verdict capped for a change of float precision starts (its note or error).
CHANGES_PRECISION = "changes float precision"
#: How an interpreter difference that only the hardware's undocumented bits could settle starts.
INEXACT = "depends on approximate float results"


def _forms(module: Module) -> dict:
    """``{(opcode, types): {precision modifiers, ...}}`` of every float
    instruction of ``module`` (:func:`ptxopt.ptx.opcodes.precision_form`)."""
    out: dict = {}
    for fn in module.functions:
        if fn.body is None:
            continue
        for ins in fn.instructions():
            f = opcodes.precision_form(ins)
            if f is not None:
                out.setdefault(f[:2], set()).add(f[2])
    return out


def precision_change(original: Module, candidate: Module) -> str | None:
    """Why the candidate computes a float function the original does not, or
    None: the first candidate instruction whose precision form (its rounding,
    ``.ftz``, ``.sat``, ``.approx``/``.full``:
    :func:`ptxopt.ptx.opcodes.precision_form`) the original never uses although it
    uses that operation with other modifiers (``rcp.rn.f32`` ->
    ``rcp.approx.f32``, ``add.rn.f32`` -> ``add.f32``, ``.ftz`` added), or
    that is approximate (:data:`ptxopt.ptx.opcodes.APPROXIMATE_FLOAT_OPS`) and new
    to the module. Such a rewrite changes what a GPU computes on some inputs
    -- a different rounding, the special function unit's undocumented bits,
    subnormals flushed -- which a check that samples inputs, or models the
    approximate forms, cannot rule out: no ``equal``/``proved`` stands on it.
    A new instruction of an operation the original does not use at all, in a
    form whose bits are documented (``mul.f32 x, 2`` -> ``add.f32 x, x``),
    is an ordinary rewrite the checks decide."""
    before = _forms(original)
    for fn in candidate.functions:
        if fn.body is None:
            continue
        for ins in fn.instructions():
            f = opcodes.precision_form(ins)
            if f is None:
                continue
            had = before.get(f[:2])
            if had is not None and f[2] in had:
                continue
            if had is None and not opcodes.is_approximate(ins):
                continue
            were = ", ".join(sorted(".".join((f[0], *m, *f[1])) for m in had)) if had else "none"
            what = "approximate (" + _stated(ins) + ")" if opcodes.is_approximate(ins) else "exact"
            return (f"{ins.full_opcode} at {fn.name}:{ins.line} is a precision form the original does not use "
                    f"({what}; the original's {f[0]}.{'.'.join(f[1])}: {were})")
    return None


def _stated(ins: Instruction) -> str:
    return next(opcodes.APPROXIMATE_FLOAT_OPS[(ins.opcode, m)] for m in ins.modifiers
                if (ins.opcode, m) in opcodes.APPROXIMATE_FLOAT_OPS)


def approximate_instructions(module: Module) -> list[str]:
    """``opcode at function:line`` of every approximate float instruction."""
    return [f"{i.full_opcode} at {fn.name}:{i.line}" for fn in module.functions if fn.body is not None
            for i in fn.instructions() if opcodes.is_approximate(i)]


__all__ = ["ASSUMES_NOALIAS", "CHANGES_PRECISION", "INEXACT", "NcAssumption", "approximate_instructions",
           "nc_evidence", "precision_change", "unproven_nc", "unproven_nc_loads"]
