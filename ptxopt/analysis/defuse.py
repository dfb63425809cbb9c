"""Reaching definitions, def-use chains and liveness over a :class:`CFG`.

Registers only (predicates included, special registers excluded), with the
per-instruction ``(defs, uses)`` of :attr:`CFG.du`: every component of a
vector destination ``{%f1, %f2}`` and both halves of a ``%p|%q`` pair are
definitions; the guard is a use.

**Guarded definitions do not kill.** ``@%p mov %r1, 0`` may not execute, so
the definitions of ``%r1`` that reached it still reach past it (Triton's
``mov %r1, 0x0; @%p ld.global %r1, [...]`` idiom relies on exactly this),
and for liveness it does not end ``%r1``'s live range above it.

Both analyses are the textbook iterative bit-vector dataflow (Python ints
as bit sets), visiting blocks in reverse postorder (forward problem) or
postorder (backward problem) until nothing changes; results are exact for
the flattened CFG and deterministic.
"""

from __future__ import annotations

from dataclasses import dataclass

from ptxopt.analysis.cfg import CFG


def _bits(x: int) -> list[int]:
    """Indices of the set bits of ``x``, ascending (linear in its length)."""
    s = bin(x)[:1:-1]
    return [i for i, c in enumerate(s) if c == "1"]


# ---------------------------------------------------------------------------
# Reaching definitions
# ---------------------------------------------------------------------------


@dataclass
class ReachingDefs:
    """Result of :func:`reaching_definitions`.

    ``def_sites[d] = (iid, reg)`` numbers every definition; ``reach_in[b]``
    and ``reach_out[b]`` are the definition ids reaching the start/end of
    block ``b``; ``ud[(iid, reg)]`` the iids whose definition of ``reg`` may
    reach that use (empty: used before any definition); ``du[(iid, reg)]``
    the iids that may read the value that definition wrote.
    """

    def_sites: list[tuple[int, str]]
    reach_in: list[frozenset[int]]
    reach_out: list[frozenset[int]]
    ud: dict[tuple[int, str], tuple[int, ...]]
    du: dict[tuple[int, str], tuple[int, ...]]

    def reaching(self, iid: int, reg: str) -> tuple[int, ...]:
        """Definitions (iids) of ``reg`` that may reach instruction ``iid``'s use."""
        return self.ud.get((iid, reg), ())

    def uses_of(self, iid: int, reg: str) -> tuple[int, ...]:
        return self.du.get((iid, reg), ())


def reaching_definitions(cfg: CFG) -> ReachingDefs:
    def_sites: list[tuple[int, str]] = []
    regmask: dict[str, int] = {}
    for iid, (defs, _) in enumerate(cfg.du):
        for r in defs:
            regmask[r] = regmask.get(r, 0) | (1 << len(def_sites))
            def_sites.append((iid, r))
    # def ids per iid, in order
    first_def = [0] * (len(cfg.du) + 1)
    k = 0
    for iid, (defs, _) in enumerate(cfg.du):
        first_def[iid] = k
        k += len(defs)
    first_def[len(cfg.du)] = k

    nb = len(cfg.blocks)
    gen = [0] * nb
    kill = [0] * nb
    for b in cfg.blocks:
        g = kl = 0
        for iid in b.iids:
            guarded = cfg.instructions[iid].guard is not None
            d = first_def[iid]
            for r in cfg.du[iid][0]:
                bit = 1 << d
                d += 1
                if guarded:
                    g |= bit
                else:
                    m = regmask[r]
                    g = (g & ~m) | bit
                    kl |= m
        gen[b.index], kill[b.index] = g, kl

    rin = [0] * nb
    rout = list(gen)
    order = cfg.reverse_postorder()
    changed = True
    while changed:
        changed = False
        for b in order:
            x = 0
            for p in cfg.blocks[b].preds:
                x |= rout[p]
            rin[b] = x
            y = (x & ~kill[b]) | gen[b]
            if y != rout[b]:
                rout[b] = y
                changed = True

    ud: dict[tuple[int, str], tuple[int, ...]] = {}
    du_lists: dict[tuple[int, str], list[int]] = {}
    for b in cfg.blocks:
        local: dict[str, list[int]] = {}
        x = rin[b.index]
        for iid in b.iids:
            defs, uses = cfg.du[iid]
            for r in uses:
                cur = local.get(r)
                if cur is None:
                    cur = local[r] = [def_sites[d][0] for d in _bits(x & regmask.get(r, 0))]
                ud[(iid, r)] = tuple(cur)
                for d in cur:
                    du_lists.setdefault((d, r), []).append(iid)
            guarded = cfg.instructions[iid].guard is not None
            for r in defs:
                if guarded:
                    cur = local.get(r)
                    if cur is None:
                        cur = [def_sites[d][0] for d in _bits(x & regmask.get(r, 0))]
                    local[r] = cur + [iid]
                else:
                    local[r] = [iid]
    du: dict[tuple[int, str], tuple[int, ...]] = {}
    for iid, r in def_sites:
        du[(iid, r)] = tuple(dict.fromkeys(du_lists.get((iid, r), ())))
    return ReachingDefs(def_sites, [frozenset(_bits(x)) for x in rin],
                        [frozenset(_bits(x)) for x in rout], ud, du)


# ---------------------------------------------------------------------------
# Liveness
# ---------------------------------------------------------------------------


@dataclass
class Liveness:
    """Result of :func:`liveness`: ``live_in[b]`` / ``live_out[b]`` are the
    register names live at the start / end of block ``b``."""

    cfg: CFG
    live_in: list[frozenset[str]]
    live_out: list[frozenset[str]]

    def live_after(self, block: int) -> list[frozenset[str]]:
        """Registers live just after each instruction of ``block``."""
        b = self.cfg.blocks[block]
        live = set(self.live_out[block])
        out: list[frozenset[str]] = []
        for iid in reversed(b.iids):
            out.append(frozenset(live))
            step_backward(self.cfg, iid, live)
        return out[::-1]

    def live_before(self, block: int) -> list[frozenset[str]]:
        """Registers live just before each instruction of ``block``."""
        b = self.cfg.blocks[block]
        live = set(self.live_out[block])
        out: list[frozenset[str]] = []
        for iid in reversed(b.iids):
            step_backward(self.cfg, iid, live)
            out.append(frozenset(live))
        return out[::-1]


def step_backward(cfg: CFG, iid: int, live: set[str]) -> None:
    """Turn the live set after instruction ``iid`` into the one before it."""
    defs, uses = cfg.du[iid]
    if cfg.instructions[iid].guard is None:
        live.difference_update(defs)
    live.update(uses)


def liveness(cfg: CFG) -> Liveness:
    index: dict[str, int] = {}
    names: list[str] = []

    def bit(r: str) -> int:
        i = index.get(r)
        if i is None:
            i = index[r] = len(names)
            names.append(r)
        return 1 << i

    nb = len(cfg.blocks)
    use = [0] * nb
    dfn = [0] * nb
    for b in cfg.blocks:
        u = d = 0
        for iid in reversed(b.iids):
            defs, uses = cfg.du[iid]
            if cfg.instructions[iid].guard is None:
                for r in defs:
                    m = bit(r)
                    d |= m
                    u &= ~m
            for r in uses:
                u |= bit(r)
        use[b.index], dfn[b.index] = u, d

    lin = list(use)
    lout = [0] * nb
    order = cfg.reverse_postorder()[::-1]
    changed = True
    while changed:
        changed = False
        for b in order:
            x = 0
            for s in cfg.blocks[b].succs:
                x |= lin[s]
            lout[b] = x
            y = use[b] | (x & ~dfn[b])
            if y != lin[b]:
                lin[b] = y
                changed = True

    def to_set(x: int) -> frozenset[str]:
        return frozenset(names[i] for i in _bits(x))

    return Liveness(cfg, [to_set(x) for x in lin], [to_set(x) for x in lout])


# ---------------------------------------------------------------------------
# Definite definition ("defined on every path")
# ---------------------------------------------------------------------------


def defined_on_every_path(cfg: CFG) -> list[frozenset[str]]:
    """Per block, the registers an *unguarded* definition has written on every
    path from the entry to the block's start (a forward must-problem:
    intersection over predecessors). Unreachable blocks get every register
    (nothing runs there). An inserted hint may read only such registers: a
    guarded load may read a register its guard keeps undefined, a hint placed
    elsewhere has no such excuse."""
    n = len(cfg.blocks)
    gen: list[set[str]] = []
    for b in cfg.blocks:
        g: set[str] = set()
        for iid in b.iids:
            if cfg.instructions[iid].guard is None:
                g.update(cfg.du[iid][0])
        gen.append(g)
    universe = frozenset(r for d, _ in cfg.du for r in d)
    out: list[frozenset[str]] = [universe] * n
    inn: list[frozenset[str]] = [universe] * n
    order = cfg.reverse_postorder()
    changed = True
    while changed:
        changed = False
        for b in order:
            preds = cfg.blocks[b].preds
            i = frozenset() if b == cfg.entry or not preds else frozenset.intersection(*(out[p] for p in preds))
            o = i | gen[b]
            if i != inn[b] or o != out[b]:
                inn[b], out[b] = i, o
                changed = True
    return inn
