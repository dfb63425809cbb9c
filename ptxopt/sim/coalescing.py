"""What one warp's global access moves, from the per-lane strides of its address: 32-byte sectors
between L1 and L2, 128-byte wavefronts through L1.

Why: the walk follows one thread and the many-warp model multiplies what it moved by the threads, i.e.
it takes every warp access as coalesced (32 lanes x 4 B = one 128-byte line, four sectors).  A
transpose's column-wise store (lane stride = a row, kilobytes) touches 32 sectors on 32 lines: 8x the
L2 transfers and 32x the L1 wavefronts of the coalesced charge; a warp reading one word (a broadcast)
moves one sector.  The address forms of :mod:`ptxopt.analysis.global_footprint` (affine in ``%tid``,
``%ctaid``, loop counters, scalars) give each lane's address, so the sectors are counted, not assumed.

Per PTX global access, for the lanes of the block's first warp (linear thread ids 0..31, ``%tid.x``
fastest; loop counters and block indices at 0, buffers 256-byte aligned as ``cudaMalloc`` gives them):

* ``sectors``: distinct 32-byte sectors the active lanes touch; the L2 factor is
  ``sectors x 32 / (lanes x width)`` (1 for a coalesced access, 8 for a lane stride of 32 B or more
  with 4-byte words, 1/4 for a broadcast word);
* ``lines``: distinct 128-byte lines, the wavefronts the L1 data path (128 B per cycle) serves; the L1
  factor is ``lines x 128 / (lanes x width)``.

ptxas's SASS accesses are matched to the PTX's by class (reads: ``LDG``/``LD``/``LDGSTS``; writes:
``STG``/``ST``; atomics/reductions): where every access of a class has the same factors they apply to
each SASS access of it; else each SASS access of the class is charged the class's mean factors,
labelled ASSUMED (right where ptxas replicated every access of the class alike, as unrolling a loop
body does; the notes give the range).  Never one to one, even where the counts agree: whether ptxas
unrolled a loop must not change how a warp's accesses are charged, or a pass that only changes ptxas's
unrolling would gain from the charging rule.  An access whose address is not
affine (a gather through loaded indices) keeps the coalesced charge, labelled as an assumption (a
gather's lanes usually touch more sectors, a broadcast's fewer).  Guards are not applied to the lanes (every lane of the
first warp is taken active where the block has it).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ptxopt.analysis.global_footprint import access_forms, digit_value

SECTOR = 32
LINE = 128
WARP = 32
#: SASS base opcodes by the PTX access class they implement (global or generic)
SASS_CLASS = {"LDG": "read", "LD": "read", "LDGSTS": "read", "STG": "write", "ST": "write",
              "RED": "both", "ATOMG": "both", "ATOM": "both"}


@dataclass(frozen=True)
class LaneCharge:
    """One PTX global access as the first warp issues it (factors None: the address is not affine)."""

    kind: str  # read | write | both
    width: int  # bytes per lane
    lanes: int  # active lanes of the warp
    sectors: int | None = None
    lines: int | None = None
    why: str = ""

    @property
    def l2_factor(self) -> float | None:
        return None if self.sectors is None else SECTOR * self.sectors / (self.lanes * self.width)

    @property
    def l1_factor(self) -> float | None:
        return None if self.lines is None else LINE * self.lines / (self.lanes * self.width)


@dataclass(frozen=True)
class LaneCharges:
    """Every global access of one kernel at one launch, in PTX program order."""

    accesses: tuple = ()
    notes: tuple = field(default=(), compare=False)

    def of(self, kind: str) -> list:
        return [a for a in self.accesses if a.kind == kind]


def _lane_index(lane: int, block) -> dict | None:
    bx, by, bz = (tuple(block) + (1, 1))[:3]
    if lane >= bx * by * bz:
        return None
    return {"tid.x": lane % bx, "tid.y": (lane // bx) % by, "tid.z": lane // (bx * by)}


def lane_charges(module, entry: str | None, launch) -> LaneCharges:
    """The :class:`LaneCharges` of ``entry`` (a parsed module or PTX text) under ``launch`` (grid, block,
    scalars); empty when the grid or block is unknown."""
    grid, block = getattr(launch, "grid", None), getattr(launch, "block", None)
    if grid is None or block is None:
        return LaneCharges((), ("lane strides: no launch grid, every access charged as coalesced (ASSUMED)",))
    if isinstance(module, str):
        from ptxopt.ptx.parser import parse

        module = parse(module, "coalescing")
    fn = module.pick_entry(entry, "coalescing")
    lanes = [ix for ix in (_lane_index(i, block) for i in range(WARP)) if ix is not None]
    out = []
    for a in access_forms(fn, grid, block, dict(getattr(launch, "scalars", None) or {})):
        if a.kind is None or not a.width:
            continue
        if a.form is None:
            out.append(LaneCharge(a.kind, a.width, len(lanes), why=a.why or "address not affine"))
            continue
        sectors, lines = set(), set()
        for ix in lanes:
            addr = a.form.const + sum(c * digit_value(v, ix) for v, c in a.form.terms)
            sectors.update(range(addr // SECTOR, (addr + a.width - 1) // SECTOR + 1))
            lines.update(range(addr // LINE, (addr + a.width - 1) // LINE + 1))
        out.append(LaneCharge(a.kind, a.width, len(lanes), len(sectors), len(lines)))
    return LaneCharges(tuple(out))


def sass_factors(program, charges: LaneCharges | None) -> tuple[list, list[str]]:
    """Per SASS instruction of ``program``: ``(L1 factor, L2 factor)`` for its global accesses, or None
    (no lane strides known: the walk's own charge, per thread), and the notes that say how they were
    matched."""
    out: list = [None] * len(program.instructions)
    notes: list[str] = []
    if charges is None:
        return out, notes
    notes.extend(charges.notes)
    for kind in ("read", "write", "both"):
        sass = [i for i, ins in enumerate(program.instructions) if SASS_CLASS.get(ins.base_opcode) == kind]
        ptx = charges.of(kind)
        if not sass or not ptx:
            continue
        unknown = [a for a in ptx if a.sectors is None]
        if unknown:
            notes.append(f"lane strides: {len(unknown)} of {len(ptx)} global {kind}s not affine "
                         f"({unknown[0].why}): charged as coalesced (ASSUMED)")
        pairs = [(1.0, 1.0) if a.sectors is None else (a.l1_factor, a.l2_factor) for a in ptx]
        if len(set(pairs)) == 1:
            how, per = "every access alike", [pairs[0]] * len(sass)
        else:
            mean = (sum(p[0] for p in pairs) / len(pairs), sum(p[1] for p in pairs) / len(pairs))
            how, per = (f"{len(ptx)} PTX accesses, {len(sass)} SASS, each charged the class's mean "
                        f"L1 x{mean[0]:.3g} / L2 x{mean[1]:.3g} (ASSUMED: every access replicated alike)"), \
                [mean] * len(sass)
        for i, p in zip(sass, per):
            # (1, 1) from the lanes is a fact (coalesced); None is the walk's own assumption
            out[i] = None if p == (1.0, 1.0) and unknown else p
        moved = sorted({p for p in pairs if p != (1.0, 1.0)})
        if moved:
            notes.append(f"lane strides of global {kind}s ({how}): " + ", ".join(
                f"L1 x{a:g} / L2 x{b:g}" for a, b in moved) + " of the coalesced charge (first warp's sectors)")
    return out, notes


__all__ = ["LaneCharge", "LaneCharges", "lane_charges", "sass_factors", "SASS_CLASS"]
