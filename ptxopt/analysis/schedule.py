"""List scheduling over a :class:`~ptxopt.analysis.depgraph.DepGraph`.

The ``reorder_*`` passes are list schedulers: repeatedly place a *ready*
instruction (every predecessor placed) chosen by a priority. Here readiness
is a counter per node over the DepGraph's predecessor lists; a join node (no
instruction) is placed the moment it becomes ready, releasing its
successors, so a store waiting on 500 loads through unrelated pointers waits
on one counter instead of 500 edges.

A block may be split into *runs* (:mod:`ptxopt.passes.reorder`): each run is
scheduled on its own and the runs keep their order. Every function takes the
runs as ``(lo, hi)`` index ranges covering ``0..n-1`` in order.

Because a DepGraph has exactly the partial order of
:func:`~ptxopt.analysis.dag.build_dag`'s DAG on the real nodes, longest
paths (:func:`heights`), reachability (:func:`reaches`) and the schedules
are the ones the DAG gives; :func:`respects` is the legality check of a
schedule against it.
"""

from __future__ import annotations

from heapq import heapify, heappop, heappush
from typing import Callable, Sequence

from ptxopt.analysis.depgraph import DepGraph


def heights(g: DepGraph, latency: Callable | Sequence) -> list[float]:
    """Longest path from each node (its latency included; join nodes weigh
    0) to any sink. ``latency``: a function of an instruction, or each real
    node's latency already."""
    n, succs = g.n, g.succs
    lat = [latency(i) for i in g.instructions] if callable(latency) else latency
    out = [0] * g.size
    for v in reversed(g.topo):
        best = 0
        for w in succs[v]:
            x = out[w]
            if x > best:
                best = x
        out[v] = best + lat[v] if v < n else best
    return out


def reaches(g: DepGraph, marked: Sequence[bool], forward: bool) -> list[bool]:
    """For each real node: is a marked real node among its descendants
    (``forward``) or its ancestors?"""
    n = g.n
    out = [False] * g.size
    nbrs = g.succs if forward else g.preds
    for v in (reversed(g.topo) if forward else g.topo):
        for w in nbrs[v]:
            if out[w] or (w < n and marked[w]):
                out[v] = True
                break
    return out[:n]


def list_schedule(g: DepGraph, runs: Sequence[tuple[int, int]], keys: Sequence,
                  bottom_up: bool = False) -> list[int]:
    """Each run in turn: the ready node with the smallest key first (keys
    are unique per real node). Bottom-up fills each run from its end,
    readiness meaning every successor placed."""
    n = g.n
    before, after = (g.succs, g.preds) if bottom_up else (g.preds, g.succs)
    waiting = list(map(len, before))
    # the heap holds each node's rank in key order (ints compare faster than
    # the policies' key tuples; keys are unique, so the order is the same)
    by_key = sorted(range(n), key=keys.__getitem__)
    rank = sorted(range(n), key=by_key.__getitem__)  # the inverse permutation: rank[by_key[r]] == r
    pieces = []
    for lo, hi in (reversed(runs) if bottom_up else runs):
        heap = [rank[v] for v in range(lo, hi) if not waiting[v]]
        heapify(heap)
        order = []
        joins: list[int] = []
        while heap:
            v = by_key[heappop(heap)]
            order.append(v)
            # release v's successors, and those of join nodes it completes
            # (the order of the pushes does not matter: ranks are unique)
            for w in after[v]:
                c = waiting[w] - 1
                waiting[w] = c
                if not c:
                    if w >= n:
                        joins.append(w)  # a join node: placed at once
                    elif lo <= w < hi:
                        heappush(heap, rank[w])
            while joins:
                for w in after[joins.pop()]:
                    c = waiting[w] - 1
                    waiting[w] = c
                    if not c:
                        if w >= n:
                            joins.append(w)
                        elif lo <= w < hi:
                            heappush(heap, rank[w])
        if len(order) != hi - lo:
            raise AssertionError("list_schedule: a dependency cycle or a dependency on a later run")
        pieces.append(order[::-1] if bottom_up else order)
    if bottom_up:
        pieces.reverse()
    return [v for piece in pieces for v in piece]


def interleave(g: DepGraph, runs: Sequence[tuple[int, int]], mem: Sequence[bool]) -> list[int]:
    """Top-down, each run in turn: the other kind (memory / arithmetic) than
    the last one placed when one is ready, else the earliest ready node."""
    n, succs = g.n, g.succs
    waiting = list(map(len, g.preds))
    out: list[int] = []
    for lo, hi in runs:
        heaps: tuple[list, list] = ([], [])  # arithmetic, memory
        for v in range(lo, hi):
            if not waiting[v]:
                heaps[mem[v]].append(v)
        for h in heaps:
            heapify(h)
        last = None
        placed = 0
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
            out.append(v)
            placed += 1
            stack = [v]
            while stack:
                for w in succs[stack.pop()]:
                    c = waiting[w] - 1
                    waiting[w] = c
                    if not c:
                        if w >= n:
                            stack.append(w)
                        elif w < hi:
                            heappush(heaps[mem[w]], w)
        if placed != hi - lo:
            raise AssertionError("interleave: a dependency cycle or a dependency on a later run")
    return out


def respects(g: DepGraph, order: Sequence[int]) -> bool:
    """True when ``order`` lists every real node once and puts each one after
    all the real nodes the graph orders before it."""
    n = g.n
    if len(order) != n:
        return False
    pos = [-1] * g.size
    for k, v in enumerate(order):
        if not (0 <= v < n) or pos[v] >= 0:
            return False
        pos[v] = k
    preds = g.preds
    for v in g.topo:
        if v < n:
            pv = pos[v]
            for u in preds[v]:
                if pos[u] >= pv:
                    return False
        else:  # a join node: the latest position of a real node before it
            pos[v] = max(pos[u] for u in preds[v])
    return True
