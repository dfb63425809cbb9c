"""What a proof must match, written down once.

A kernel is observed through what it leaves behind and what it does in an
order other threads (or the host, or a profiler) can see. Each row of
:data:`OBSERVABLES` names one such thing and the check that compares it at
the end of a pair of corresponding basic blocks (:mod:`.match` runs every
row on every block; a pair is ``proved`` only when no row reports a
mismatch). Adding an observable is adding a row, and
``tests/equivalence/test_prove_observables.py`` holds, for every row, a pair that
differs only in that observable and must not be proved.

Why a table: the last false proof (a ``.func`` returning ``tbl[0]`` vs
``tbl[1]`` in a ``.reg`` return value, proved because values were compared
only where they flowed into a successor block) was an observable nobody had
listed. Listing them makes the missing one visible in review.

The rows, in the order they are checked:

``control``           the terminator: opcode (``bra``/``brx``/``ret``/
                      ``exit``/``trap``), targets and condition, so both take
                      the same edge or leave the same way
``warp collectives``  ``shfl``/``vote``/``match``/``redux``...: same chain,
                      operands, guards, order; and the same set of warp-wide
                      ``ldmatrix`` reads (:mod:`.symexec`), in any order
``ordering events``   barriers, fences, atomics, volatile and ordered
                      accesses, calls (``vprintf`` and every other callee,
                      their arguments and the use of their results),
                      special-register reads that are events (``%clock``,
                      ``%globaltimer``, ``%warpid``...), unknown opcodes: the
                      same events, same operands, same order
``memory.<space>``    the stores of the last segment per state space
                      (:data:`STORE_SPACES`), ``.param`` included: a
                      ``.func``'s ``.param`` return value is a store to
                      ``.param`` space, compared at every block end
``return values``     a ``.func``'s ``.reg`` return registers at every
                      block that may ``ret`` (guarded or not) or falls off
                      the end of the body
``live-out registers`` every register live into a successor, and a
                      ``.func``'s ``.reg`` return registers on every edge
                      (the ``ret`` that reads them may be blocks away)
``faults``            every candidate access is covered by an original
                      access and aligned for its own width
                      (:func:`ptxopt.equivalence.prove.match.fault_check`)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ptxopt.ptx.opcodes import TERMINATORS

# Spaces a store can write. ``const`` is read-only; ``shared::cta`` and
# ``shared::cluster`` are ``shared``; ``generic`` is an address in any of them.
STORE_SPACES = ("global", "shared", "local", "param", "generic")


@dataclass
class BlockPair:
    """One original block and its candidate counterpart, executed
    (:class:`ptxopt.equivalence.prove.symexec.BlockRun` each) -- what every check reads."""

    g: object  # the shared value graph
    so: object  # the original's side (:class:`ptxopt.equivalence.prove.match._Side`)
    sc: object  # the candidate's
    blk: object  # the original's :class:`ptxopt.analysis.cfg.BasicBlock`
    ro: object
    rc: object
    assume_align: int
    fault_check: Callable[[BlockPair], str | None]


@dataclass(frozen=True)
class Observable:
    name: str
    what: str
    check: Callable[[BlockPair], str | None]


def _control(p: BlockPair) -> str | None:
    if p.ro.terminator != p.rc.terminator:
        return "the terminators differ (opcode, targets or condition)"
    return None


def _collectives(p: BlockPair) -> str | None:
    if p.ro.collectives != p.rc.collectives:
        return "warp collectives differ (operands or order)"
    return None


def _events(p: BlockPair) -> str | None:
    eo, ec = p.g.nodes[p.ro.memory][1], p.g.nodes[p.rc.memory][1]
    if eo != ec:
        return ("ordering points (barriers, fences, atomics, volatile accesses, calls, clock reads) "
                "differ or memory operations moved across one")
    return None


def store_space(key: str) -> str:
    """The state space of a store node's key (``st.shared::cta.u32`` -> shared)."""
    for m in key.split(".")[1:]:
        base = m.split("::", 1)[0]
        if base in STORE_SPACES or base == "const":
            return base
    return "generic"


def _memory(space: str) -> Callable[[BlockPair], str | None]:
    def check(p: BlockPair) -> str | None:
        g = p.g
        so_, sc_ = g.nodes[p.ro.memory][2], g.nodes[p.rc.memory][2]
        if so_ == sc_:
            return None
        only_o = [s for s in so_ - sc_ if store_space(g.nodes[s][1]) == space]
        only_c = [s for s in sc_ - so_ if store_space(g.nodes[s][1]) == space]
        if not only_o and not only_c:
            return None
        what = " (a .func's .param return value)" if space == "param" else ""
        return (f"the {space} stores{what} differ ({len(only_o)} only in the original, {len(only_c)} only "
                f"in the candidate): a different address, value or guard, or memory operations that may "
                f"alias in a different order")
    return check


def _memory_whole(p: BlockPair) -> str | None:
    # the rows above cover every space a store key can name; this one makes the
    # table total, so a store of a space nobody listed still cannot slip through
    if p.ro.memory != p.rc.memory:
        return "the memory after the block differs"
    return None


def may_return(blk) -> bool:
    """Can a ``.func`` return to its caller at the end of ``blk``?"""
    last = blk.instructions[-1] if blk.instructions else None
    if last is not None and last.opcode in TERMINATORS:
        return last.opcode == "ret"
    return not blk.succs  # falls off the end of the body


def return_registers(fn) -> list[str]:
    """The ``.reg`` return registers of a ``.func`` (``.param`` ones are memory)."""
    return [n for d in (fn.ret_params or ()) if d.space == ".reg" for it in d.items for n in it.names()]


def _returns(p: BlockPair) -> str | None:
    if not may_return(p.blk):
        return None
    g, b = p.g, p.blk.index
    for r in return_registers(p.so.fn):
        live = g.node("livein", b, r)
        vo, vc = p.ro.regs.get(r, live), p.rc.regs.get(r, live)
        if vo != vc:
            return f"the return register {r} differs at the function's exit: {g.show(vo)} vs {g.show(vc)}"
    return None


def _live_out(p: BlockPair) -> str | None:
    g, b = p.g, p.blk.index
    # a .func's return registers are read by the ret it may reach, which liveness does not see
    # (``ret`` names no operand): they are live out of every block
    rets = frozenset(return_registers(p.so.fn))
    for s in p.blk.succs:
        for r in sorted(p.so.live_in(s) | p.sc.live_in(s) | rets):
            live = g.node("livein", b, r)
            vo, vc = p.ro.regs.get(r, live), p.rc.regs.get(r, live)
            if vo != vc:
                return (f"live-out register {r} differs: {g.show(vo)} vs {g.show(vc)} (a loop-carried "
                        f"or live-out value the prover cannot show equal)")
    return None


def _faults(p: BlockPair) -> str | None:
    return p.fault_check(p)


OBSERVABLES: tuple[Observable, ...] = (
    Observable("control", "the terminator: opcode, targets, condition", _control),
    Observable("warp collectives", "shfl/vote/match/redux...: chain, operands, guards, order; "
                                   "ldmatrix reads as a set", _collectives),
    Observable("ordering events", "barriers, fences, atomics, volatile/ordered accesses, calls (vprintf), "
                                  "clock and other event special-register reads, unknown opcodes", _events),
    *(Observable(f"memory.{s}", f"stores to .{s} memory" + (" (.param return values)" if s == "param" else ""),
                 _memory(s)) for s in STORE_SPACES),
    Observable("memory", "the whole memory state (catch-all)", _memory_whole),
    Observable("return values", ".reg return registers of a .func at every ret", _returns),
    Observable("live-out registers", "registers live into a successor block", _live_out),
    Observable("faults", "candidate accesses covered by and aligned like the original's", _faults),
)


def first_mismatch(p: BlockPair) -> str | None:
    """The first observable that differs between the two blocks, as a reason; None: all match."""
    for o in OBSERVABLES:
        why = o.check(p)
        if why is not None:
            return why
    return None


__all__ = [
    "OBSERVABLES",
    "STORE_SPACES",
    "BlockPair",
    "Observable",
    "first_mismatch",
    "may_return",
    "return_registers",
    "store_space",
]
