"""``unroll{factor=2|4|8}``: unroll counted single-block loops, with a
constant or a runtime (parameter-bound) trip count.

The loop (:func:`ptxopt.analysis.loops.find_loops`) must be one block,
``L: body; setp ...; @%p bra L;``, whose exit test is the loop's only exit
and has the counted form (:class:`ptxopt.analysis.loops.ExitTest`: an
induction variable with a constant step against a loop-invariant bound).
Every count, guard and offset below comes from those facts, which derive
the value the test reads from its reaching definitions (copies, a test
before or after the update, a test of the previous iteration's value); a
loop whose test they do not understand has no counted trip count and is
refused with their reason.

**Exact form** -- the trip count ``T`` is a constant with ``T % factor == 0``:
the body (``setp`` included) is repeated ``factor`` times and only the last
copy keeps the branch. The dropped branches always went back to ``L`` (the
test first fails at iteration ``T``, the end of a group), so every thread
runs the same instructions in the same order, minus ``factor - 1`` branches
per group.

**Guarded form** -- any other counted trip count (a runtime bound, or a
constant not divisible by the factor)::

    L:      t0 = iv + base - step; t1 = t0 + (factor-1)*step   // t1: what the last dropped test compares
            q  = t1 CMP bound  and  no wrap from t0 to t1 (ordered tests)
               | (bound - t0) > (factor-1)*|step| unsigned (a != test)
            @!q bra L_last
            body x (factor-1), their branches dropped
    L_last: body; @p bra L

``q`` is true only when the exit tests of copies ``1 .. factor-1`` all
stay in the loop (the IV moves monotonically by a constant step without
wrapping in the compare's type, so the farthest test decides the nearer
ones), so skipping their branches changes nothing and a trip runs
``factor`` iterations; when ``q`` is false (the last ``factor - 1``
iterations, or values where the check is merely conservative) a trip runs
one original iteration, with its test, and checks again. Either way every
thread runs exactly the original sequence of iterations; the check is
extra, side-effect-free work on fresh registers. The one remaining branch is
the original one, so the remainder needs no loop of its own.

Barriers and warp collectives run as often, in the same order, as before;
the loop must have a block-uniform trip count (:mod:`ptxopt.analysis.uniform`)
and, in the guarded form, a block-uniform IV start and bound so that every
thread takes the same side of ``q``.

Refused, with the reason: a constant trip count below the factor (the
copies would never run), a trip count that is not counted (unknown start,
step or bound; a runtime step; an ``==`` continuation test; a test whose
direction does not match the step), a loop of more than one block (a
multi-block body would need each copy's internal labels renamed and its
side exits kept: not done), a nested ``{ }`` scope or a declaration in the
loop, ``.pragma "nounroll"`` (in the loop's block, the function body's first
statements, or at module level), a barrier or collective in a loop whose
trip count is not uniform.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar

from ptxopt.analysis.cfg import CFG
from ptxopt.analysis.unroll_guard import NEGATED as _NEG, guard_lines  # noqa: F401 (_NEG: loop_version)
from ptxopt.ptx.ir import Decl, Label, Module
from ptxopt.passes.base import ChangeReport, FunctionPass, Refused, check
from ptxopt.analysis.manager import manager_or_default
from ptxopt.passes.families import UNROLL
from ptxopt.passes.registry import declare



def counted_single_block_loop(fn, cfg: CFG, lp, verb: str):
    """The checks every loop-copying pass makes of loop ``lp`` (a counted trip, one block with one label at
    the top level, ending in its conditional branch, no ``nounroll`` pragma, no declaration to copy);
    ``verb`` names the rewrite in the refusal. Returns ``(items, label_at, branch_at, branch)``: the
    function's top-level statements and the indices of the loop's label and branch."""
    hdr = cfg.blocks[lp.header]
    check(lp.trip.kind in ("constant", "parametric"), f"the trip count is not counted ({lp.trip.describe()})")
    check(lp.blocks == frozenset({lp.header}),
          f"the loop has {len(lp.blocks)} blocks (only single-block loops are {verb})")
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
    stmts = items[label_at + 1:branch_at]
    check(not any(_nounroll(s) for s in stmts), '.pragma "nounroll" on the loop')
    check(not any(type(s) is Decl for s in stmts), "a declaration in the loop's block (copies would redeclare it)")
    return items, label_at, branch_at, br


def _nounroll(stmt) -> bool:
    return type(stmt) is Decl and stmt.attrs[:1] == (".pragma",) \
        and any(it.name.strip('"') == "nounroll" for it in stmt.items)


def _parse_snippet(lines: list[str]) -> list:
    """IR statements of ``lines`` (PTX body text)."""
    from ptxopt.ptx.parser import parse

    text = ".version 8.0\n.target sm_89\n.address_size 64\n.visible .entry _u()\n{\n" + "\n".join(lines) + "\n}\n"
    return list(parse(text, "<unroll>").entries[0].body.items)


@declare
@dataclass(frozen=True)
class Unroll(FunctionPass):
    """``unroll{factor=F}``: see the module doc."""

    kind: ClassVar[str] = "unroll"
    aliases: ClassVar[dict[str, dict]] = {"unroll_2": {"factor": 2}, "unroll_4": {"factor": 4}}
    family: ClassVar[str] = UNROLL
    choices: ClassVar[dict] = {"factor": (2, 4, 8)}
    structural: ClassVar[bool] = True  # it rewrites loops: proved before ``run`` writes it
    factor: int

    @property
    def description(self) -> str:
        return f"counted single-block loops are unrolled {self.factor} times (a runtime or non-divisible trip " \
               f"count runs {self.factor} copies per trip while the exit test allows them, else one iteration)"

    def run_function(self, fn, report: ChangeReport, module: Module, analyses=None) -> None:
        analyses = manager_or_default(analyses)
        cfg = analyses.cfg(fn)  # shared with the other passes tried on this state
        first_label = next((k for k, s in enumerate(fn.body.items) if type(s) is Label), len(fn.body.items))
        nounroll = "at module level" if any(_nounroll(d) for d in module.items) else \
            "on the function" if any(_nounroll(s) for s in fn.body.items[:first_label]) else None
        info = analyses.loops(fn)
        labels = {s.name for s in fn.body.items if type(s) is Label}
        plans = []
        for n, lp in enumerate(info.loops):
            hdr = cfg.blocks[lp.header]
            line = hdr.instructions[0].line if hdr.instructions else 0
            try:
                check(nounroll is None, f'.pragma "nounroll" {nounroll}')
                plans.append(self._plan(fn, cfg, lp, n, labels))
            except Refused as r:
                report.refuse(fn.name, line, f"loop {hdr.label or lp.header}: {r}")
        # rewrite from the last loop in the text up, so earlier indices stay valid
        decls = []
        for label_at, branch_at, line, what, build in sorted(plans, key=lambda p: p[0], reverse=True):
            items = fn.body.items
            new, regs = build(items[label_at + 1:branch_at], items[branch_at], line)
            items[label_at + 1:branch_at + 1] = new
            decls = regs + decls
        for _, _, line, what, _ in sorted(plans, key=lambda p: p[0]):
            report.change(fn.name, line, what)
        if decls:
            fn.body.items[0:0] = _parse_snippet(decls)

    def _plan(self, fn, cfg: CFG, lp, n: int, labels: set[str]):
        hdr = cfg.blocks[lp.header]
        trip = lp.trip
        _, label_at, branch_at, _ = counted_single_block_loop(fn, cfg, lp, "unrolled")
        check(not (lp.barriers or lp.collectives) or lp.uniform,
              "a barrier, warp collective or .sync.aligned instruction in a loop whose trip count is not uniform "
              "across the block")
        # the loop facts relate such a test to the IV through the pre-loop value; the proof of an unrolled
        # loop starts from a symbolic header state without that relation, so the rewrite could not be
        # proved and ``run`` would refuse it: the pass does not write what nothing can check
        check(lp.test is None or not lp.test.reads_previous,
              "the exit test reads the previous iteration's value (correct to unroll, but not provable yet)")
        line = hdr.instructions[0].line if hdr.instructions else 0
        f = self.factor
        check(trip.kind != "constant" or trip.value >= f,
              f"the trip count {trip.value} is below the factor {f} (no trip of {f} copies would run)")
        if trip.kind == "constant" and trip.value % f == 0:
            def exact(body, branch, _line):
                return list(body) * f + [branch], []
            return label_at, branch_at, line, (f"loop {hdr.label}: {trip.value} iterations -> "
                                               f"{trip.value // f} x {f} copies"), exact
        return (label_at, branch_at, line, *self._guarded(cfg, lp, hdr.label, n, labels))

    def _guarded(self, cfg: CFG, lp, label: str, n: int, labels: set[str]):
        """The guarded form's description and builder (module doc)."""
        f = self.factor
        pfx = f"%unroll{n}_"
        taken = _declared(cfg.function.body)
        while {pfx + "0", pfx + "1", pfx + "p0", pfx + "p1"} & taken:
            pfx = pfx[:-1] + "x_"
        check_lines, decls, q = exit_check(cfg, lp, f, pfx)
        last = _fresh(labels, f"{label}_last")
        labels.add(last)

        def build(body, branch, line):
            pre = [replace(x, line=line) if hasattr(x, "opcode") else x
                   for x in _parse_snippet(check_lines + [f"@!{q} bra {last};"])]
            return pre + list(body) * (f - 1) + _parse_snippet([f"{last}:"]) + list(body) + [branch], decls

        kind = f"{lp.trip.value} iterations" if lp.trip.kind == "constant" else f"trip count {lp.trip.describe()}"
        return (f"loop {label}: {kind} -> {f} copies per trip while the exit test allows them, "
                f"else one iteration ({last})"), build


def exit_check(cfg: CFG, lp, f: int, pfx: str) -> tuple[list[str], list[str], str]:
    """The check at the top of a trip that the exit tests of the next ``f - 1``
    iterations all stay in the loop (module doc, guarded form;
    :func:`ptxopt.analysis.unroll_guard.guard_lines`): its PTX lines,
    their declarations (registers named ``pfx`` + ``0``/``1``/``p0``/``p1``) and
    the predicate that holds the answer. Refuses (:class:`Refused`) a test it
    cannot check."""
    got = guard_lines(cfg, lp, f, pfx)
    check(type(got) is not str, got)
    return got


def _fresh(labels: set[str], want: str) -> str:
    name, k = want, 0
    while name in labels:
        k += 1
        name = f"{want}{k}"
    return name


def _declared(block) -> set[str]:
    """Every register name declared in ``block`` and its nested scopes (a
    ``%r<4>`` range as its prefix)."""
    out: set[str] = set()
    for s in block.items:
        if type(s) is Decl:
            for it in s.items:
                out.update(f"{it.name}{i}" for i in range(it.count)) if it.count else out.add(it.name)
        elif hasattr(s, "items"):
            out |= _declared(s)
    return out


__all__ = ["Unroll", "exit_check"]
