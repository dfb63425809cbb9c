"""Loops proved by inductive simulation at their headers (unrolling with any trip count).

The block matcher (:mod:`.match`) needs the blocks of both kernels to
correspond one to one; the run-out proofs (:mod:`.loop_paths`) need constant trip
counts. An unrolled loop with a runtime trip count (``unroll``'s guarded
form: ``k`` copies per trip while a check allows them, else one iteration)
has neither. This module proves it for every trip count, with the SMT
solver, from the two control-flow graphs alone: it reads no loop analysis
and nothing the pass says about what it did.

**Cut points.** Every block of the original is a cut point; a block that is
its own successor (a loop of one block, ``H``) is a *loop header*. In the
candidate, the header is the block with ``H``'s labels, and its *region* is
its strongly connected component (the blocks reachable from it that reach
it) without the blocks that carry an original plain block's labels (an
outer loop's header): entered only through the header, else refused. The other blocks of
both kernels must pair up in order with the same labels (the map ``M``).
The hypothesis at every cut point is the **identity relation**: the same
value in every register live there in either kernel, the same memory (one
set of free SMT variables named by the cut point, shared by both kernels:
:class:`.smt.paths.PathEncoder`).

**Obligations** (each a query; ``unsat`` of its negation discharges it):

* a plain block ``x`` against ``M(x)``: both end at corresponding
  destinations under equal conditions, with equal registers live at each
  destination (in either kernel), equal memory (every space, every byte),
  the same ordering points (operands, guards, memory before each), the same
  warp collectives, the same warp-wide instructions (``ldmatrix``, ``mma``: as a set), and every access of the candidate covered by one of the
  original (no new fault; the encoding of :mod:`.smt.check`);
* a loop header ``H``: every path ``p`` of one candidate *trip* (from its
  header until it comes back to it or leaves the region; both sides of every
  branch, at most :data:`MAX_TRIP_PATHS`), with path condition ``PC_p``,
  stands for ``n_p >= 1`` original iterations: under ``PC_p`` the original's
  exit tests after iterations ``1 .. n_p - 1`` stay in the loop, its test
  after iteration ``n_p`` goes where the trip goes (back to the header, or to
  the exit block ``M`` maps to), and the states there are equal as above.
  ``n_p`` is found by trying the counts whose state agrees best term for
  term first (:data:`ATTEMPTS` of them), then the others up to
  :data:`MAX_COPIES`; any ``n_p`` that discharges the obligation is a valid
  simulation step.

For the guarded form this is exactly: the ``k``-copy path (guard true) is
``k`` original iterations and the original's tests after copies
``1 .. k-1`` stay in the loop under the guard; the remainder path (guard
false) is one iteration; the exit decisions match. Registers only the
candidate declares must be dead at every cut point (they are read before
written nowhere outside a trip), else refused.

**Why it is sound.** By induction over executions: both kernels start at
block 0 in the same state; from corresponding cut points in equal states
every candidate path reaches a corresponding cut point (or the end) in an
equal state, having made the same ordering points and no new access, and the
original gets there by ``n_p >= 1`` iterations of the same deterministic
execution. A candidate trip is finite (:data:`MAX_TRIP_BLOCKS`), so a loop
runs forever in one kernel exactly when it does in the other. Paths are
enumerated whether feasible or not: an infeasible one holds vacuously.

Verdicts: ``proved`` only when every obligation is ``unsat``; a ``sat``
answer, a construct :mod:`.smt.encode` does not model, a shape outside the
above, or a solver time-out (:data:`QUERY_TIMEOUT_MS` per query,
:data:`FUNCTION_BUDGET_S` per function) is ``inconclusive`` with the reason.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from ptxopt.ptx import opcodes
from ptxopt.equivalence.prove.details import BlockDetail, FunctionDetail
from ptxopt.equivalence.prove.smt import solver as solvers
from ptxopt.equivalence.prove.smt.check import Side, _covered, _same_memory, _written
from ptxopt.equivalence.prove.smt.encode import SPACES, BlockTerms, Unsupported, warp_wide_differ
from ptxopt.equivalence.prove.smt.paths import PathEncoder
from ptxopt.equivalence.prove.smt.terms import Query
from ptxopt.equivalence.verdict import Verdict
from ptxopt.ptx.ir import iter_decls

#: Most original iterations one candidate trip may stand for.
MAX_COPIES = 16
#: Most paths through one trip of a candidate loop.
MAX_TRIP_PATHS = 32
#: Most blocks one trip may pass through (more: a loop inside the candidate's region).
MAX_TRIP_BLOCKS = 64
#: Iteration counts tried first per trip path (best term-for-term agreement); the others follow,
#: nearest the trip's length first (any count that discharges the obligation is a valid step).
ATTEMPTS = 3
#: The solver's limit on one obligation, and the budget of one function's proof.
QUERY_TIMEOUT_MS = 4000
FUNCTION_BUDGET_S = 30.0

_END = "end"


class _Refused(Exception):
    """A shape or construct this proof does not handle (the message says which)."""


class _Timeout(Exception):
    """The solver ran out of time (the message says on what)."""


@dataclass
class _Run:
    """One kernel's run of a segment: its state at the end and where it goes."""

    state: BlockTerms
    dest: tuple  # ("blk", index) or ("end", opcode)
    conds: list[str]  # 1-bit terms that held on the way (the path condition)
    steps: int = 0  # instructions run (not counting the terminators)
    n: int = 0  # the original iterations it was shown to stand for


def extra_registers_only(fo, fc) -> bool:
    """The candidate's body declarations are the original's plus ``.reg``
    declarations of names the original does not declare (the temporaries of
    an unrolled loop's check), in any position."""
    do, dc = list(iter_decls(fo.body)), list(iter_decls(fc.body))
    rest = list(dc)
    for d in do:
        if d not in rest:
            return False
        rest.remove(d)
    if any(d.space != ".reg" for d in rest):
        return False
    return not (_names(rest) & _names(do))


def _names(decls) -> set[str]:
    out = set()
    for d in decls:
        for it in d.items:
            out.update(it.names())
    return out


def worth_trying(cfg) -> bool:
    """The original has a loop of one block (the shape this proof is for)."""
    return any(b.index in b.succs for b in cfg.blocks)


def prove_by_simulation(fo, fc) -> FunctionDetail:
    """Prove function ``fc`` equivalent to ``fo`` (module doc); a
    :class:`~.match.FunctionDetail` ``proved`` or ``inconclusive`` with the reason."""
    t0 = time.perf_counter()
    try:
        blocks, how = _Proof(Side(fo), Side(fc), t0).run()
    except (_Refused, Unsupported) as e:
        return FunctionDetail(fo.name, Verdict.INCONCLUSIVE, f"loop simulation: {e}", [])
    except ValueError as e:  # one name with two widths in the two kernels (terms.Query)
        return FunctionDetail(fo.name, Verdict.INCONCLUSIVE, f"loop simulation: {e}", [])
    except _Timeout as e:
        return FunctionDetail(fo.name, Verdict.INCONCLUSIVE, f"loop simulation: solver timeout: {e}", [])
    return FunctionDetail(fo.name, Verdict.PROVED, f"inductive simulation: {how}", blocks)


class _Proof:
    def __init__(self, so: Side, sc: Side, t0: float) -> None:
        self.so, self.sc, self.t0 = so, sc, t0
        self.solver_calls = 0
        #: candidate-only registers carried into loop headers under an invariant of a subclass's own
        #: (:mod:`.swp_sim`); none here: the identity relation holds at every cut point
        self.carried: frozenset[str] = frozenset()

    # -- the correspondence ----------------------------------------------------------

    def run(self) -> tuple[list[BlockDetail], str]:
        so, sc = self.so, self.sc
        if not solvers.available():
            raise _Refused(f"the SMT solver ({solvers.DEFAULT}) is not installed")
        bo, bc = so.cfg.blocks, sc.cfg.blocks
        if not bo or not bc:
            raise _Refused("a function without instructions")
        for side in (so, sc):
            if any("@" in r for d, u in side.cfg.du for r in d + u):
                raise _Refused("a nested { } scope redeclares a register name (not modelled)")
        for side, what in ((so, "original"), (sc, "candidate")):
            undefined = sorted(side.live_in(0) - side.reg_params - (self.carried if side is sc else frozenset()))
            if undefined:
                raise _Refused(f"the {what} reads {', '.join(undefined[:4])} before writing it on some path")
        heads = [b.index for b in bo if b.index in b.succs]
        regions: dict[int, tuple[int, frozenset[int]]] = {}  # original header -> (candidate header, region)
        by_labels = {b.labels: b.index for b in bc if b.labels}
        # the candidate's blocks that carry an original plain block's labels are never inside a loop's
        # region: an outer loop's header closes a cycle through an inner header, not part of its trip
        plain_labels = {b.labels for b in bo if b.labels and b.index not in heads}
        fixed = frozenset(b.index for b in bc if b.labels in plain_labels)
        for h in heads:
            hc = by_labels.get(bo[h].labels)
            if hc is None:
                raise _Refused(f"the candidate has no block labelled {bo[h].label} (the loop's header)")
            region = _scc(bc, hc, fixed)
            for r in region:
                if r != hc and any(p not in region for p in bc[r].preds):
                    raise _Refused(f"the candidate's loop {bo[h].label} is entered elsewhere than at its header")
            regions[h] = (hc, region)
        inside = set().union(*(r for _, r in regions.values())) if regions else set()
        if len(inside) != sum(len(r) for _, r in regions.values()):
            raise _Refused("two loops of the candidate share blocks")
        plain_o = [b.index for b in bo if b.index not in regions]
        plain_c = [b.index for b in bc if b.index not in inside]
        if len(plain_o) != len(plain_c) or any(bo[x].labels != bc[y].labels for x, y in zip(plain_o, plain_c)):
            raise _Refused(f"outside the loops the blocks do not correspond ({len(plain_o)} in the original, "
                           f"{len(plain_c)} in the candidate, or other labels)")
        self.map = dict(zip(plain_o, plain_c)) | {h: hc for h, (hc, _) in regions.items()}
        self.regions = regions
        only = self.only = frozenset(_names(list(iter_decls(sc.fn.body))) - _names(list(iter_decls(so.fn.body))))
        for x, y in self.map.items():  # (a carried register is arbitrary at a cut point: nothing to relate)
            live = sc.live_in(y) & only - self.carried
            if live:
                raise _Refused(f"the candidate-only register {sorted(live)[0]} is live at block {y} "
                               f"({bc[y].label or 'entry'}): not the identity relation")
        details = []
        for x in plain_o:
            self._plain(x)
            details.append(BlockDetail(x, bo[x].label, True, "simulation: block"))
        trips = []
        for h in heads:
            n = self._loop(h)
            trips.append(f"{bo[h].label}: {n}")
            details.append(BlockDetail(h, bo[h].label, True, f"simulation: loop ({n})"))
        details.sort(key=lambda d: d.block)
        took = time.perf_counter() - self.t0
        return details, (f"{len(heads)} loop{'s' if len(heads) != 1 else ''} ({'; '.join(trips)}) and "
                         f"{len(plain_o)} other blocks, {self.solver_calls} solver calls, {took:.2f} s")

    def _dest(self, side: Side, b: int, target: str | None, end: str | None) -> tuple:
        if end is not None:
            return (_END, end)
        if target is not None:
            t = side.cfg.label_block.get(target)
            if t is None:
                raise _Refused(f"a branch to an unknown label {target}")
            return ("blk", t)
        return ("blk", b + 1) if b + 1 < len(side.cfg.blocks) else (_END, _END)

    def _outcomes(self, enc: PathEncoder, side: Side, b: int, term) -> list[tuple[str, tuple]]:
        """(condition (1-bit term), destination) of every way block ``b`` ends."""
        q = enc.q
        if term is None:
            return [("#b1", self._dest(side, b, None, None))]
        cond, target = enc.branch(term)
        there = self._dest(side, b, target, None if term.opcode == "bra" else term.opcode)
        if cond is None:
            return [("#b1", there)]
        return [(cond, there), (q.define(f"(bvnot {cond})", 1), self._dest(side, b, None, None))]

    # -- plain blocks --------------------------------------------------------------------

    def _plain(self, x: int) -> None:
        so, sc = self.so, self.sc
        y = self.map[x]
        q = Query()
        tag = f"c{x}"
        eo, ec = PathEncoder(q, so.reg_bits), PathEncoder(q, sc.reg_bits)
        eo.begin(tag)
        ec.begin(tag)
        oo = self._outcomes(eo, so, x, eo.block(so.cfg.blocks[x].instructions))
        oc = self._outcomes(ec, sc, y, ec.block(sc.cfg.blocks[y].instructions))
        where = f"block {x} ({so.cfg.blocks[x].label or 'entry'})"
        mapped = [(c, self._mapped(d)) for c, d in oo]
        if sorted(d for _, d in mapped) != sorted(d for _, d in oc):
            raise _Refused(f"{where}: the two kernels go to other places "
                           f"({[d for _, d in mapped]} vs {[d for _, d in oc]})")
        obs = []
        cond_c = dict((d, c) for c, d in oc)
        if len(oc) > 1:
            for c, d in mapped:
                obs.append((f"the condition of going to {d}", c, cond_c[d], 1))
        live = sorted(set().union(*(self._live(d, self._mapped(d)) for _, d in oo)))
        obs += self._state(q, eo.snapshot(), ec.snapshot(), live, tag)
        self._discharge(q, [], obs, where)

    def _mapped(self, d: tuple) -> tuple:
        return ("blk", self.map[d[1]]) if d[0] == "blk" else d

    def _live(self, do: tuple, dc: tuple) -> list[str]:
        ret = self.so.returns | self.sc.returns
        if do[0] == _END:
            return sorted(ret)
        return sorted((self.so.live_in(do[1]) | self.sc.live_in(dc[1]) | ret) - self.carried)

    # -- loops ---------------------------------------------------------------------------

    def _loop(self, h: int) -> str:
        so, sc = self.so, self.sc
        hc, region = self.regions[h]
        label = so.cfg.blocks[h].label
        q = Query()
        tag = f"h{h}"
        paths = self._trips(q, hc, region, tag)
        # the original: iterations of H from the same state, lazily
        eo = PathEncoder(q, so.reg_bits)
        eo.begin(tag)
        iters: list[tuple[BlockTerms, str]] = []  # (state after iteration j, 1-bit "goes back to H")
        body = so.cfg.blocks[h].instructions
        per_iter = max(1, sum(1 for i in body if i.opcode not in opcodes.TERMINATORS))

        def iteration(j: int) -> tuple[BlockTerms, str]:
            while len(iters) < j:
                term = eo.block(body)
                cond, target = (None, None) if term is None else eo.branch(term)
                if term is None or term.opcode != "bra" or so.cfg.label_block.get(target) != h:
                    raise _Refused(f"loop {label}: the original's block does not end in its branch back")
                iters.append((eo.snapshot(), cond or "#b1"))
            return iters[j - 1]

        exit_o = self._dest(so, h, None, None)
        exit_c = self._mapped(exit_o)
        for i, run in enumerate(paths):
            where = f"loop {label}, trip path {i + 1} of {len(paths)}"
            back = run.dest == ("blk", hc)
            if not back and run.dest != exit_c:
                raise _Refused(f"{where}: the candidate leaves the loop to {run.dest}, the original to {exit_c}")
            top = min(MAX_COPIES, run.steps // per_iter + 1)
            tries, reads = [], ""
            for n in range(1, max(1, top) + 1):
                st, _ = iteration(n)
                if len(st.events) != len(run.state.events) or len(st.collectives) != len(run.state.collectives):
                    continue
                why = warp_wide_differ(st, run.state)
                if why:
                    reads = reads or f" ({n} iteration{'s' if n != 1 else ''}: {why})"
                    continue
                obs = self._state(q, st, run.state, self._live(("blk", h) if back else exit_o, run.dest), tag)
                same = sum(1 for o in obs if o[1] == o[2])
                tries.append((-(same - len(obs)), abs(n * per_iter - run.steps), n, obs))
            if not tries:
                raise _Refused(f"{where}: no count of original iterations makes the same ordering points"
                               f"{' and warp-wide instructions' + reads if reads else ''}")
            # the best-agreeing counts first (ATTEMPTS of them), then the others nearest the path's length
            tries.sort(key=lambda t: t[:3])
            tries = tries[:ATTEMPTS] + sorted(tries[ATTEMPTS:], key=lambda t: t[1:3])
            first_fail = None
            for _, _, n, obs in tries:
                stays = [(f"the original's exit test after iteration {j} stays in the loop",
                          iteration(j)[1], "#b1", 1) for j in range(1, n)]
                last = (f"the original's exit test after iteration {n} {'stays in' if back else 'leaves'} "
                        f"the loop as the trip does", iteration(n)[1], "#b1" if back else "#b0", 1)
                why = self._discharge(q, run.conds, stays + [last] + obs, f"{where} as {n} iteration"
                                      f"{'s' if n != 1 else ''}", final=False)
                if why is None:
                    run.n = n
                    break
                first_fail = first_fail or why
            else:
                raise _Refused(first_fail)
        ns = sorted({p.n for p in paths})
        return f"{len(paths)} trip paths as {'/'.join(map(str, ns))} iterations"

    def _trips(self, q: Query, hc: int, region: frozenset[int], tag: str, preset: dict | None = None) -> list:
        """Every path of one candidate trip from ``hc`` (forking on each branch);
        ``preset``: registers whose entry value is a term of the caller's (else
        ``in.<tag>.<name>``)."""
        sc = self.sc
        out = []
        todo: list[list[int]] = [[]]
        while todo:
            prefix = todo.pop()
            ec = PathEncoder(q, sc.reg_bits)
            ec.begin(tag)
            ec.regs.update(preset or {})
            made: list[int] = []
            conds: list[str] = []
            b, seen, steps = hc, 0, 0
            while True:
                seen += 1
                if seen > MAX_TRIP_BLOCKS:
                    raise _Refused(f"a trip of the candidate's loop at block {hc} passes more than "
                                   f"{MAX_TRIP_BLOCKS} blocks (a loop inside it)")
                blk = sc.cfg.blocks[b]
                outs = self._outcomes(ec, sc, b, ec.block(blk.instructions))
                # the work that is the loop's own: not the check's temporaries (candidate-only registers)
                steps += sum(1 for i in blk.iids if sc.cfg.instructions[i].opcode not in opcodes.TERMINATORS
                             and not (sc.cfg.du[i][0] and set(sc.cfg.du[i][0]) <= self.only))
                if len(outs) == 1:
                    cond, dest = outs[0]
                else:
                    k = len(made)
                    pick = prefix[k] if k < len(prefix) else 0
                    if k >= len(prefix):
                        todo.append([*made, 1])
                    made.append(pick)
                    cond, dest = outs[pick]
                if cond != "#b1":
                    conds.append(cond)
                if dest[0] == _END or dest[1] == hc or dest[1] not in region:
                    break
                b = dest[1]
            out.append(_Run(ec.snapshot(), dest, conds, steps))
            if len(out) + len(todo) > MAX_TRIP_PATHS:
                raise _Refused(f"more than {MAX_TRIP_PATHS} paths through one trip of the candidate's loop")
        return out

    # -- obligations ------------------------------------------------------------------------

    def _state(self, q: Query, ro: BlockTerms, rc: BlockTerms, live: list[str], tag: str) -> list[tuple]:
        """Obligations (label, original term, candidate term, width; 0: Bool vs "true")
        that both kernels left the same state (module doc)."""
        obs: list[tuple] = []
        if len(ro.collectives) != len(rc.collectives) or len(ro.events) != len(rc.events):
            return [("as many ordering points and warp collectives", "false", "true", 0)]
        why = warp_wide_differ(ro, rc)
        if why:  # (terms, not values: not a counterexample)
            raise _Refused(why)
        for what, xs, ys in (("warp collective", ro.collectives, rc.collectives),
                             ("ordering point", ro.events, rc.events)):
            for k, (eo, ec) in enumerate(zip(xs, ys)):
                if (eo.key, eo.labels, len(eo.operands)) != (ec.key, ec.labels, len(ec.operands)) or \
                        any(q.width[a] != q.width[c] for a, c in zip(eo.operands, ec.operands)):
                    return [(f"{what} {k}: the same operation ({eo.key} vs {ec.key})", "false", "true", 0)]
                for j, (a, c) in enumerate(zip(eo.operands, ec.operands)):
                    obs.append((f"{what} {k} ({eo.key}) operand {j}", a, c, q.width[a]))
                obs.append((f"{what} {k} ({eo.key}) guard", eo.guard or "#b1", ec.guard or "#b1", 1))
                for s in SPACES:
                    if eo.memory.get(s, "") != ec.memory.get(s, ""):
                        obs.append(_same_memory(q, f".{s} memory before {what} {k} ({eo.key})", s,
                                                eo.memory[s], ec.memory[s], f"{tag}.e{k}"))
        for k, c in enumerate(rc.accesses):
            obs.append((f"the candidate's access {k} ({c.kind}.{c.space}, {c.size} bytes) is covered by an "
                        f"original access", _covered(q, c, ro.accesses, wide=True), "true", 0))
        for mine, theirs, who in ((ro.accesses, rc.accesses, "original"), (rc.accesses, ro.accesses, "candidate")):
            for k, st in enumerate(mine):
                if st.kind == "st":
                    obs.append((f"the {who}'s store {k} ({st.space}, {st.size} bytes) is written by the other too",
                                _written(st, theirs, q), "true", 0))
        for s in SPACES:
            if ro.memory[s] != rc.memory[s]:
                obs.append(_same_memory(q, f"the .{s} memory at the end", s, ro.memory[s], rc.memory[s],
                                        f"{tag}.end"))
        for r in live:
            a, c = self._value(q, self.so, ro, r, tag), self._value(q, self.sc, rc, r, tag)
            if q.width[a] != q.width[c]:
                raise _Refused(f"register {r} has other widths in the two kernels")
            obs.append((f"register {r}", a, c, q.width[a]))
        return obs

    @staticmethod
    def _value(q: Query, side: Side, st: BlockTerms, r: str, tag: str) -> str:
        v = st.regs.get(r)
        if v is not None:
            return v
        w = 1 if r == "%cc.cf" else side.reg_bits(r)
        if w is None:
            raise _Refused(f"register {r} is not declared in both kernels")
        return q.var(f"in.{tag}.{r}", w)

    def _discharge(self, q: Query, conds: list[str], obs: list[tuple], where: str, final: bool = True) -> str | None:
        """Ask the solver whether ``conds`` (1-bit terms, all 1) can hold while
        an obligation fails. None: discharged; else (``final``: raise) why not."""
        obs = [o for o in obs if o[1] != o[2]]
        if not obs:
            return None
        if time.perf_counter() - self.t0 > FUNCTION_BUDGET_S:
            raise _Timeout(f"the proof's budget of {FUNCTION_BUDGET_S:.0f} s ran out before {where}")
        text = refute_all(q, conds, [f"(= {lhs} {rhs})" for _, lhs, rhs, _w in obs], "ob")
        self.solver_calls += 1
        ans = solvers.solve(text, QUERY_TIMEOUT_MS)
        if ans.status == "unsat":
            return None
        if ans.status == "unknown" and "time limit" not in ans.note and "timeout" not in ans.note:
            raise _Refused(f"{where}: the solver gave no answer: {ans.note}")
        if ans.status == "unknown":
            raise _Timeout(f"{where}: {ans.note or 'unknown'} (limit {QUERY_TIMEOUT_MS} ms per query)")
        fails = [o[0] for i, o in enumerate(obs) if ans.model.get(f"ob.{i}", 1) == 0]
        state = [f"{name.split('.', 2)[2]} = {v:#x}" for name, v in sorted(ans.model.items())
                 if name.startswith("in.") and name.count(".") >= 2]
        why = f"{where}: the solver found a state at the cut point where {fails[0] if fails else 'an obligation'} " \
              f"fails" + (f" (and {len(fails) - 1} more)" if len(fails) > 1 else "") + \
              (f", e.g. {', '.join(state[:6])}" if state else "")
        if final:
            raise _Refused(why)
        return why


def refute_all(q, conds, claims: list[str], tag: str) -> str:
    """The SMT text asking for a path (``conds``, each a 1-bit term that must be 1) on which not all
    ``claims`` (Boolean terms) hold, given query ``q``; each claim is named ``|tag.i|``, so a model tells
    which ones failed. unsat: every claim holds on every such path."""
    lines = []
    for i, c in enumerate(claims):
        lines.append(f"(declare-fun |{tag}.{i}| () Bool)")
        lines.append(f"(assert (= |{tag}.{i}| {c}))")
    pc = "".join(f"(= {c} #b1) " for c in conds)
    goal = f"(and {pc}(not (and {' '.join(f'|{tag}.{i}|' for i in range(len(claims)))} true)) true)"
    return "\n".join([*q.lines, *lines, f"(assert {goal})", "(check-sat)"]) + "\n"


def refute_any(q, conds, claims: list[str], tag: str, hints=()) -> str:
    """:func:`refute_all` for a caller that drops claims one step at a time
    (:class:`~ptxopt.equivalence.prove.smt.solver.Incremental`): claim ``i`` is
    ``|tag.i|`` and counts only while the Boolean ``|tag.on.i|`` is assumed
    true, so assuming every flag of the claims still held true and the others
    false asks exactly what :func:`refute_all` asks of those claims.
    ``hints`` (lists of 1-bit terms): list ``n`` holds where ``|tag.hint.n|``
    is assumed true: a check that assumes it asks for a model among fewer,
    never for one outside the query (left unassumed, the flag is free and
    they constrain nothing)."""
    lines = []
    for n, group in enumerate(hints):
        lines.append(f"(declare-fun |{tag}.hint.{n}| () Bool)")
        lines.append(f"(assert (=> |{tag}.hint.{n}| (and {' '.join(f'(= {h} #b1)' for h in group)} true)))")
    for i, c in enumerate(claims):
        lines.append(f"(declare-fun |{tag}.{i}| () Bool)")
        lines.append(f"(declare-fun |{tag}.on.{i}| () Bool)")
        lines.append(f"(assert (= |{tag}.{i}| {c}))")
    pc = "".join(f"(= {c} #b1) " for c in conds)
    some = " ".join(f"(and |{tag}.on.{i}| (not |{tag}.{i}|))" for i in range(len(claims)))
    goal = f"(and {pc}(or {some} false) true)"
    return "\n".join([*q.lines, *lines, f"(assert {goal})", "(check-sat)"]) + "\n"


def _scc(blocks, h: int, outside: frozenset[int]) -> frozenset[int]:
    """The blocks reachable from ``h`` that reach ``h``, not passing through ``outside``."""
    fwd, todo = {h}, [h]
    while todo:
        for s in blocks[todo.pop()].succs:
            if s not in fwd and s not in outside:
                fwd.add(s)
                todo.append(s)
    back, todo = {h}, [h]
    while todo:
        for p in blocks[todo.pop()].preds:
            if p not in back and p not in outside:
                back.add(p)
                todo.append(p)
    return frozenset(fwd & back)


__all__ = ["MAX_COPIES", "QUERY_TIMEOUT_MS", "FUNCTION_BUDGET_S", "extra_registers_only", "prove_by_simulation",
           "refute_all", "refute_any", "worth_trying"]
