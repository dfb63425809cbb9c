"""Block-by-block correspondence of two versions of one function.

The proof is an induction over executions that step through the two control
flow graphs in lockstep. For block ``B`` let ``L(B)`` be the registers live
at its entry in either kernel. The hypothesis at ``B``'s entry: both kernels
hold the same value in every register of ``L(B)`` and the same memory (the
``livein``/``entry`` nodes are shared). Each block is then executed
symbolically in both kernels (:mod:`.symexec`) and must end with every
observable of :data:`ptxopt.equivalence.prove.observables.OBSERVABLES` matched (the
table is the one list; in short):

* the same terminator (opcode, targets, condition node): both take the same
  edge;
* the same value in every register of ``L(S)`` for every successor ``S``,
  and, where a ``.func`` may return (a ``ret``, guarded or not, or the end of
  the body), in every ``.reg`` return register (``.param`` return values are
  stores to ``.param`` memory);
* the same memory node (same ordering points in the same order with the same
  operands, the same stores modulo commuting disjoint ones: :mod:`.memory_versions`)
  and the same chain of warp collectives;
* no new way to fault: every load, store and prefetch lane of the candidate
  touches bytes the original block touches in the same space under the same
  guard, and every access the original does not make exactly is aligned for
  its own width, scalar or vector (:func:`fault_check`: from a covering
  original access, or :class:`~ptxopt.analysis.alignment.Alignment`:
  ``.ptr .align`` and variable ``.align`` through the address arithmetic,
  nothing assumed).

A ``.func``'s ``.reg`` parameters hold its arguments at entry: the same
values in both (the interfaces are equal), so reading them is not reading
an uninitialised register.

Then the hypothesis holds at the successor both take, so by induction both
kernels perform the same observable memory effects and ordering points in
the same order, for all inputs. A block whose checks fail makes the whole
function ``inconclusive`` with the first reason; nothing here can say
``differ`` (a different expression may still be the same function).
"""

from __future__ import annotations

from dataclasses import dataclass

from ptxopt.ptx import opcodes
from ptxopt.analysis.alias import noalias_params, overlapping_symbols
from ptxopt.analysis.cfg import CFG
from ptxopt.analysis.defuse import liveness
from ptxopt.equivalence.verdict import Verdict
from ptxopt.ptx.ir import Block, Decl, Function, Module, iter_decls
from ptxopt.equivalence.prove import original_memo
from ptxopt.equivalence.prove.details import BlockDetail, FunctionDetail
from ptxopt.equivalence.prove.memory_versions import AliasOracle
from ptxopt.equivalence.prove.observables import BlockPair, first_mismatch
from ptxopt.equivalence.prove.symexec import Access, BlockExecutor, BlockRun
from ptxopt.equivalence.prove.values import Graph


class _Side:
    """One kernel's view of the function: CFG, liveness, executor."""

    def __init__(self, fn: Function, module: Module, graph: Graph, oracle: AliasOracle) -> None:
        self.fn = fn
        self.module = module
        self.cfg = CFG(fn)
        types = self.cfg.reg_types

        def bits(name: str) -> int | None:
            t = types.get(name)
            return opcodes.TYPE_BITS.get(t) if t else None

        self.exe = BlockExecutor(graph, oracle, bits)
        self._live = None
        self._align = None

    def live_in(self, b: int) -> frozenset[str]:
        if self._live is None:
            self._live = liveness(self.cfg)
        return self._live.live_in[b]

    def shadowed(self) -> bool:
        return any("@" in r for d, u in self.cfg.du for r in d + u)

    def aligned(self, base, offset: int, need: int, assume_align: int) -> bool:
        if self._align is None:
            from ptxopt.analysis.alignment import Alignment

            defs: dict[str, list] = {}
            for iid, (ds, _) in enumerate(self.cfg.du):
                for r in ds:
                    defs.setdefault(r, []).append(self.cfg.instructions[iid])
            untrusted = frozenset(n for s in self.fn.body.items if type(s) is Block
                                  for d in iter_decls(s) if d.space == ".reg"
                                  for it in d.items for n in it.names())
            self._align = Alignment(self.fn, self.module, lambda r: defs.get(r, []),
                                    assume_align, untrusted)
        kind, name = base  # the walker's address base (:class:`ptxopt.ptx.operand_facts.Address`)
        if kind not in ("reg", "sym"):
            return False
        m, r = self._align.of_base(kind, name)
        return m >= need and (r + offset) % need == 0


def prove_function(fo: Function, mo: Module, fc: Function, mc: Module, graph: Graph | None = None,
                   assume_align: int = 0) -> FunctionDetail:
    """Prove ``fc`` (in ``mc``) equivalent to ``fo`` (in ``mo``) block by block.

    The original's side is executed once per module digest, into its own
    value graph (:mod:`ptxopt.equivalence.prove.original_memo`); ``graph`` is
    not used (kept for callers written before the memo)."""
    noalias = noalias_params(fo) & noalias_params(fc)
    overlap = overlapping_symbols(fo, mo) | overlapping_symbols(fc, mc)

    def make() -> original_memo.Original:
        g = Graph()
        oracle = AliasOracle(g, noalias, overlap)
        return original_memo.Original(g, oracle, _Side(fo, mo, g, oracle))

    k = original_memo.key(fo, mo, noalias, overlap, assume_align)
    orig, memoised = original_memo.acquire(k, make)
    try:
        return _prove_sides(orig, _Side(fc, mc, orig.graph, orig.oracle), assume_align)
    finally:
        original_memo.release(k, orig, memoised)


def _prove_sides(orig: original_memo.Original, sc: _Side, assume_align: int) -> FunctionDetail:
    so, graph, oracle = orig.side, orig.graph, orig.oracle
    name = so.fn.name

    def fail(reason: str, blocks=()) -> FunctionDetail:
        return FunctionDetail(name, Verdict.INCONCLUSIVE, reason, list(blocks))

    if so.shadowed() or sc.shadowed():
        return fail("a nested { } scope redeclares a register name (not modelled)")
    for side, what in ((so, "original"), (sc, "candidate")):
        clash = _variable_clash(side.fn, side.module)
        if clash:
            return fail(f"the {what} declares variable {clash} more than once (a scoped declaration "
                        f"shadows another: one name, two variables; not modelled)")
    bo, bc = so.cfg.blocks, sc.cfg.blocks
    if bo and bc:
        for side, what in ((so, "original"), (sc, "candidate")):
            # a .func's .reg parameters hold its arguments: the same values in both (same interface)
            undefined = sorted((side.live_in(bo[0].index) if side is so else side.live_in(bc[0].index))
                               - _reg_params(side.fn))
            if undefined:
                return fail(f"the {what} reads register{'s' if len(undefined) > 1 else ''} "
                            f"{', '.join(undefined[:4])} before writing {'them' if len(undefined) > 1 else 'it'} "
                            f"on some path (an uninitialised register holds an undefined value, not modelled)")
    bo, bc = so.cfg.blocks, sc.cfg.blocks
    # past this point every precondition above holds: a failure may still be proved by whole paths
    def fail(reason: str, blocks=()) -> FunctionDetail:
        return _whole_paths(so, sc, graph, oracle, assume_align,
                            FunctionDetail(name, Verdict.INCONCLUSIVE, reason, list(blocks)), orig)

    if len(bo) != len(bc):
        return fail(f"CFG shapes differ: {len(bo)} blocks in the original, {len(bc)} in the candidate")
    for x, y in zip(bo, bc):
        if x.labels != y.labels or x.succs != y.succs:
            return fail(f"CFG shapes differ at block {x.index} ({x.label or 'entry'}): labels "
                        f"{list(x.labels)} -> {list(y.labels)}, successors {x.succs} -> {y.succs}")
    details: list[BlockDetail] = []
    for x, y in zip(bo, bc):
        ro = orig.run(x)
        rc = sc.exe.run(y.index, y.instructions)
        why = _compare_block(graph, so, sc, x, ro, rc, assume_align)
        if why is not None and x.index in x.succs:  # a loop of one block, unrolled: run it out (prove.loops)
            from ptxopt.equivalence.prove.loop_paths import GiveUp, prove_loop_block

            try:
                ok, how = prove_loop_block(so, sc, graph, oracle, x.index, assume_align, fault_check)
            except GiveUp as e:
                ok, how = False, str(e)
            if ok:
                details.append(BlockDetail(x.index, x.label, True, f"loop: {how}"))
                continue
            why = f"{why}; as a whole loop: {how}"
        if why is not None:  # the value graphs differ: ask the SMT solver (ptxopt.equivalence.prove.smt)
            solved = _solver_fallback(so, sc, x.index)
            if solved is not None and solved.status == "equal":
                details.append(BlockDetail(x.index, x.label, True, f"solver: {solved.reason}"))
                continue
            why = f"{why}; {solved.short()}" if solved is not None else why
        details.append(BlockDetail(x.index, x.label, why is None, why or ""))
        if why is not None:
            return fail(f"block {x.index} ({x.label or 'entry'}): {why}", details)
    n = len(bo)
    by = sum(d.reason.startswith("solver:") for d in details)
    return FunctionDetail(name, Verdict.PROVED, f"{n} block{'s' if n != 1 else ''} matched"
                                                + (f" ({by} shown equal by the SMT solver)" if by else ""), details)


def _whole_paths(so: _Side, sc: _Side, graph: Graph, oracle: AliasOracle, assume_align: int,
                 failed: FunctionDetail, orig: original_memo.Original | None = None) -> FunctionDetail:
    """Where blocks do not correspond (a loop unrolled), the bounded
    whole-path proof of :mod:`ptxopt.equivalence.prove.loop_paths`; ``failed`` when it cannot prove."""
    from ptxopt.equivalence.prove import loop_sim, loop_paths as loops

    sim = ""
    if loop_sim.worth_trying(so.cfg):  # any trip count, by the SMT solver
        d = loop_sim.prove_by_simulation(so.fn, sc.fn)
        if d.verdict == Verdict.PROVED:
            return d
        sim = f"; {d.reason}"
    if not loops.worth_trying(so):
        return FunctionDetail(failed.name, failed.verdict, f"{failed.reason}{sim}", failed.blocks) if sim else failed
    ok, why = loops.prove_paths(so, sc, graph, oracle, assume_align, fault_check, memo=orig)
    if not ok:
        return FunctionDetail(failed.name, failed.verdict, f"{failed.reason}{sim}; whole paths: {why}",
                              failed.blocks)
    return FunctionDetail(failed.name, Verdict.PROVED, f"whole paths: {why}",
                          [BlockDetail(b.index, b.label, True, "whole paths") for b in so.cfg.blocks])


def _solver_fallback(so: _Side, sc: _Side, b: int):
    """The SMT check of block ``b`` (:func:`ptxopt.equivalence.prove.smt.check.check_block`); None without a
    solver."""
    from ptxopt.equivalence.prove.smt import check, solver

    if not solver.available():
        return None
    return check.check_block(check.Side(so.fn, so.cfg, so.live_in), check.Side(sc.fn, sc.cfg, sc.live_in), b,
                             check.FALLBACK_TIMEOUT_MS)


def _compare_block(g: Graph, so: _Side, sc: _Side, blk, ro: BlockRun, rc: BlockRun,
                   assume_align: int) -> str | None:
    """The first observable (:data:`~ptxopt.equivalence.prove.observables.OBSERVABLES`) that differs."""
    return first_mismatch(BlockPair(g, so, sc, blk, ro, rc, assume_align, fault_check))


def fault_check(p: BlockPair) -> str | None:
    """Every access of the candidate must be one the original block makes
    (see module doc), and every access the original does not make exactly
    must be aligned for its own width: an ``ld.u32 [%rd4+2]`` inside an
    original 8-byte access touches covered bytes but faults (PTX ISA
    "Addresses as Operands": an access must be naturally aligned to its size,
    a vector access to the whole vector's size).

    Alignment comes from the original when it can: a covering original
    access under the same guard between the same ordering points at offset
    ``o'`` with alignment ``a'`` executes whenever the candidate's does, so
    the base is ``a'``-aligned at ``o'`` and an access of alignment ``a`` at
    ``o`` is aligned when ``a`` divides ``a'`` and ``o - o'``. Otherwise the
    alignment analysis (:meth:`_Side.aligned`) must show it."""
    g, sc, ao, ac = p.g, p.sc, p.ro.accesses, p.rc.accesses
    if ao == ac:
        return None
    covered: dict[tuple, list[tuple[int, int]]] = {}
    aligned_at: dict[tuple, set[tuple[int, int]]] = {}
    exact = set()
    for a in ao:
        if a.kind == "prefetch":
            continue
        n = g.nodes[a.addr]
        key = (a.space, n[1], a.guard, a.epoch)
        covered.setdefault(key, []).append((n[2], n[2] + a.size))
        node, need = _instruction_address(a)
        exact.add((a.space, node, need, a.guard, a.epoch))
        aligned_at.setdefault(key, set()).add((g.nodes[node][2], need))
    for a in ac:
        n = g.nodes[a.addr]
        lo, hi = n[2], n[2] + a.size
        key = (a.space, n[1], a.guard, a.epoch)
        if not any(x <= lo and hi <= y for x, y in covered.get(key, ())):
            what = "a prefetch of" if a.kind == "prefetch" else "an access to"
            return (f"the candidate makes {what} {g.show(a.addr)} ({a.space}, {a.size} bytes) that the "
                    f"original block does not make under the same guard between the same ordering points: "
                    f"it could fault")
        if a.kind == "prefetch":
            continue  # a prefetch has no alignment requirement
        node, need = _instruction_address(a)
        if need <= 1 or (a.space, node, need, a.guard, a.epoch) in exact:
            continue
        off = g.nodes[node][2]
        if any(na % need == 0 and (off - o) % need == 0 for o, na in aligned_at.get(key, ())):
            continue
        base, written = a.vector[2:4] if a.vector is not None else (a.base, a.offset)
        if base is not None and sc.aligned(base, written, need, p.assume_align):
            continue
        what = "vector" if a.vector is not None else "scalar"
        return (f"a {need}-byte {what} access at {g.show(node)} is not proven {need}-byte aligned (not the "
                f"original's access, and neither an original access nor the alignment analysis shows it)")
    return None


def _instruction_address(a: Access) -> tuple[int, int]:
    """(address node, natural alignment) of the whole instruction an access lane belongs to."""
    if a.vector is not None:
        return a.vector[0], a.vector[1]
    return a.addr, a.size


def _reg_params(fn: Function) -> frozenset[str]:
    return frozenset(n for d in (fn.params or ()) if d.space == ".reg" for it in d.items for n in it.names())


def _variable_clash(fn: Function, module: Module) -> str | None:
    """A variable (or parameter) name declared twice where ``fn`` can see
    both: at module level and in the body, or in two scopes of the body.
    The value graph names a variable's address by its name, so two variables
    of one name would be one address node."""
    seen = {p.name for p in (fn.params or ())} | {p.name for p in (fn.ret_params or ())}
    seen |= {it.name for d in module.items if type(d) is Decl and d.space is not None for it in d.items}
    body: set[str] = set()
    for d in iter_decls(fn.body):
        if d.space is None or d.space == ".reg":
            continue
        for it in d.items:
            if it.name in seen or it.name in body:
                return it.name
            body.add(it.name)
    return None


def same_declarations(fo: Function, fc: Function) -> bool:
    """Both bodies declare the same registers and variables, in order."""
    return list(iter_decls(fo.body)) == list(iter_decls(fc.body))


__all__ = ["BlockDetail", "FunctionDetail", "prove_function", "same_declarations"]
