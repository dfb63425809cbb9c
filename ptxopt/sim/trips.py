"""Branch sites, SASS loops, and the hook that turns loop counts into trip counts.

The issue model (:func:`ptxopt.sim.simulate`) needs the outcome of every
conditional branch it reaches.  Callers pass them as ``trip_counts`` keyed by
``(code section, byte offset)`` of the SASS branch; :func:`branch_sites`
lists the keys.  Without them the static fallback (``static:N=8``) applies.

Hook for the PTX interpreter
----------------------------
The interpreter (``ptxopt.interp``, in progress) will report how many times
each PTX basic block executed for given inputs.  From those counts a caller
derives, for every PTX loop in source order, how often the loop was
*entered* (the count of the block before its header, or the header count
minus the back-edge count) and how many *iterations* ran in total (the
header count).  :func:`trip_counts_from_loop_profile` maps that list onto
the SASS loops by position: the i-th PTX loop (by header position, which is
also nesting pre-order) to the i-th SASS loop (by header offset).  ptxas
keeps loop order and nesting for loops it does not unroll or restructure;
when the numbers of loops differ the hook refuses (``ValueError``) rather
than guess, and the caller keeps the static fallback.  A loop that ptxas
unrolled by k while keeping it a loop runs 1/k as many SASS iterations: the
hook cannot see that (documented limitation; pass ``unroll`` per loop when
it is known).

Only the fallback is wired up today; nothing here imports the interpreter.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from ptxopt.toolchain import SassListing

from .decode import C_BRA, C_CALL, C_DIV, C_EXIT, Program, decode


@dataclass(frozen=True)
class BranchSite:
    """A conditional control transfer the walk needs an outcome for."""

    function: str
    offset: int
    text: str
    kind: str  # "back-edge", "loop-exit", "forward", "exit", "call", "divergence"
    target_offset: int | None
    loop_header: int | None  # for a back edge: offset of the loop header
    depth: int  # loop nesting depth of the site (0 = not in a loop)

    @property
    def key(self) -> tuple[str, int]:
        return (self.function, self.offset)


@dataclass(frozen=True)
class SassLoop:
    """A loop in the SASS: the back edge at ``branch_offset`` jumps to ``header_offset``."""

    function: str
    header_offset: int
    branch_offset: int
    depth: int  # 1 = outermost
    conditional: bool  # False: the back edge is unconditional; the loop ends through an exit branch
    exits: tuple[int, ...]  # offsets of its exit branches (only for unconditional back edges)

    @property
    def key(self) -> tuple[str, int]:
        """The trip-count key that controls this loop."""
        return (self.function, self.branch_offset)


@dataclass(frozen=True)
class LoopCount:
    """Execution counts of one PTX loop: times entered, and iterations in total."""

    entries: int
    iterations: int
    unroll: int = 1  # SASS iterations per ptxas-unrolled loop trip, if known

    @property
    def trips_per_entry(self) -> float:
        return self.iterations / self.entries / self.unroll if self.entries else 0.0


def _program(listing: SassListing | Program, kernel: str | None) -> Program:
    return listing if isinstance(listing, Program) else decode(listing, kernel)


def _depth(p: Program, index: int) -> int:
    ins = p.instructions[index]
    return sum(1 for b in p.back_edges
               if p.instructions[b].function == ins.function and p.target[b] <= index <= b)


def sass_loops(listing: SassListing | Program, kernel: str | None = None) -> list[SassLoop]:
    """Loops (backward branches) of the listing, by header offset within each section."""
    p = _program(listing, kernel)
    loops = []
    for b in p.back_edges:
        ins = p.instructions[b]
        h = p.target[b]
        exits = tuple(p.instructions[i].offset for i in range(len(p)) if p.loop_of_exit[i] == b)
        loops.append(SassLoop(ins.function, p.instructions[h].offset, ins.offset, _depth(p, h),
                              p.conditional[b], exits))
    loops.sort(key=lambda lp: (lp.function != p.kernel, lp.function, lp.header_offset, -lp.branch_offset))
    return loops


def branch_sites(listing: SassListing | Program, kernel: str | None = None) -> list[BranchSite]:
    """Every conditional branch / guarded EXIT / guarded CALL / BRA.DIV: the trip_counts keys."""
    p = _program(listing, kernel)
    back = set(p.back_edges)
    out = []
    for i, ins in enumerate(p.instructions):
        c = p.ctrl[i]
        if c == C_DIV:
            kind = "divergence"
        elif not p.conditional[i] or c not in (C_BRA, C_EXIT, C_CALL):
            continue
        elif i in back:
            kind = "back-edge"
        elif p.loop_of_exit[i] >= 0:
            kind = "loop-exit"
        else:
            kind = {C_BRA: "forward", C_EXIT: "exit", C_CALL: "call"}[c]
        tgt = p.target[i]
        out.append(BranchSite(
            ins.function, ins.offset, ins.text, kind,
            p.instructions[tgt].offset if tgt >= 0 else None,
            p.instructions[tgt].offset if i in back else None,
            _depth(p, i),
        ))
    return out


def trip_counts_from_loop_profile(listing: SassListing | Program, profile: Sequence[LoopCount],
                                  kernel: str | None = None) -> dict[tuple[str, int], float]:
    """Map per-PTX-loop counts (source order) onto the kernel's SASS loops (header order).

    Returns a ``trip_counts`` mapping for :func:`ptxopt.sim.simulate`:
    for a loop with a conditional back edge, the back edge is taken
    ``trips_per_entry - 1`` times per entry; for a loop with an unconditional
    back edge, its (first) exit branch is taken on ``1/trips_per_entry`` of
    its executions.  Raises ``ValueError`` when the loop counts differ.
    """
    p = _program(listing, kernel)
    loops = [lp for lp in sass_loops(p) if lp.function == p.kernel]
    if len(loops) != len(profile):
        raise ValueError(
            f"{len(profile)} PTX loop(s) but {len(loops)} SASS loop(s) in {p.kernel}: ptxas unrolled, "
            "split or added loops, so counts cannot be matched by position; keep the static fallback"
        )
    out: dict[tuple[str, int], float] = {}
    for lp, count in zip(loops, profile):
        trips = count.trips_per_entry
        if lp.conditional:
            out[lp.key] = max(trips - 1.0, 0.0)
        elif lp.exits:
            out[(lp.function, lp.exits[0])] = 1.0 / trips if trips > 0 else 1.0
    return out
