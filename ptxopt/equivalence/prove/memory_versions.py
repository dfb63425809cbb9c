"""Memory as versioned state: which stores a load can see, in a canonical form.

Within a basic block, memory is a chain of *segments* separated by ordering
points (barriers, fences, atomics, volatile accesses, calls, clock reads,
unknown opcodes: :func:`ptxopt.ptx.operand_facts.role` ``order``). The last ordering
point is the segment's *epoch* (at block entry: the block's entry memory).

* A **store** node is ``(store, key, addr, size, value, guard, epoch, deps)``
  with ``deps`` the set of earlier stores *of its segment* that may alias it.
* A **load** node is ``(load, key, addr, size, epoch, deps)`` with ``deps``
  the set of earlier stores of its segment that may alias it.
* The memory after a run is ``(mem, epoch, stores of the last segment)``; an
  ordering point's node holds the memory before it.

Why this is a proof: stores of one segment that are not in each other's
``deps`` are disjoint (the alias rules below are sound), so they commute;
every pair that may overlap is ordered by ``deps``, which is part of the node.
Two runs producing the same set of store nodes therefore leave the same
memory, whatever order each wrote them in; a load with the same ``deps``
reads the same bytes. A store moved above an aliasing load, or two aliasing
stores swapped, or anything moved across an ordering point, changes a node.

The alias rules are :mod:`ptxopt.analysis.alias`'s, applied to value-graph
addresses instead of register versions: aliasing state spaces
(:data:`~ptxopt.analysis.alias.ALIASING_SPACES`); the same base value in the
same space with disjoint constant byte ranges; two different variables,
unless both are ``.extern .shared`` (:func:`~ptxopt.analysis.alias.overlapping_symbols`);
addresses rooted at two different ``.noalias`` pointer parameters. Pointer
parameters without ``.noalias`` may alias each other (a launch may pass one
buffer twice).
"""

from __future__ import annotations

from ptxopt.analysis.alias import ALIASING_SPACES
from ptxopt.equivalence.prove.values import Graph

_PTR_MOVES = ("cvta.", "mov.")
# Offsets are kept as signed 64-bit integers, but addresses wrap: modulo 2**64,
# and modulo 2**32 for a 32-bit base register (``ld.shared.u32 %r, [%r4+8]``),
# so two ranges far apart as integers can be adjacent. Below this bound two
# offsets differ by less than 2**31 and no range can wrap either way, so the
# integer test is exact.
_SAFE_OFFSET = 1 << 30


def disjoint(oa: int, za: int | None, ob: int, zb: int | None) -> bool:
    """Are the byte ranges ``[oa, oa+za)`` and ``[ob, ob+zb)`` off one base
    disjoint modulo 2**64? False when unsure (a size unknown, or offsets so
    large that a range could wrap around the address space)."""
    if za is None or zb is None or not (-_SAFE_OFFSET < oa < _SAFE_OFFSET and -_SAFE_OFFSET < ob < _SAFE_OFFSET):
        return False
    return oa + za <= ob or ob + zb <= oa


class AliasOracle:
    """May two accesses ``(space, addr node, size)`` touch the same bytes?"""

    def __init__(self, graph: Graph, noalias: frozenset[str], overlap: frozenset[str]) -> None:
        self.g = graph
        self.noalias = noalias
        self.overlap = overlap
        self._roots: dict[int, str | None] = {}

    def root(self, node: int, depth: int = 0) -> str | None:
        """The ``.noalias`` parameter a pointer value is derived from, if any."""
        if not self.noalias:
            return None
        r = self._roots.get(node, False)
        if r is not False:
            return r
        n = self.g.nodes[node]
        out = None
        if depth < 32:
            if n[0] == "load" and n[1].startswith("param."):
                a = self.g.nodes[n[2]]
                b = self.g.nodes[a[1]]
                if b[0] == "sym" and b[1] in self.noalias:
                    out = b[1]
            elif n[0] == "op" and n[1].startswith(_PTR_MOVES) and len(n) == 3:
                out = self.root(n[2], depth + 1)
            elif n[0] == "op" and n[1].split(".")[0] in ("add", "sub") and len(n) == 4:
                ra, rb = self.root(n[2], depth + 1), self.root(n[3], depth + 1)
                if ra is not None and rb is None:
                    out = ra
                elif rb is not None and ra is None and n[1].startswith("add"):
                    out = rb
        self._roots[node] = out
        return out

    def may_alias(self, sa: str, aa: int, za: int | None, sb: str, ab: int, zb: int | None) -> bool:
        if sb not in ALIASING_SPACES.get(sa, ALIASING_SPACES["generic"]):
            return False
        na, nb = self.g.nodes[aa], self.g.nodes[ab]
        ba, oa, bb, ob = na[1], na[2], nb[1], nb[2]
        if ba == bb:
            return not (sa == sb and disjoint(oa, za, ob, zb))
        ka, kb = self.g.nodes[ba], self.g.nodes[bb]
        if ka[0] == "sym" and kb[0] == "sym":
            return ka[1] in self.overlap and kb[1] in self.overlap
        ra, rb = self.root(ba), self.root(bb)
        if ra is not None and rb is not None and ra != rb:
            return False
        return True


class MemoryState:
    """The memory of one kernel while one block is executed (see module doc)."""

    def __init__(self, graph: Graph, oracle: AliasOracle, entry: int) -> None:
        self.g = graph
        self.oracle = oracle
        self.epoch = entry
        # stores of the current segment, grouped by (space, base node):
        # group -> list of (store node, offset, size)
        self.groups: dict[tuple[str, int], list[tuple[int, int, int | None]]] = {}
        self.order: list[int] = []  # store nodes of the segment, program order

    def _deps(self, space: str, addr: int, size: int | None) -> frozenset[int]:
        if not self.order:
            return frozenset()
        n = self.g.nodes[addr]
        base, off = n[1], n[2]
        out = []
        for (gs, gb), members in self.groups.items():
            if gb == base and gs == space:
                out.extend(s for s, o, z in members if not disjoint(off, size, o, z))
            elif members and self.oracle.may_alias(space, addr, size, gs,
                                                  self.g.node("addr", gb, members[0][1]), None):
                out.extend(s for s, _, _ in members)
        return frozenset(out)

    def load(self, key: str, space: str, addr: int, size: int | None) -> int:
        return self.g.node("load", key, addr, size, self.epoch, self._deps(space, addr, size))

    def store(self, key: str, space: str, addr: int, size: int | None, value: int,
              guard: int | None) -> int:
        s = self.g.node("store", key, addr, size, value, guard, self.epoch,
                        self._deps(space, addr, size))
        n = self.g.nodes[addr]
        self.groups.setdefault((space, n[1]), []).append((s, n[2], size))
        self.order.append(s)
        return s

    def space_deps(self, space: str) -> frozenset[int]:
        """Every store of the segment in a space that may alias ``space``, at
        any address: what a read whose addresses other lanes supply (an
        ``ldmatrix`` row address comes from lane ``i % 8`` of matrix ``i // 8``)
        may see."""
        spaces = ALIASING_SPACES.get(space, ALIASING_SPACES["generic"])
        return frozenset(s for (gs, _), members in self.groups.items() if gs in spaces for s, _, _ in members)

    def state(self) -> int:
        """The memory now: the epoch plus the set of stores since it."""
        return self.g.node("mem", self.epoch, frozenset(self.order))

    def event(self, key: str, operands: tuple, guard: int | None) -> int:
        """An ordering point: it sees all memory before it, and everything
        after it sees it."""
        e = self.g.node("event", key, operands, guard, self.state())
        self.epoch = e
        self.groups = {}
        self.order = []
        return e
