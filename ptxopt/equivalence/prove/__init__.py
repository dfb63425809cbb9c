"""Translation validation: is a transformed kernel equivalent for *all* inputs?

The interpreter's ``equal`` is a test (a few launches agreed). :func:`prove`
establishes equivalence symbolically instead, in the tradition of
translation validation (Necula, PLDI 2000; value-graph validation, Tristan,
Govereau and Morrisett, PLDI 2011): both kernels are executed block by block
into one hash-consed value graph (:mod:`.values`), memory is versioned state
in which provably disjoint stores commute (:mod:`.memory_versions`), and the two
control-flow graphs are matched block by block with live-in/live-out
correspondence (:mod:`.match`). Where blocks no longer correspond because a
loop was unrolled, loops with constant trip counts are run out instead
(:mod:`.loop_paths`: a one-block loop as a region, else both functions path by
path), and loops with any trip count are proved by an inductive simulation
at their headers, discharged by the SMT solver (:mod:`.loop_sim`; also the
only proof tried when the candidate declares new ``.reg`` temporaries).

Verdicts (:class:`ProveResult.verdict`):

``proved``        equivalent for every input and launch, under the model's
                  assumptions (race-free weak accesses between ordering
                  points, as the PTX memory model allows reordering them;
                  uninitialised registers hold the same value in both)
``inconclusive``  the prover could not decide; ``reason`` says why (an
                  unsupported shape, CFGs that differ, memory operations
                  that may alias reordered, a value it cannot show equal...).
                  The caller falls back to the interpreter.
``differ``        certainly not equivalent: only for interface differences
                  (a kernel missing or added, different parameter lists),
                  never for two expressions that merely look different

It never says ``proved`` for a pair that can differ: every normalisation is
an identity on bits (see :mod:`.values`), and anything it does not model
(textures, calls, unknown opcodes) is an ordering point compared as an
opaque event.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass, field

from ptxopt.equivalence.verdict import Verdict
from ptxopt.support.bounded_memo import BoundedMemo
from ptxopt.support.session_state import Slot
from ptxopt.ptx.ir import Decl, Function, Module
from ptxopt.ptx.opcodes import PERF_ONLY_DIRECTIVES
from ptxopt.equivalence.prove.convergence import warp_split
from ptxopt.equivalence.prove.loop_sim import extra_registers_only, prove_by_simulation
from ptxopt.equivalence.prove.match import FunctionDetail, prove_function, same_declarations

VERDICTS = (Verdict.PROVED.value, Verdict.INCONCLUSIVE.value, Verdict.DIFFER.value)  # what the prover answers


@dataclass
class ProveResult:
    """What :func:`prove` found. ``functions`` has one
    :class:`~ptxopt.equivalence.prove.match.FunctionDetail` per function compared (with
    per-block detail); ``seconds`` is the wall time taken."""

    verdict: str
    reason: str
    functions: list[FunctionDetail] = field(default_factory=list)
    seconds: float = 0.0
    entry: str | None = None

    @property
    def proved(self) -> bool:
        return self.verdict == Verdict.PROVED

    def to_json(self) -> dict:
        return {
            "verdict": self.verdict, "reason": self.reason, "seconds": self.seconds, "entry": self.entry,
            "functions": [{"name": f.name, "verdict": f.verdict, "reason": f.reason,
                           "blocks": len(f.blocks)} for f in self.functions],
        }


_MEMO_SIZE = 256
#: the active evaluation session's proofs of text pairs (:mod:`ptxopt.support.session_state`)
_MEMO = Slot("equivalence.prove", lambda: BoundedMemo(lambda: _MEMO_SIZE))


def prove(original, candidate, *, entry: str | None = None, assume_align: int = 0,
          cap: bool = True) -> ProveResult:
    """Prove ``candidate`` equivalent to ``original`` (parsed modules or PTX text).

    ``entry``: compare only this kernel (and every ``.func``); default: every
    function with a body. ``assume_align``: the caller asserts that every
    pointer parameter is aligned to this many bytes (as the ``vec_ld``
    option of that name does); 0 assumes nothing.
    Results for text inputs are memoised by the digest of both texts.

    ``cap``: a proof of a candidate that adds ``ld.global.nc`` loads no
    analysis proves read-only (:func:`ptxopt.equivalence.assumptions.unproven_nc_loads`:
    ``nc_ld{assume_noalias=1}``) is ``inconclusive``, its reason starting
    "assumes noalias": the prover models one coherent memory, so it cannot
    see the launch whose buffers alias. Only :mod:`ptxopt.equivalence.decision`,
    which applies the same cap to its decision, passes ``cap=False``
    (``tests/equivalence/test_assumption_cap.py`` holds every other caller to it)."""
    t0 = time.perf_counter()
    key = None
    if isinstance(original, str) and isinstance(candidate, str):
        key = hashlib.sha256(f"{entry}\0{assume_align}\0{cap}\0{original}\0{candidate}".encode()).hexdigest()
        hit = _MEMO.get().lookup(key)
        if hit is not None:
            return hit
    try:
        mo, mc = _module(original), _module(candidate)
        result = _undeclared(mo, "original") or _undeclared(mc, "candidate") or \
            _prove_modules(mo, mc, entry, assume_align)
        if cap and result.proved:
            result = _assumption_cap(mo, mc, result)
    except Exception as e:  # noqa: BLE001 - a prover bug must never become a verdict
        from ptxopt.ptx.parser import ParseError

        what = "does not parse" if isinstance(e, ParseError) else "prover error"
        result = ProveResult(Verdict.INCONCLUSIVE, f"{what}: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
    result.seconds = time.perf_counter() - t0
    result.entry = entry
    if key is not None:
        _MEMO.get().remember(key, result)
    return result


def _undeclared(m: Module, which: str) -> ProveResult | None:
    """``inconclusive`` when a function of ``m`` names a register no declaration
    in scope declares (:mod:`ptxopt.ptx.declared`): ptxas rejects the module,
    and the prover would take the register for an input it knows nothing about."""
    from ptxopt.ptx.declared import undeclared_register

    for fn in m.functions:
        hit = undeclared_register(fn, m)
        if hit is not None:
            name, ins = hit
            at = f" (line {ins.line})" if ins.line else ""
            return ProveResult(Verdict.INCONCLUSIVE, f"not valid PTX: the {which}'s {fn.name} uses register {name}, "
                                                     f"which no declaration in scope declares{at}")
    return None


def _assumption_cap(mo: Module, mc: Module, result: ProveResult) -> ProveResult:
    """``result`` (proved), or ``inconclusive`` when the candidate's new
    ``.nc`` loads are an assumption (:func:`prove`'s ``cap``)."""
    from ptxopt.equivalence.assumptions import ASSUMES_NOALIAS, CHANGES_PRECISION, precision_change, unproven_nc_loads

    changed = precision_change(mo, mc)
    if changed is not None:
        return ProveResult(Verdict.INCONCLUSIVE, f"{CHANGES_PRECISION}: {changed}; otherwise proved: "
                                                 f"{result.reason}", result.functions)
    a = unproven_nc_loads(mo, mc)
    if a is None:
        return result
    return ProveResult(Verdict.INCONCLUSIVE, f"{ASSUMES_NOALIAS}: {a.why}; otherwise proved: "
                                             f"{result.reason}", result.functions)


def clear_memo() -> None:
    """Forget the active session's remembered results and originals."""
    from ptxopt.equivalence.prove import original_memo

    _MEMO.get().clear()
    original_memo.clear()


def _module(m) -> Module:
    if isinstance(m, Module):
        return m
    from ptxopt.ptx.parser import parse

    return parse(m)


def _interface(f: Function) -> tuple:
    return (f.kind, f.name, f.params, f.ret_params)


def _prove_modules(mo: Module, mc: Module, entry: str | None, assume_align: int) -> ProveResult:
    # -- the interface: certain differences ----------------------------------
    eo = {f.name: f for f in mo.entries}
    ec = {f.name: f for f in mc.entries}
    if entry is not None:
        if entry not in eo:
            return ProveResult(Verdict.INCONCLUSIVE, f"the original has no kernel {entry!r}")
        if entry not in ec:
            return ProveResult(Verdict.DIFFER, f"the candidate has no kernel {entry!r}")
    elif set(eo) != set(ec):
        return ProveResult(Verdict.DIFFER, f"the kernels differ: {sorted(eo)} vs {sorted(ec)}")
    names = [entry] if entry is not None else list(eo)
    for n in names:
        po, pc = eo[n].params or (), ec[n].params or ()
        if [(p.dtype, p.space, p.name) for p in po] != [(p.dtype, p.space, p.name) for p in pc]:
            return ProveResult(Verdict.DIFFER, f"kernel {n}: the parameter lists differ")
    # -- everything else must match exactly for the block proof to apply ----
    if (mo.version, mo.target, mo.address_size) != (mc.version, mc.target, mc.address_size):
        return ProveResult(Verdict.INCONCLUSIVE, "the module headers (.version/.target/.address_size) differ")
    if mo.address_size != 64:
        # addresses wrap modulo 2**32 there (also the default without the directive); the address
        # arithmetic and the alias rules assume 64-bit addresses
        return ProveResult(Verdict.INCONCLUSIVE, f".address_size {mo.address_size or '(default)'}: only 64-bit "
                                           f"addressing is modelled")
    if _globals(mo) != _globals(mc):
        return ProveResult(Verdict.INCONCLUSIVE, "module-level declarations differ")
    fo = {f.name: f for f in mo.functions}
    fc = {f.name: f for f in mc.functions}
    if set(fo) != set(fc):
        return ProveResult(Verdict.INCONCLUSIVE, "the set of functions differs")
    todo = []
    for name, f in fo.items():
        g = fc[name]
        if _interface(f) != _interface(g) or f.linkage != g.linkage or f.attribute != g.attribute:
            return ProveResult(Verdict.INCONCLUSIVE, f"function {name}: declarations differ")
        if _directives(f) != _directives(g):
            return ProveResult(Verdict.INCONCLUSIVE, f"function {name}: directives other than "
                                               f"{'/'.join(sorted(PERF_ONLY_DIRECTIVES))} differ")
        if (f.body is None) != (g.body is None):
            return ProveResult(Verdict.INCONCLUSIVE, f"function {name}: one has a body, the other not")
        if f.body is None or (f.is_entry and entry is not None and name != entry):
            continue
        if not same_declarations(f, g):
            if not extra_registers_only(f, g):
                return ProveResult(Verdict.INCONCLUSIVE, f"function {name}: declarations in the body differ")
            # only new .reg temporaries (an unrolled loop's check): the loop simulation's case
            todo.append((f, g, True))
            continue
        todo.append((f, g, False))
    details = []
    for f, g, new_regs in todo:
        split = warp_split(f, g)
        if split is not None:
            return ProveResult(Verdict.INCONCLUSIVE, f"{f.name}: {split}", details)
        d = _simulate(f, mo, g, mc) if new_regs else prove_function(f, mo, g, mc, assume_align=assume_align)
        details.append(d)
        if d.verdict != Verdict.PROVED:
            return ProveResult(Verdict.INCONCLUSIVE, f"{f.name}: {d.reason}", details)
    blocks = sum(len(d.blocks) for d in details)
    scope = ", ".join(d.name for d in details) or "no function bodies"
    by_solver = [b for d in details for b in d.blocks if b.reason.startswith("solver:")]
    solver = (f", {len(by_solver)} of them shown equal by the SMT solver ({by_solver[0].reason[8:]})"
              if by_solver else "")
    loops = [b for d in details for b in d.blocks if b.reason.startswith("loop:")]
    solver += f", {len(loops)} loop{'s' if len(loops) != 1 else ''} run out (a block whose iterations differ)" \
        if loops else ""
    sim = [d.name for d in details if d.reason.startswith("inductive simulation")]
    solver += f"; {', '.join(sim)} proved by inductive simulation at the loop headers (SMT)" if sim else ""
    whole = [d.name for d in details if d.reason.startswith("whole paths")]
    solver += f"; {', '.join(whole)} proved by executing whole paths (loops run out)" if whole else ""
    return ProveResult(Verdict.PROVED, f"equivalent for all inputs: {len(details)} function"
                                       f"{'s' if len(details) != 1 else ''} ({scope}), {blocks} blocks matched{solver}",
                       details)


def _simulate(f: Function, mo: Module, g: Function, mc: Module) -> FunctionDetail:
    """The loop simulation alone (the candidate declares new registers), after
    the block matcher's own precondition on variable declarations."""
    from ptxopt.equivalence.prove.match import _variable_clash

    for fn, m, what in ((f, mo, "original"), (g, mc, "candidate")):
        clash = _variable_clash(fn, m)
        if clash:
            return FunctionDetail(f.name, Verdict.INCONCLUSIVE, f"the {what} declares variable {clash} more than "
                                                                f"once (not modelled)", [])
    from ptxopt.equivalence.prove.swp_sim import carried_registers, prove_pipelined

    if carried_registers(f, g):  # candidate registers carried round a loop: loads issued ahead
        return prove_pipelined(f, g)
    return prove_by_simulation(f, g)


def _globals(m: Module) -> list:
    return [i for i in m.items if type(i) is Decl]


def _directives(f: Function) -> tuple:
    return tuple(d for d in f.directives if d.name.lstrip(".") not in PERF_ONLY_DIRECTIVES)


__all__ = ["prove", "ProveResult", "VERDICTS", "clear_memo"]
