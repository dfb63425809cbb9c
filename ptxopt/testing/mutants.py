"""Mutants of a kernel: small semantic changes the verifier must notice.

Five operators, each applied at up to ``per_operator`` sites spread over the
kernel (deterministically):

* ``constant``  an immediate source operand of an arithmetic instruction
  becomes another value (integers +1, floats x1.5 + 1);
* ``drop_store`` a ``st``/``atom``/``red`` is deleted;
* ``swap``      the two sources of a non-commutative instruction swap
  (``sub``, ``div``, ``rem``, ``shl``, ``shr``, ordered ``setp``...), when
  they differ;
* ``shift``     a load or store address moves by its access size;
* ``drop_barrier`` a ``bar.sync``/``barrier.sync`` is deleted;
* ``misalign``  a dead load of half the width is inserted before a load of
  4 bytes or more, inside its bytes but misaligned for its own width
  (``ld.global.u32 %r1, [%rd4+2]`` before ``ld.global.u64 %rd1, [%rd4]``,
  whose destination it shares and which overwrites it): it touches only
  bytes the original touches and faults all the same;
* ``undeclared`` a dead ``mov`` to the register one past a ``.reg``
  declaration's count (``%r20`` where ``%r<20>`` declares ``%r0 .. %r19``) is
  inserted before an arithmetic instruction: a pass that allocates a
  register without growing the declaration. It computes nothing, and ptxas
  rejects the module: a prover that takes the register for one more input
  proves it (``ptxopt.ptx.declared``).

A mutant is not always a different function (a store overwritten later, a
constant in dead code, a barrier no schedule needs): the campaign reports
every ``equal`` so a person can judge it.
"""

from __future__ import annotations

import math

from dataclasses import dataclass, replace

from ptxopt.ptx import opcodes
from ptxopt.ptx.ir import Addr, Imm, Instruction, Module, Reg, Vec, instruction_slots, iter_decls

OPERATORS = ("constant", "drop_store", "swap", "shift", "drop_barrier", "misalign", "undeclared")
_NON_COMMUTATIVE = frozenset({"sub", "div", "rem", "shl", "shr", "setp", "set", "slct"})
_ORDERED_CMP = frozenset({"lt", "le", "gt", "ge", "lo", "ls", "hi", "hs", "ltu", "leu", "gtu", "geu"})
_ARITH = frozenset({"add", "sub", "mul", "mad", "fma", "and", "or", "xor", "shl", "shr", "min",
                    "max", "div", "rem", "setp", "selp", "mov", "mul24", "mad24"})


@dataclass
class Mutant:
    operator: str
    line: int
    what: str
    module: Module


def _sites(module: Module, entry: str):
    fn = module.pick_entry(entry)
    return [(k, ins) for k, (_, _, ins) in enumerate(instruction_slots(fn.body))]


def _mutate_at(module: Module, entry: str, k: int, change) -> Module:
    """A copy of ``module`` with instruction ``k`` of ``entry`` replaced by
    ``change(ins)`` (None deletes it)."""
    m = module.copy()
    items, i, ins = list(instruction_slots(m.pick_entry(entry).body))[k]
    new = change(ins)
    if new is None:
        del items[i]
    elif type(new) is list:
        items[i:i + 1] = new
    else:
        items[i] = new
    return m


def _other_constant(imm: Imm) -> Imm | None:
    try:
        v = imm.value()
    except (ValueError, TypeError):
        return None
    if imm.is_float:
        if imm.text.lower().lstrip("-").startswith("0d"):
            return None
        f = float(v)
        if math.isinf(f) or math.isnan(f):
            # inf * 1.5 + 1 is inf again: not a mutant at all; any finite value differs
            return Imm("1.0")
        return Imm(repr(f * 1.5 + 1.0))
    return Imm(str(int(v) + 1))


def _constant(ins: Instruction):
    if ins.opcode not in _ARITH or ins.guard is not None and ins.opcode == "mov":
        return None
    ops = list(ins.operands)
    for j in range(len(ops) - 1, 0, -1):
        if type(ops[j]) is Imm:
            new = _other_constant(ops[j])
            if new is None:
                return None
            if ops[j].is_float and ops[j].text[:2].lower() == "0f":
                import struct
                new = Imm("0f%08X" % struct.unpack("<I", struct.pack("<f", float(new.text)))[0])
            ops[j] = new
            return lambda i: replace(i, operands=tuple(ops)), f"{ins.opcode} constant -> {new}"
    return None


def _swap(ins: Instruction):
    if ins.opcode not in _NON_COMMUTATIVE or len(ins.operands) < 3:
        return None
    if ins.opcode in ("setp", "set") and not _ORDERED_CMP & set(ins.modifiers):
        return None
    ops = list(ins.operands)
    a, b = 1, 2
    if type(ops[a]) is Imm or type(ops[b]) is Imm or str(ops[a]) == str(ops[b]):
        return None
    ops[a], ops[b] = ops[b], ops[a]
    return lambda i: replace(i, operands=tuple(ops)), f"{ins.opcode} sources swapped"


def _shift(ins: Instruction):
    if not (opcodes.is_load(ins) or opcodes.is_store(ins)) or ins.opcode not in ("ld", "st"):
        return None
    if opcodes.space_of(ins) == "param":
        return None
    size = opcodes.access_bytes(ins)
    ops = list(ins.operands)
    for j, o in enumerate(ops):
        if type(o) is Addr and size:
            ops[j] = replace(o, offset=o.offset + size)
            return lambda i: replace(i, operands=tuple(ops)), f"{ins.full_opcode} address +{size}"
    return None


def _drop_store(ins: Instruction):
    if ins.opcode in ("st", "atom", "red") and opcodes.space_of(ins) != "param":
        return (lambda i: None), f"{ins.full_opcode} dropped"
    return None


def _drop_barrier(ins: Instruction):
    if ins.opcode in ("bar", "barrier") and ("sync" in ins.modifiers or not ins.modifiers
                                             or ins.modifiers == ("cta",)):
        return (lambda i: None), f"{ins.full_opcode} dropped"
    return None


def _misalign(ins: Instruction):
    if ins.opcode != "ld" or opcodes.space_of(ins) in ("param", "const") or ins.guard is not None:
        return None
    size = opcodes.access_bytes(ins)
    dest, addr = (ins.operands + (None, None))[:2]
    if size is None or size < 4 or type(addr) is not Addr or addr.extra:
        return None
    first = dest.items[0] if type(dest) is Vec and dest.items else dest
    if type(first) is not Reg:
        return None
    w = min(size // 2, 8)
    m = w // 2
    space = [x for x in ins.modifiers if x.split("::")[0] in ("global", "shared", "local")]
    extra = Instruction("ld", (*space, f"u{8 * w}"), (first, replace(addr, offset=addr.offset + m)),
                        line=ins.line)
    return (lambda i: [extra, i]), f"{extra.full_opcode} at +{m} inside {ins.full_opcode} (misaligned)"


_INTEGER_REG = frozenset({".b32", ".u32", ".s32", ".b64", ".u64", ".s64"})


def _one_past(module: Module, entry: str) -> tuple[str, str] | None:
    """``(register, type)``: the name one past the count of the entry's first
    integer ``.reg`` declaration with a count (``%r<20>``: ``%r20``)."""
    fn = module.pick_entry(entry)
    for d in iter_decls(fn.body):
        t = next((a for a in d.attrs if a in _INTEGER_REG), None)
        if d.space == ".reg" and t is not None:
            for it in d.items:
                if it.count is not None:
                    return f"{it.name}{it.count}", t[1:]
    return None


def _undeclared(fresh: tuple[str, str] | None):
    def find(ins: Instruction):
        if fresh is None or ins.opcode not in _ARITH or ins.guard is not None:
            return None
        name, t = fresh
        extra = Instruction("mov", (t,), (Reg(name), Imm("7")), line=ins.line)
        return (lambda i: [extra, i]), f"dead mov.{t} to {name}, which no declaration declares"
    return find


_FINDERS = {"constant": _constant, "drop_store": _drop_store, "swap": _swap, "shift": _shift,
            "drop_barrier": _drop_barrier, "misalign": _misalign}


def mutants(module: Module, entry: str, per_operator: int = 3, operators=OPERATORS) -> list[Mutant]:
    """Up to ``per_operator`` mutants per operator, at sites spread evenly
    over the kernel."""
    sites = _sites(module, entry)
    finders = dict(_FINDERS, undeclared=_undeclared(_one_past(module, entry)))
    out: list[Mutant] = []
    for op in operators:
        found = []
        for k, ins in sites:
            r = finders[op](ins)
            if r is not None:
                found.append((k, ins, r))
        if not found:
            continue
        step = max(1, len(found) // per_operator)
        for k, ins, (change, what) in found[::step][:per_operator]:
            out.append(Mutant(op, ins.line, what, _mutate_at(module, entry, k, change)))
    return out
