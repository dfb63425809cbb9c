"""Software prefetch (``prefetch{level=L1}`` / ``{level=L2}``, aliases ``prefetch_L1`` / ``prefetch_L2``).

Insert ``prefetch.global.L1 [addr];`` (or ``.L2``) once per 128-byte line
that the kernel's global loads touch, as early as the address is known.

**Lines.** Loads are grouped per basic block by their address base (a
register, as the value it holds at the load: the same definition reaches
them; or a symbol), their guard, and ``offset // 128``; each group gets one
prefetch, at the lowest offset of the group. When the base is 128-byte
aligned these groups are exactly the hardware's cache lines. ptxopt does not
prove that (parameters declare at most ``.align 16`` in practice), so for
other bases the grouping is a best effort: a group may straddle two real
lines, and only the one holding its lowest offset is prefetched. Only the
first byte of each access counts. The same line loaded in two blocks gets a
prefetch in each: hoisting one to a common dominator could fetch an address
that a bounds check was guarding.

**Placement.** In the load's basic block and ``{ }`` scope, right after the
last instruction before the load that defines the base register or the
guard; where there is none, at the start of the block (after its labels) or
of the scope (after its declarations). A prefetch is never hoisted above an
ordering point (barrier, fence, atomic, call, clock read): a fence may
invalidate what it fetched, and timed regions keep their contents. A
guarded load gets a prefetch with the same guard, so an address the program
would not touch is not prefetched either.

**What is refused.** A line whose address base or guard is not defined on
every path to the load (:func:`~ptxopt.analysis.defuse.defined_on_every_path`:
a guarded load may legally name a register its guard keeps undefined, but
a hint must only read defined registers), generic loads (no ``.global``: the space is not
proven), ``.volatile``/``.relaxed``/``.acquire`` loads (ordered accesses:
they must observe memory at their own point), and loads inside a nested
scope that holds a ``call`` (a call sequence: nothing is inserted among
its parameter passing); ``cp.async`` copies from global memory are
reported, not prefetched. ``ld.param``/``.shared``/``.local``/``.const``
loads are not candidates.

**Idempotent.** A prefetch already in the block for the same line (same
base value, guard and ``offset // 128``) counts as present: ``prefetch_L1``
accepts an L1 one, ``prefetch_L2`` an L1 or L2 one (an L1 prefetch fills L2
as well).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ptxopt.ptx import opcodes, operand_facts
from ptxopt.analysis.alias import address_of
from ptxopt.analysis.defuse import defined_on_every_path
from ptxopt.ptx.ir import Block, Comment, Function, Instruction, Label, Loc, Module
from ptxopt.passes.base import ChangeReport, FunctionPass
from ptxopt.analysis.manager import manager_or_default
from ptxopt.passes.families import PREFETCH
from ptxopt.passes.registry import declare

LINE = 128
_NOT_GLOBAL = ("param", "shared", "local", "const")


def _offset(ins: Instruction) -> int:
    """The address offset (normalised modulo the address width by the walker,
    so ``[%rd1+-4]`` and ``[%rd1+18446744073709551612]`` fall in one line)."""
    return address_of(ins).offset


def _renamed(ins: Instruction, uses, name: str) -> str:
    """``name`` as the CFG's scope-aware uses of ``ins`` spell it."""
    own = tuple(dict.fromkeys(operand_facts.facts(ins).uses))
    return uses[own.index(name)] if name in own and len(own) == len(uses) else name


def _key(ins: Instruction, uses, last_def: dict) -> tuple | None:
    """(base, base version, guard, guard version, line) of a load or prefetch
    address; None when the base is neither a register nor a symbol."""
    a = address_of(ins)
    if a is None or a.kind not in ("reg", "sym"):
        return None
    if a.kind == "reg":
        reg = _renamed(ins, uses, a.name)  # the address register, scope-renamed
        base = (reg, last_def.get(reg))
    else:
        base = (a.name, None)
    guard = (uses[0], ins.guard_neg, last_def.get(uses[0])) if ins.guard else None
    return (base, guard, a.offset // LINE)


def _stops(s, names: set[str]) -> bool:
    """Does statement ``s`` end the backward walk for a prefetch placement?"""
    t = type(s)
    if t is Comment or t is Loc:
        return False
    if t is Instruction:
        return (operand_facts.role(s) == "order" or s.opcode in opcodes.TERMINATORS
                or any(r in names for r in operand_facts.facts(s).defs))
    if t is Block:
        return any(type(x) is Label or (type(x) is Instruction and _stops(x, names)) for x in _walk(s))
    return True  # labels, declarations, raw text


def _walk(block: Block):
    for s in block.items:
        yield s
        if type(s) is Block:
            yield from _walk(s)


def _container(fn: Function, path: tuple[int, ...]) -> list:
    node = fn.body
    for i in path[:-1]:
        node = node.items[i]
    return node.items


def _place(items: list, at: int, names: set[str]) -> int:
    """Index in ``items`` where a prefetch for the load at ``items[at]`` goes."""
    q = at - 1
    while q >= 0 and not _stops(items[q], names):
        q -= 1
    q += 1
    while q < at and type(items[q]) is Comment and items[q].trailing:
        q += 1  # stay after the defining instruction's own comment
    return q


#: level -> the levels whose prefetch already covers a line (an L1 prefetch fills L2 as well)
_COVERED_BY = {"L1": ("L1",), "L2": ("L1", "L2")}


@declare
@dataclass(frozen=True)
class Prefetch(FunctionPass):
    """``prefetch{level=L1|L2}`` (aliases ``prefetch_L1``, ``prefetch_L2``)."""

    kind: ClassVar[str] = "prefetch"
    aliases: ClassVar[dict[str, dict]] = {"prefetch_L1": {"level": "L1"}, "prefetch_L2": {"level": "L2"}}
    family: ClassVar[str] = PREFETCH
    choices: ClassVar[dict] = {"level": tuple(_COVERED_BY)}
    level: str

    @property
    def description(self) -> str:
        return f"prefetch each 128-byte line of the global loads into {self.level} once its address is known"

    def run_function(self, fn: Function, report: ChangeReport, module: Module, analyses=None) -> None:
        analyses = manager_or_default(analyses)
        cfg = analyses.cfg(fn)  # shared with the other passes tried on this state
        # the plan does not depend on the level: prefetch_L1 and prefetch_L2 tried on
        # one state share it (cfg.shared: one dict per function shape, see ptxopt.analysis.manager)
        plan = cfg.shared.get("prefetch")
        if plan is None:
            plan = cfg.shared["prefetch"] = _plan(fn, cfg)
        covering = _COVERED_BY[self.level]
        inserts: dict[int, tuple[list, list]] = {}  # id(items) -> (items, [(pos, seq, stmt)])
        for event in plan:
            if event[0] == "refuse":
                report.refuse(fn.name, event[1], event[2])
                continue
            _, present, why, line, ins = event
            if any(lv in present for lv in covering):
                continue
            if why:
                report.refuse(fn.name, line, why)
                continue
            path, pos, addr, guard, guard_neg, nloads, lo, hi = ins
            items = _container(fn, path)
            stmt = Instruction("prefetch", ("global", self.level), (addr,), guard, guard_neg)
            todo = inserts.setdefault(id(items), (items, []))[1]
            todo.append((pos, len(todo), stmt))
            shown = f"@{'!' if guard_neg else ''}{guard} " if guard else ""
            report.change(fn.name, line, f"{shown}prefetch.global.{self.level} {addr}: "
                          f"{nloads} load{'s' if nloads > 1 else ''}, offsets {lo}..{hi}")
        for items, todo in inserts.values():
            for pos, _, stmt in sorted(todo, key=lambda x: (-x[0], -x[1])):
                items.insert(pos, stmt)

    @staticmethod
    def refusal(fn: Function, path: tuple[int, ...], ins: Instruction) -> str | None:
        space = opcodes.mem_space(ins)
        if space in _NOT_GLOBAL:
            return ""  # not a candidate: skipped without a report
        if space != "global":
            return "not a .global load (generic address)"
        if operand_facts.role(ins) != "load":
            return "an ordered (.volatile/.relaxed/.acquire) load is not prefetched"
        if len(path) > 1 and any(type(s) is Instruction and s.opcode == "call"
                                 for s in _container(fn, path)):
            return "inside a { } call sequence: nothing is inserted among its parameter passing"
        return None

    @staticmethod
    def undefined(cfg, defined: list[frozenset[str]], block, iid: int) -> str | None:
        """Why a prefetch for the load ``iid`` may not be inserted: a register
        it would read (address base, guard) is not defined on every path to
        the load. The hint is placed no earlier than the last definition
        before the load in its block, so this is also true where it goes."""
        ins = cfg.instructions[iid]
        have = set(defined[block.index])
        for j in range(block.start, iid):
            if cfg.instructions[j].guard is None:
                have.update(cfg.du[j][0])
        a = address_of(ins)
        reads = cfg.du[iid][1]
        need = [_renamed(ins, reads, a.name)] if a.kind == "reg" else []
        if ins.guard:
            need.append(reads[0])
        missing = [r for r in need if r not in have and r != opcodes.CARRY_FLAG]
        if missing:
            return (f"prefetch not inserted: {', '.join(r.split('@')[0] for r in missing)} is not "
                    "defined on every path to the load (a hint may only read defined registers)")
        return None


def _plan(fn: Function, cfg) -> list[tuple]:
    """What both levels do to ``fn``, in report order: ``("refuse", line,
    why)`` for a load or copy that is not prefetched, and per line group
    ``("group", levels already prefetched, why not or None, line, where)``
    (``where``: container path, position, address operand, guard, guard
    negation, load count, lowest and highest offset)."""
    defined = defined_on_every_path(cfg)
    plan: list[tuple] = []
    for block in cfg.blocks:
        last_def: dict[str, int] = {}
        groups: dict[tuple, list[int]] = {}
        present: dict[tuple, set] = {}
        for iid in block.iids:
            ins = cfg.instructions[iid]
            defs, uses = cfg.du[iid]
            if ins.opcode == "prefetch" and "global" in ins.modifiers:
                present.setdefault(_key(ins, uses, last_def), set()).update(
                    lv for lv in _COVERED_BY if lv in ins.modifiers)
            elif ins.opcode == "cp" and "global" in ins.modifiers:
                plan.append(("refuse", ins.line, f"{ins.full_opcode}: an asynchronous copy "
                                                 "already fetches ahead; only ld/ldu are prefetched"))
            elif ins.opcode in ("ld", "ldu"):
                why = Prefetch.refusal(fn, cfg.sites[iid], ins)
                key = _key(ins, uses, last_def) if why is None else None
                if why is None and key is None:
                    why = "the address is neither register- nor symbol-based"
                if why:
                    plan.append(("refuse", ins.line, f"{ins.full_opcode}: {why}"))
                elif key is not None:
                    groups.setdefault(key, []).append(iid)
            for r in defs:
                last_def[r] = iid
        for key, iids in groups.items():
            line = cfg.instructions[iids[0]].line
            why = Prefetch.undefined(cfg, defined, block, iids[0])
            plan.append(("group", frozenset(present.get(key, ())), why, line,
                         None if why else _where(fn, cfg, iids)))
    return plan


def _where(fn: Function, cfg, iids: list[int]) -> tuple:
    loads = [cfg.instructions[i] for i in iids]
    first = loads[0]
    fa = address_of(min(loads, key=_offset))
    names = ({fa.name} if fa.kind == "reg" else set()) | ({first.guard} if first.guard else set())
    path = cfg.sites[iids[0]]
    pos = _place(_container(fn, path), path[-1], names)
    offs = sorted(_offset(i) for i in loads)
    return path, pos, fa.operand, first.guard, first.guard_neg, len(loads), offs[0], offs[-1]
