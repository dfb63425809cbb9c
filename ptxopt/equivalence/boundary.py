"""Boundary scalars: extra launches whose integer scalars sit where a kernel's
comparisons flip.

A manifest fixes one value per scalar (``n = 1024``, ``cols = 512``), chosen
so that the kernel does all its work: every bounds check passes, every tail
loop is empty. A transformation that breaks the tail, or the path of a
thread beyond the data, is then never exercised. For a corpus launch
(:class:`~ptxopt.corpus.KernelSpec`) :func:`boundary_scalars` proposes up to
two more sets of integer scalars, each only *smaller* than the contract's
(buffers are sized for the contract's values, so a smaller size stays inside
them), and never breaking a divisibility the kernel was compiled for
(Triton's ``divisible_by_16``: then steps of 16):

* ``tail`` -- every integer scalar one below its contract value (16 below
  for a divisible one): partial tails, remainder loops, a last CTA or row
  that is not full;
* ``boundary`` -- every integer scalar at a boundary the kernel itself
  draws: an immediate it compares the scalar against directly
  (``setp.lt.s32 %p, %r_K, 1`` -> ``K = 1``), else the CTA's x extent minus
  one (``blockDim.x - 1``: one thread of each CTA past the data, the masked
  path of a kernel whose CTA covers a row), the smallest such below the
  contract value.

Each is run as one more launch (first seed, random inputs, lockstep) and
listed among the result's launches with its scalars and ``boundary`` kind.
Float scalars, pointers and scalars of non-integer type keep their values.
"""

from __future__ import annotations

from ptxopt.ir import iter_instructions
from ptxopt.operand_facts import address, immediate, reg_name

INT_DTYPES = frozenset({"u8", "s8", "u16", "s16", "b16", "u32", "s32", "b32", "u64", "s64", "b64"})


def compared_immediates(program, kernel: str) -> dict[str, set[int]]:
    """Per parameter name: the immediates the kernel compares it against
    directly (``setp`` on the register ``ld.param`` loaded it into, that
    register not written again)."""
    fn = program.entry(kernel)
    reg_of: dict[str, str] = {}
    redefined: set[str] = set()
    cmps: list[tuple[str, int]] = []
    for ins in iter_instructions(fn.body):
        ops = ins.operands
        dest = reg_name(ops[0]) if ops else None
        a = address(ins)
        if ins.opcode == "ld" and "param" in ins.modifiers and len(ops) == 2 and dest is not None \
                and a is not None and a.operand is ops[1] and a.kind == "sym" and not a.offset:
            if dest in reg_of:
                redefined.add(dest)
            reg_of[dest] = a.name
            continue
        if dest is not None and ins.opcode != "setp" and dest in reg_of:
            redefined.add(dest)
        if ins.opcode == "setp" and len(ops) >= 3:
            a, b = ops[1], ops[2]
            for r, c in ((a, b), (b, a)):
                name, value = reg_name(r), immediate(c)
                if name is not None and type(value) is int:
                    cmps.append((name, value))
    out: dict[str, set[int]] = {}
    for reg, c in cmps:
        if reg in reg_of and reg not in redefined:
            out.setdefault(reg_of[reg], set()).add(c)
    return out


def _legal(value: int, divisible: bool) -> int | None:
    if divisible:
        value -= value % 16
    return value if value >= 1 else None


def boundary_scalars(spec, program, kernel: str) -> list[tuple[str, dict[int, int], str]]:
    """``[(kind, {argument index: value}, what)]`` for the launches described
    in the module doc; empty when the kernel has no integer scalar or no
    value changes."""
    div = set(getattr(spec, "divisible_by_16", ()) or ())
    ints = [(i, p) for i, p in enumerate(spec.params)
            if p.role == "scalar" and p.dtype in INT_DTYPES and isinstance(p.value, int) and p.value >= 2]
    if not ints:
        return []
    imms = compared_immediates(program, kernel)
    bx = int(spec.launch.block[0])
    tail: dict[int, int] = {}
    bound: dict[int, int] = {}
    why: list[str] = []
    for i, p in ints:
        d = p.arg in div
        v = _legal(p.value - (16 if d else 1), d)
        if v is not None and v < p.value:
            tail[i] = v
        cands = sorted(c for c in imms.get(p.name, ()) if 1 <= c < p.value and _legal(c, d) == c)
        if cands:
            bound[i] = cands[0]
            why.append(f"{p.arg} = {cands[0]} (compared against)")
        else:
            b = _legal(bx - 1, d)
            if b is not None and b < p.value:
                bound[i] = b
                why.append(f"{p.arg} = {b} (blockDim.x - 1{', divisible by 16' if d else ''})")
    out = []
    if tail:
        out.append(("tail", tail, "every integer scalar one step below its contract value"))
    if bound and bound != tail:
        out.append(("boundary", bound, "; ".join(why)))
    return out


__all__ = ["boundary_scalars", "compared_immediates", "INT_DTYPES"]
