"""Loops of one function: nesting, induction variables, trip counts,
loop-carried dependences and whether the trip count is block-uniform.

What loop passes (``unroll``, ``nc_ld``'s reporting, the loop-aware
checks) need to know, computed once from the :class:`~ptxopt.analysis.cfg.CFG`:

* **Natural loops.** A back edge ``t -> h`` whose head dominates its tail
  (:meth:`CFG.natural_loops`); back edges sharing a header form one loop
  (their bodies united). Irreducible cycles have no natural loop and are
  counted in :attr:`LoopInfo.irreducible`. ``parent``/``depth`` give the
  nesting (depth 1 = outermost).
* **Basic induction variables.** A register whose only definitions in the
  loop are one unguarded ``add``/``sub`` of itself and a loop-invariant
  step (an immediate, or a register no instruction of the loop writes), or
  a ``mov`` of such a sum computed earlier in the iteration (Triton's
  ``x = r + 16; ...; r = x``), in a block that runs in every iteration
  (it dominates every latch). Its
  *initial value* is the definition(s) reaching the header from outside.
* **Trip count** from the loop's exit test: the one conditional branch
  leaving the loop is ``@p bra`` with ``p = setp.CMP a, b``, one side a
  basic IV (or the IV plus a constant), the other loop-invariant. Constant
  when init, step and bound are all immediates (counted by running the
  test, at most :data:`MAX_CONSTANT_TRIP` iterations, in the compare's
  integer width; the count is how many times the header runs per entry,
  which for a test at the bottom is the number of iterations and for a
  test in the header one more than the body's); *parametric* when the values are invariant and trace to
  ``ld.param`` (the parameters are named); otherwise unknown. Loops with
  more than one exit, or whose test is not of this form (a ``while`` loop
  on a loaded value), have an unknown trip count.
* **Loop-carried dependences.** Through registers: registers written in
  the loop and live into its header (the value of one iteration reaches the
  next). Through memory: pairs of a store/atomic and another access in the
  loop that :func:`ptxopt.analysis.alias.may_alias` does not separate once
  register bases are forgotten (a register holds another value in the next
  iteration, so same-register-base disjointness says nothing across
  iterations; distinct variables and distinct ``.noalias`` roots still
  separate).
* **Uniformity.** The trip count is block-uniform when every exit test's
  predicate is (:func:`ptxopt.analysis.uniform.nonuniform_registers`):
  the same number of iterations for every thread that enters the loop.
* ``barriers``/``collectives``: whether the body holds a barrier
  (:data:`ptxopt.opcodes.BARRIERS`) or a warp collective.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ptxopt import opcodes, operand_facts
from ptxopt.analysis.alias import Access, may_alias, noalias_params, overlapping_symbols, pointer_roots
from ptxopt.analysis.cfg import CFG
from ptxopt.analysis.defuse import liveness, reaching_definitions
from ptxopt.analysis.uniform import nonuniform_registers

#: The longest constant trip count counted by running the exit test.
MAX_CONSTANT_TRIP = 1 << 16

_CMP = {
    "eq": lambda a, b: a == b, "ne": lambda a, b: a != b,
    "lt": lambda a, b: a < b, "le": lambda a, b: a <= b, "gt": lambda a, b: a > b, "ge": lambda a, b: a >= b,
    "lo": lambda a, b: a < b, "ls": lambda a, b: a <= b, "hi": lambda a, b: a > b, "hs": lambda a, b: a >= b,
}
_SWAP = {"lt": "gt", "le": "ge", "gt": "lt", "ge": "le", "lo": "hi", "ls": "hs", "hi": "lo", "hs": "ls",
         "eq": "eq", "ne": "ne"}
_INT_TYPES = {"s8": (8, True), "s16": (16, True), "s32": (32, True), "s64": (64, True),
              "u8": (8, False), "u16": (16, False), "u32": (32, False), "u64": (64, False),
              "b16": (16, False), "b32": (32, False), "b64": (64, False)}


@dataclass(frozen=True)
class Value:
    """A loop-invariant value as far as it is known: an integer constant, or
    the parameters it derives from (``params``), or neither (``unknown``).
    ``uniform``: the same in every thread of the block."""

    const: int | None = None
    params: tuple[str, ...] = ()
    known: bool = False
    uniform: bool = False

    def describe(self) -> str:
        if self.const is not None:
            return str(self.const)
        if self.known:
            return "f(" + ", ".join(self.params) + ")" if self.params else "f(launch)"
        return "?"


@dataclass(frozen=True)
class InductionVar:
    """``reg`` starts at ``init`` and changes by ``step`` (a :class:`Value`;
    negative for ``sub``) once per iteration, at instruction ``update``."""

    reg: str
    init: Value
    step: Value
    update: int


@dataclass(frozen=True)
class TripCount:
    """``kind``: ``constant`` (``value`` iterations), ``parametric`` (depends
    on ``params`` and launch constants), ``unknown`` (``why``)."""

    kind: str
    value: int | None = None
    params: tuple[str, ...] = ()
    why: str = ""

    def describe(self) -> str:
        if self.kind == "constant":
            return str(self.value)
        if self.kind == "parametric":
            return "from " + (", ".join(self.params) if self.params else "launch constants")
        return f"unknown ({self.why})"


@dataclass(frozen=True)
class ExitTest:
    """The loop's one exit test, ``setp.CMP.TY p, iv+off, bound; @p bra``
    oriented IV-first: the loop goes on while ``(iv + off) CMP bound`` is
    ``stay_when``. ``setp``/``branch``: their iids; ``bound_index``: which
    setp operand (1 or 2) is the bound; ``updated_first``: the IV's update
    runs before the test in each iteration (the test sees the new value).
    What a pass that rewrites the loop's control needs to rebuild the test."""

    iv: InductionVar
    cmp: str
    ty: str
    bound: Value
    off: int
    stay_when: bool
    setp: int
    branch: int
    bound_index: int
    updated_first: bool | None


@dataclass
class Loop:
    header: int
    blocks: frozenset[int]
    latches: tuple[int, ...]
    exits: tuple[int, ...]  # blocks inside with a successor outside
    parent: int | None = None  # index into LoopInfo.loops
    depth: int = 1
    children: list[int] = field(default_factory=list)
    ivs: tuple[InductionVar, ...] = ()
    trip: TripCount = TripCount("unknown")
    uniform: bool = False
    carried_regs: tuple[str, ...] = ()
    carried_mem: tuple[tuple[int, int], ...] = ()  # (store iid, access iid)
    barriers: bool = False
    collectives: bool = False
    iids: tuple[int, ...] = ()
    test: ExitTest | None = None  # the exit test, when it has the counted form (:class:`ExitTest`)

    def to_json(self, cfg: CFG) -> dict:
        blk = cfg.blocks[self.header]
        return {
            "header": blk.label or f"block{self.header}",
            "line": blk.instructions[0].line if blk.instructions else 0,
            "depth": self.depth,
            "blocks": len(self.blocks),
            "instructions": len(self.iids),
            "induction_variables": [{"reg": iv.reg, "init": iv.init.describe(), "step": iv.step.describe()}
                                    for iv in self.ivs],
            "trip_count": {"kind": self.trip.kind, "value": self.trip.value, "params": list(self.trip.params),
                           "why": self.trip.why},
            "uniform_trip_count": self.uniform,
            "carried_registers": list(self.carried_regs),
            "carried_memory": len(self.carried_mem),
            "barriers": self.barriers,
            "collectives": self.collectives,
        }


@dataclass
class LoopInfo:
    loops: list[Loop]
    irreducible: int = 0

    def to_json(self, cfg: CFG) -> dict:
        return {"count": len(self.loops), "irreducible": self.irreducible,
                "loops": [lp.to_json(cfg) for lp in self.loops]}


# ---------------------------------------------------------------------------


def find_loops(cfg: CFG) -> LoopInfo:
    """Every natural loop of ``cfg`` with its facts (module doc), outermost
    first, in header order."""
    natural = cfg.natural_loops()
    by_header: dict[int, set[int]] = {}
    latches: dict[int, list[int]] = {}
    for (head, body), (tail, _) in zip(natural, [e for e in cfg.back_edges if _is_natural(cfg, e, natural)]):
        by_header.setdefault(head, set()).update(body)
        latches.setdefault(head, []).append(tail)
    irreducible = len(cfg.back_edges) - len(natural)
    loops = []
    for head in sorted(by_header, key=lambda h: (-len(by_header[h]), h)):
        body = frozenset(by_header[head])
        exits = tuple(sorted(b for b in body if any(s not in body for s in cfg.blocks[b].succs)))
        iids = tuple(i for b in sorted(body) for i in cfg.blocks[b].iids)
        loops.append(Loop(head, body, tuple(sorted(set(latches[head]))), exits, iids=iids))
    # nesting: the smallest strictly larger loop containing the header
    for i, lp in enumerate(loops):
        best = None
        for j, other in enumerate(loops):
            if j != i and lp.blocks < other.blocks and (best is None or len(other.blocks) < len(loops[best].blocks)):
                best = j
        lp.parent = best
    for i, lp in enumerate(loops):
        d, p = 1, lp.parent
        while p is not None:
            d += 1
            p = loops[p].parent
        lp.depth = d
        if lp.parent is not None:
            loops[lp.parent].children.append(i)
    loops.sort(key=lambda lp: (lp.depth, lp.header))
    if loops:
        _Facts(cfg).fill(loops)
    return LoopInfo(loops, irreducible)


def _is_natural(cfg: CFG, edge, natural) -> bool:
    idom = cfg.dominators()
    from ptxopt.analysis.cfg import dominates

    tail, head = edge
    return tail in idom and dominates(idom, head, tail)


class _Facts:
    """The per-function analyses the loop facts share."""

    def __init__(self, cfg: CFG) -> None:
        self.cfg = cfg
        self.rd = reaching_definitions(cfg)
        self.live = liveness(cfg)
        self.nonuniform = nonuniform_registers(cfg)
        fn = cfg.function
        self.params = {it.name for d in (fn.params or ()) for it in d.items}
        self.noalias = noalias_params(fn)
        self.overlap = overlapping_symbols(fn)
        self.roots = pointer_roots(cfg)
        self.idom = cfg.dominators()

    def fill(self, loops: list[Loop]) -> None:
        for lp in loops:
            self._one(lp)

    # -- values ---------------------------------------------------------------

    def value(self, operand_reg: str | None, imm, at: int, loop: Loop, depth: int = 0) -> Value:
        """What the value read at instruction ``at`` is, when invariant in ``loop``."""
        if operand_reg is None:
            return Value(const=imm, known=True, uniform=True) if type(imm) is int else Value()
        if opcodes.is_special_reg(operand_reg):
            return Value(known=True, uniform=opcodes.is_block_uniform_sreg(operand_reg))
        uniform = operand_reg not in self.nonuniform
        defs = self.rd.reaching(at, operand_reg)
        if not defs or any(d in loop.iids for d in defs):
            return Value(uniform=uniform)
        return self._traced(defs, uniform, depth)

    def _traced(self, defs, fallback: bool, depth: int) -> Value:
        """Constant or the parameters behind the definitions ``defs`` (all
        outside the loop), and whether the value is uniform, followed through
        pure single definitions; ``fallback``: the uniformity to report when
        the chain cannot be followed (the register-level answer, or False)."""
        if depth > 16 or len(defs) != 1:
            return Value(uniform=fallback)
        ins = self.cfg.instructions[defs[0]]
        if ins.guard is not None:
            return Value(uniform=fallback)
        f = operand_facts.facts(ins)
        if ins.opcode == "ld" and opcodes.mem_space(ins) == "param":
            a = f.address
            if a is not None and a.kind == "sym" and a.name in self.params:
                return Value(params=(a.name,), known=True, uniform=True)
            return Value(uniform=fallback)
        if ins.opcode == "mov" and len(ins.operands) == 2:
            c = operand_facts.immediate(ins.operands[1])
            if type(c) is int:
                return Value(const=c, known=True, uniform=True)
        if f.role != "pure" or ins.opcode in opcodes.BRANCH_OPCODES:
            return Value(uniform=fallback)
        params: list[str] = []
        uniform = all(opcodes.is_block_uniform_sreg(s) for s in f.sregs)
        for r in f.uses:
            v = self._traced(self.rd.reaching(defs[0], r), r not in self.nonuniform, depth + 1)
            if not v.known:
                return Value(uniform=fallback)
            params += v.params
            uniform = uniform and v.uniform
        return Value(params=tuple(dict.fromkeys(params)), known=True, uniform=uniform)

    # -- one loop -------------------------------------------------------------

    def _one(self, lp: Loop) -> None:
        cfg = self.cfg
        in_loop = set(lp.iids)
        written: dict[str, list[int]] = {}
        for i in lp.iids:
            for r in cfg.du[i][0]:
                written.setdefault(r, []).append(i)
            ins = cfg.instructions[i]
            lp.barriers |= opcodes.is_barrier(ins)
            lp.collectives |= operand_facts.facts(ins).role == "collective"
        # induction variables
        ivs = []
        for r, sites in written.items():
            if len(sites) != 1:
                continue
            ins = cfg.instructions[sites[0]]
            if ins.opcode == "mov" and ins.guard is None and len(ins.operands) == 2:
                # Triton's form: x = r + C ... r = x (the copy is the update)
                x = operand_facts.reg_name(ins.operands[1])
                xs = written.get(x, []) if x is not None else []
                if len(xs) != 1 or not self._before(xs[0], sites[0], lp):
                    continue
                ins = cfg.instructions[xs[0]]
                d_ok = operand_facts.reg_name(ins.operands[0]) == x if ins.operands else False
            else:
                d_ok = bool(ins.operands) and operand_facts.reg_name(ins.operands[0]) == r
            if ins.opcode not in ("add", "sub") or ins.guard is not None or len(ins.operands) != 3 \
                    or ins.modifiers[-1:] and ins.modifiers[-1] not in _INT_TYPES \
                    or "cc" in ins.modifiers or "sat" in ins.modifiers \
                    or not d_ok:
                continue
            d, a, b = ins.operands
            names = [operand_facts.reg_name(o) for o in (a, b)]
            if r not in names:
                continue
            other = b if names[0] == r else a
            if ins.opcode == "sub" and names[0] != r:
                continue
            oreg = operand_facts.reg_name(other)
            if oreg is not None and oreg in written:
                continue
            if not all(self._dominates_block(cfg.block_of[sites[0]], t) for t in lp.latches):
                continue  # not updated in every iteration
            step = self.value(oreg, operand_facts.immediate(other), sites[0], lp)
            if ins.opcode == "sub":
                step = Value(const=-step.const, known=True, uniform=True) if step.const is not None else step
            hdr = cfg.blocks[lp.header]
            init_defs = tuple(d for p in hdr.preds if p not in lp.blocks
                              for d in self._reaching_end(p, r))
            init = self._traced(tuple(dict.fromkeys(init_defs)), False, 0) if init_defs else Value()
            ivs.append(InductionVar(r, init, step, sites[0]))
        lp.ivs = tuple(ivs)
        # loop-carried registers: written in the loop and live into its header
        live_in = self.live.live_in[lp.header]
        lp.carried_regs = tuple(sorted(r for r in written if r in live_in))
        # loop-carried memory
        accesses = []
        for i in lp.iids:
            ins = cfg.instructions[i]
            role = operand_facts.facts(ins).role
            if not opcodes.is_memory(ins) or ins.opcode in opcodes.PREFETCHES:
                continue
            a = operand_facts.address(ins)
            writes = role == "store" or opcodes.is_atomic(ins) or (role == "order" and ins.opcode != "ld")
            base = None
            if a is not None and a.kind in ("sym", "imm"):
                base = ("sym", a.name) if a.kind == "sym" else ("imm",)
            root = self.roots.get(a.name) if a is not None and a.kind == "reg" else None
            accesses.append((i, writes, Access(i, writes, opcodes.mem_space(ins), base,
                                               a.offset if a else 0, a.size if a else None, root)))
        carried = []
        for x, (i, wi, ai) in enumerate(accesses):
            for j, wj, aj in accesses[x:]:
                if (wi or wj) and may_alias(ai, aj, self.noalias, self.overlap):
                    carried.append((i, j) if wi else (j, i))
        lp.carried_mem = tuple(carried)
        # trip count and uniformity
        lp.trip, exit_preds = self._trip(lp, in_loop)
        lp.uniform = exit_preds is not None and all(
            p not in self.nonuniform or self._iv_uniform(lp, p) for p in exit_preds)

    def _reaching_end(self, block: int, reg: str) -> tuple[int, ...]:
        """Definitions (iids) of ``reg`` reaching the end of ``block``."""
        out = []
        for d in self.rd.reach_out[block]:
            iid, r = self.rd.def_sites[d]
            if r == reg:
                out.append(iid)
        return tuple(out)

    def _iv_uniform(self, lp: Loop, pred: str) -> bool:
        """A predicate the uniformity fixpoint could not clear, but which
        compares a basic IV whose init and step are uniform against a uniform
        invariant (the IV's two definitions merge at the header only, where
        every thread arrives by the same edges when all exit tests are uniform)."""
        test = self._exit_test(lp, pred)
        if test is None:
            return False
        iv, _, bound, _ = test
        return iv.init.uniform and iv.step.uniform and bound.uniform

    def _exit_test(self, lp: Loop, pred: str):
        """``(iv, cmp, bound, offset)`` when ``pred`` is ``setp.cmp (iv+offset), bound``
        defined once in the loop; the comparison is oriented IV-first."""
        cfg = self.cfg
        sites = [i for i in lp.iids if pred in cfg.du[i][0]]
        if len(sites) != 1:
            return None
        s = cfg.instructions[sites[0]]
        if s.opcode != "setp" or s.guard is not None or len(s.operands) != 3 or len(s.modifiers) != 2 \
                or operand_facts.reg_name(s.operands[0]) != pred:
            return None  # a ``%p|%q`` destination: %q is the complement
        cmp, ty = s.modifiers
        if cmp not in _CMP or ty not in _INT_TYPES:
            return None
        ivs = {iv.reg: iv for iv in lp.ivs}
        a, b = s.operands[1], s.operands[2]
        for x, y, c in ((a, b, cmp), (b, a, _SWAP[cmp])):
            xr = operand_facts.reg_name(x)
            iv, off = self._iv_plus(lp, xr, sites[0], ivs)
            if iv is None:
                continue
            yr = operand_facts.reg_name(y)
            if yr is not None and any(yr in cfg.du[i][0] for i in lp.iids):
                continue
            bound = self.value(yr, operand_facts.immediate(y), sites[0], lp)
            return iv, (c, ty), bound, off
        return None

    def _iv_plus(self, lp: Loop, reg: str | None, at: int, ivs) -> tuple[InductionVar | None, int]:
        """``reg`` is a basic IV (offset 0) or ``add reg, iv, C`` defined once in the loop."""
        if reg is None:
            return None, 0
        if reg in ivs:
            return ivs[reg], 0
        cfg = self.cfg
        sites = [i for i in lp.iids if reg in cfg.du[i][0]]
        if len(sites) != 1:
            return None, 0
        ins = cfg.instructions[sites[0]]
        if ins.opcode != "add" or ins.guard is not None or len(ins.operands) != 3:
            return None, 0
        a, b = ins.operands[1], ins.operands[2]
        for x, y in ((a, b), (b, a)):
            xr, c = operand_facts.reg_name(x), operand_facts.immediate(y)
            if xr in ivs and type(c) is int:
                return ivs[xr], c
        return None, 0

    def _trip(self, lp: Loop, in_loop: set[int]) -> tuple[TripCount, list[str] | None]:
        cfg = self.cfg
        exiting = []
        for b in lp.exits:
            t = cfg.blocks[b].instructions[-1] if cfg.blocks[b].instructions else None
            if t is None or t.opcode != "bra" or t.guard is None:
                return TripCount("unknown", why="an exit that is not a conditional branch"), None
            exiting.append((b, t))
        if not exiting:
            return TripCount("unknown", why="no exit"), None
        preds = [t.guard for _, t in exiting]
        if len(exiting) > 1:
            return TripCount("unknown", why=f"{len(exiting)} exits"), preds
        b, br = exiting[0]
        if not all(self._dominates_block(b, t) for t in lp.latches):
            return TripCount("unknown", why="the exit test is not reached in every iteration"), preds
        test = self._exit_test(lp, br.guard)
        if test is None:
            return TripCount("unknown", why="the exit test is not an induction variable against an invariant"), preds
        iv, (cmp, ty), bound, off = test
        setp_iid = next(i for i in lp.iids if br.guard in cfg.du[i][0])
        bidx = 1 if operand_facts.reg_name(cfg.instructions[setp_iid].operands[1]) != _iv_name(self, lp, setp_iid, iv) \
            else 2
        taken = cfg.branch_targets(br) or []
        taken_in = bool(taken) and taken[0] in cfg.label_block and cfg.label_block[taken[0]] in lp.blocks
        # continue while (cond xor guard_neg) when the taken edge stays in the loop
        stay_when = taken_in != br.guard_neg
        br_iid = cfg.blocks[b].iids[-1]
        lp.test = ExitTest(iv, cmp, ty, bound, off, stay_when, setp_iid, br_iid, bidx,
                           self._before(iv.update, setp_iid, lp))
        if not (iv.init.known and iv.step.known and bound.known):
            return TripCount("unknown", why="the induction variable's start, step or bound is not traced"), preds
        params = tuple(dict.fromkeys(iv.init.params + iv.step.params + bound.params))
        if iv.init.const is None or iv.step.const is None or bound.const is None:
            return TripCount("parametric", params=params), preds
        # where the update sits relative to the test
        updated_first = self._before(iv.update, setp_iid, lp)
        if updated_first is None:
            return TripCount("unknown", why="the update does not dominate the test"), preds
        n = _count(iv.init.const, iv.step.const, bound.const, off, cmp, ty, stay_when, updated_first)
        if n is None:
            return TripCount("unknown", why=f"more than {MAX_CONSTANT_TRIP} iterations"), preds
        return TripCount("constant", value=n), preds

    def _dominates_block(self, a: int, b: int) -> bool:
        from ptxopt.analysis.cfg import dominates

        return dominates(self.idom, a, b)

    def _before(self, a: int, b: int, lp: Loop) -> bool | None:
        """Does instruction ``a`` run before ``b`` in every iteration (True),
        after it in every iteration (False, same block or b's block dominates)?"""
        cfg = self.cfg
        ba, bb = cfg.block_of[a], cfg.block_of[b]
        if ba == bb:
            return a < b
        from ptxopt.analysis.cfg import dominates

        if dominates(self.idom, ba, bb):
            return True
        if dominates(self.idom, bb, ba):
            return False
        return None


def _iv_name(facts: "_Facts", lp: Loop, setp_iid: int, iv: InductionVar) -> str | None:
    """The register in the exit test that carries the IV: the IV itself or
    ``add x, iv, C`` (operand 1 or 2 of the setp; the other is the bound)."""
    s = facts.cfg.instructions[setp_iid]
    for k in (1, 2):
        r = operand_facts.reg_name(s.operands[k])
        if r == iv.reg or facts._iv_plus(lp, r, setp_iid, {iv.reg: iv})[0] is not None:
            return r
    return None


def _count(init: int, step: int, bound: int, off: int, cmp: str, ty: str, stay_when: bool,
           updated_first: bool) -> int | None:
    """How many times the exit test runs per entry into the loop (= times the
    header runs: the test is in every iteration, as the only exit)."""
    bits, signed = _INT_TYPES[ty]

    def norm(v: int) -> int:
        v &= (1 << bits) - 1
        return v - (1 << bits) if signed and v >> (bits - 1) else v

    test = _CMP[cmp]
    v = init
    for k in range(1, MAX_CONSTANT_TRIP + 1):
        # the k-th execution of the test; the header has run k times
        seen = v + step if updated_first else v
        if test(norm(seen + off), norm(bound)) != stay_when:
            return k
        v += step
    return None


def loops_of(fn) -> tuple[CFG, LoopInfo]:
    """The CFG and loops of a function with a body."""
    cfg = CFG(fn)
    return cfg, find_loops(cfg)


__all__ = ["ExitTest", "Loop", "LoopInfo", "InductionVar", "TripCount", "Value", "find_loops", "loops_of", "MAX_CONSTANT_TRIP"]
