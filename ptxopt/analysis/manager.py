"""The analyses passes ask for, their memos and their invalidation (after
LLVM's ``AnalysisManager`` and ``PreservedAnalyses``).

A pass asks an :class:`AnalysisManager` for a function's CFG
(:meth:`~AnalysisManager.cfg`), its loop facts (:meth:`~AnalysisManager.loops`),
a block's dependency DAG (:meth:`~AnalysisManager.block_dag`) or linear-size
dependence graph (:meth:`~AnalysisManager.block_depgraph`), and a module's
printed text (:meth:`~AnalysisManager.text`). The manager owns the memos
(bounded, :mod:`ptxopt.support.bounded_memo`): nothing else in the analysis
layer remembers these results.

Keys. Statements are immutable and shared between module copies
(:meth:`ptxopt.ptx.ir.Module.copy` copies only ``{ }`` containers), so a
result is keyed by the *identity* of what it was computed from (the
function's statements in their nesting, a block's instructions) and the memo
keeps those objects alive. A key therefore names one input forever: a result
found under it is never stale, whatever a pass declared. The search tries
every pass on copies of one state, and they share these results.

Invalidation. After each pass the pass manager calls :meth:`invalidate` with
what the pass preserves (:meth:`ptxopt.passes.base.Pass.preserved`: every
analysis when it changed nothing, else what the pass declares, by default
none). The results handed out while that pass ran and not preserved are
dropped when the pass changed the module in place and nobody else holds the
module before it (``drop=True``): they describe a state that is gone, and a
later request recomputes them. A preserved result stays and the next pass
gets it. Because keys are identities, a wrong declaration costs time, never
a stale answer: a pass that claims to preserve the CFG but rewrote the body
gets a new CFG (its body's key changed).

Read-only. Results are shared by every caller that asks for the same input,
so they are handed out frozen: the CFG's lists are tuples and its maps
``MappingProxyType`` (:meth:`ptxopt.analysis.cfg.CFG.freeze`, assigning an
attribute raises), the DAG is ``networkx.freeze``-d, the dependence graph's
lists are tuples (:meth:`ptxopt.analysis.depgraph.DepGraph.freeze`), the loop
list a tuple of frozen loops (:meth:`ptxopt.analysis.loops.Loop.freeze`). The
DAG's edge and node attribute dicts are read-only by contract only. ``cfg.shared`` is the one writable part, on purpose: a dict per
function shape where passes keep what they derive from the shape alone
(``prefetch_L1`` and ``prefetch_L2`` share their plan there).

:func:`default_manager` is the manager of callers that bring none (old pass
signatures, plugins, :class:`~ptxopt.analysis.function.FunctionAnalysis`);
it is registered under the ``front_end`` group, so a cold start empties it.
"""

from __future__ import annotations

import copy
import threading
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterator

from ptxopt.analysis.cfg import CFG, build_cfg
from ptxopt.ptx.ir import Block, Function, Module
from ptxopt.support.bounded_memo import BoundedMemo, register

if TYPE_CHECKING:
    import networkx as nx

    from ptxopt.analysis.depgraph import DepGraph
    from ptxopt.analysis.loops import LoopInfo

#: The analyses a manager hands out, by the names :class:`PreservedAnalyses` uses.
ANALYSES = ("cfg", "loops", "dag", "depgraph", "text")

#: Default bounds of each memo (entries; the DAG also by edges, ~the memory
#: of a few of the largest corpus blocks).
CFG_ENTRIES = 16
LOOPS_ENTRIES = 16
DAG_ENTRIES = 16
DAG_EDGES = 400_000
DEPGRAPH_ENTRIES = 32
TEXT_ENTRIES = 8


@dataclass(frozen=True)
class PreservedAnalyses:
    """Which analyses a pass left valid: :meth:`all`, :meth:`none` or a named set (:meth:`of`)."""

    names: frozenset[str]

    @classmethod
    def all(cls) -> PreservedAnalyses:
        return cls(frozenset(ANALYSES))

    @classmethod
    def none(cls) -> PreservedAnalyses:
        return cls(frozenset())

    @classmethod
    def of(cls, *names: str) -> PreservedAnalyses:
        unknown = sorted(set(names) - set(ANALYSES))
        if unknown:
            raise ValueError(f"unknown analyses {unknown}: known are {', '.join(ANALYSES)}")
        return cls(frozenset(names))

    def preserves(self, name: str) -> bool:
        return name in self.names

    def __str__(self) -> str:
        if self.names == frozenset(ANALYSES):
            return "all"
        return ",".join(a for a in ANALYSES if a in self.names) or "none"


def _shape(block: Block) -> tuple:
    items = block.items
    if Block not in set(map(type, items)):  # the usual flat body: one C-level pass
        return tuple(map(id, items))
    return tuple(_shape(s) if type(s) is Block else id(s) for s in items)


def cfg_key(fn: Function) -> tuple:
    """What a function's CFG is computed from: its kind, name, parameters and
    the identity of its statements in their nesting."""
    return (fn.kind, fn.name, id(fn.params), _shape(fn.body))


class AnalysisManager:
    """Memoised analyses and their invalidation (module doc). ``builds``
    counts the results computed (not found) per analysis."""

    def __init__(self) -> None:
        self._memos: dict[str, BoundedMemo] = {
            "cfg": BoundedMemo(lambda: CFG_ENTRIES),
            "loops": BoundedMemo(lambda: LOOPS_ENTRIES),
            "dag": BoundedMemo(lambda: DAG_ENTRIES, weight=lambda v: v.number_of_edges(),
                               max_weight=lambda: DAG_EDGES),
            "depgraph": BoundedMemo(lambda: DEPGRAPH_ENTRIES),
            "text": BoundedMemo(lambda: TEXT_ENTRIES),
        }
        self.builds: Counter[str] = Counter()
        self._scopes = threading.local()  # .handed: the keys handed out in this thread's open pass scope

    # -- the analyses ------------------------------------------------------

    def cfg(self, fn: Function) -> CFG:
        """The frozen CFG of ``fn`` (its ``function`` is ``fn``)."""
        key = cfg_key(fn)
        hit = self._lookup("cfg", key)
        if hit is None:
            cfg = build_cfg(fn)
            cfg.shared = {}  # derived from the shape alone (module doc)
            cfg.freeze()
            # the memo keeps the statements (and so their ids) alive through
            # cfg.instructions and a snapshot of the body's containers
            hit = (cfg, fn.body.copy(), fn.params)
            self._remember("cfg", key, hit)
        return _rebind(hit[0], fn)

    def loops(self, fn: Function) -> LoopInfo:
        """The loops of ``fn`` (:func:`ptxopt.analysis.loops.find_loops` of
        :meth:`cfg`), their list a tuple, each loop frozen."""
        from ptxopt.analysis.loops import LoopInfo, find_loops

        cfg = self.cfg(fn)
        key = cfg_key(fn)
        hit = self._lookup("loops", key)
        if hit is None:
            info = find_loops(cfg)
            hit = (LoopInfo(tuple(lp.freeze() for lp in info.loops), info.irreducible), cfg)
            self._remember("loops", key, hit)
        return hit[0]

    def dag(self, instructions, du=None, *, roots=None, noalias=frozenset(), overlap=frozenset()) -> nx.DiGraph:
        """:func:`ptxopt.analysis.dag.build_dag`, remembered by its whole input
        (instructions with their line numbers, defs/uses, alias facts)."""
        from ptxopt.analysis.dag import build_dag

        key = (tuple((ins, ins.line) for ins in instructions),
               None if du is None else tuple((tuple(d), tuple(u)) for d, u in du),
               tuple(sorted((roots or {}).items())), frozenset(noalias), frozenset(overlap))
        g = self._lookup("dag", key)
        if g is None:
            g = build_dag(instructions, du, roots=roots, noalias=noalias, overlap=overlap)
            self._remember("dag", key, g)
        return g

    def block_dag(self, cfg: CFG, block: int, *, roots=None, noalias=None, module=None, overlap=None) -> nx.DiGraph:
        """:func:`ptxopt.analysis.dag.block_dag`, remembered (:meth:`dag`)."""
        from ptxopt.analysis.dag import block_dag_inputs

        ins, du, kw = block_dag_inputs(cfg, block, roots=roots, noalias=noalias, module=module, overlap=overlap)
        return self.dag(ins, du, **kw)

    def block_dags(self, cfg: CFG, module=None) -> list[nx.DiGraph]:
        """:func:`ptxopt.analysis.dag.block_dags`, each remembered (:meth:`dag`)."""
        from ptxopt.analysis.dag import block_alias_facts

        roots, noalias, overlap = block_alias_facts(cfg, module)
        return [self.block_dag(cfg, b.index, roots=roots, noalias=noalias, overlap=overlap) for b in cfg.blocks]

    def depgraph(self, instructions, du=None, *, roots=None, noalias=frozenset(), overlap=frozenset()) -> DepGraph:
        """:func:`ptxopt.analysis.depgraph.build_depgraph`, remembered by the
        identity of the instructions, their defs/uses and the alias facts."""
        from ptxopt.analysis.depgraph import build_depgraph

        roots = roots or {}
        key = (tuple(map(id, instructions)), None if du is None else tuple(map(tuple, du)),
               tuple(sorted(roots.items())), frozenset(noalias), frozenset(overlap))
        g = self._lookup("depgraph", key)
        if g is None:
            g = build_depgraph(instructions, du, roots=roots, noalias=noalias, overlap=overlap).freeze()
            self._remember("depgraph", key, g)  # g.instructions keeps the instructions (and their ids) alive
        return g

    def block_depgraph(self, cfg: CFG, block: int, *, roots, noalias, overlap) -> DepGraph:
        """:func:`ptxopt.analysis.depgraph.block_depgraph`, remembered (:meth:`depgraph`)."""
        b = cfg.blocks[block]
        return self.depgraph(b.instructions, cfg.du[b.start:b.start + len(b.instructions)], roots=roots,
                             noalias=noalias, overlap=overlap)

    def text(self, module: Module) -> str:
        """The printed module (:func:`ptxopt.ptx.emit.emit`), remembered by the
        identity of its functions' statements and its header and declarations."""
        from ptxopt.ptx.emit import emit

        key = _module_key(module)
        hit = self._lookup("text", key)
        if hit is None:
            hit = (emit(module), module.copy())  # the copy keeps the statements (their ids) alive
            self._remember("text", key, hit)
        return hit[0]

    # -- invalidation ------------------------------------------------------

    @contextmanager
    def pass_scope(self) -> Iterator[dict[str, set]]:
        """Record the keys handed out inside (one pass's run, in this thread)
        in the dict it yields (analysis -> keys), for :meth:`invalidate`."""
        outer = getattr(self._scopes, "handed", None)
        handed: dict[str, set] = {a: set() for a in ANALYSES}
        self._scopes.handed = handed
        try:
            yield handed
        finally:
            self._scopes.handed = outer

    def invalidate(self, preserved: PreservedAnalyses, handed: dict[str, set], *, drop: bool = True) -> list[str]:
        """After a pass that was ``handed`` these results (its :meth:`pass_scope`):
        forget those of every analysis ``preserved`` does not name, when ``drop``
        (the state they describe is gone). Returns the analyses dropped from."""
        gone: list[str] = []
        if not drop:
            return gone
        for name in ANALYSES:
            keys = handed.get(name)
            if keys and not preserved.preserves(name):
                memo = self._memos[name]
                for k in keys:
                    memo.pop(k, None)
                gone.append(name)
        return gone

    def clear(self) -> None:
        """Forget every result (a cold start)."""
        for memo in self._memos.values():
            memo.clear()

    def sizes(self) -> dict[str, int]:
        """Entries remembered per analysis."""
        return {name: len(memo) for name, memo in self._memos.items()}

    def __len__(self) -> int:
        """Entries remembered, all analyses together."""
        return sum(map(len, self._memos.values()))

    # -- memo plumbing -----------------------------------------------------

    def _lookup(self, name: str, key):
        hit = self._memos[name].lookup(key)
        handed = getattr(self._scopes, "handed", None)
        if handed is not None:
            handed[name].add(key)
        return hit

    def _remember(self, name: str, key, value) -> None:
        self.builds[name] += 1
        self._memos[name].remember(key, value)


def _module_key(module: Module) -> tuple:
    """Everything :func:`~ptxopt.ptx.emit.emit` prints, by value for the
    header's plain fields and by identity for the (immutable, shared) rest."""
    parts: list = []
    for item in module.items:
        if type(item) is Function:
            parts.append(("F", item.kind, item.name, id(item.linkage), id(item.params), id(item.ret_params),
                          id(item.directives), None if item.body is None else _shape(item.body), item.line,
                          item.attribute))
        else:
            parts.append(id(item))
    return (module.version, id(module.target), module.address_size, id(module.header_comments), tuple(parts))


def _rebind(cfg: CFG, fn: Function) -> CFG:
    out = copy.copy(cfg)
    out.__dict__["function"] = fn  # a frozen CFG refuses assignment: this copy is ours
    return out


_DEFAULT = register("front_end", "analysis.manager", AnalysisManager())


def default_manager() -> AnalysisManager:
    """The manager of callers that bring none (module doc)."""
    return _DEFAULT


def manager_or_default(given: AnalysisManager | None) -> AnalysisManager:
    """``given``, else :func:`default_manager`."""
    return given if given is not None else _DEFAULT


__all__ = ["ANALYSES", "AnalysisManager", "PreservedAnalyses", "cfg_key", "default_manager", "manager_or_default"]
