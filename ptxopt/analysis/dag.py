"""Per-basic-block dependency DAG: what a scheduler must not reorder.

**Representation.** A :class:`networkx.DiGraph` whose nodes are the
instruction indices ``0..n-1`` within the block (node attribute ``ins``).
A pair of nodes has at most one edge; every constraint between them is in
its attributes:

``kinds``  frozenset of ``"raw"``, ``"war"``, ``"waw"``, ``"mem"``, ``"order"``;
``kind``   the strongest of them, by priority raw > waw > war > mem > order
           (deterministic, whatever order the constraints were found in);
``reg``    for register edges: the register of the strongest register
           constraint (the first one found); absent on pure mem/order edges;
``regs``   for register edges: every register involved.

The edge set is sufficient, not transitively closed: some constraints hold
only through a path (an old use before a redefinition, an instruction two
ordering points away). A schedule is legal iff it respects every edge
(:func:`topological_orders_respect`); "must u precede v" is
``nx.has_path(dag, u, v)``.

Every edge goes from a lower to a higher index (the original order is a
topological order; ``dag.graph["index_order"]`` records that), so longest
paths run in one pass over ``range(n)``.

**Register edges** (predicates, vector components and pair halves
included; the guard is a use): a use depends (raw) on every definition of
the register in the block that may reach it (the last unguarded one and any
guarded ones after it); a definition depends (war) on the uses since the
previous definition and (waw) on the previous definition (older uses are
ordered before it through that waw chain). Maps of last definition / uses
since make this linear in the block size; the walk is
:class:`~ptxopt.analysis.regdeps.RegisterWalk`, shared with the DepGraph.

**Memory edges** (``mem``) between a store and an earlier load or store that
may alias (:mod:`ptxopt.analysis.alias`), and a load and an earlier store.
Load-load pairs never get an edge. Earlier accesses are indexed by state
space and base, so only conflicting pairs and same-base pairs are visited.

**Ordering points** (role ``order`` in :mod:`ptxopt.ptx.opcodes`:
barriers, fences, atomics, calls, branches, ``ret``/``exit``, async copies,
volatile/acquire/release accesses, clock reads, unknown opcodes): every
earlier instruction precedes it and every later one follows it. Edges go
from each instruction since the previous ordering point to it, and from it
to each instruction up to the next one: transitively that orders it against
*every* instruction, with O(n) edges. The block's terminator is an ordering
point, so it stays last. Warp collectives (``shfl``...) keep their relative
order (an ``order`` edge between consecutive ones).

**Speed.** The 16x16x16 gemm tile (5,127 instructions, one block, ~150k
edges, nearly all load->store ``mem`` edges between its three unrelated
pointer parameters) builds in ~0.12 s: edges are collected as
``u*n+v -> kinds bitmask``, the adjacency dicts are filled directly, and the
cyclic garbage collector is paused while the ~10^5 attribute dicts are made
(generational GC passes otherwise cost more than the work). Built DAGs are
returned frozen; :meth:`ptxopt.analysis.manager.AnalysisManager.dag` remembers
them by their input, so a search state's features build each block's once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Iterable, NamedTuple, Sequence

if TYPE_CHECKING:  # networkx costs ~0.15 s to import: only what builds or sorts a DAG imports it
    import networkx as nx

from ptxopt.ptx import opcodes, operand_facts
from ptxopt.analysis.alias import (
    ALIASING_SPACES, Access, address_of, base_key, may_alias, noalias_params, overlapping_symbols,
    pointer_roots,
)
from ptxopt.analysis.cfg import CFG, instr_defs_uses
from ptxopt.analysis.regdeps import RegisterWalk
from ptxopt.support.gc_pause import gc_paused
from ptxopt.ptx.ir import Instruction

KIND_PRIORITY = ("raw", "waw", "war", "mem", "order")
_BIT = {k: 1 << i for i, k in enumerate(KIND_PRIORITY)}
RAW, WAW, WAR, MEM, ORDER = (_BIT[k] for k in KIND_PRIORITY)
# kinds bitmask -> (strongest kind, frozenset of kinds), precomputed
_DECODE = {
    m: (KIND_PRIORITY[(m & -m).bit_length() - 1],
        frozenset(k for k in KIND_PRIORITY if m & _BIT[k]))
    for m in range(1, 1 << len(KIND_PRIORITY))
}


def build_dag(
    instructions: Sequence[Instruction],
    du: Sequence[tuple[Sequence[str], Sequence[str]]] | None = None,
    *,
    roots: dict[str, str] | None = None,
    noalias: frozenset[str] = frozenset(),
    overlap: frozenset[str] = frozenset(),
) -> nx.DiGraph:
    """The dependency DAG of a straight-line instruction sequence.

    ``du`` gives ``(defs, uses)`` per instruction (default:
    :func:`~ptxopt.analysis.cfg.instr_defs_uses`); ``roots`` and ``noalias``
    enable the ``.noalias`` parameter rule (:func:`~ptxopt.analysis.alias.pointer_roots`);
    ``overlap`` names the symbols that may share addresses with other symbols
    (:func:`~ptxopt.analysis.alias.overlapping_symbols`).
    """
    import networkx as nx

    with gc_paused():  # ~10^5 small containers: generational GC passes dominate otherwise
        return nx.freeze(_build_dag(instructions, du, roots or {}, noalias, frozenset(overlap)))


def _build_dag(instructions, du, roots, noalias, overlap) -> nx.DiGraph:
    n = len(instructions)
    if du is None:
        du = [instr_defs_uses(ins) for ins in instructions]
    # edges: key u*n+v -> kinds bitmask; regs: key -> [(rank, reg), ...]
    E: dict[int, int] = {}
    R: dict[int, list] = {}
    eget = E.get

    def add_reg(u: int, v: int, bit: int, rank: int, r: str) -> None:
        k = u * n + v
        E[k] = eget(k, 0) | bit
        lst = R.get(k)
        if lst is None:
            R[k] = [(rank, r)]
        else:
            lst.append((rank, r))

    regs = RegisterWalk()
    version: dict[str, int] = {}
    # memory / ordering state (reset at each ordering point)
    loads: dict[str, dict[tuple | None, list[Access]]] = {}
    stores: dict[str, dict[tuple | None, list[Access]]] = {}
    last_order = -1
    last_collective = -1

    for i, ins in enumerate(instructions):
        defs, uses = du[i]
        # -- registers ---------------------------------------------------------
        for u, rank, r in regs.step(i, defs, uses, ins.guard is not None):
            add_reg(u, i, 1 << rank, rank, r)  # rank: the kind's index in KIND_PRIORITY

        # -- memory and ordering -------------------------------------------------
        role = operand_facts.role(ins)
        if role == "order":
            for j in range(last_order + 1, i):
                k = j * n + i
                E[k] = eget(k, 0) | ORDER
            if last_order >= 0:
                k = last_order * n + i
                E[k] = eget(k, 0) | ORDER
            last_order = i
            loads.clear()
            stores.clear()
            last_collective = -1
        else:
            if last_order >= 0:
                k = last_order * n + i
                E[k] = eget(k, 0) | ORDER
            if role == "collective":
                if last_collective >= 0:
                    k = last_collective * n + i
                    E[k] = eget(k, 0) | ORDER
                last_collective = i
            elif role == "load" or role == "store":
                is_store = role == "store"
                fa = address_of(ins)
                space = fa.space if fa is not None else opcodes.mem_space(ins)
                key, off = base_key(fa, version)
                root = roots.get(key[1]) if key is not None and key[0] == "reg" else None
                acc = Access(i, is_store, space, key, off,
                             fa.size if fa is not None else opcodes.access_bytes(ins), root)
                key_is_sym = key is not None and key[0] == "sym"
                for table in ((loads, stores) if is_store else (stores,)):
                    for sp in ALIASING_SPACES[space]:
                        groups = table.get(sp)
                        if not groups:
                            continue
                        for gkey, accs in groups.items():
                            if gkey == key or (root is not None and noalias):
                                # the rules need per-access data
                                for b in accs:
                                    if may_alias(acc, b, noalias, overlap):
                                        k = b.node * n + i
                                        E[k] = eget(k, 0) | MEM
                            elif key_is_sym and gkey is not None and gkey[0] == "sym" \
                                    and not (key[1] in overlap and gkey[1] in overlap):
                                continue  # distinct variables
                            else:
                                for b in accs:
                                    k = b.node * n + i
                                    E[k] = eget(k, 0) | MEM
                target = stores if is_store else loads
                target.setdefault(space, {}).setdefault(key, []).append(acc)
        # definitions change register versions after the access used them
        for r in defs:
            version[r] = version.get(r, 0) + 1

    import networkx as nx

    g = nx.DiGraph(index_order=True)
    g.add_nodes_from((i, {"ins": ins}) for i, ins in enumerate(instructions))
    # Fill the adjacency directly (what add_edges_from does, minus its
    # per-edge checks and attribute-dict copies: 3x faster on 10^5 edges).
    succ, pred = getattr(g, "_succ", None), getattr(g, "_pred", None)
    direct = isinstance(succ, dict) and isinstance(pred, dict)
    decode = _DECODE
    batch = []
    # Edges without registers (memory/order: ~10^5 on big kernels) share one
    # attribute dict per kind mask. Edge attributes are read-only by contract.
    shared: dict[int, dict] = {}
    for k in sorted(E):
        u, v = divmod(k, n)
        mask = E[k]
        regs = R.get(k)
        if regs is None:
            attr = shared.get(mask)
            if attr is None:
                kind, kinds = decode[mask]
                attr = shared[mask] = {"kind": kind, "kinds": kinds}
        else:
            kind, kinds = decode[mask]
            attr = {"kind": kind, "kinds": kinds, "reg": min(regs, key=_first)[1],
                    "regs": frozenset(r for _, r in regs)}
        if direct:
            succ[u][v] = attr
            pred[v][u] = attr
        else:  # pragma: no cover - a networkx without _succ/_pred
            batch.append((u, v, attr))
    if batch:
        g.add_edges_from(batch)
    return g


def _first(x):
    return x[0]


def block_dag(cfg: CFG, block: int, *, roots: dict[str, str] | None = None,
              noalias: frozenset[str] | None = None, module=None,
              overlap: frozenset[str] | None = None) -> nx.DiGraph:
    """:func:`build_dag` of one block of ``cfg`` (uses the CFG's scope-aware
    defs/uses). Node ``k`` is ``cfg.blocks[block].instructions[k]``, iid
    ``cfg.blocks[block].start + k``. ``roots``/``noalias`` default to the
    function's (:func:`~ptxopt.analysis.alias.pointer_roots`,
    :func:`~ptxopt.analysis.alias.noalias_params`); ``overlap`` to
    :func:`~ptxopt.analysis.alias.overlapping_symbols` of the function and
    ``module`` (give the module whenever the DAG decides legality: without
    it, module-level ``.extern .shared`` arrays are not seen)."""
    ins, du, kw = block_dag_inputs(cfg, block, roots=roots, noalias=noalias, module=module, overlap=overlap)
    return build_dag(ins, du, **kw)


def block_alias_facts(cfg: CFG, module=None) -> tuple[dict[str, str], frozenset[str], frozenset[str]]:
    """``(roots, noalias, overlap)`` of ``cfg``'s function, as :func:`block_dag` defaults them."""
    noalias = noalias_params(cfg.function)
    roots = pointer_roots(cfg) if noalias else {}
    return roots, noalias, overlapping_symbols(cfg.function, module)


def block_dag_inputs(cfg: CFG, block: int, *, roots=None, noalias=None, module=None, overlap=None):
    """``(instructions, du, keywords)``: :func:`build_dag`'s arguments for one
    block of ``cfg``, the alias facts defaulted as :func:`block_dag` says."""
    if overlap is None:
        overlap = overlapping_symbols(cfg.function, module)
    if noalias is None:
        noalias = noalias_params(cfg.function)
    if roots is None:
        roots = pointer_roots(cfg) if noalias else {}
    b = cfg.blocks[block]
    return b.instructions, [cfg.du[i] for i in b.iids], {"roots": roots, "noalias": noalias, "overlap": overlap}


def block_dags(cfg: CFG, module=None) -> list[nx.DiGraph]:
    """One DAG per block of ``cfg`` (``module``: see :func:`block_dag`)."""
    roots, noalias, overlap = block_alias_facts(cfg, module)
    return [block_dag(cfg, b.index, roots=roots, noalias=noalias, overlap=overlap)
            for b in cfg.blocks]


# ---------------------------------------------------------------------------
# Paths and schedules
# ---------------------------------------------------------------------------


class CriticalPath(NamedTuple):
    """``length``: sum of node latencies along the longest path; ``nodes``:
    that path, first to last."""

    length: float
    nodes: list[int]


def unit_latency(ins: Instruction) -> int:
    return 1


def _topo(dag: nx.DiGraph) -> Iterable:
    if dag.graph.get("index_order"):
        return sorted(dag.nodes)
    import networkx as nx

    return list(nx.topological_sort(dag))


def depths(dag: nx.DiGraph, latency: Callable[[Instruction], float] = unit_latency) -> dict:
    """Longest path (sum of latencies) from any source up to and including
    each node: the earliest finish time with unbounded resources."""
    out: dict = {}
    pred = dag.pred
    nodes = dag.nodes
    for v in _topo(dag):
        best = 0
        for u in pred[v]:
            x = out[u]
            if x > best:
                best = x
        out[v] = best + latency(nodes[v]["ins"])
    return out


def heights(dag: nx.DiGraph, latency: Callable[[Instruction], float] = unit_latency) -> dict:
    """Longest path from each node (its latency included) to any sink: the
    list-scheduling priority of ``reorder_cp``."""
    out: dict = {}
    succ = dag.succ
    nodes = dag.nodes
    for v in reversed(list(_topo(dag))):
        best = 0
        for w in succ[v]:
            x = out[w]
            if x > best:
                best = x
        out[v] = best + latency(nodes[v]["ins"])
    return out


def critical_path(dag: nx.DiGraph, latency: Callable[[Instruction], float] = unit_latency) -> CriticalPath:
    """Longest path through the DAG with node weights ``latency(ins)``
    (default: 1 per instruction, so the length is the number of
    instructions on the longest dependency chain)."""
    if dag.number_of_nodes() == 0:
        return CriticalPath(0, [])
    h = heights(dag, latency)
    succ = dag.succ
    nodes = dag.nodes
    start = max(h, key=lambda v: (h[v], -v if isinstance(v, int) else 0))
    path = [start]
    v = start
    while succ[v]:
        rest = h[v] - latency(nodes[v]["ins"])
        nxt = None
        for w in sorted(succ[v]):
            if h[w] == rest:
                nxt = w
                break
        if nxt is None:
            break
        path.append(nxt)
        v = nxt
    return CriticalPath(h[start], path)


def topological_orders_respect(dag: nx.DiGraph, order: Sequence) -> bool:
    """True when ``order`` lists every node exactly once and puts each edge's
    source before its target (ordering points are transitively enforced by
    the edges, so this is the whole legality check of a schedule)."""
    pos = {}
    for k, v in enumerate(order):
        if v in pos or v not in dag:
            return False
        pos[v] = k
    if len(pos) != dag.number_of_nodes():
        return False
    for u, v in dag.edges:
        if pos[u] >= pos[v]:
            return False
    return True
