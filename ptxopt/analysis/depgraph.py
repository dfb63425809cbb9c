"""A block's dependencies in linear size: what the list schedulers walk.

:func:`ptxopt.analysis.dag.build_dag` materialises every constraint as an
edge, and memory makes that quadratic: each store of the 16x16x16 gemm tile
gets an edge from each of the 512 loads through unrelated pointers before it
(~150k edges, a few hundred ms to build). A scheduler needs only the *partial
order* those edges imply, and :class:`DepGraph` stores the same partial order
in O(n) edges by adding **join nodes**:

* memory accesses are grouped as ``build_dag`` indexes them (loads or stores,
  state space, base key), and the groups are restarted at each ordering
  point;
* when an access conflicts with *every* earlier access of a group (another
  base that may alias, or the same base in another space or with an unknown
  size), it depends on one join node of that group instead of on each
  access: a join node depends on the group's accesses since its previous
  join node and on that join node, so it follows every access of the group
  so far. Consecutive conflicting accesses share one join node;
* where only some accesses of a group conflict (same base, the offsets
  decide; any ``.noalias`` parameter rule) the edges are explicit, found
  through an offset index rather than by scanning the group;
* register (raw/war/waw), ordering-point and warp-collective edges are the
  DAG's, explicitly.

So "u must precede v" (a path from u to v, join nodes included) holds in the
DepGraph exactly when it holds in ``build_dag``'s DAG for the same input;
``tests/analysis/test_depgraph.py`` checks that on the corpus and on random and
adversarial kernels. Join nodes have no instruction and no latency: longest
paths, reachability and list schedules over real nodes are therefore the
DAG's (:mod:`ptxopt.analysis.schedule`).

Node numbering: ``0..n-1`` are the block's instructions in order, ``n..``
the join nodes; :attr:`DepGraph.topo` lists all nodes in a topological order
in which real nodes keep their index order.
"""

from __future__ import annotations

from typing import Sequence

from ptxopt.ptx import opcodes, operand_facts
from ptxopt.analysis.alias import ALIASING_SPACES, Access, base_key, may_alias
from ptxopt.analysis.cfg import CFG, instr_defs_uses
from ptxopt.analysis.regdeps import RegisterWalk
from ptxopt.ptx.ir import Instruction
from ptxopt.ptx.operand_facts import ALIAS_WINDOW, alias_offset


class DepGraph:
    """Predecessor and successor lists over real and join nodes (see module doc).

    ``n``: number of instructions; ``preds[v]`` / ``succs[v]`` for every node
    (lists of node ids, each pair at most once); ``topo``: every node, sources
    first, real nodes in index order; ``instructions``: the block's
    instructions. :meth:`freeze` makes the lists tuples (what the analysis
    manager hands out: one graph is shared by every caller of one block).
    """

    __slots__ = ("n", "preds", "succs", "topo", "instructions", "_frozen")

    def __init__(self, instructions: Sequence[Instruction], preds: list[list[int]], topo: list[int]):
        self.instructions = list(instructions)
        self.n = len(self.instructions)
        self.preds = preds
        self.topo = topo
        succs: list[list[int]] = [[] for _ in preds]
        for v, ps in enumerate(preds):
            for u in ps:
                succs[u].append(v)
        self.succs = succs

    def __setattr__(self, name: str, value) -> None:
        if getattr(self, "_frozen", False):
            raise AttributeError(f"a frozen DepGraph is read-only (cannot set {name})")
        object.__setattr__(self, name, value)

    def freeze(self) -> DepGraph:
        """Make the lists tuples and refuse assignment; returns ``self``."""
        self.instructions = tuple(self.instructions)
        self.preds = tuple(map(tuple, self.preds))
        self.succs = tuple(map(tuple, self.succs))
        self.topo = tuple(self.topo)
        self._frozen = True
        return self

    @property
    def size(self) -> int:
        """Real plus join nodes."""
        return len(self.preds)

    def number_of_edges(self) -> int:
        return sum(len(p) for p in self.preds)

    def precedes(self) -> list[int]:
        """For each real node, a bitmask of the real nodes that must come
        before it (the transitive closure; for tests and small blocks)."""
        n = self.n
        anc = [0] * self.size
        for v in self.topo:
            m = 0
            for u in self.preds[v]:
                m |= anc[u] | (1 << u if u < n else 0)
            anc[v] = m
        return anc[:n]


class _Group:
    """The accesses of one (loads|stores, space, base key) group since the
    last ordering point: an offset index for same-base checks and the join
    node bookkeeping."""

    __slots__ = ("accs", "sized", "unsized", "maxsize", "pending", "join")

    def __init__(self):
        self.accs: list[Access] = []
        self.sized: dict[int, list[Access]] = {}
        self.unsized: list[int] = []
        self.maxsize = 0
        self.pending: list[int] = []
        self.join = -1

    def add(self, acc: Access) -> None:
        self.accs.append(acc)
        self.pending.append(acc.node)
        if acc.size is None:
            self.unsized.append(acc.node)
        else:
            self.sized.setdefault(acc.offset, []).append(acc)
            if acc.size > self.maxsize:
                self.maxsize = acc.size

    def joined(self, preds: list[list[int]], topo: list[int]) -> int:
        """A node that follows every access of the group so far."""
        if self.pending:
            p = self.pending
            if self.join >= 0:
                p.append(self.join)
            self.join = len(preds)
            preds.append(p)
            topo.append(self.join)
            self.pending = []
        return self.join

    def overlapping(self, off: int, size: int, out: list[int]) -> None:
        """Nodes of same-base accesses whose bytes may overlap ``[off, off+size)``."""
        out.extend(self.unsized)
        lo = off - self.maxsize + 1
        if off + size - lo <= len(self.sized):
            get = self.sized.get
            for o in range(lo, off + size):
                accs = get(o)
                if accs:
                    for b in accs:
                        if o + b.size > off:
                            out.append(b.node)
        else:
            for o, accs in self.sized.items():
                if o < off + size:
                    for b in accs:
                        if o + b.size > off:
                            out.append(b.node)


def build_depgraph(
    instructions: Sequence[Instruction],
    du: Sequence[tuple[Sequence[str], Sequence[str]]] | None = None,
    *,
    roots: dict[str, str] | None = None,
    noalias: frozenset[str] = frozenset(),
    overlap: frozenset[str] = frozenset(),
) -> DepGraph:
    """The :class:`DepGraph` of a straight-line instruction sequence; the
    arguments are :func:`~ptxopt.analysis.dag.build_dag`'s
    (:meth:`ptxopt.analysis.manager.AnalysisManager.depgraph` remembers it)."""
    return _build(instructions, du, roots or {}, frozenset(noalias), frozenset(overlap))


def block_depgraph(cfg: CFG, block: int, *, roots: dict[str, str], noalias: frozenset[str],
                   overlap: frozenset[str]) -> DepGraph:
    """:func:`build_depgraph` of one block of ``cfg`` with its scope-aware
    defs/uses (the alias facts as :func:`~ptxopt.analysis.dag.block_dag` takes them)."""
    b = cfg.blocks[block]
    return build_depgraph(b.instructions, cfg.du[b.start:b.start + len(b.instructions)], roots=roots,
                          noalias=noalias, overlap=overlap)


def _build(instructions, du, roots, noalias, overlap) -> DepGraph:
    n = len(instructions)
    if du is None:
        du = [instr_defs_uses(ins) for ins in instructions]
    preds: list[list[int]] = [[] for _ in range(n)]
    topo: list[int] = []
    facts = operand_facts.facts
    regs = RegisterWalk()  # the DAG's own register walk
    step = regs.step_nodes
    # a register base's value is named by the register's last definition
    # before the access (-1: none in the block), as build_dag's per-register
    # version counts do: two accesses see the same value exactly when no
    # definition lies between them
    last_def = regs.last_def
    # memory / ordering state, restarted at each ordering point:
    # tables[store?][space][base key] -> _Group
    tables: tuple[dict, dict] = ({}, {})
    last_order = -1
    last_collective = -1

    for i, ins in enumerate(instructions):
        defs, uses = du[i]
        p = preds[i]
        f = ins._facts or facts(ins)
        role = f.role
        if role == "pure":  # the common case: registers and the last ordering point only
            step(i, defs, uses, ins.guard is not None, p)
            if last_order >= 0:
                p.append(last_order)
            if len(p) > 1 and len(set(p)) != len(p):  # each pair once (first occurrences, in order)
                preds[i] = list(dict.fromkeys(p))
            topo.append(i)
            continue
        if role == "load" or role == "store":
            fa = f.address  # its key before this instruction's own definitions
            if fa is not None and fa.kind == "reg":
                key, off = ("reg", fa.name, last_def.get(fa.name, -1)), fa.offset
            else:
                key, off = base_key(fa, _NO_VERSIONS)
        step(i, defs, uses, ins.guard is not None, p)

        if role == "order":
            p.extend(range(last_order + 1, i))
            if last_order >= 0:
                p.append(last_order)
            last_order = i
            tables[0].clear()
            tables[1].clear()
            last_collective = -1
        else:
            if last_order >= 0:
                p.append(last_order)
            if role == "collective":
                if last_collective >= 0:
                    p.append(last_collective)
                last_collective = i
            elif role == "load" or role == "store":
                _access(ins, fa, key, off, i, role == "store", p, preds, topo, tables, roots, noalias, overlap)
        if len(p) > 1 and len(set(p)) != len(p):
            preds[i] = list(dict.fromkeys(p))
        topo.append(i)
    # (a join node's predecessors are distinct already: accesses of its group
    # since the previous join node, each added once, and that join node)
    return DepGraph(instructions, preds, topo)


_NO_VERSIONS: dict[str, int] = {}  # base_key of a symbol, an absolute address or no address reads none


def _access(ins, fa, key, off, i, is_store, p, preds, topo, tables, roots, noalias, overlap) -> None:
    """The memory dependencies of access ``i`` (``p``: its predecessor list;
    ``fa``: its address fact, ``key`` and ``off`` its base key and offset)."""
    space = fa.space if fa is not None else opcodes.mem_space(ins)
    root = roots.get(key[1]) if key is not None and key[0] == "reg" else None
    size = fa.size if fa is not None else opcodes.access_bytes(ins)
    # same-base offsets are compared as integers only inside the window where
    # that is exact modulo every address width; outside it the access
    # overlaps the whole group (as :func:`~ptxopt.analysis.alias.may_alias` says)
    o = alias_offset(off)
    if o is None:
        o, size = 0, None
    elif size is not None and size > ALIAS_WINDOW:
        size = None
    acc = Access(i, is_store, space, key, o, size, root)
    per_access = root is not None and bool(noalias)  # the .noalias rule needs each pair
    key_is_sym = key is not None and key[0] == "sym"
    for table in ((tables[0], tables[1]) if is_store else (tables[1],)):
        for sp in ALIASING_SPACES[space]:
            groups = table.get(sp)
            if not groups:
                continue
            for gkey, grp in groups.items():
                if per_access:
                    for b in grp.accs:
                        if may_alias(acc, b, noalias, overlap):
                            p.append(b.node)
                elif gkey == key:
                    if key is not None and sp == space and size is not None:
                        grp.overlapping(o, size, p)  # same base, same space: the offsets decide
                    else:
                        p.append(grp.joined(preds, topo))  # may_alias holds for every pair
                elif key_is_sym and gkey is not None and gkey[0] == "sym" \
                        and not (key[1] in overlap and gkey[1] in overlap):
                    continue  # distinct variables
                else:
                    p.append(grp.joined(preds, topo))
    groups = tables[is_store].get(space)
    if groups is None:
        groups = tables[is_store][space] = {}
    grp = groups.get(key)
    if grp is None:
        grp = groups[key] = _Group()
    grp.add(acc)
