"""Block-by-block equivalence with an SMT solver: the obligations and the verdicts.

For one pair of matched blocks (same index, same labels, same successors)
both kernels are encoded into one query (:mod:`.encode`), sharing the block's
entry state, and the solver is asked whether any of these can fail:

* the terminators: the same opcode and targets, equal operands and guard;
* the ordering points: the same ones in the same order, each with equal
  operands and guard and equal memory (every space) before it;
* the memory at the end of the block, every space, every byte;
* every register live at the entry of a successor (in either kernel);
* no new way to fault: both kernels make the same accesses (same kind,
  space, size, vector width, value-relevant modifiers, between the same
  ordering points), in order, at equal addresses under equal guards.

``unsat`` means none can: the block is ``equal`` and the induction of
:mod:`ptxopt.equivalence.prove.match` goes on. ``sat`` gives a counterexample: the first
obligation that fails with the values of both sides and the block-entry
values that make it fail (``differ`` for the block: the two blocks compute
something different *from the same entry state*; whether that state is
reachable is not asked, so this is not a verdict on the kernels).
``unknown`` is a solver timeout; ``unsupported`` names the construct
:mod:`.encode` does not model.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from ptxopt.ptx import opcodes
from ptxopt.equivalence.prove.smt import solver as solvers
from ptxopt.equivalence.prove.smt.encode import SPACES, BlockEncoder, Unsupported, warp_wide_differ
from ptxopt.equivalence.prove.smt.terms import Query, sym

STATUSES = ("equal", "differ", "unknown", "unsupported")
FALLBACK_TIMEOUT_MS = 250  # per block inside the prover (unsat answers on the corpus: median ~1 ms, p90 < 80 ms);
# the re-check uses solver.TIMEOUT_MS


@dataclass
class BlockCheck:
    block: int
    label: str | None
    status: str
    reason: str = ""
    seconds: float = 0.0
    counterexample: str = ""
    query: str = field(default="", repr=False)

    def short(self) -> str:
        where = f"block {self.block} ({self.label or 'entry'})"
        if self.status == "differ":
            return f"solver: {where} differs: {self.counterexample}"
        return f"solver {self.status}: {where}: {self.reason}"


class Side:
    """One kernel's function for the checker: its CFG, register widths and liveness
    (the CFG and liveness are :mod:`ptxopt.analysis`'s, shared with the prover)."""

    def __init__(self, fn, cfg=None, live_in=None) -> None:
        from ptxopt.analysis.cfg import CFG

        self.fn = fn
        self.cfg = cfg if cfg is not None else CFG(fn)
        self._live_in = live_in
        self._live = None
        types = self.cfg.reg_types
        self.reg_bits = lambda r: opcodes.TYPE_BITS.get(types.get(r) or "")
        # a .func's .reg return values: compared at the end of every block (a ret may be blocks away)
        self.returns = frozenset(n for d in (fn.ret_params or ()) if d.space == ".reg"
                                 for it in d.items for n in it.names())
        self.reg_params = frozenset(n for d in (fn.params or ()) if d.space == ".reg"
                                    for it in d.items for n in it.names())

    def live_in(self, b: int) -> frozenset[str]:
        if self._live_in is not None:
            return self._live_in(b)
        if self._live is None:
            from ptxopt.analysis.defuse import liveness

            self._live = liveness(self.cfg)
        return self._live.live_in[b]


def check_block(so: Side, sc: Side, b: int, timeout_ms: int = solvers.TIMEOUT_MS,
                solver: str = solvers.DEFAULT) -> BlockCheck:
    """Are block ``b`` of both sides equal (module doc)?"""
    t0 = time.perf_counter()
    x, y = so.cfg.blocks[b], sc.cfg.blocks[b]

    def result(status, reason="", **kw) -> BlockCheck:
        return BlockCheck(b, x.label, status, reason, time.perf_counter() - t0, **kw)

    q = Query()
    try:
        ro = BlockEncoder(q, so.reg_bits).run(b, x.instructions)
        rc = BlockEncoder(q, sc.reg_bits).run(b, y.instructions)
        obs, why = _obligations(q, so, sc, x, ro, rc)
    except Unsupported as e:
        return result("unsupported", str(e))
    except ValueError as e:  # one name with two widths in the two kernels
        return result("unsupported", str(e))
    if why:
        return result("differ", why, counterexample=why)
    n_all = len(obs)
    obs = [o for o in obs if o[1] != o[2]]  # the same name on both sides: equal by construction
    if not obs:
        return result("equal", f"{n_all} obligations equal by construction (the same terms), no solver call")
    lines = []
    for i, (_, lhs, rhs, w) in enumerate(obs):
        lines.append(f"(declare-fun |ob.{i}| () Bool)")
        lines.append(f"(assert (= |ob.{i}| (= {lhs} {rhs})))")
        if w > 0:
            for side, t in (("o", lhs), ("c", rhs)):
                lines.append(f"(declare-fun |{side}.{i}| () (_ BitVec {w}))")
                lines.append(f"(assert (= |{side}.{i}| {t}))")
    for side, accs in (("o", ro.accesses), ("c", rc.accesses)):  # named for counterexamples only
        for k, a in enumerate(accs):
            lines.append(f"(declare-fun |{side}a.{a.kind}.{k}| () (_ BitVec {q.width[a.addr]}))")
            lines.append(f"(assert (= |{side}a.{a.kind}.{k}| {a.addr}))")
            for lane, t in enumerate(a.values):
                lines.append(f"(declare-fun |{side}.{a.kind}.{k}.{lane}| () (_ BitVec {q.width[t]}))")
                lines.append(f"(assert (= |{side}.{a.kind}.{k}.{lane}| {t}))")
    q.lines.extend(lines)
    text = q.text("(not (and " + " ".join(f"|ob.{i}|" for i in range(len(obs))) + " true))")
    ans = solvers.solve(text, timeout_ms, solver)
    n = len(obs)
    if ans.status == "unsat":
        return result("equal", f"{n} of {n_all} obligations (live-outs, memory, accesses, terminator) shown "
                               f"equal by {solver} in {ans.seconds:.3f} s, the rest the same terms", query=text)
    if ans.status == "unknown":
        return result("unknown", ans.note or f"{solver}: unknown", query=text)
    return result("differ", "", counterexample=_counterexample(obs, ans.model, ro.accesses, rc.accesses),
                  query=text)


def _obligations(q: Query, so: Side, sc: Side, blk, ro, rc) -> tuple[list, str]:
    """(label, original term, candidate term, width (0: Bool/array)) for every
    obligation; or a structural difference (no solver needed) as the second value."""
    obs: list[tuple[str, str, str, int]] = []
    one = "#b1"

    def guard(g):
        return g if g is not None else one

    to, tc = ro.terminator, rc.terminator
    if (to is None) != (tc is None) or (to and (to[0], to[1]) != (tc[0], tc[1])) \
            or (to and len(to[2]) != len(tc[2])):
        return obs, "the terminators differ (opcode or targets)"
    if to:
        for k, (a, c) in enumerate(zip(to[2], tc[2])):
            obs.append((f"terminator operand {k}", a, c, q.width[a]))
        obs.append(("the branch condition", guard(to[3]), guard(tc[3]), 1))
    if len(ro.collectives) != len(rc.collectives):
        return obs, f"{len(ro.collectives)} warp collectives in the original, {len(rc.collectives)} in the candidate"
    for k, (eo, ec) in enumerate(zip(ro.collectives, rc.collectives)):
        if (eo.key, len(eo.operands)) != (ec.key, len(ec.operands)) or \
                any(q.width[a] != q.width[c] for a, c in zip(eo.operands, ec.operands)):
            return obs, f"warp collective {k} differs: {eo.key} vs {ec.key}"
        for j, (a, c) in enumerate(zip(eo.operands, ec.operands)):
            obs.append((f"warp collective {k} ({eo.key}) operand {j}", a, c, q.width[a]))
        obs.append((f"warp collective {k} ({eo.key}) guard", guard(eo.guard), guard(ec.guard), 1))
    why = warp_wide_differ(ro, rc)
    if why:  # (terms, not values: stores reordered before a read give other terms for the same memory)
        raise Unsupported(why)
    if len(ro.events) != len(rc.events):
        return obs, f"{len(ro.events)} ordering points in the original, {len(rc.events)} in the candidate"
    for k, (eo, ec) in enumerate(zip(ro.events, rc.events)):
        if (eo.key, eo.labels, len(eo.operands)) != (ec.key, ec.labels, len(ec.operands)):
            return obs, f"ordering point {k} differs: {eo.key} vs {ec.key}"
        for j, (a, c) in enumerate(zip(eo.operands, ec.operands)):
            if q.width[a] != q.width[c]:
                return obs, f"ordering point {k} ({eo.key}): operand {j} has another width"
            obs.append((f"ordering point {k} ({eo.key}) operand {j}", a, c, q.width[a]))
        obs.append((f"ordering point {k} ({eo.key}) guard", guard(eo.guard), guard(ec.guard), 1))
        for s in SPACES:
            if eo.memory[s] != ec.memory[s]:
                obs.append(_same_memory(q, f".{s} memory before ordering point {k} ({eo.key})", s,
                                        eo.memory[s], ec.memory[s], f"{blk.index}.e{k}"))
    for k, c in enumerate(rc.accesses):
        what = f"the candidate's access {k} ({c.kind}.{c.space}, {c.size} bytes) is covered by an original access"
        obs.append((what, _covered(q, c, ro.accesses), "true", 0))
    # the same bytes written (between the same ordering points): a store that leaves memory as it
    # was (the value just loaded from it) is still a write other threads and the memory model see
    for mine, theirs, who in ((ro.accesses, rc.accesses, "original"), (rc.accesses, ro.accesses, "candidate")):
        for k, st in enumerate(mine):
            if st.kind == "st":
                obs.append((f"the {who}'s store {k} ({st.space}, {st.size} bytes) is written by the other too",
                            _written(st, theirs), "true", 0))
    eo_, ec_ = (BlockEncoder(q, so.reg_bits), BlockEncoder(q, sc.reg_bits))
    for s in SPACES:
        mo, mc = ro.memory.get(s), rc.memory.get(s)
        if mo is None and mc is None:
            continue
        epoch = f"mem.{blk.index}.{s}.{len(ro.events)}"
        mo = mo or q.array(epoch, SPACES[s])
        mc = mc or q.array(epoch, SPACES[s])
        if mo != mc:
            obs.append(_same_memory(q, f"the .{s} memory at the end of the block", s, mo, mc, f"{blk.index}.end"))
    live = set(so.returns | sc.returns)
    for s in blk.succs:
        live |= so.live_in(s) | sc.live_in(s)
    for r in sorted(live):
        eo_.b = ec_.b = blk.index
        eo_.regs, ec_.regs = ro.regs, rc.regs
        a, c = eo_.reg(r), ec_.reg(r)
        if q.width[a] != q.width[c]:
            raise Unsupported(f"{r} has different widths")
        obs.append((f"live-out register {r}", a, c, q.width[a]))
    return obs, ""


def _covered(q: Query, c, originals, wide: bool = False) -> str:
    """A Bool term: whenever access ``c`` executes, an original access of the
    same space between the same ordering points executes too, its bytes
    include ``c``'s, and (unless ``c`` is a prefetch) ``c`` is aligned to its
    size whenever that original is aligned to its own (it is when it does not
    fault). Then ``c`` cannot fault where the original block does not.

    ``wide``: an access wider than every original (scalars merged into a
    vector) is covered byte by byte by originals that execute, and must be
    aligned to its size outright, from the path condition (a runtime test of
    the address), since no original access's alignment implies it
    (:func:`_covered_bytes`)."""
    for o in originals:
        # at the same address term, under the same guard, between the same ordering points: the same
        # access (size and kind) is covered and aligned; a prefetch is covered by any access of at least
        # its byte (prefetch_L1's, of a load it runs ahead of: that byte is accessed whenever it runs,
        # and a prefetch needs no alignment)
        if (o.space, o.epoch, o.addr, o.guard) == (c.space, c.epoch, c.addr, c.guard) and (
                o.size >= c.size if c.kind == "prefetch" else o.size == c.size and o.kind != "prefetch"):
            return "true"
    gc = f"(= {c.guard} #b1)" if c.guard is not None else "true"
    if c.kind != "prefetch" and not any(o.size >= c.size and o.kind != "prefetch" and o.space == c.space
                                        for o in originals):
        if wide:
            return f"(=> {gc} {_covered_bytes(q, c, originals, aligned=True)})"
        # wider than every original access (scalars merged into a vector): the bytes may be
        # covered by several originals, but its alignment comes from the prover's alignment
        # analysis (.ptr .align through the address arithmetic), which this encoding does not model
        raise Unsupported(f"a {c.size}-byte {c.kind}.{c.space} access wider than every original access "
                          f"(its alignment is the alignment analysis', not modelled)")
    cases = []
    for o in originals:
        if (o.kind == "prefetch" and c.kind != "prefetch") or (o.space, o.epoch) != (c.space, c.epoch):
            continue  # (a prefetch covers only a prefetch: the original makes the same one)
        aw = q.width[o.addr]
        go = f"(= {o.guard} #b1)" if o.guard is not None else "true"
        # c's bytes [ac, ac+zc) inside [ao, ao+zo) on the circle of 2**aw addresses
        if c.size > o.size:
            continue
        inside = f"(bvule (bvsub {c.addr} {o.addr}) (_ bv{o.size - c.size} {aw}))"
        if c.kind != "prefetch" and c.size > 1:
            aligned = f"(= ((_ extract {_log2(c.size) - 1} 0) {c.addr}) (_ bv0 {_log2(c.size)}))"
            if o.kind != "prefetch" and o.size > 1:
                # the covering original access executes too, and faults unless it is aligned
                # (as the prover's fault check argues: the same original covers and aligns)
                aligned = f"(=> (= ((_ extract {_log2(o.size) - 1} 0) {o.addr}) (_ bv0 {_log2(o.size)})) {aligned})"
            inside = f"(and {inside} {aligned})"
        cases.append(f"(and {go} {inside})")
    if not cases:
        return f"(not {gc})"
    return f"(=> {gc} {cases[0] if len(cases) == 1 else '(or ' + ' '.join(cases) + ')'})"


def _same_memory(q: Query, label: str, space: str, mo: str, mc: str, tag: str) -> tuple:
    """Two memories are equal iff they hold the same byte at every address: the
    obligation compares them at one free address (the query asks whether some
    inputs *and some address* make them differ), which the solvers decide much
    faster than equality of whole arrays."""
    ix = q.var(f"ix.{tag}.{space}", SPACES[space])
    return (f"{label}, byte @{ix[1:-1] if ix.startswith('|') else ix}@,", q.define(f"(select {mo} {ix})", 8), q.define(f"(select {mc} {ix})", 8), 8)


def _written(st, others, q: Query | None = None) -> str:
    """A Bool term: whenever store ``st`` executes, the other kernel stores to
    each of its bytes (one store of the same space between the same ordering
    points covering it; given ``q``, a store wider than all the other's
    stores may be covered byte by byte by several of them)."""
    if any(o.kind == "st" and (o.space, o.epoch, o.addr, o.size, o.guard) ==
           (st.space, st.epoch, st.addr, st.size, st.guard) for o in others):
        return "true"
    gs = f"(= {st.guard} #b1)" if st.guard is not None else "true"
    if q is not None and not any(o.kind == "st" and o.space == st.space and o.size >= st.size for o in others):
        return f"(=> {gs} {_covered_bytes(q, st, [o for o in others if o.kind == 'st'], aligned=False)})"
    cases = []
    for o in others:
        if o.kind != "st" or (o.space, o.epoch) != (st.space, st.epoch) or o.size < st.size:
            continue
        aw = SPACES[st.space]
        go = f"(= {o.guard} #b1)" if o.guard is not None else "true"
        cases.append(f"(and {go} (bvule (bvsub {st.addr} {o.addr}) (_ bv{o.size - st.size} {aw})))")
    if not cases:
        return f"(not {gs})"
    return f"(=> {gs} {cases[0] if len(cases) == 1 else '(or ' + ' '.join(cases) + ')'})"


def _covered_bytes(q: Query, c, originals, aligned: bool) -> str:
    """A Bool term: each byte of access ``c`` lies in an access of ``originals``
    (same space, between the same ordering points, not a prefetch) that
    executes, and with ``aligned`` ``c``'s address is a multiple of its size.
    Checked in pieces of the narrowest original's size, each piece inside one
    original (which implies every byte is)."""
    parts = []
    if aligned and c.size > 1:
        parts.append(f"(= ((_ extract {_log2(c.size) - 1} 0) {c.addr}) (_ bv0 {_log2(c.size)}))")
    aw = q.width[c.addr]
    mine = [o for o in originals if o.kind != "prefetch" and (o.space, o.epoch) == (c.space, c.epoch)
            and q.width[o.addr] == aw]
    # pieces of the narrowest such access, each inside one of them (fewer terms than byte by byte; stronger)
    g = min([o.size for o in mine if c.size % o.size == 0] or [1])
    for k in range(0, c.size, g):
        piece = f"(bvadd {c.addr} (_ bv{k} {aw}))" if k else c.addr
        cases = []
        for o in mine:
            if o.size < g:
                continue
            go = f"(= {o.guard} #b1)" if o.guard is not None else "true"
            cases.append(f"(and {go} (bvule (bvsub {piece} {o.addr}) (_ bv{o.size - g} {aw})))")
        if not cases:
            return "false"
        parts.append(cases[0] if len(cases) == 1 else "(or " + " ".join(cases) + ")")
    return "(and " + " ".join(parts) + " true)"


def _log2(n: int) -> int:
    if n & (n - 1):
        raise Unsupported(f"an access of {n} bytes (not a power of two)")
    return n.bit_length() - 1


def _counterexample(obs, model: dict[str, int], accesses, accesses_c) -> str:
    fails = [i for i in range(len(obs)) if model.get(f"ob.{i}", 1) == 0]
    if not fails:
        return "the solver found inputs on which the blocks differ (no single obligation named)"
    i = fails[0]
    label, _, _, w = obs[i]
    head = label
    if "@" in head:  # a memory obligation: the byte's address from the model
        pre, ix, post = head.split("@", 2)
        head = f"{pre}{_hex(model.get(ix, 0))}{post}"
    if w > 0 and f"o.{i}" in model:
        head += f" is {_hex(model[f'c.{i}'])} in the candidate, {_hex(model[f'o.{i}'])} in the original"
    else:
        head += " differs"
    if "memory" in label:
        done = False
        for k, a in enumerate(accesses):  # a store both make at one address, with other values
            if a.kind != "st" or done:
                continue
            where = model.get(f"oa.st.{k}")
            for j, c in enumerate(accesses_c):
                if c.kind != "st" or c.size != a.size or model.get(f"ca.st.{j}") != where:
                    continue
                vo = [model.get(f"o.st.{k}.{n}") for n in range(len(a.values))]
                vc = [model.get(f"c.st.{j}.{n}") for n in range(len(c.values))]
                if vo != vc and None not in vo + vc:
                    head += (f": the store to {_hex(where)} ({a.space}) writes {', '.join(map(_hex, vc))} in "
                             f"the candidate, {', '.join(map(_hex, vo))} in the original")
                    done = True
                    break
    inputs = []
    for k, a in enumerate(accesses):
        if a.kind == "ld":
            vals = [model.get(f"o.ld.{k}.{n}") for n in range(len(a.values))]
            if None not in vals and vals:
                inputs.append(f"load {k} ({a.space}) = {', '.join(map(_hex, vals))}")
    for name, v in sorted(model.items()):
        if name.startswith("in."):
            inputs.append(f"{name.split('.', 2)[2]} = {_hex(v)}")
        elif name.startswith(("sreg.", "sym.")):
            inputs.append(f"{name.rsplit('.', 1)[0]} = {_hex(v)}")
    more = f" (and {len(fails) - 1} more)" if len(fails) > 1 else ""
    return head + more + (" when " + ", ".join(inputs[:8]) if inputs else "") + " at block entry"


def _hex(v: int) -> str:
    return f"{v:#x}"


# --------------------------------------------------------------------------------------
# whole functions and modules: the independent re-check
# --------------------------------------------------------------------------------------


@dataclass
class Recheck:
    status: str  # "equal", "differ", "unknown", "unsupported"
    reason: str
    blocks: list[BlockCheck] = field(default_factory=list)
    seconds: float = 0.0


def check_function(fo, fc, *, timeout_ms: int = solvers.TIMEOUT_MS, solver: str = solvers.DEFAULT) -> Recheck:
    """Every block of ``fc`` against ``fo`` (CFGs matched as the prover matches them)."""
    so, sc = Side(fo), Side(fc)
    bo, bc = so.cfg.blocks, sc.cfg.blocks
    if len(bo) != len(bc) or any(x.labels != y.labels or x.succs != y.succs for x, y in zip(bo, bc)):
        return Recheck("unsupported", f"{fo.name}: the CFGs differ in shape")
    if bo and (so.live_in(0) - so.reg_params or sc.live_in(0) - sc.reg_params):
        return Recheck("unsupported", f"{fo.name}: a register is read before it is written")
    out: list[BlockCheck] = []
    worst = "equal"
    rank = {s: i for i, s in enumerate(("differ", "unknown", "unsupported", "equal"))}
    for x in bo:
        bcheck = check_block(so, sc, x.index, timeout_ms, solver)
        out.append(bcheck)
        if rank[bcheck.status] < rank[worst]:
            worst = bcheck.status
        if bcheck.status == "differ":
            break
    bad = next((c for c in out if c.status == worst), None) if worst != "equal" else None
    why = bad.short() if bad else f"{len(out)} blocks shown equal by {solver}"
    return Recheck(worst, f"{fo.name}: {why}", out)


def recheck(original, candidate, entry: str | None = None, *, timeout_ms: int = solvers.TIMEOUT_MS,
            solver: str = solvers.DEFAULT) -> Recheck:
    """The independent re-check of a ``proved`` pair: every function body
    (``entry``: that kernel and every ``.func``) block by block. Declarations
    must be identical (the encoding takes variables by name)."""
    from ptxopt.ptx.ir import Decl, iter_decls
    from ptxopt.ptx.parser import parse

    t0 = time.perf_counter()
    mo = parse(original) if isinstance(original, str) else original
    mc = parse(candidate) if isinstance(candidate, str) else candidate

    def done(r: Recheck) -> Recheck:
        r.seconds = time.perf_counter() - t0
        return r

    if [i for i in mo.items if type(i) is Decl] != [i for i in mc.items if type(i) is Decl]:
        return done(Recheck("unsupported", "module-level declarations differ"))
    fo = {f.name: f for f in mo.functions if f.body is not None}
    fc = {f.name: f for f in mc.functions if f.body is not None}
    if set(fo) != set(fc):
        return done(Recheck("unsupported", "the functions with bodies differ"))
    worst = Recheck("equal", "no function bodies")
    blocks: list[BlockCheck] = []
    rank = {s: i for i, s in enumerate(("differ", "unknown", "unsupported", "equal"))}
    for name, f in fo.items():
        g = fc[name]
        if f.is_entry and entry is not None and name != entry:
            continue
        if (f.params, f.ret_params) != (g.params, g.ret_params) or \
                list(iter_decls(f.body)) != list(iter_decls(g.body)):
            r = Recheck("unsupported", f"{name}: the declarations differ")
        else:
            r = check_function(f, g, timeout_ms=timeout_ms, solver=solver)
        blocks.extend(r.blocks)
        if rank[r.status] < rank[worst.status] or worst.reason == "no function bodies":
            worst = r
        if r.status == "differ":
            break
    return done(Recheck(worst.status, worst.reason, blocks))


__all__ = ["STATUSES", "BlockCheck", "Recheck", "Side", "check_block", "check_function", "recheck", "sym"]
