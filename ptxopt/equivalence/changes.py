"""Changed-instruction coverage: did the launches run what the candidate changed?

An ``equal`` from :func:`ptxopt.equivalence.interpret.verify` means "no launch told them
apart". That says nothing about an instruction no launch ran: a store the
contract never reaches can be dropped, a constant on a path never taken can
be anything. This module finds, per function, the instructions a transformed
module changed relative to the original (:func:`changes`) and checks that
each ran in some compared launch (:func:`check`), from the interpreter's
executed-instruction coverage (``LaunchResult.coverage["executed"]``: an
instruction *ran* when its guard held in some thread).

What counts as changed: a difference of the two functions' instruction
sequences (:class:`difflib.SequenceMatcher` over the decoded instructions,
labels included, as the interpreter numbers them):

* an instruction of the transformed function not matched in the original
  (new, edited, or *moved*: a moved instruction's new place is what is being
  tested) must have run in the transformed kernel;
* an instruction of the original not matched in the transformed one (deleted,
  edited, moved away) must have run in the original: the deletion's site;
* a label that moved or appeared counts as a change of the instruction it
  labels (the branch target), on that side;
* a function only one module has: all of its instructions.

:func:`check` is cheap (the sequences of the original are memoised on its
:class:`~ptxopt.interp.Program`); the executed flags cost a compare per
instruction step until the flag is set.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from difflib import SequenceMatcher

#: at most this many never-run instructions are named in a result
MAX_NAMED = 8


@dataclass(frozen=True)
class Site:
    """One changed instruction: which side it lives on, where, and what."""

    side: str  # "original" or "transformed"
    function: str
    pc: int  # index in the interpreter's decoded code (executed-coverage index)
    line: int  # source line (0: unknown)
    ins: object = field(default=None, compare=False, repr=False)  # None: the end of the function
    pure: bool = True  # arithmetic only: no memory access, barrier, fence, atomic or collective

    @property
    def text(self) -> str:
        """The instruction on one line (formatted only when asked: reports)."""
        from ptxopt.ptx.emit import format_instruction

        if self.ins is None:
            return "end of function"
        return " ".join(format_instruction(self.ins).split()).rstrip(";")


def _sequence(program, fname: str):
    """``(tokens, pcs, code)``: the function's instructions and labels in
    order; ``pcs[i]`` is the instruction token ``i`` stands for (a label: the
    instruction it labels)."""
    memo = program.__dict__.setdefault("_change_seq", {})
    hit = memo.get(fname)
    if hit is not None:
        return hit
    d = program.decoded(fname)
    at: dict[int, list[str]] = {}
    for name, pc in d.labels.items():
        at.setdefault(pc, []).append(name)
    tokens, pcs = [], []
    n = len(d.code) - 1  # the last step is the implicit ret the decoder appends
    for pc in range(n + 1):
        for name in sorted(at.get(pc, ())):
            tokens.append(("label", name))
            pcs.append(pc)
        if pc < n:
            tokens.append(d.code[pc].ins)
            pcs.append(pc)
    hit = memo[fname] = (tokens, pcs, d.code)
    return hit


def _site(side, fname, code, pc) -> Site:
    from ptxopt.ptx.operand_facts import role

    if pc >= len(code) - 1:
        return Site(side, fname, pc, 0, None, False)
    ins = code[pc].ins
    return Site(side, fname, pc, int(ins.line or 0), ins,
                role(ins) == "pure" and ins.opcode not in ("bra", "call", "ret", "exit", "brx"))


def changes(po, pt) -> list[Site]:
    """Every changed instruction between programs ``po`` (original) and
    ``pt`` (transformed), both sides (see the module doc)."""
    out: list[Site] = []
    names = list(po.functions) + [n for n in pt.functions if n not in po.functions]
    for fname in names:
        in_o, in_t = fname in po.functions, fname in pt.functions
        if in_o and in_t:
            to, pco, codeo = _sequence(po, fname)
            tt, pct, codet = _sequence(pt, fname)
            # tokens as small integers: each instruction is hashed once, not
            # at every probe of the matcher (the original's numbering is memoised)
            memo = po.__dict__.setdefault("_change_ids", {})
            if fname not in memo:
                table: dict = {}
                memo[fname] = (table, [table.setdefault(x, len(table)) for x in to])
            table, io = memo[fname]
            table = dict(table)
            it = [table.setdefault(x, len(table)) for x in tt]
            if io == it:
                continue
            sm = SequenceMatcher(None, io, it, autojunk=False)
            seen_o, seen_t = set(), set()
            for tag, i1, i2, j1, j2 in sm.get_opcodes():
                if tag == "equal":
                    continue
                for i in range(i1, i2):
                    if pco[i] not in seen_o:
                        seen_o.add(pco[i])
                        out.append(_site("original", fname, codeo, pco[i]))
                for j in range(j1, j2):
                    if pct[j] not in seen_t:
                        seen_t.add(pct[j])
                        out.append(_site("transformed", fname, codet, pct[j]))
        else:
            prog, side = (po, "original") if in_o else (pt, "transformed")
            _, _, code = _sequence(prog, fname)
            out.extend(_site(side, fname, code, pc) for pc in range(len(code) - 1))
    return out


def merge_executed(acc: dict, executed: dict | None) -> None:
    """OR one launch's executed flags (function -> bools) into ``acc``."""
    for fname, flags in (executed or {}).items():
        old = acc.get(fname)
        acc[fname] = flags.copy() if old is None or old.shape != flags.shape else old | flags


def _ran(executed: dict, site: Site) -> bool:
    flags = executed.get(site.function)
    if flags is None or site.pc >= len(flags):
        return site.ins is None  # falling off the end: no instruction to run
    return bool(flags[site.pc])


def describe(site: Site) -> str:
    where = f"line {site.line}" if site.line else f"{site.function} instruction {site.pc}"
    side = "" if site.side == "transformed" else ", the original's"
    return f"{where} ({site.text}{side})"


def check(sites: list[Site], executed_o: dict, executed_t: dict) -> tuple[int, int, tuple]:
    """``(changed, ran, never_ran)``: how many changed instructions there
    are, how many of them ran, and a description of (at most
    ``MAX_NAMED``) those that never did."""
    missing = [s for s in sites if not _ran(executed_o if s.side == "original" else executed_t, s)]
    named = tuple(describe(s) for s in missing[:MAX_NAMED])
    if len(missing) > MAX_NAMED:
        named += (f"and {len(missing) - MAX_NAMED} more",)
    return len(sites), len(sites) - len(missing), named


__all__ = ["Site", "changes", "check", "merge_executed", "describe", "MAX_NAMED"]
