"""Per-block list schedulers (``reorder_*``).

Each pass rebuilds every basic block's instruction order by list scheduling
over the block's dependency DAG (:func:`ptxopt.analysis.block_dag`): it
repeatedly takes a *ready* instruction (all its DAG predecessors placed) by
the pass's priority, ties broken by original position, so the result is
deterministic. The priorities:

* ``reorder_cp``: longest latency-weighted path to the end of the block
  (:func:`~ptxopt.analysis.heights` with :func:`~ptxopt.analysis.estimated_latency`);
  a ready prefetch goes first (nothing consumes it, so its own path is short,
  but it only helps ahead of the loads it is for);
* ``reorder_il``: a memory instruction after an arithmetic one and vice
  versa, whenever both kinds are ready;
* ``reorder_lf``: ready loads first, then instructions a later load depends
  on, then the rest;
* ``reorder_sl``: the mirror image, scheduled bottom-up from the block's end:
  stores take the last free slot, then instructions that must follow a store.

Legality is the DAG's: every edge is kept (checked with
:func:`~ptxopt.analysis.topological_orders_respect` before anything is
written; a violation is a bug and raises). Ordering points (barriers,
atomics, calls, fences, volatile accesses, clock reads) are ordered against
everything by the DAG's ``order`` edges, the terminator is one of them, so it
stays last; labels are not instructions and stay where they are.

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
from heapq import heapify, heappop, heappush
from typing import ClassVar

import networkx as nx

from ptxopt import opcodes
from ptxopt.analysis import build_cfg, estimated_latency, heights, topological_orders_respect
from ptxopt.analysis.alias import noalias_params, overlapping_symbols, pointer_roots
from ptxopt.analysis.dag import block_dag
from ptxopt.ir import Comment, Function, Loc, Module
from ptxopt.passes.base import ChangeReport, FunctionPass
from ptxopt.passes.families import REORDER


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
    runs: list[_Run] = []
    for k, iid in enumerate(block.iids):
        path = cfg.sites[iid]
        scope, idx = path[:-1], path[-1]
        cur = runs[-1] if runs else None
        if cur is not None and cur.scope == scope and all(
                type(s) is Loc or type(s) is Comment for s in cur.items[cur.indices[-1] + 1:idx]):
            cur.indices.append(idx)
            continue
        node = fn.body
        for i in scope:
            node = node.items[i]
        runs.append(_Run(node.items, scope, [idx], k))
    return runs


def _groups(run: _Run) -> tuple[int, list[list]]:
    """The run's span start and one statement group per instruction: the
    ``.loc``/comment lines before it, it, its trailing comments."""
    items, out = run.items, []
    start = run.indices[0]
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


def _schedule(dag: nx.DiGraph, lo: int, hi: int, keys: list, bottom_up: bool = False) -> list[int]:
    """List-schedule nodes ``lo..hi-1``: the ready node with the smallest key
    first (keys are unique). Bottom-up fills the schedule from its end."""
    before, after = (dag.succ, dag.pred) if bottom_up else (dag.pred, dag.succ)
    whole = lo == 0 and hi == len(dag)
    waiting: dict[int, int] = {}
    heap = []
    for v in range(lo, hi):
        n = len(before[v]) if whole else sum(1 for u in before[v] if lo <= u < hi)
        if n:
            waiting[v] = n
        else:
            heap.append((keys[v], v))
    heapify(heap)
    order = []
    while heap:
        v = heappop(heap)[1]
        order.append(v)
        for w in after[v]:
            if lo <= w < hi:
                n = waiting[w] - 1
                waiting[w] = n
                if not n:
                    heappush(heap, (keys[w], w))
    return order[::-1] if bottom_up else order


def _interleave(dag: nx.DiGraph, lo: int, hi: int, mem: list[bool]) -> list[int]:
    """Top-down: the other kind (memory / arithmetic) than the last one
    placed when one is ready, else the earliest ready instruction."""
    pred, succ = dag.pred, dag.succ
    waiting: dict[int, int] = {}
    heaps: tuple[list, list] = ([], [])  # arithmetic, memory
    for v in range(lo, hi):
        n = sum(1 for u in pred[v] if u >= lo)
        if n:
            waiting[v] = n
        else:
            heaps[mem[v]].append(v)
    for h in heaps:
        heapify(h)
    order: list[int] = []
    last = None
    while heaps[0] or heaps[1]:
        a, m = heaps
        if last is not None and heaps[not last]:
            h = heaps[not last]  # alternate
        elif not a or not m:
            h = a or m
        else:
            h = a if a[0] < m[0] else m  # original order
        v = heappop(h)
        last = mem[v]
        order.append(v)
        for w in succ[v]:
            if w < hi:
                n = waiting[w] - 1
                waiting[w] = n
                if not n:
                    heappush(heaps[mem[w]], w)
    return order


def _reaches(dag: nx.DiGraph, marked: list[bool], forward: bool) -> list[bool]:
    """For each node: is a marked node among its descendants (``forward``)
    or its ancestors?"""
    n = len(marked)
    out = [False] * n
    nbrs = dag.succ if forward else dag.pred
    for v in (range(n - 1, -1, -1) if forward else range(n)):
        out[v] = any(marked[w] or out[w] for w in nbrs[v])
    return out


@dataclass(frozen=True)
class _Reorder(FunctionPass):
    family: ClassVar[str] = REORDER

    def order(self, dag: nx.DiGraph, lo: int, hi: int, ctx: dict) -> list[int]:
        raise NotImplementedError

    def run_function(self, fn: Function, report: ChangeReport, module: Module) -> None:
        cfg = build_cfg(fn)
        noalias = noalias_params(fn)
        roots = pointer_roots(cfg) if noalias else {}
        overlap = overlapping_symbols(fn, module)
        for block in cfg.blocks:
            if len(block.instructions) < 2:
                continue
            where = block.label or f"#{block.index}"
            line = next((i.line for i in block.instructions if i.line), 0)
            runs = _runs(fn, cfg, block)
            if len(runs) > 1:
                nested = any(r.scope for r in runs)
                why = ("a nested { } scope splits it: nothing moves into or out of the scope"
                       if nested else "non-instruction statements split it: they stay in place")
                report.refuse(fn.name, line, f"block {where}: {why}; "
                              f"scheduled only within each of its {len(runs)} runs")
            movable = [r for r in runs if len(r.indices) > 1]
            if not movable:
                continue
            dag = block_dag(cfg, block.index, roots=roots, noalias=noalias, overlap=overlap)
            ctx: dict = {}
            order: list[int] = []
            for r in runs:
                order += self.order(dag, r.lo, r.hi, ctx) if len(r.indices) > 1 else [r.lo]
            moved = sum(1 for k, v in enumerate(order) if k != v)
            if not moved:
                continue
            if not topological_orders_respect(dag, order):
                raise AssertionError(f"{self.name}: schedule of {fn.name} block {where} "
                                     "violates a dependency (a bug in the scheduler)")
            for r in movable:
                start, groups = _groups(r)
                new = [s for v in order[r.lo:r.hi] for s in groups[v - r.lo]]
                r.items[start:start + len(new)] = new
            report.change(fn.name, line, f"block {where}: {moved} of "
                          f"{len(block.instructions)} instructions moved")


def _instructions(dag) -> list:
    """Node ``v``'s instruction at index ``v`` (one pass over the node data;
    per-node ``dag.nodes[v]`` lookups cost ~10 us each)."""
    out = [None] * len(dag)
    for v, ins in dag.nodes(data="ins"):
        out[v] = ins
    return out


@dataclass(frozen=True)
class ReorderCriticalPath(_Reorder):
    name: ClassVar[str] = "reorder_cp"
    description: ClassVar[str] = \
        "list-schedule each basic block by latency-weighted critical-path length"

    def order(self, dag, lo, hi, ctx):
        if "keys" not in ctx:
            h = heights(dag, estimated_latency)
            ins = _instructions(dag)
            ctx["keys"] = [(ins[v].opcode not in opcodes.PREFETCHES, -h[v], v)
                           for v in range(len(h))]
        return _schedule(dag, lo, hi, ctx["keys"])


@dataclass(frozen=True)
class ReorderInterleave(_Reorder):
    name: ClassVar[str] = "reorder_il"
    description: ClassVar[str] = \
        "list-schedule each basic block alternating memory and arithmetic instructions"

    def order(self, dag, lo, hi, ctx):
        if "mem" not in ctx:
            ctx["mem"] = [opcodes.is_memory(i) for i in _instructions(dag)]
        return _interleave(dag, lo, hi, ctx["mem"])


@dataclass(frozen=True)
class ReorderLoadsFirst(_Reorder):
    name: ClassVar[str] = "reorder_lf"
    description: ClassVar[str] = \
        "list-schedule each basic block with loads as early as dependencies allow"

    def order(self, dag, lo, hi, ctx):
        if "keys" not in ctx:
            load = [opcodes.role(i) == "load" for i in _instructions(dag)]
            feeds = _reaches(dag, load, forward=True)
            ctx["keys"] = [(0 if load[v] else 1 if feeds[v] else 2, v) for v in range(len(load))]
        return _schedule(dag, lo, hi, ctx["keys"])


@dataclass(frozen=True)
class ReorderStoresLast(_Reorder):
    name: ClassVar[str] = "reorder_sl"
    description: ClassVar[str] = \
        "list-schedule each basic block with stores as late as dependencies allow"

    def order(self, dag, lo, hi, ctx):
        if "keys" not in ctx:
            store = [opcodes.role(i) == "store" for i in _instructions(dag)]
            follows = _reaches(dag, store, forward=False)
            ctx["keys"] = [(0 if store[v] else 1 if follows[v] else 2, -v) for v in range(len(store))]
        return _schedule(dag, lo, hi, ctx["keys"], bottom_up=True)
