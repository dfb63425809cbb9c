"""Loops whose loads run ahead (software pipelining) proved by inductive
simulation with a relational invariant at their headers.

The simulation of :mod:`.loop_sim` relates the two kernels at every cut point
by the identity relation, and candidate-only registers must be dead there. A
pipelined loop carries registers of its own into its header: each holds what
a load of the original will read some iterations later. This proof finds
those facts and proves them inductive, from the two control-flow graphs alone
(nothing the pass says is read):

* **Carried registers**: the candidate-only registers live into a candidate
  loop header (:attr:`loop_sim._Proof.carried`).
* **Candidate invariants** ``H(r, a, j, k)``, for every carried register
  ``r``, every load ``a`` of the original loop's body (its position among the
  body's accesses), lane ``j`` and ``k`` below the iterations ahead tried
  (1, then :data:`MAX_AHEAD`; the candidate's own loads name which lanes
  of which shape each register may mirror): *if* the original, run
  from the header's state, goes back to the header after iterations
  ``1 .. k`` and load ``a``'s guard holds in iteration ``k+1``, *then* ``r``
  equals the value that load reads in iteration ``k+1``. The original's
  iterations are its own body encoded ``self.ahead + 1`` times from the same
  state (the terms of :mod:`.smt.paths`), so "the value it reads" is the
  select on the memory of that moment: stores between the early load and the
  original one (same buffer or not provably apart) make the invariant fail.
* **Houdini**: the candidates that do not hold at the end of every block
  entering the header (with the original's iterations run on from there)
  are dropped; then, assuming the remaining ones at the header, those that do
  not hold again after one candidate trip that goes back are dropped, until
  none fails. What remains is an inductive invariant.
* **Obligations** of one trip (each candidate trip is one original
  iteration): under the invariant, the same as :mod:`.loop_sim` (registers
  live in either kernel, memory, ordering points, stores, the exit decision),
  except that a candidate access may be covered by a load of the original
  in a *later* iteration that runs: the original's loads of iterations
  ``2 .. self.ahead + 1`` count, each under its guard and the exit tests that
  lead to it (an early load of an iteration that does not run is not
  covered: the fault obligation fails).

Sound by the induction of :mod:`.loop_sim`, with the relation at the header
being identity on the original's registers and memory plus the invariant.
Anything that does not fit is ``inconclusive`` with the reason.
"""

from __future__ import annotations

import random
import time
from dataclasses import replace

from ptxopt.equivalence.prove.details import FunctionDetail
from ptxopt.equivalence.prove.loop_sim import (FUNCTION_BUDGET_S, MAX_TRIP_BLOCKS, QUERY_TIMEOUT_MS, _names, _Proof,
                                               _Refused, _Timeout, refute_any)
from ptxopt.equivalence.prove.smt import solver as solvers
from ptxopt.equivalence.prove.smt.check import Side
from ptxopt.equivalence.prove.smt.encode import Unsupported
from ptxopt.equivalence.prove.smt.paths import PathEncoder
from ptxopt.equivalence.prove.smt.terms import Query, lit
from ptxopt.equivalence.verdict import Verdict
from ptxopt.ptx.ir import iter_decls

#: How many iterations ahead a carried register may hold a load's value.
MAX_AHEAD = 2

#: An odd 64-bit constant (the golden ratio's): multiplying by it is a bijection modulo any power of two
#: (:meth:`_SwpProof._distinct_loads`).
_ODD_MIX = 0x9E3779B97F4A7C15

#: Seeded draws of the inputs that narrow the base case's Houdini (:meth:`_SwpProof._hints`).
HINT_DRAWS = 3

assert MAX_TRIP_BLOCKS > 0


def carried_registers(fo, fc) -> frozenset[str]:
    """Candidate-only registers live into a loop of one block of the candidate."""
    from ptxopt.analysis.cfg import CFG
    from ptxopt.analysis.defuse import liveness

    only = _names(list(iter_decls(fc.body))) - _names(list(iter_decls(fo.body)))
    if not only:
        return frozenset()
    cfg = CFG(fc)
    live = liveness(cfg)
    out: set[str] = set()
    for b in cfg.blocks:
        if b.index in b.succs:
            out |= live.live_in[b.index] & only
    return frozenset(out)


def prove_pipelined(fo, fc) -> FunctionDetail:
    """Prove ``fc`` equivalent to ``fo`` (module doc)."""
    t0 = time.perf_counter()
    carried = carried_registers(fo, fc)
    out = None
    guess = _rotation_depth(fc, carried)
    for ahead in [guess] + [a for a in range(1, MAX_AHEAD + 1) if a != guess]:  # the rotation's depth first
        try:
            proof = _SwpProof(Side(fo), Side(fc), t0)
            proof.carried, proof.ahead = carried, ahead
            blocks, how = proof.run()
        except (_Refused, Unsupported, ValueError) as e:
            out = FunctionDetail(fo.name, Verdict.INCONCLUSIVE, f"pipelined-loop simulation: {e}", [])
            continue
        except _Timeout as e:
            return FunctionDetail(fo.name, Verdict.INCONCLUSIVE, f"pipelined-loop simulation: solver timeout: {e}",
                                  [])
        return FunctionDetail(fo.name, Verdict.PROVED, f"inductive simulation: {how}", blocks)
    return out


def _rotation_depth(fc, carried: frozenset[str]) -> int:
    """The longest chain of ``mov``s from one carried register to another
    (``R_2 -> R_1 -> R_0``: 2), at least 1 and at most :data:`MAX_AHEAD`: how
    many iterations ahead to try first (a hint; every count is sound)."""
    from ptxopt.ptx import operand_facts
    from ptxopt.ptx.ir import iter_instructions

    edges: dict[str, set[str]] = {}
    for ins in iter_instructions(fc.body):
        if ins.opcode == "mov" and len(ins.operands) == 2:
            d, src = (operand_facts.reg_name(o) for o in ins.operands)
            if d in carried and src in carried and d != src:
                edges.setdefault(src, set()).add(d)

    def depth(r: str, seen: frozenset) -> int:
        return max((1 + depth(d, seen | {d}) for d in edges.get(r, ()) if d not in seen), default=0)

    best = max((depth(r, frozenset({r})) for r in edges), default=1)
    return min(MAX_AHEAD, max(1, best))


class _SwpProof(_Proof):
    """:class:`loop_sim._Proof` with the invariant of the module doc at its headers."""

    def __init__(self, so, sc, t0) -> None:
        super().__init__(so, sc, t0)
        self.invariant: dict[int, list[tuple]] = {}  # original header -> surviving (r, a, j, k)
        self.based: dict[int, set[int]] = {}  # original header -> the blocks entering it whose base case held
        self.ahead = MAX_AHEAD  # iterations ahead a carried register may hold (prove_pipelined tries 1, then 2)

    def _own(self, h: int) -> frozenset[str]:
        """The carried registers loop ``h`` of the candidate writes and reads at
        its header (others only pass through it, arbitrary at its cut points)."""
        sc = self.sc
        hc, region = self.regions[h]
        written = {r for b in region for i in sc.cfg.blocks[b].iids for r in sc.cfg.du[i][0]}
        return sc.live_in(hc) & self.carried & frozenset(written)

    # -- the original's iterations from a state ---------------------------------------------

    def _iterations(self, eo: PathEncoder, h: int, n: int) -> list[tuple]:
        """Run the original's header body ``n`` times on ``eo``: per iteration
        (state after it, 1-bit "goes back", its accesses)."""
        so = self.so
        body = so.cfg.blocks[h].instructions
        out = []
        seen = len(eo.out.accesses)
        for _ in range(n):
            term = eo.block(body)
            cond, target = (None, None) if term is None else eo.branch(term)
            if term is None or term.opcode != "bra" or so.cfg.label_block.get(target) != h:
                raise _Refused(f"loop {so.cfg.blocks[h].label}: the original's block does not end in its branch back")
            st = eo.snapshot()
            out.append((st, cond or "#b1", st.accesses[seen:]))
            seen = len(st.accesses)
        return out

    def _keys(self, h: int, its: list[tuple]) -> list[tuple]:
        """Every candidate invariant (r, a, j, k) whose widths fit."""
        q_width = self._q.width
        bits = self.sc.reg_bits
        keys = []
        first = its[0][2]
        loaded = self._loaded_by()
        dests = self._access_dests(h)
        reach = self._moved_into()
        for r in sorted(self._own(h)):
            w = 1 if r == "%cc.cf" else bits(r)
            shapes = loaded.get(r, set())
            into = reach.get(r, set())
            for a, acc in enumerate(first):
                if acc.kind != "ld":
                    continue
                for j, v in enumerate(acc.values):
                    if q_width.get(v) != w or (acc.space, acc.size, len(acc.values), j) not in shapes:
                        continue
                    if into and len(dests) == len(first) and dests[a][j] not in into:
                        continue  # the register flows into another load's destination
                    keys += [(r, a, j, k) for k in range(self.ahead)]
        return keys

    def _access_dests(self, h: int) -> list[list[str | None]]:
        """Per access of the original loop's body (in :mod:`.smt.encode`'s
        order): the registers its lanes load into."""
        from ptxopt.ptx import opcodes, operand_facts
        from ptxopt.equivalence.prove.smt.encode import _LANE_OPS

        out = []
        for ins in self.so.cfg.blocks[h].instructions:
            f = operand_facts.facts(ins)
            if ins.opcode in opcodes.PREFETCHES:
                out.append([])
            elif f.role in ("load", "store") and ins.opcode in _LANE_OPS:
                if f.role == "store" or not ins.operands:
                    out.append([])
                    continue
                items = operand_facts.vector_items(operand_facts.unbrace(ins.operands[0])) \
                    if opcodes.vector_width(ins) > 1 else (ins.operands[0],)
                out.append([operand_facts.reg_name(operand_facts.unbrace(x)) for x in items or ()
                            if not operand_facts.is_sink(x)])
        return out

    def _moved_into(self) -> dict[str, set[str]]:
        """Carried register -> the other registers a chain of the candidate's
        ``mov``s copies it into (a search hint, as :meth:`_loaded_by`)."""
        from ptxopt.ptx import operand_facts

        edges: dict[str, set[str]] = {}
        for ins in self.sc.cfg.instructions:
            if ins.opcode == "mov" and len(ins.operands) == 2:
                d, src = (operand_facts.reg_name(o) for o in ins.operands)
                if d and src in self.carried:
                    edges.setdefault(src, set()).add(d)
        out: dict[str, set[str]] = {}
        for r in self.carried:
            seen, todo = set(), [r]
            while todo:
                for d in edges.get(todo.pop(), ()):
                    if d not in seen:
                        seen.add(d)
                        if d in self.carried:
                            todo.append(d)
            out[r] = {d for d in seen if d not in self.carried}
        return out

    def _loaded_by(self) -> dict[str, set[tuple]]:
        """Carried register -> (space, bytes, lanes, lane) of every candidate load
        that writes it: which original loads it may mirror (a search hint only:
        a pairing that is wrong fails its obligations and is dropped)."""
        from ptxopt.ptx import opcodes, operand_facts

        out: dict[str, set[tuple]] = {}
        for ins in self.sc.cfg.instructions:
            if ins.opcode != "ld" or not ins.operands:
                continue
            t = opcodes.value_type(ins)
            items = operand_facts.vector_items(operand_facts.unbrace(ins.operands[0])) \
                if opcodes.vector_width(ins) > 1 else (ins.operands[0],)
            if t is None or items is None:
                continue
            size = max(1, opcodes.TYPE_BITS.get(t, 8) // 8) * len(items)
            space = opcodes.mem_space(ins)
            names = [operand_facts.reg_name(operand_facts.unbrace(x)) for x in items]
            for j, r in enumerate(names):
                if r in self.carried:
                    out.setdefault(r, set()).add((space, size, len(names), j))
        return out

    def _claim(self, q: Query, its: list[tuple], key: tuple, rterm: str, shift: int) -> str:
        """A Bool term: invariant ``key`` of a header state whose carried register
        holds ``rterm``, the original's iterations from that state being
        ``its[shift:]`` (``shift`` 1: the state after one iteration)."""
        _, a, j, k = key
        prem = [f"(= {its[shift + i][1]} #b1)" for i in range(k)]
        acc = its[shift + k][2][a]
        if acc.guard is not None:
            prem.append(f"(= {acc.guard} #b1)")
        if q.width[acc.values[j]] != q.width[rterm]:
            return "false"
        eq = f"(= {rterm} {acc.values[j]})"
        return f"(=> (and {' '.join(prem)} true) {eq})" if prem else eq

    def _substitution(self, q: Query, its: list[tuple], keys: list[tuple], at_entry) -> dict[str, str]:
        """Carried register -> its value at the header under the invariant
        ``keys``, for the trip's obligations: the load's term where an
        invariant of the load one iteration ahead (``k = 0``) holds outright,
        ``ite(guard, term, r)`` where it holds under the load's guard alone.
        Under the invariant (which the obligations still assume) each equals
        the register's own entry value, so the obligations mean the same; but
        the candidate's values are then the original's very terms, and an
        accumulation over dozens of loads (an ``fma`` chain of a conv) is equal
        by construction instead of by the solver's congruence reasoning (15 s
        on gen_conv2d_08 swp_ld_1, over the 4 s limit)."""
        out: dict[str, str] = {}
        for r, a, j, k in keys:
            if k != 0:
                continue
            acc = its[0][2][a]
            term = acc.values[j]
            if acc.guard is None:
                out[r] = term
            elif r not in out:
                out[r] = q.define(f"(ite (= {acc.guard} #b1) {term} {at_entry(r)})", q.width[term])
        return out

    def _houdini(self, q: Query, conds: list[str], claims: dict[tuple, str], where: str,
                 hints: list[list[str]] = ()) -> set[tuple]:
        """The keys whose claims fail under ``conds`` (1-bit terms), found by
        asking the solver repeatedly and dropping what its model falsifies:
        one query, checked again under assumptions after each drop
        (:class:`~ptxopt.equivalence.prove.smt.solver.Incremental`; each
        check asks what a fresh :func:`refute_all` of the claims still held
        would ask, and Houdini's answer -- the claims that hold on every
        path -- does not depend on the order they are dropped in).

        ``hints`` (lists of 1-bit terms, :meth:`_hints`) first narrow the
        models asked for, one list at a time: a model of the query with them
        is a model of the query, so a claim it falsifies fails and goes, as
        the plain loop would drop it, only sooner. (The solver's own models
        give unconstrained memory one value everywhere and the parameters
        values that make addresses alike, so a claim that pairs a register
        with the wrong load holds in them: the plain loop dropped about two
        of 450 claims per check on a conv2d.) A list is left when its models
        falsify nothing more, none exists (unsat) or the solver gives up;
        after the last, the plain loop goes on from what they dropped, and
        only its check, with every hint flag free, can end in unsat."""
        keys = list(claims)
        dropped: set[tuple] = set()
        inc = None
        hinting = 0  # the hint list in use; len(hints): none
        while True:
            live = [i for i, k in enumerate(keys) if k not in dropped]
            if not live:
                return dropped
            if time.perf_counter() - self.t0 > FUNCTION_BUDGET_S:
                raise _Timeout(f"the proof's budget of {FUNCTION_BUDGET_S:.0f} s ran out at {where}")
            if inc is None:
                inc = solvers.Incremental(refute_any(q, conds, [claims[k] for k in keys], "hb", hints),
                                          QUERY_TIMEOUT_MS)
            self.solver_calls += 1
            hint = [f"hb.hint.{hinting}"] if hinting < len(hints) else []
            ans = inc.check(true=[f"hb.on.{i}" for i in live] + hint,
                            false=[f"hb.on.{i}" for i, k in enumerate(keys) if k in dropped],
                            want=[f"hb.{i}" for i in live])
            bad = [keys[i] for i in live if ans.model.get(f"hb.{i}", 1) == 0] if ans.status == "sat" else []
            if hint and not bad:
                hinting += 1  # these hints are spent (or no model has them): the next, then the query itself
                continue
            if ans.status == "unsat":
                return dropped
            if ans.status != "sat":
                raise _Timeout(f"{where}: {ans.note or 'unknown'} (limit {QUERY_TIMEOUT_MS} ms per query)")
            if not bad:
                raise _Refused(f"{where}: the solver's model names no failing invariant")
            dropped.update(bad)

    @classmethod
    def _hints(cls, q: Query, loads, its: list[tuple]) -> list[list[str]]:
        """The hint lists of the base case's Houdini (:meth:`_houdini`): the
        loads read distinct values (:meth:`_distinct_loads`) and, in each of
        :data:`HINT_DRAWS` lists, every free variable of the query has a
        small value drawn from a seeded generator (a model of a query whose
        inputs are all fixed is the one run of those inputs: every claim that
        pairs a register with a load at another address fails in it at once,
        where the solver's own models made the parameters zero and the
        addresses alike); last, without the draws, every iteration goes back
        and every load's guard holds (the claims' premises)."""
        distinct = cls._distinct_loads(q, loads)
        free = [(s, w) for s, (kind, w) in sorted(q.declared.items()) if kind == "var"]
        out = []
        for seed in range(HINT_DRAWS):
            rng = random.Random(seed)
            drawn = [(s, lit(rng.randrange(1, 1 << min(w, 10)), w)) for s, w in free]
            out.append(distinct + [q.define(f"(ite (= {s} {v}) #b1 #b0)", 1) for s, v in drawn])
        guards = sorted({a.guard for a in loads if a.kind == "ld" and a.guard is not None})
        out.append(distinct + [it[1] for it in its[:-1]] + guards)
        return out

    @staticmethod
    def _distinct_loads(q: Query, accesses) -> list[str]:
        """Hints for :meth:`_houdini` (1-bit terms): each lane a load reads
        is a fixed odd multiple of its address (its low bits: distinct
        addresses within 2**bits of each other read distinct values). Two
        loads of one address read one value, so these hold together wherever
        the loads do not overlap at other offsets or widths; where they do,
        no model has them and the hints drop nothing."""
        out = []
        seen: set[str] = set()
        for acc in accesses:
            if acc.kind != "ld" or not acc.values:
                continue
            aw = q.width.get(acc.addr)
            step = acc.size // len(acc.values)
            for j, v in enumerate(acc.values):
                w = q.width.get(v)
                if aw is None or w is None or w < 8 or w > aw or v in seen:
                    continue
                seen.add(v)
                addr = acc.addr if j == 0 else q.define(f"(bvadd {acc.addr} (_ bv{j * step} {aw}))", aw)
                mixed = q.define(f"(bvmul {addr} (_ bv{_ODD_MIX % (1 << aw)} {aw}))", aw)
                low = mixed if w == aw else q.define(f"((_ extract {w - 1} 0) {mixed})", w)
                out.append(q.define(f"(ite (= {v} {low}) #b1 #b0)", 1))
        return out

    def _later_loads(self, q: Query, its: list[tuple], first: int) -> list:
        """The original's loads of iterations ``its[first:]``, each guarded by
        its own guard and by the exit tests that lead to its iteration."""
        out = []
        for i in range(first, len(its)):
            conds = [its[m][1] for m in range(i)]
            for acc in its[i][2]:
                if acc.kind != "ld":
                    continue
                g = conds + ([acc.guard] if acc.guard is not None else [])
                if not g:
                    out.append(acc)
                    continue
                term = g[0]
                for c in g[1:]:
                    term = q.define(f"(bvand {term} {c})", 1)
                out.append(replace(acc, guard=term))
        return out

    # -- the base case: blocks entering a header ----------------------------------------------

    def _plain(self, x: int) -> None:
        so, sc = self.so, self.sc
        succ = [s for s in so.cfg.blocks[x].succs if s in self.regions]
        h = succ[0] if succ else None
        if h is None or not self._own(h):
            return super()._plain(x)
        where = f"block {x} ({so.cfg.blocks[x].label or 'entry'}), entering loop {so.cfg.blocks[h].label}"
        if so.cfg.blocks[x].succs != [h] or so.cfg.blocks[x].terminator is not None:
            raise _Refused(f"{where}: it enters the loop other than by falling through")
        y = self.map[x]
        q = self._q = Query()
        tag = f"c{x}"
        eo, ec = PathEncoder(q, so.reg_bits), PathEncoder(q, sc.reg_bits)
        eo.begin(tag)
        ec.begin(tag)
        oo = self._outcomes(eo, so, x, eo.block(so.cfg.blocks[x].instructions))
        oc = self._outcomes(ec, sc, y, ec.block(sc.cfg.blocks[y].instructions))
        if [self._mapped(d) for _, d in oo] != [d for _, d in oc] or len(oc) != 1:
            raise _Refused(f"{where}: the two kernels go to other places")
        ro, rc = eo.snapshot(), ec.snapshot()
        its = self._iterations(eo, h, self.ahead + 1)
        obs = self._state(q, replace(ro, accesses=list(ro.accesses) + self._later_loads(q, its, 0)), rc,
                          self._live(oo[0][1], oc[0][1]), tag)
        keys = self.invariant.get(h)
        if keys is None:
            keys = self._keys(h, its)
        claims = {k: self._claim(q, its, k, self._value(q, sc, rc, k[0], tag), 0) for k in keys}
        hints = self._hints(q, [*rc.accesses, *(a for it in its for a in it[2])], its)
        bad = self._houdini(q, [], claims, where, hints)
        self.invariant[h] = [k for k in keys if k not in bad]
        self.based.setdefault(h, set()).add(x)
        self._discharge(q, [], obs, where)

    # -- the inductive step ------------------------------------------------------------------

    def _loop(self, h: int) -> str:
        so, sc = self.so, self.sc
        hc, region = self.regions[h]
        label = so.cfg.blocks[h].label
        if not self._own(h):
            return super()._loop(h)
        outside = {p for p in so.cfg.blocks[h].preds if p != h}
        if outside - self.based.get(h, set()):
            raise _Refused(f"loop {label} is entered from a block whose invariant was not established")
        q = self._q = Query()
        tag = f"h{h}"
        paths = self._trips(q, hc, region, tag)
        eo = PathEncoder(q, so.reg_bits)
        eo.begin(tag)
        its = self._iterations(eo, h, self.ahead + 1)

        def at_entry(r: str) -> str:
            return q.var(f"in.{tag}.{r}", sc.reg_bits(r) or 1)

        entry = {k: self._claim(q, its, k, at_entry(k[0]), 0) for k in self.invariant.get(h, [])}
        back_paths = [p for p in paths if p.dest == ("blk", hc)]
        # Houdini: drop what does not hold again after a trip that goes back
        while entry:
            assume = [q.define(f"(ite {c} #b1 #b0)", 1) for c in entry.values()]
            bad: set[tuple] = set()
            for run in back_paths:
                after = {k: self._claim(q, its, k, run.state.regs.get(k[0]) or at_entry(k[0]), 1) for k in entry
                         if k[3] + 1 < len(its)}
                bad |= {k for k in entry if k not in after}
                bad |= self._houdini(q, [*assume, *run.conds], after, f"loop {label}, a trip that goes back")
            if not bad:
                break
            entry = {k: c for k, c in entry.items() if k not in bad}
        self.invariant[h] = list(entry)
        if not entry:
            raise _Refused(f"loop {label}: no invariant relates the carried registers "
                           f"{', '.join(sorted(self._own(h)))} to the original's loads")
        assume = [q.define(f"(ite {c} #b1 #b0)", 1) for c in entry.values()]
        preset = self._substitution(q, its, list(entry), at_entry)
        if preset:  # the trips again, from the header state with the invariant's values put in
            paths = self._trips(q, hc, region, tag, preset)
        later = self._later_loads(q, its, 1)
        exit_o = self._dest(so, h, None, None)
        exit_c = self._mapped(exit_o)
        for i, run in enumerate(paths):
            where = f"loop {label}, trip path {i + 1} of {len(paths)}"
            back = run.dest == ("blk", hc)
            if not back and run.dest != exit_c:
                raise _Refused(f"{where}: the candidate leaves the loop to {run.dest}, the original to {exit_c}")
            st, cond, _ = its[0]
            ro = replace(st, accesses=list(st.accesses) + later)
            obs = [(f"the original's exit test after one iteration {'stays in' if back else 'leaves'} the loop as "
                    f"the trip does", cond, "#b1" if back else "#b0", 1)]
            obs += self._state(q, ro, run.state, self._live(("blk", h) if back else exit_o, run.dest), tag)
            self._discharge(q, [*assume, *run.conds], obs, f"{where} as 1 iteration")
        held = sorted({(r, k) for r, _, _, k in entry})
        return (f"{len(paths)} trip paths as 1 iteration, with {len(entry)} invariant"
                f"{'s' if len(entry) != 1 else ''} on {', '.join(f'{r}@+{k}' for r, k in held)}")


__all__ = ["MAX_AHEAD", "carried_registers", "prove_pipelined"]
