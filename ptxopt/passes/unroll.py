"""``unroll{factor=2|4}``: unroll counted single-block loops whose trip count
is a constant multiple of the factor.

The loop (:func:`ptxopt.analysis.loops.find_loops`) must be one block,
``L: body; setp ...; @%p bra L;``, whose exit test is the loop's only exit
and whose trip count ``T`` is a constant (start, step and bound are
immediates) with ``T % factor == 0``. The rewrite repeats the body
(``setp`` included) ``factor`` times and keeps the branch after the last
copy only:

* every thread runs exactly the instructions it ran before, in the same
  order, minus ``factor - 1`` branches per group; those branches always
  went back to ``L`` (the test first fails at iteration ``T``, the end of
  a group, because ``factor`` divides ``T``), so nothing observable
  changes. The predicate a dropped branch read is still computed, so its
  value after the loop is the same.
* Barriers and warp collectives run as often, in the same order, as
  before; the loop must still have a block-uniform trip count (it does
  when it is constant -- the analysis checks it anyway, and the refusal
  names the reason if not).

Refused, with the reason: a trip count that is not constant or not a
multiple of the factor, a loop of more than one block (or with a nested
``{ }`` scope), a loop marked ``.pragma "nounroll"`` (in the loop's block,
the function body's first statements, or at module level), a barrier or
collective in a loop whose trip count is not uniform. Remainder loops and
runtime trip counts are not done here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ptxopt.analysis.cfg import CFG
from ptxopt.analysis.loops import find_loops
from ptxopt.ir import Decl, Label, Module
from ptxopt.passes.base import ChangeReport, FunctionPass, Refused, check
from ptxopt.passes.families import UNROLL


def _nounroll(stmt) -> bool:
    return type(stmt) is Decl and stmt.attrs[:1] == (".pragma",) \
        and any(it.name.strip('"') == "nounroll" for it in stmt.items)


@dataclass(frozen=True)
class Unroll(FunctionPass):
    """``unroll{factor=F}``: see the module doc."""

    kind: ClassVar[str] = "unroll"
    family: ClassVar[str] = UNROLL
    choices: ClassVar[dict] = {"factor": (2, 4)}
    factor: int

    @property
    def description(self) -> str:
        return f"counted single-block loops with a constant trip count divisible by {self.factor} are unrolled " \
               f"{self.factor} times"

    def run_function(self, fn, report: ChangeReport, module: Module) -> None:
        cfg = CFG(fn)
        first_label = next((k for k, s in enumerate(fn.body.items) if type(s) is Label), len(fn.body.items))
        nounroll = "at module level" if any(_nounroll(d) for d in module.items) else \
            "on the function" if any(_nounroll(s) for s in fn.body.items[:first_label]) else None
        info = find_loops(cfg)
        # rewrite from the last loop in the text up, so earlier indices stay valid
        plans = []
        for lp in info.loops:
            hdr = cfg.blocks[lp.header]
            line = hdr.instructions[0].line if hdr.instructions else 0
            try:
                check(nounroll is None, f'.pragma "nounroll" {nounroll}')
                plans.append(self._plan(fn, cfg, lp))
            except Refused as r:
                report.refuse(fn.name, line, f"loop {hdr.label or lp.header}: {r}")
        for label_at, branch_at, line, what in sorted(plans, reverse=True):
            items = fn.body.items
            body = items[label_at + 1:branch_at]
            items[label_at + 1:branch_at + 1] = body * self.factor + [items[branch_at]]
            report.change(fn.name, line, what)

    def _plan(self, fn, cfg: CFG, lp) -> tuple[int, int, int, str]:
        hdr = cfg.blocks[lp.header]
        trip = lp.trip
        check(trip.kind == "constant", f"the trip count is not a constant ({trip.describe()})")
        check(trip.value % self.factor == 0, f"the trip count {trip.value} is not a multiple of {self.factor}")
        check(lp.blocks == frozenset({lp.header}), f"the loop has {len(lp.blocks)} blocks (only one is unrolled)")
        check(hdr.label is not None and len(hdr.labels) == 1, "the loop's block has no single label")
        paths = [cfg.sites[i] for i in hdr.iids]
        check(all(len(p) == 1 for p in paths), "the loop holds a nested { } scope")
        items = fn.body.items
        label_at = next((k for k, s in enumerate(items) if type(s) is Label and s.name == hdr.label), None)
        check(label_at is not None, "the loop's label is not a top-level statement")
        branch_at = paths[-1][0]
        br = items[branch_at]
        check(br is hdr.instructions[-1] and br.opcode == "bra" and br.guard is not None,
              "the loop does not end in its conditional branch")
        check(not any(_nounroll(s) for s in items[label_at + 1:branch_at]), '.pragma "nounroll" on the loop')
        check(not any(type(s) is Decl for s in items[label_at + 1:branch_at]),
              "a declaration in the loop's block (copies would redeclare it)")
        check(not (lp.barriers or lp.collectives) or lp.uniform,
              "a barrier or warp collective in a loop whose trip count is not uniform across the block")
        line = hdr.instructions[0].line if hdr.instructions else 0
        return label_at, branch_at, line, (f"loop {hdr.label}: {trip.value} iterations -> "
                                           f"{trip.value // self.factor} x {self.factor} copies")


__all__ = ["Unroll"]
