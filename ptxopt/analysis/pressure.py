"""Register pressure: how many registers are live at once.

The brief's finding is that register pressure is *the* mechanism behind most
speedups and slowdowns (spills under ``.maxnreg``, reordering lengthening
live ranges), so this is a first-class feature.

Definition. Program points are the start of each block and the point just
after each instruction. The live set at a point comes from
:func:`~ptxopt.analysis.defuse.liveness`; at the point after an instruction
the registers it defines are counted even if dead (the write still needs a
register). Pressure is the maximum over points of the number of live
registers:

* per class ``pred``, ``b16``, ``b32``, ``b64`` (and ``b128``), each class
  maximised independently, the class taken from the register's ``.reg``
  declaration through ``opcodes.REG_CLASS`` (undeclared names: guessed from
  the nvcc/Triton naming convention ``%p``/``%rs``/``%r``/``%f``/``%rd``/``%fd``,
  else ``b32``);
* ``total32``: the maximum of the 32-bit-register equivalent at one point,
  b16 and b32 count 1, b64 counts 2, b128 4; predicates live in their own
  register file and count 0;
* ``max_live``: the maximum number of live registers of any class at one point.

Special registers (``%tid.x``...) never count: they are not allocated.
This is a pre-allocation estimate: ptxas coalesces, rematerialises and packs
16-bit values, so its register count differs, but it moves with it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ptxopt.ptx import opcodes
from ptxopt.analysis.cfg import CFG
from ptxopt.analysis.defuse import Liveness, liveness

CLASSES = ("pred", "b16", "b32", "b64", "b128")
WEIGHT32 = {"pred": 0, "b16": 1, "b32": 1, "b64": 2, "b128": 4}

_NAME_GUESS = (("%fd", "b64"), ("%rd", "b64"), ("%rs", "b16"), ("%p", "pred"),
               ("%hh", "b32"), ("%h", "b16"), ("%r", "b32"), ("%f", "b32"))


@dataclass
class RegisterPressure:
    """Maximum simultaneously live registers (see module doc)."""

    by_class: dict[str, int] = field(default_factory=lambda: {c: 0 for c in CLASSES})
    total32: int = 0
    max_live: int = 0
    per_block_total32: list[int] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {**self.by_class, "total32": self.total32, "max_live": self.max_live}


def reg_class(cfg: CFG, name: str) -> str:
    """Pressure class of a register of ``cfg``'s function."""
    t = cfg.reg_types.get(name)
    if t is not None:
        return opcodes.REG_CLASS.get(t, "b32")
    base = name.split("@", 1)[0]
    for prefix, cls in _NAME_GUESS:
        if base.startswith(prefix) and base[len(prefix):].isdigit():
            return cls
    return "b32"


def register_pressure(cfg: CFG, live: Liveness | None = None) -> RegisterPressure:
    if live is None:
        live = liveness(cfg)
    cls_cache: dict[str, int] = {}
    weights = [WEIGHT32[c] for c in CLASSES]

    def ci(r: str) -> int:
        k = cls_cache.get(r)
        if k is None:
            k = cls_cache[r] = CLASSES.index(reg_class(cfg, r))
        return k

    implicit = opcodes.IMPLICIT_REGS  # the carry flag is no register to allocate
    best = [0] * len(CLASSES)
    best32 = 0
    best_all = 0
    per_block = []
    du = cfg.du
    insns = cfg.instructions
    for b in cfg.blocks:
        cur = set(live.live_out[b.index]) - implicit
        counts = [0] * len(CLASSES)
        for r in cur:
            counts[ci(r)] += 1
        blk32 = 0

        def record(c: list[int]) -> None:
            nonlocal best32, best_all, blk32
            for k in range(len(CLASSES)):
                if c[k] > best[k]:
                    best[k] = c[k]
            w = sum(x * y for x, y in zip(c, weights))
            if w > best32:
                best32 = w
            if w > blk32:
                blk32 = w
            s = sum(c)
            if s > best_all:
                best_all = s

        if not b.instructions:
            record(counts)
        for iid in reversed(b.iids):
            defs, uses = du[iid]
            if implicit.intersection(defs) or implicit.intersection(uses):
                defs = [r for r in defs if r not in implicit]
                uses = [r for r in uses if r not in implicit]
            # point just after the instruction: live-out plus dead defs
            dead = [r for r in defs if r not in cur]
            if dead:
                c = list(counts)
                for r in dead:
                    c[ci(r)] += 1
                record(c)
            else:
                record(counts)
            if insns[iid].guard is None:
                for r in defs:
                    if r in cur:
                        cur.discard(r)
                        counts[ci(r)] -= 1
            for r in uses:
                if r not in cur:
                    cur.add(r)
                    counts[ci(r)] += 1
        record(counts)  # block start: live-in
        per_block.append(blk32)
    return RegisterPressure(dict(zip(CLASSES, best)), best32, best_all, per_block)
