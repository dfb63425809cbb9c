"""May two memory accesses touch the same bytes? (conservative answers only)

The dependency DAG orders a load and a store, or two stores, whenever this
module says they *may alias*. The rules, in order:

1. **State spaces.** ``global``, ``shared``, ``local`` each alias only
   themselves and ``generic`` (a generic address can point into any of the
   three); ``generic`` aliases all of those. ``param`` aliases only
   ``param`` and ``const`` only ``const``: ``ld.param``/``ld.const`` never
   conflict with stores to other spaces.
2. **Same base, disjoint bytes.** Two accesses *in the same space* whose
   addresses are ``[R+a]`` and ``[R+b]`` with the same register ``R`` holding
   the same value (no definition of ``R`` between them: the DAG builder
   passes a per-register *version*) are disjoint when the byte ranges
   ``[a, a+size)`` and ``[b, b+size)`` do not overlap, size = vector width x
   element size. The same holds for the same symbol or absolute address.
   Safe because equal base values plus different constant offsets are
   different addresses, whatever the base value is -- *modulo the address
   width*: ``[%r1+-4]`` and ``[%r1+4294967292]`` on 32-bit shared memory are
   the same bytes. Offsets come normalised from the operand walker
   (:mod:`ptxopt.ptx.operand_facts`) and ranges are compared on the circle of
   ``2**32`` addresses (:func:`~ptxopt.ptx.operand_facts.ranges_disjoint`), which
   is sound for 64-bit addresses too.
3. **Distinct variables.** ``[x+a]`` and ``[y+b]`` for two different
   symbols are disjoint (distinct PTX variables or parameters; an offset
   leaving its variable is undefined behaviour in PTX) -- except two
   *overlapping* symbols (:func:`overlapping_symbols`): every ``.extern
   .shared`` array names the start of the block's dynamic shared memory, so
   two of them alias whatever their names.
4. **``.noalias`` parameters.** Distinct kernel pointer parameters are *not*
   assumed disjoint (C allows ``saxpy(x, x)``) unless the parameter
   declaration carries ``.noalias``. Then an address provably derived from
   one such parameter (:func:`pointer_roots`: a chain of single-definition
   registers through ``ld.param``, ``mov``, ``cvta`` and ``add``/``sub`` with
   one pointer operand) and one derived from another are disjoint.

5. **Address chains** (used by ``vec_ld``/``vec_st``). Triton gives each
   access its own address register: ``add.s64 %rdK, %rdB, C``. A scan that
   walks one straight-line region may key ``[%rdK+o]`` as ``[%rdB+C+o]``
   with %rdB's version *at the add* (:func:`constant_step` recognises the
   link: an unguarded 64-bit ``add``/``sub`` of an integer immediate; the
   address arithmetic wraps modulo 2^64 exactly like the add), as long as
   %rdK is not written after the add and the add is in the same region
   (a link from before a label may not be the value the access sees).
   Rule 2 then applies to the two keys.

Everything else may alias; in particular any two ``global`` accesses through
different registers that no chain relates.
"""

from __future__ import annotations

from typing import NamedTuple

from ptxopt.ptx import opcodes, operand_facts
from ptxopt.analysis.cfg import CFG
from ptxopt.ptx.ir import Decl, iter_decls
from ptxopt.ptx.operand_facts import Address, ranges_disjoint

ALIASING_SPACES: dict[str, frozenset[str]] = {
    "global": frozenset({"global", "generic"}),
    "shared": frozenset({"shared", "generic"}),
    "local": frozenset({"local", "generic"}),
    "generic": frozenset({"global", "shared", "local", "generic"}),
    "param": frozenset({"param"}),
    "const": frozenset({"const"}),
}


class Access(NamedTuple):
    """One load or store as the alias rules see it.

    ``base``: ``("reg", name, version)``, ``("sym", name)``, ``("imm",)`` or
    None (no address operand found); ``offset`` in bytes (absolute for
    ``imm``); ``size`` in bytes or None (unknown: overlaps everything with
    the same base); ``root``: the pointer parameter the base derives from.
    A named tuple, not a frozen dataclass: the dependency builders make one
    per memory instruction, and the dataclass's guarded ``__init__`` cost
    about three times as much (1.45 against 0.45 us).
    """

    node: int
    store: bool
    space: str
    base: tuple | None
    offset: int
    size: int | None
    root: str | None = None


def address_of(ins) -> Address | None:
    """The instruction's address fact (:func:`ptxopt.ptx.operand_facts.address`)."""
    return operand_facts.address(ins)


def base_key(addr: Address | None, version: dict[str, int]) -> tuple[tuple | None, int]:
    """``(base key, offset)`` of an address fact (see :class:`Access`); the
    offset is the fact's, normalised modulo the space's address width."""
    if addr is None:
        return None, 0
    kind = addr.kind
    if kind == "reg":
        return ("reg", addr.name, version.get(addr.name, 0)), addr.offset
    if kind == "sym":
        return ("sym", addr.name), addr.offset
    if kind == "imm":
        return ("imm",), addr.offset
    return None, 0


CHAIN_OPCODES = frozenset({"add", "sub"})
_CHAIN_TYPES = frozenset({("s64",), ("u64",)})


def constant_step(ins) -> tuple[str, str, int] | None:
    """``(R, B, C)`` (register names and a byte count) when ``ins`` is a link
    ``R = B + C`` of an address chain: an unguarded ``add.s64``/``add.u64 R,
    B, C`` (or ``R, C, B``) or ``sub.s64``/``sub.u64 R, B, C`` (C negated)
    with an integer immediate C and B a general register; None for anything
    else (32-bit arithmetic, ``.cc``, a guard, a register or float operand, a
    special register)."""
    if ins.opcode not in CHAIN_OPCODES or ins.guard is not None or ins.modifiers not in _CHAIN_TYPES \
            or len(ins.operands) != 3:
        return None
    d, a, b = ins.operands
    rd = operand_facts.reg_name(d)
    if rd is None:
        return None
    ra, ca = operand_facts.reg_name(a), operand_facts.immediate(a)
    rb, cb = operand_facts.reg_name(b), operand_facts.immediate(b)
    if ins.opcode == "add" and ca is not None and rb is not None:
        ra, cb = rb, ca
    if ra is None or type(cb) is not int or opcodes.is_special_reg(ra):
        return None
    return rd, ra, (-cb if ins.opcode == "sub" else cb)


def may_alias(a: Access, b: Access, noalias: frozenset[str] = frozenset(),
              overlap: frozenset[str] = frozenset()) -> bool:
    """True unless the rules in the module doc prove ``a`` and ``b`` disjoint.
    ``overlap``: :func:`overlapping_symbols` of the function."""
    if b.space not in ALIASING_SPACES[a.space]:
        return False
    ka, kb = a.base, b.base
    if ka is not None and kb is not None:
        if ka == kb:
            if a.space == b.space:
                return not ranges_disjoint(a.offset, a.size, b.offset, b.size)
            return True
        if ka[0] == "sym" and kb[0] == "sym":
            return ka[1] in overlap and kb[1] in overlap
    if a.root is not None and b.root is not None and a.root != b.root \
            and a.root in noalias and b.root in noalias:
        return False
    return True


def overlapping_symbols(fn, module=None) -> frozenset[str]:
    """Variables whose addresses another variable of a different name may
    share: every ``.extern .shared`` array, at module level (when ``module``
    is given) or in any scope of ``fn``. They all start at the dynamic
    shared-memory base of the block (CUDA's ``extern __shared__`` arrays;
    ptxas places every unsized ``.extern .shared`` array there), so the
    distinct-variables rule must not separate them.

    Without ``module`` only ``fn``'s own declarations are seen: legality
    checks (the passes) always pass the module."""
    decls = [d for d in (module.items if module is not None else ()) if type(d) is Decl]
    if fn is not None and fn.body is not None:
        decls += list(iter_decls(fn.body))
    return frozenset(it.name for d in decls
                     if d.space == ".shared" and ".extern" in d.attrs for it in d.items)


def noalias_params(fn) -> frozenset[str]:
    """Names of the function's parameters declared ``.noalias``."""
    return frozenset(p.name for p in (fn.params or ()) if ".noalias" in p.attrs)


_PTR_MOVES = frozenset({"mov", "cvta"})
_PTR_ARITH = frozenset({"add", "sub"})


def pointer_roots(cfg: CFG) -> dict[str, str]:
    """Register -> the parameter its value is provably derived from.

    Only registers with exactly one definition in the function, unguarded,
    are followed: ``ld.param R, [p]`` roots ``R`` at ``p``; ``mov``/``cvta``
    copy the root of their source; ``add``/``sub`` take the root of the one
    operand that has one (two rooted operands: no root). Computed only when
    some parameter is ``.noalias`` (otherwise roots cannot matter).
    """
    fn = cfg.function
    params = {p.name for p in (fn.params or ())}
    if not noalias_params(fn):
        return {}
    def_of: dict[str, int] = {}
    multi: set[str] = set()
    for iid, (defs, _) in enumerate(cfg.du):
        for r in defs:
            if r in def_of or cfg.instructions[iid].guard is not None:
                multi.add(r)
            def_of[r] = iid
    memo: dict[str, str | None] = {}

    def root(r: str, depth: int = 0) -> str | None:
        if r in memo:
            return memo[r]
        memo[r] = None  # cycles and deep chains resolve to "no root"
        if r in multi or r not in def_of or depth > 64:
            return None
        ins = cfg.instructions[def_of[r]]
        out = None
        srcs = [operand_facts.reg_name(o) for o in ins.operands[1:]]
        if ins.opcode == "ld" and "param" in ins.modifiers:
            a = address_of(ins)
            if a is not None and a.kind == "sym" and a.name in params:
                out = a.name
        elif ins.opcode in _PTR_MOVES and len(srcs) == 1 and srcs[0] is not None:
            out = root(srcs[0], depth + 1)
        elif ins.opcode in _PTR_ARITH and len(srcs) == 2:
            rs = [root(r, depth + 1) for r in srcs if r is not None]
            rs = [x for x in rs if x is not None]
            if len(rs) == 1 and not (ins.opcode == "sub" and srcs[1] is not None
                                     and root(srcs[1], depth + 1)):
                out = rs[0]
        memo[r] = out
        return out

    out = {}
    for r in def_of:
        x = root(r)
        if x is not None:
            out[r] = x
    return out
