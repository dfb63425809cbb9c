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
   different addresses, whatever the base value is.
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

from dataclasses import dataclass

from ptxopt.analysis.cfg import CFG
from ptxopt.ir import Addr, Decl, Imm, Reg, Sym, iter_decls

ALIASING_SPACES: dict[str, frozenset[str]] = {
    "global": frozenset({"global", "generic"}),
    "shared": frozenset({"shared", "generic"}),
    "local": frozenset({"local", "generic"}),
    "generic": frozenset({"global", "shared", "local", "generic"}),
    "param": frozenset({"param"}),
    "const": frozenset({"const"}),
}


@dataclass(frozen=True, slots=True)
class Access:
    """One load or store as the alias rules see it.

    ``base``: ``("reg", name, version)``, ``("sym", name)``, ``("imm",)`` or
    None (no address operand found); ``offset`` in bytes (absolute for
    ``imm``); ``size`` in bytes or None (unknown: overlaps everything with
    the same base); ``root``: the pointer parameter the base derives from.
    """

    node: int
    store: bool
    space: str
    base: tuple | None
    offset: int
    size: int | None
    root: str | None = None


def address_of(ins) -> Addr | None:
    for o in ins.operands:
        if type(o) is Addr:
            return o
    return None


def base_key(addr: Addr | None, version: dict[str, int]) -> tuple[tuple | None, int]:
    """``(base key, offset)`` of an address (see :class:`Access`)."""
    if addr is None or addr.extra:
        return None, 0
    b = addr.base
    t = type(b)
    if t is Reg:
        return ("reg", b.name, version.get(b.name, 0)), addr.offset
    if t is Sym:
        return ("sym", b.name), addr.offset + b.offset
    if t is Imm:
        try:
            return ("imm",), int(b.value()) + addr.offset
        except (ValueError, TypeError):
            return None, 0
    return None, 0


CHAIN_OPCODES = frozenset({"add", "sub"})
_CHAIN_TYPES = frozenset({("s64",), ("u64",)})


def constant_step(ins) -> tuple[Reg, Reg, int] | None:
    """``(R, B, C)`` when ``ins`` is a link ``R = B + C`` of an address chain:
    an unguarded ``add.s64``/``add.u64 R, B, C`` (or ``R, C, B``) or
    ``sub.s64``/``sub.u64 R, B, C`` (C negated) with an integer immediate
    C and B a general register; None for anything else (32-bit arithmetic,
    ``.cc``, a guard, a register or float operand, a special register)."""
    from ptxopt.opcodes import is_special_reg

    if ins.opcode not in CHAIN_OPCODES or ins.guard is not None or ins.modifiers not in _CHAIN_TYPES \
            or len(ins.operands) != 3:
        return None
    d, a, b = ins.operands
    if type(d) is not Reg:
        return None
    if ins.opcode == "add" and type(a) is Imm and type(b) is Reg:
        a, b = b, a
    if type(a) is not Reg or type(b) is not Imm or is_special_reg(a.name):
        return None
    try:
        c = b.value()
    except (ValueError, TypeError):
        return None
    if type(c) is not int:
        return None
    return d, a, (-c if ins.opcode == "sub" else c)


def may_alias(a: Access, b: Access, noalias: frozenset[str] = frozenset(),
              overlap: frozenset[str] = frozenset()) -> bool:
    """True unless the rules in the module doc prove ``a`` and ``b`` disjoint.
    ``overlap``: :func:`overlapping_symbols` of the function."""
    if b.space not in ALIASING_SPACES[a.space]:
        return False
    ka, kb = a.base, b.base
    if ka is not None and kb is not None:
        if ka == kb:
            if a.space == b.space and a.size is not None and b.size is not None:
                return a.offset < b.offset + b.size and b.offset < a.offset + a.size
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
        if ins.opcode == "ld" and "param" in ins.modifiers:
            a = address_of(ins)
            if a is not None and type(a.base) is Sym and a.base.name in params:
                out = a.base.name
        elif ins.opcode in _PTR_MOVES and len(ins.operands) == 2 and type(ins.operands[1]) is Reg:
            out = root(ins.operands[1].name, depth + 1)
        elif ins.opcode in _PTR_ARITH and len(ins.operands) == 3:
            rs = [root(o.name, depth + 1) for o in ins.operands[1:] if type(o) is Reg]
            rs = [x for x in rs if x is not None]
            if len(rs) == 1 and not (ins.opcode == "sub" and type(ins.operands[2]) is Reg
                                     and root(ins.operands[2].name, depth + 1)):
                out = rs[0]
        memo[r] = out
        return out

    out = {}
    for r in def_of:
        x = root(r)
        if x is not None:
            out[r] = x
    return out
