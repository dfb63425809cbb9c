"""Which global loads read a buffer the kernel provably never writes?

``ld.global.nc`` reads through the non-coherent read-only path: it is only
correct when nothing writes the bytes it reads while the kernel runs (what
``const __restrict__`` promises nvcc). PTX cannot say "no alias", so here
"provably" means: no instruction of the kernel, and of every function it
calls, that may write global memory may reach the load's bytes.

* **Writers** (:func:`global_writers`): stores, atomics and reductions,
  async copies and surface stores whose space is ``.global`` or generic
  (a generic address may point into global memory); any instruction this
  module does not know to leave global memory alone
  (:data:`ptxopt.ptx.opcodes.NO_GLOBAL_WRITE_OPCODES`, pure and collective
  opcodes, loads, prefetches, accesses of other spaces); and everything in
  the bodies of called functions, transitively. A call to a function
  without a body, or through a register, writes anything.
* **Reach** (:func:`may_write`): a writer in the kernel itself reaches the
  load unless :func:`ptxopt.analysis.alias.may_alias` separates them with
  register bases forgotten (a register's value changes; the question is
  about the whole kernel): two distinct variables, disjoint bytes of one
  variable, or two distinct ``.noalias`` parameter roots. A writer in a
  called function reaches the load unless both name distinct variables.
  Distinct ordinary pointer parameters may alias (``saxpy(x, x)``).

The equivalence layer uses the same answer: a candidate whose new ``.nc``
loads are not proven read-only here cannot be ``proved``/``equal`` (the
interpreter and the prover model one coherent memory and cannot see the
difference) -- see :func:`ptxopt.equivalence.decision.decide`.
"""

from __future__ import annotations

from dataclasses import dataclass

from ptxopt.ptx import opcodes, operand_facts
from ptxopt.analysis.alias import Access, may_alias, noalias_params, overlapping_symbols, pointer_roots
from ptxopt.analysis.cfg import CFG
from ptxopt.analysis.manager import AnalysisManager, manager_or_default
from ptxopt.ptx.ir import Instruction, Module

_OTHER_SPACES = frozenset({"shared", "local", "param", "const"})


@dataclass(frozen=True)
class Writer:
    """One instruction that may write global memory: where, what, and its
    access (None: it may write anything -- a callee's store, an unknown opcode)."""

    function: str
    line: int
    what: str
    access: Access | None
    callee: bool = False

    def describe(self) -> str:
        where = f"{self.function}:{self.line}" if self.line else self.function
        return f"{self.what} at {where}"


def _writes_global(ins: Instruction) -> bool:
    """May ``ins`` write global memory (module doc)?"""
    op = ins.opcode
    if op in opcodes.PURE_OPCODES or op in opcodes.COLLECTIVE_OPCODES or op in opcodes.NO_GLOBAL_WRITE_OPCODES:
        return False
    if op in opcodes.LOADS or op in opcodes.PREFETCHES:
        return False
    if op == "call":
        return False  # the callee's body is scanned instead
    if op == "cp" and operand_facts.address(ins) is None:
        return False  # cp.async.commit_group / wait_group: no address, no access
    if op == "wmma" and "store" not in ins.modifiers:
        return False
    if opcodes.is_memory(ins) or op == "wmma":
        return opcodes.mem_space(ins) not in _OTHER_SPACES
    return True


def _access(ins: Instruction, roots: dict[str, str], store: bool) -> Access | None:
    a = operand_facts.address(ins)
    if a is None:
        return None
    base = None
    if a.kind == "sym":
        base = ("sym", a.name)
    elif a.kind == "imm":
        base = ("imm",)
    root = roots.get(a.name) if a.kind == "reg" else None
    return Access(0, store, opcodes.mem_space(ins), base, a.offset, a.size, root)


class ReadOnly:
    """The writers of one kernel (and its callees) and the reach test for its loads."""

    def __init__(self, module: Module, fn, cfg: CFG | None = None, analyses: AnalysisManager | None = None) -> None:
        self.module = module
        self.fn = fn
        self.cfg = cfg if cfg is not None else manager_or_default(analyses).cfg(fn)
        self.roots = pointer_roots(self.cfg)
        self.noalias = noalias_params(fn)
        self.overlap = overlapping_symbols(fn, module)
        self.writers = self._writers()

    def _writers(self) -> list[Writer]:
        out: list[Writer] = []
        for ins in self.cfg.instructions:
            if _writes_global(ins):
                out.append(Writer(self.fn.name, ins.line, ins.full_opcode, _access(ins, self.roots, True)))
        seen: set[str] = set()
        work = [self.fn]
        by_name = {f.name: f for f in self.module.functions}
        while work:
            f = work.pop()
            for ins in f.instructions():
                if ins.opcode != "call":
                    continue
                callee = next((n for n in operand_facts.facts(ins).labels if n in by_name), None)
                if callee is None:
                    out.append(Writer(f.name, ins.line, "call through a register or to an unknown function",
                                      None, callee=True))
                    continue
                if callee in seen:
                    continue
                seen.add(callee)
                g = by_name[callee]
                if g.body is None:
                    out.append(Writer(f.name, ins.line, f"call {callee} (no body here)", None, callee=True))
                    continue
                for x in g.instructions():
                    if _writes_global(x):
                        a = operand_facts.address(x)
                        acc = Access(0, True, opcodes.mem_space(x), ("sym", a.name), a.offset, a.size) \
                            if a is not None and a.kind == "sym" else None
                        out.append(Writer(callee, x.line, x.full_opcode, acc, callee=True))
                work.append(g)
        return out

    def may_write(self, load: Instruction) -> Writer | None:
        """The first writer that may reach ``load``'s bytes, None when none can."""
        la = _access(load, self.roots, False)
        for w in self.writers:
            if w.access is None or la is None:
                return w
            if may_alias(la, w.access, self.noalias, self.overlap):
                return w
        return None


__all__ = ["ReadOnly", "Writer"]
