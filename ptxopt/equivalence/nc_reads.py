"""Evidence that a candidate's new ``.nc`` loads assume nothing the original does not.

A load on the read-only path (``ld.global.nc``) is correct only while nothing
writes its bytes during the kernel: the original's own ``.nc`` loads already
make that assumption about the bytes they read (nvcc emits them for
``const __restrict__``). A rewrite that copies or moves such loads (an
unrolled loop whose body holds them, with renamed registers) adds ``.nc``
loads that :func:`ptxopt.equivalence.assumptions.unproven_nc` counts as new
and that the read-only analysis cannot prove (two pointer parameters may
alias), so the verdict would be capped at ``inconclusive`` ("assumes
noalias") although the candidate reads nothing through ``.nc`` that the
original did not.

So, when the cap would apply, :func:`ptxopt.equivalence.interpret.verify`
records on every launch it compares (and every spiked rerun) which bytes
each kernel reads through ``.nc`` (:data:`~ptxopt.interp.device_memory.NC_READ`,
on the launches that run anyway, through the read footprint), which bytes
the original reads through any other load
(:data:`~ptxopt.interp.device_memory.COHERENT_READ`) and which bytes either kernel
stores (:data:`~ptxopt.interp.device_memory.STORED`). :class:`NcReads` keeps the
outcome: a byte the candidate reads through ``.nc`` is accounted for only
when, in the same launch, the original reads it through ``.nc`` and through
nothing else, and neither kernel stores it. Then the candidate's ``.nc``
reads need exactly what the original's already need (no write to those bytes
while the kernel runs, from any thread or alias), and
:func:`ptxopt.equivalence.decision.assumption_cap` may keep an interpreter
``equal``, saying why.

Everything else keeps the cap: a byte the original reads only through a
coherent load, or through both (a plain load turned into ``.nc``, as
``nc_ld{assume_noalias=1}`` does: the original may rely on that coherent
read seeing a write its own ``.nc`` read came too early for), a byte it
never reads (a copied load one element too far), a byte a store writes, a
``.nc`` read of bytes the footprint does not hold (a ``.global`` variable),
a launch whose footprints were not compared. A ``proved`` verdict ran no
launch and stays capped. (The source of a ``cp.async`` copy counts as a
coherent read: :meth:`ptxopt.interp.device_memory.Memory.note_reads`.)

Like ``equal`` itself this is evidence on the launches that ran, not a proof
for every launch: it is reported as such in the verdict's note.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ptxopt.ptx import opcodes

from ptxopt.interp.device_memory import COHERENT_READ, NC_READ, OTHER_READ, STORED


def is_nc_load(ins) -> bool:
    """A load on the read-only path, any form (:data:`ptxopt.ptx.opcodes.READ_ONLY_LOADS`)."""
    return opcodes.is_read_only_load(ins)


def has_nc_loads(module) -> bool:
    return any(is_nc_load(i) for f in module.functions if f.body is not None for i in f.instructions())


def with_nc_tags(tags: dict, program, coherent: bool = False) -> dict:
    """``tags`` (a read footprint's ``{id(instruction): bit}``) with
    :data:`NC_READ` added to every ``.nc`` load of ``program`` (each function:
    a callee's loads run in the kernel's launch too) and, with ``coherent``
    (the original's side), :data:`COHERENT_READ` to every other instruction
    (whatever else reads memory: a plain or generic ``ld``, ``ldu``, an atomic)."""
    out = dict(tags)
    for fn in program.module.functions:
        if fn.body is None:
            continue
        for ins in fn.instructions():
            if is_nc_load(ins):
                out[id(ins)] = out.get(id(ins), OTHER_READ) | NC_READ
            elif coherent:
                out[id(ins)] = out.get(id(ins), OTHER_READ) | COHERENT_READ
    return out


@dataclass
class NcReads:
    """What the ``.nc`` footprints of one check showed (module doc).

    ``launches``: compared launches whose footprints were compared;
    ``reruns``: spiked reruns compared so; ``unchecked``: why some run's
    candidate ``.nc`` reads could not be compared (None: none);
    ``outside``: the first byte the candidate reads through ``.nc`` that is
    not accounted for, and why (None: none); ``nc_bytes``: bytes the
    candidate read through ``.nc``, summed over the runs (none at all is no
    evidence: the tags did not reach its loads, or they never ran)."""

    launches: int = 0
    reruns: int = 0
    nc_bytes: int = 0
    unchecked: str | None = None
    outside: str | None = None

    def add(self, original: dict | None, candidate: dict | None, unrecorded: int, where: str,
            rerun: bool = False) -> None:
        """Compare one run's footprints (``LaunchResult.reads`` of the
        original, None when it has no ``.nc`` load and none was recorded, and
        of the candidate; ``unrecorded``: the candidate's ``nc_unrecorded``)."""
        if candidate is None or unrecorded:
            self.unchecked = self.unchecked or (
                f"{where}: the candidate read through .nc bytes whose reads are not recorded "
                "(a .global variable or bytes before a placed buffer)" if unrecorded else
                f"{where}: the candidate's reads were not recorded")
        else:
            self.nc_bytes += sum(int(np.count_nonzero(c & NC_READ)) for c in candidate.values())
            if self.outside is None:
                self.outside = _outside(original or {}, candidate, where)
        if rerun:
            self.reruns += 1
        else:
            self.launches += 1

    def evidence(self, trials: int) -> str | None:
        """The note that lifts the cap, when every one of the ``trials``
        compared launches showed the candidate's ``.nc`` reads accounted for."""
        if trials <= 0 or self.launches < trials or self.unchecked or self.outside or not self.nc_bytes:
            return None
        reruns = f" and {self.reruns} spiked reruns" if self.reruns else ""
        return (f"new .nc loads read only bytes the original reads through .nc alone and neither kernel stores, "
                f"on {self.launches} launches{reruns}")

    def shortfall(self, trials: int) -> str:
        """Why :meth:`evidence` is None (a note suffix)."""
        if self.outside:
            return self.outside
        if self.unchecked:
            return self.unchecked
        if not self.nc_bytes and self.launches:
            return "no launch read anything through .nc in the candidate"
        return f"only {self.launches} of {trials} launches had their .nc reads compared"


def _outside(original: dict, candidate: dict, where: str) -> str | None:
    for name, c in candidate.items():
        nc = (c & NC_READ) != 0
        if not nc.any():
            continue
        o = original.get(name)
        o = np.zeros_like(c) if o is None or o.shape != c.shape else o
        stored = ((c | o) & STORED) != 0
        o_nc, o_coherent = (o & NC_READ) != 0, (o & COHERENT_READ) != 0
        for bad, why in ((nc & ~o_nc & o_coherent, "the original reads it only through coherent loads"),
                         (nc & o_nc & o_coherent, "the original reads it through a coherent load too"),
                         (nc & ~o_nc, "the original never reads it"),
                         (nc & stored, "a store writes it during the launch")):
            if bad.any():
                return f"the candidate reads {name} byte {int(np.flatnonzero(bad)[0])} through .nc in {where}: {why}"
    return None


__all__ = ["NcReads", "has_nc_loads", "is_nc_load", "with_nc_tags"]
