"""Per-block list schedulers (``reorder{policy=P}``, aliases ``reorder_P``).

The pass rebuilds every basic block's instruction order by list scheduling
over the block's dependencies: it repeatedly takes a *ready* instruction (all
its predecessors placed) by its policy's priority, ties broken by original
position, so the result is deterministic. The dependencies are a
:class:`~ptxopt.analysis.depgraph.DepGraph`, the partial order of the
block's DAG (:func:`ptxopt.analysis.block_dag`) in linear size (join nodes
instead of one edge per conflicting load/store pair), scheduled by
:mod:`ptxopt.analysis.schedule`. The policies' priorities:

* ``cp`` (``reorder_cp``): longest latency-weighted path to the end of the block
  (:func:`~ptxopt.analysis.schedule.heights` with :func:`~ptxopt.analysis.estimated_latency`);
  a ready prefetch goes first (nothing consumes it, so its own path is short,
  but it only helps ahead of the loads it is for);
* ``il`` (``reorder_il``): a memory instruction after an arithmetic one and vice
  versa, whenever both kinds are ready;
* ``lf`` (``reorder_lf``): ready loads first, then instructions a later load depends
  on, then the rest;
* ``sl`` (``reorder_sl``): the mirror image, scheduled bottom-up from the block's end:
  stores take the last free slot, then instructions that must follow a store.

Legality is the DAG's: every dependency is kept (checked with
:func:`~ptxopt.analysis.schedule.respects` before anything is written; a
violation is a bug and raises; the tests check the results against the full
DAG with :func:`~ptxopt.analysis.topological_orders_respect`). Ordering
points (barriers, atomics, calls, fences, volatile accesses, clock reads)
are ordered against everything by the DAG's ``order`` edges, the terminator
is one of them, so it stays last; labels are not instructions and stay where
they are.

What moves in the text: a *run* is a maximal sequence of a block's
instructions in one ``{ }`` scope with only ``.loc`` lines and comments
between them. Runs are scheduled separately and keep their order, so nothing
moves into or out of a nested scope, and declarations (or anything else that
is not an instruction) stay in place; a block split into several runs is
reported as refused for the cross-run moves, with the reason. A ``.loc`` or
comment line travels with the instruction after it; a trailing comment
(printed on the same line) with the instruction before it.

Idempotent: the priorities depend only on the DAG's partial order (which a
legal reordering keeps), and ties go to the earlier position, so a schedule
is a fixed point of its own pass.
"""

from __future__ import annotations

from dataclasses import dataclass
from operator import ne
from typing import ClassVar

from ptxopt.ptx import opcodes, operand_facts
from ptxopt.analysis.alias import noalias_params, overlapping_symbols, pointer_roots
from ptxopt.analysis.depgraph import DepGraph
from ptxopt.analysis.rough_latency import latencies
from ptxopt.analysis.schedule import heights, interleave, list_schedule, reaches, respects
from ptxopt.ptx.ir import Comment, Function, Loc, Module
from ptxopt.passes.base import ChangeReport, FunctionPass
from ptxopt.analysis.manager import manager_or_default
from ptxopt.passes.families import REORDER
from ptxopt.passes.registry import declare


@dataclass
class _Run:
    """Block-local instructions ``lo..hi-1``, at ``indices`` of ``items``."""

    items: list
    scope: tuple[int, ...]
    indices: list[int]
    lo: int

    @property
    def hi(self) -> int:
        return self.lo + len(self.indices)


def _attached(s) -> bool:
    return type(s) is Loc or (type(s) is Comment and not s.trailing)


def _runs(fn: Function, cfg, block) -> list[_Run]:
    iids = block.iids
    paths = cfg.sites[iids.start:iids.stop]
    if paths and max(map(len, paths)) == 1 and paths[-1][0] - paths[0][0] == len(paths) - 1:
        # the common case: consecutive statements of the body, one run (the
        # loop below finds the same)
        return [_Run(fn.body.items, (), list(range(paths[0][0], paths[-1][0] + 1)), 0)]
    runs: list[_Run] = []
    for k, iid in enumerate(block.iids):
        path = cfg.sites[iid]
        scope, idx = path[:-1], path[-1]
        cur = runs[-1] if runs else None
        if cur is not None and cur.scope == scope and (idx == cur.indices[-1] + 1 or all(
                type(s) is Loc or type(s) is Comment for s in cur.items[cur.indices[-1] + 1:idx])):
            cur.indices.append(idx)
            continue
        node = fn.body
        for i in scope:
            node = node.items[i]
        runs.append(_Run(node.items, scope, [idx], k))
    return runs


def _runs_of(fn: Function, cfg, block) -> tuple[list[_Run], list[tuple[int, list[list]]]]:
    """:func:`_runs` of ``block`` and :func:`_groups` of each run. The four
    policies tried on one state find the same ones (they depend on the
    function's shape alone), so the first keeps them in ``cfg.shared``
    (see :mod:`ptxopt.analysis.manager`) as scope paths and statement groups
    (statements are shared by every copy); each pass rebinds the runs to the
    containers of its own copy."""
    key = ("reorder.runs", block.index)
    hit = cfg.shared.get(key)
    if hit is None:
        runs = _runs(fn, cfg, block)
        hit = cfg.shared[key] = ([(r.scope, r.indices, r.lo) for r in runs], [_groups(r) for r in runs])
    shapes, groups = hit
    runs = []
    for scope, indices, lo in shapes:
        node = fn.body
        for i in scope:
            node = node.items[i]
        runs.append(_Run(node.items, scope, indices, lo))
    return runs, groups


def _groups(run: _Run) -> tuple[int, list]:
    """The run's span start and one statement group per instruction: the
    ``.loc``/comment lines before it, it, its trailing comments. When every
    group is its instruction alone (nothing attached: the common case), the
    groups are that flat list of instructions instead (no list per
    instruction to build, keep and collect)."""
    items, out = run.items, []
    start, last = run.indices[0], run.indices[-1]
    if last - start + 1 == len(run.indices) and not (start > 0 and _attached(items[start - 1])) \
            and not (last + 1 < len(items) and type(items[last + 1]) is Comment and items[last + 1].trailing):
        return start, _Flat(items[start:last + 1])  # contiguous: only instructions in between
    while start > 0 and _attached(items[start - 1]):
        start -= 1
    lead = start
    for idx in run.indices:
        end = idx + 1
        while end < len(items) and type(items[end]) is Comment and items[end].trailing:
            end += 1
        out.append(items[lead:end])
        lead = end
    return start, out


class _Flat(list):
    """:func:`_groups` of a run whose every group is its instruction alone."""

    __slots__ = ()


def _critical_path(g: DepGraph, runs):
    h = heights(g, latencies(g.instructions))
    prefetches = opcodes.PREFETCHES
    n = g.n
    top = max(h[:n], default=0) + 1
    if set(map(type, h)) == {int}:  # integer latencies (every one in the table)
        # the key (not a prefetch, -height, position) as one int, in the same
        # order (sorting ints is several times faster than sorting tuples)
        span = (top + 1) * n  # above every (top - height) * n + position
        keys = [(ins.opcode not in prefetches) * span + (top - h[v]) * n + v for v, ins in enumerate(g.instructions)]
    else:
        keys = [(ins.opcode not in prefetches, -h[v], v) for v, ins in enumerate(g.instructions)]
    return list_schedule(g, runs, keys)


def _interleave(g: DepGraph, runs):
    return interleave(g, runs, [opcodes.is_memory(i) for i in g.instructions])


def _loads_first(g: DepGraph, runs):
    load = [operand_facts.role(i) == "load" for i in g.instructions]
    feeds = reaches(g, load, forward=True)
    keys = [(0 if load[v] else 1 if feeds[v] else 2, v) for v in range(g.n)]
    return list_schedule(g, runs, keys)


def _stores_last(g: DepGraph, runs):
    store = [operand_facts.role(i) == "store" for i in g.instructions]
    follows = reaches(g, store, forward=False)
    keys = [(0 if store[v] else 1 if follows[v] else 2, -v) for v in range(g.n)]
    return list_schedule(g, runs, keys, bottom_up=True)


#: policy -> (the block's new order: each run of ``runs`` scheduled on its own, description)
_POLICIES = {
    "cp": (_critical_path, "list-schedule each basic block by latency-weighted critical-path length"),
    "il": (_interleave, "list-schedule each basic block alternating memory and arithmetic instructions"),
    "lf": (_loads_first, "list-schedule each basic block with loads as early as dependencies allow"),
    "sl": (_stores_last, "list-schedule each basic block with stores as late as dependencies allow"),
}


@declare
@dataclass(frozen=True)
class Reorder(FunctionPass):
    """``reorder{policy=P}``, one of the priorities above (aliases ``reorder_cp``,
    ``reorder_il``, ``reorder_lf``, ``reorder_sl``)."""

    kind: ClassVar[str] = "reorder"
    aliases: ClassVar[dict[str, dict]] = {"reorder_cp": {"policy": "cp"}, "reorder_il": {"policy": "il"},
                                           "reorder_lf": {"policy": "lf"}, "reorder_sl": {"policy": "sl"}}
    family: ClassVar[str] = REORDER
    choices: ClassVar[dict] = {"policy": tuple(_POLICIES)}
    policy: str

    @property
    def description(self) -> str:
        return _POLICIES[self.policy][1]

    def run_function(self, fn: Function, report: ChangeReport, module: Module, analyses=None) -> None:
        analyses = manager_or_default(analyses)
        cfg = analyses.cfg(fn)  # the reorder policies tried on one state share it
        noalias = noalias_params(fn)
        roots = pointer_roots(cfg) if noalias else {}
        overlap = overlapping_symbols(fn, module)
        for block in cfg.blocks:
            if len(block.instructions) < 2:
                continue
            where = block.label or f"#{block.index}"
            line = next((i.line for i in block.instructions if i.line), 0)
            runs, groups = _runs_of(fn, cfg, block)
            if len(runs) > 1:
                nested = any(r.scope for r in runs)
                why = ("a nested { } scope splits it: nothing moves into or out of the scope"
                       if nested else "non-instruction statements split it: they stay in place")
                report.refuse(fn.name, line, f"block {where}: {why}; "
                              f"scheduled only within each of its {len(runs)} runs")
            movable = [r for r in runs if len(r.indices) > 1]
            if not movable:
                continue
            g = analyses.block_depgraph(cfg, block.index, roots=roots, noalias=noalias, overlap=overlap)
            order = _POLICIES[self.policy][0](g, [(r.lo, r.hi) for r in runs])
            moved = sum(map(ne, order, range(len(order))))  # positions whose instruction changed
            if not moved:
                continue
            if not respects(g, order):
                raise AssertionError(f"{self.name}: schedule of {fn.name} block {where} "
                                     "violates a dependency (a bug in the scheduler)")
            for r, (start, parts) in zip(runs, groups):
                if len(r.indices) < 2:
                    continue
                if type(parts) is _Flat:
                    new = list(map(parts.__getitem__, order[:r.hi])) if r.lo == 0 else \
                        [parts[v - r.lo] for v in order[r.lo:r.hi]]
                else:
                    new = [s for v in order[r.lo:r.hi] for s in parts[v - r.lo]]
                r.items[start:start + len(new)] = new
            report.change(fn.name, line, f"block {where}: {moved} of "
                          f"{len(block.instructions)} instructions moved")
