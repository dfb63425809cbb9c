"""Loops of one function: nesting, induction variables, trip counts,
loop-carried dependences and whether the trip count is block-uniform.

What loop passes (``unroll``, ``nc_ld``'s reporting, the loop-aware
checks) need to know, computed once from the :class:`~ptxopt.analysis.cfg.CFG`:

* **Natural loops.** A back edge ``t -> h`` whose head dominates its tail
  (:meth:`CFG.natural_loops`); back edges sharing a header form one loop
  (their bodies united). Irreducible cycles have no natural loop and are
  counted in :attr:`LoopInfo.irreducible`. ``parent``/``depth`` give the
  nesting (depth 1 = outermost).
* **Values from def-use.** Every fact below is derived from the reaching
  definitions (:func:`ptxopt.analysis.defuse.reaching_definitions`), never
  from the order of the instructions: a register read in the loop is
  followed through its one reaching definition -- an unguarded integer
  ``mov``, ``add`` or ``sub`` of a constant or of a register the loop does not
  write -- back to the value some register held at the *top of the
  iteration*. A read that more than one definition may reach (a guarded or
  conditional update), another opcode, a nested loop, or mixed widths is not
  understood, and the fact that needs it is unknown with the reason.
* **Basic induction variables.** A register whose value at the end of every
  latch is its value at the top of the iteration plus a loop-invariant step
  (an immediate, or a register no instruction of the loop writes), through
  any copies (LLVM's ``add x, i, 1; mov i, x`` phi copy, Triton's
  ``x = r + 16; ...; r = x``). Its *initial value* is the definition(s)
  reaching the header from outside.
* **Trip count** from the loop's exit test: the one conditional branch
  leaving the loop is ``@p bra`` with ``p = setp.CMP x, b``, ``b``
  loop-invariant and ``x``, in every iteration, an IV's value at the top of
  the iteration plus a constant ``base`` (:attr:`ExitTest.base`): a test
  before the update (``base`` 0), after it (the step), of ``add x, i, C``
  computed before the update (``C``: the *old* ``i``), or of a register the
  body writes *after* the test (the previous iteration's value: one step
  less; on the first iteration the test reads the value from before the
  loop, which must be shown to be the same function of the IV's start --
  both traced to one definition or constants -- else the test is not
  understood). Constant when init, step and bound are all immediates
  (counted by running the test, at most :data:`MAX_CONSTANT_TRIP`
  iterations, in the compare's integer width; the count is how many times
  the header runs per entry); *parametric* when the values are invariant
  and trace to ``ld.param`` (the parameters are named); otherwise unknown,
  with the reason (:attr:`TripCount.why`). Loops with more than one exit,
  or whose test is not of this form (a ``while`` loop on a loaded value),
  have an unknown trip count. This is the one place these facts are
  computed: ``stats``, ``unroll`` and the boundary trip counts of the checks
  (:mod:`ptxopt.equivalence.boundary`) read them.
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
  (:data:`ptxopt.ptx.opcodes.BARRIERS`) or an instruction that needs the
  lanes of a warp together: a warp collective (``shfl``, ``vote``...) or a
  ``.sync.aligned`` one (``mma``, ``ldmatrix``: every lane must run that very
  instruction, :func:`ptxopt.ptx.opcodes.is_warp_aligned`). A pass that lets
  lanes take other paths to copies of them (a runtime test on per-thread
  values) would split the warp.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ptxopt.ptx import opcodes, operand_facts
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
    """The loop's one exit test, ``setp.CMP.TY p, x, bound; @p bra``
    oriented IV-first: the loop goes on while ``x CMP bound`` is
    ``stay_when``, where ``x`` (register ``tested``) is, in every iteration,
    the IV's value at the top of the iteration plus ``base`` (in the
    compare's width): derived from the reaching definitions of ``x``, so
    copies (``add x, i, 1; mov i, x``), a test before or after the update
    and a test of a register written later in the body (``reads_previous``:
    the previous iteration's value, and on the first iteration the value from
    before the loop, which was shown to fit) all give the value the test
    really reads. ``setp``/``branch``: their iids; ``bound_index``: which
    setp operand (1 or 2) is the bound. What a pass that rewrites the loop's
    control needs to rebuild the test.

    ``off`` and ``updated_first`` are the older spelling of the same fact:
    ``off == base`` and ``updated_first`` is always False (the tested value
    is given relative to the IV at the top of the iteration)."""

    iv: InductionVar
    cmp: str
    ty: str
    bound: Value
    off: int
    stay_when: bool
    setp: int
    branch: int
    bound_index: int
    updated_first: bool | None = False
    base: int = 0
    tested: str | None = None
    reads_previous: bool = False
    base_steps: int = 0  # with a register step: the tested value also holds this many steps


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

    def __setattr__(self, name: str, value) -> None:
        if self.__dict__.get("_frozen"):
            raise AttributeError(f"a frozen Loop is read-only (cannot set {name})")
        object.__setattr__(self, name, value)

    def freeze(self) -> Loop:
        """Make ``children`` a tuple and refuse assignment (what the analysis
        manager hands out: one loop's facts are shared by every pass of a
        state); returns ``self``. :func:`dataclasses.replace` makes a writable copy."""
        self.children = tuple(self.children)
        self.__dict__["_frozen"] = True
        return self

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
            "exit_test": None if self.test is None else {
                "tested": self.test.tested, "base": self.test.base, "reads_previous": self.test.reads_previous},
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


@dataclass(frozen=True)
class _Aff:
    """A register's value as ``header(base) + c + sum(sign * reg)``: ``base``'s value at the
    top of the iteration, a constant and invariant registers (``terms``, sorted), in ``bits``
    wide arithmetic (None: no instruction fixed the width yet)."""

    base: str
    c: int
    terms: tuple[tuple[str, int], ...]
    bits: int | None

    def plus(self, c: int, terms: tuple, bits: int | None) -> "_Aff | str":
        if bits is not None and self.bits is not None and bits != self.bits:
            return f"the value of {self.base} passes through {self.bits}- and {bits}-bit arithmetic"
        w = bits if bits is not None else self.bits
        return _Aff(self.base, self.c + c, _add_terms(self.terms, terms), w)


@dataclass(frozen=True)
class _Scope:
    """One loop as the def-use facts see it: its instructions, the registers it writes,
    and the blocks of loops nested in it."""

    loop: Loop
    iidset: frozenset[int]
    written: frozenset[str]
    inner: frozenset[int]

    @property
    def header(self) -> int:
        return self.loop.header

    @property
    def latches(self) -> tuple[int, ...]:
        return self.loop.latches

    @property
    def blocks(self) -> frozenset[int]:
        return self.loop.blocks

    @property
    def iids(self) -> tuple[int, ...]:
        return self.loop.iids

    @property
    def ivs(self) -> tuple[InductionVar, ...]:
        return self.loop.ivs


def _add_terms(a: tuple, b: tuple) -> tuple:
    acc: dict[str, int] = dict(a)
    for r, k in b:
        acc[r] = acc.get(r, 0) + k
    return tuple(sorted((r, k) for r, k in acc.items() if k))


def _sub_terms(a: tuple, b: tuple) -> tuple:
    return _add_terms(a, tuple((r, -k) for r, k in b))


def _signed(v: int, bits: int) -> int:
    """``v`` modulo ``2**bits`` as the nearest signed value."""
    v &= (1 << bits) - 1
    return v - (1 << bits) if v >> (bits - 1) else v


# ---------------------------------------------------------------------------


def needs_whole_warp(ins) -> bool:
    """A warp collective or a ``.sync.aligned`` instruction: the lanes of a warp
    run it together (the module doc's ``collectives``)."""
    return operand_facts.facts(ins).role == "collective" or opcodes.is_warp_aligned(ins)


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
        self.loops: list[Loop] = []
        self.looped: frozenset[int] = frozenset()

    def fill(self, loops: list[Loop]) -> None:
        self.loops = loops
        self.looped = frozenset(b for lp in loops for b in lp.blocks)
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
            lp.collectives |= needs_whole_warp(ins)
        # induction variables, from def-use (:meth:`_induction`)
        scope = _Scope(lp, frozenset(in_loop), frozenset(written), self._inner(lp))
        ivs = [iv for r in written if r in self.live.live_in[lp.header] for iv in (self._induction(scope, r),) if iv]
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
        lp.trip, exit_preds = self._trip(scope)
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

    def _exit_test(self, lp, pred: str):
        """``(iv, (cmp, ty), bound, base)`` when ``pred`` is ``setp.cmp x, bound`` defined once in
        the loop and ``x`` is an induction variable's value at the top of the iteration plus
        ``base`` in every iteration (:meth:`_tested`); the comparison is oriented IV-first.
        None when it is not; :meth:`_counted_test` says why."""
        t = self._counted_test(lp if type(lp) is _Scope else self._scope(lp), pred)
        return None if type(t) is str else (t[0], (t[1], t[2]), t[3], t[4])

    def _counted_test(self, sc, pred: str):
        """``(iv, cmp, ty, bound, base, setp iid, bound index, previous, steps)`` or why the exit test is
        not an induction variable against an invariant."""
        cfg = self.cfg
        sites = [i for i in sc.iids if pred in cfg.du[i][0]]
        if len(sites) != 1:
            return f"the exit predicate {pred} is written {len(sites)} times in the loop"
        s = cfg.instructions[sites[0]]
        if s.opcode != "setp" or s.guard is not None or len(s.operands) != 3 or len(s.modifiers) != 2 \
                or operand_facts.reg_name(s.operands[0]) != pred:
            return f"the exit predicate {pred} is not written by one unguarded setp.CMP.TYPE"
        cmp, ty = s.modifiers
        if cmp not in _CMP or ty not in _INT_TYPES:
            return f"the exit test compares {cmp}.{ty} (not an integer comparison)"
        if cfg.block_of[sites[0]] in sc.inner:
            return "the exit test is in a nested loop"
        ivs = {iv.reg: iv for iv in sc.ivs}
        why = "the exit test is not an induction variable against an invariant"
        for k, c in ((1, cmp), (2, _SWAP[cmp])):
            x, y = s.operands[k], s.operands[3 - k]
            xr, yr = operand_facts.reg_name(x), operand_facts.reg_name(y)
            if xr is None or xr not in sc.written or (yr is not None and yr in sc.written):
                continue
            t = self._tested(sc, xr, sites[0], ivs)
            if type(t) is str:
                why = "the exit test is not an induction variable against an invariant: " + t
                continue
            iv, base, prev, steps = t
            bits = _INT_TYPES[ty][0]
            upd = cfg.instructions[iv.update]
            if upd.modifiers[-1:] and upd.modifiers[-1] in _INT_TYPES and _INT_TYPES[upd.modifiers[-1]][0] != bits:
                why = f"the induction variable {iv.reg} is updated in another width than its {ty} exit test"
                continue
            bound = self.value(yr, operand_facts.immediate(y), sites[0], sc.loop)
            return iv, c, ty, bound, _signed(base, bits), sites[0], 3 - k, prev, steps
        return why

    def _trip(self, sc) -> tuple[TripCount, list[str] | None]:
        cfg, lp = self.cfg, sc.loop
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
        t = self._counted_test(sc, br.guard)
        if type(t) is str:
            return TripCount("unknown", why=t), preds
        iv, cmp, ty, bound, base, setp_iid, bidx, prev, steps = t
        taken = cfg.branch_targets(br) or []
        taken_in = bool(taken) and taken[0] in cfg.label_block and cfg.label_block[taken[0]] in lp.blocks
        # continue while (cond xor guard_neg) when the taken edge stays in the loop
        stay_when = taken_in != br.guard_neg
        br_iid = cfg.blocks[b].iids[-1]
        tested = operand_facts.reg_name(cfg.instructions[setp_iid].operands[3 - bidx])
        lp.test = ExitTest(iv, cmp, ty, bound, base, stay_when, setp_iid, br_iid, bidx, False,
                           base=base, tested=tested, reads_previous=prev, base_steps=steps)
        if not (iv.init.known and iv.step.known and bound.known):
            return TripCount("unknown", why="the induction variable's start, step or bound is not traced"), preds
        params = tuple(dict.fromkeys(iv.init.params + iv.step.params + bound.params))
        if iv.init.const is None or iv.step.const is None or bound.const is None:
            return TripCount("parametric", params=params), preds
        n = _count(iv.init.const, iv.step.const, bound.const, base, cmp, ty, stay_when)
        if n is None:
            return TripCount("unknown", why=f"more than {MAX_CONSTANT_TRIP} iterations"), preds
        return TripCount("constant", value=n), preds

    def _inner(self, lp: Loop) -> frozenset[int]:
        """Blocks of ``lp`` inside a loop nested in it."""
        return frozenset(b for other in self.loops if other is not lp and other.blocks < lp.blocks
                         for b in other.blocks)

    def _scope(self, lp: Loop) -> "_Scope":
        written = {r for i in lp.iids for r in self.cfg.du[i][0]}
        return _Scope(lp, frozenset(lp.iids), frozenset(written), self._inner(lp))

    # -- values relative to the loop header (def-use) ------------------------------

    def _defs_at(self, point, reg: str) -> tuple[int, ...]:
        """Definitions of ``reg`` reaching ``point``: an instruction's use, or ``("end", block)``."""
        return self.rd.reaching(point, reg) if type(point) is int else self._reaching_end(point[1], reg)

    def _runs_before(self, d: int, point, lp: Loop) -> bool:
        """Does definition ``d`` (in ``lp``) run before ``point`` in every iteration?"""
        if type(point) is int:
            return self._before(d, point, lp) is True
        return self._dominates_block(self.cfg.block_of[d], point[1])

    def _start_defs(self, lp: Loop, reg: str) -> set[int]:
        """Definitions of ``reg`` reaching the start of the header (from outside and around the latches)."""
        return {iid for d in self.rd.reach_in[lp.header] for iid, r in (self.rd.def_sites[d],) if r == reg}

    def _aff(self, lp: Loop, reg: str, point, depth: int = 0) -> _Aff | str:
        """The value of ``reg`` at ``point`` as ``header(base) + c + terms`` (:class:`_Aff`),
        followed through its reaching definitions, or why it cannot be."""
        if depth > 24:
            return f"{reg}'s definitions are nested too deeply"
        if opcodes.is_special_reg(reg):
            return f"{reg} is a special register"
        defs = self._defs_at(point, reg)
        inl = [d for d in defs if d in lp.iidset]
        if any(self._runs_before(d, point, lp) for d in inl):
            if len(defs) != 1:
                return f"{reg} has {len(defs)} definitions that may reach its use (a guarded or conditional update)"
            return self._aff_def(lp, defs[0], reg, depth)
        # the value the register held when this iteration started
        if not defs:
            return f"{reg} is read before any definition"
        if set(defs) != self._start_defs(lp, reg) or (type(point) is int and any(
                d != point and self._before(point, d, lp) is not True for d in inl)):
            return f"{reg} is not the value it held at the top of the iteration on every path"
        return _Aff(reg, 0, (), None)

    def _aff_def(self, lp: Loop, d: int, reg: str, depth: int) -> _Aff | str:
        ins = self.cfg.instructions[d]
        if ins.guard is not None:
            return f"{reg} is written by a guarded instruction"
        if self.cfg.block_of[d] in lp.inner:
            return f"{reg} is written in a nested loop"
        ty = ins.modifiers[-1] if ins.modifiers else None
        if ty not in _INT_TYPES or len(ins.modifiers) != 1:
            return f"{reg} is written by {ins.opcode}{''.join('.' + m for m in ins.modifiers)}, " \
                   "not an integer add, sub or mov"
        bits = _INT_TYPES[ty][0]
        ops = ins.operands
        if ins.opcode == "mov" and len(ops) == 2 and operand_facts.reg_name(ops[1]) is not None:
            a = self._aff(lp, operand_facts.reg_name(ops[1]), d, depth + 1)
            return a if type(a) is str else a.plus(0, (), bits)
        if ins.opcode not in ("add", "sub") or len(ops) != 3:
            return f"{reg} is written by {ins.opcode}, not an integer add, sub or mov"
        orders = ((ops[1], ops[2]),) if ins.opcode == "sub" else ((ops[1], ops[2]), (ops[2], ops[1]))
        sign = -1 if ins.opcode == "sub" else 1
        why = f"{reg} = {ins.opcode} of two values that change in the loop"
        for x, y in orders:
            xr = operand_facts.reg_name(x)
            if xr is None or xr not in lp.written:
                continue
            c, yr = operand_facts.immediate(y), operand_facts.reg_name(y)
            if type(c) is int:
                term: tuple = ()
            elif yr is not None and yr not in lp.written and not opcodes.is_special_reg(yr):
                term, c = ((yr, sign),), 0
            else:
                continue
            a = self._aff(lp, xr, d, depth + 1)
            if type(a) is str:
                why = a
                continue
            return a.plus(sign * c, term, bits)
        return why

    def _induction(self, lp: Loop, r: str) -> InductionVar | None:
        """``r`` as a basic IV: its value at the end of every latch is its value at the top of
        the iteration plus an invariant step (through copies and intermediate registers)."""
        if not lp.latches:
            return None
        vals = [self._aff(lp, r, ("end", t)) for t in lp.latches]
        a = vals[0]
        if type(a) is str or a.base != r or any(v != a for v in vals) or a.bits is None:
            return None
        if a.terms and (a.c or len(a.terms) != 1 or abs(a.terms[0][1]) != 1):
            return None
        if not a.terms and a.c % (1 << a.bits) == 0:
            return None
        ups = self._reaching_end(lp.latches[0], r)
        update = ups[0]
        if a.terms:
            sreg, sign = a.terms[0]
            step = self.value(sreg, None, update, lp)
            if sign < 0:
                step = Value(const=-step.const, known=True, uniform=True) if step.const is not None else step
        else:
            step = Value(const=_signed(a.c, a.bits), known=True, uniform=True)
        hdr = self.cfg.blocks[lp.header]
        init_defs = tuple(d for p in hdr.preds if p not in lp.blocks for d in self._reaching_end(p, r))
        init = self._traced(tuple(dict.fromkeys(init_defs)), False, 0) if init_defs else Value()
        return InductionVar(r, init, step, update)

    def _tested(self, lp, reg: str, at: int, ivs: dict) -> tuple[InductionVar, int, bool, int] | str:
        """``(iv, base, previous, steps)``: the exit test at ``at`` reads ``reg`` = the IV's value at
        the top of the iteration plus ``base`` plus ``steps`` times its (register) step (the same in
        every iteration, the first included);
        ``previous``: ``reg`` is written after the test (the test reads the previous iteration's
        value, and on the first one the value from before the loop, checked to fit)."""
        a = self._aff(lp, reg, at)
        if type(a) is str:
            return a
        if a.base in ivs:
            iv, prev, first = ivs[a.base], False, None
        elif a.base in lp.written:
            if len(lp.latches) != 1:
                return f"the test reads {reg} from the previous iteration of a loop with several latches"
            p = self._aff(lp, a.base, ("end", lp.latches[0]))
            if type(p) is str:
                return f"the test reads {reg} from the previous iteration: {p}"
            if p.base not in ivs:
                return f"the test reads {reg} from the previous iteration, not a function of an induction variable"
            iv, prev, first = ivs[p.base], True, (a.base, a.c)
            a = p.plus(a.c, a.terms, a.bits)
            if type(a) is str:
                return a
        else:
            return f"{reg} does not change in the loop"
        step_terms: tuple = ()
        if iv.step.const is None:  # a register step: the base may hold whole steps of it
            upd = self._aff(lp, iv.reg, ("end", lp.latches[0]))
            step_terms = upd.terms if type(upd) is not str else ()
        base_c, terms = a.c, a.terms
        if prev:  # one step less than the value the same code gives in this iteration
            if iv.step.const is not None:
                base_c -= iv.step.const
            else:
                terms = _sub_terms(terms, step_terms)
        steps = 0  # whole register steps in the base
        if terms and len(step_terms) == 1 and len(terms) == 1 and terms[0][0] == step_terms[0][0]:
            steps, terms = terms[0][1] * step_terms[0][1], ()
        if terms:
            return f"the test compares the induction variable {iv.reg} plus a register ({terms[0][0]})"
        if prev and steps:
            return f"the test reads {reg} from the previous iteration, offset by the register step of {iv.reg}"
        if prev:
            why = self._pre_loop_fits(lp, first[0], iv, base_c - first[1], reg)
            if why:
                return why
        return iv, base_c, prev, steps

    def _pre_loop_fits(self, lp: Loop, reg: str, iv: InductionVar, base: int, tested: str) -> str | None:
        """On the first iteration the test reads ``reg``'s value from before the loop: it must be
        the IV's start plus ``base`` (both traced to one definition, or constants), else why not."""
        mine = self._pre(lp, reg)
        theirs = self._pre(lp, iv.reg)
        bits = _INT_TYPES[self.cfg.instructions[iv.update].modifiers[-1]][0] \
            if self.cfg.instructions[iv.update].modifiers[-1:] and \
            self.cfg.instructions[iv.update].modifiers[-1] in _INT_TYPES else 64
        if mine is None or theirs is None or mine[0] != theirs[0] \
                or (mine[1] - theirs[1] - base) % (1 << bits):
            what = tested if tested == reg else f"{tested} (from {reg})"
            return (f"the test reads {what} before the loop body writes it (the previous iteration's "
                    f"value), and {reg}'s value before the loop is not shown to be {iv.reg}'s start {base:+d}")
        return None

    def _pre(self, lp, reg: str):
        """``(root, c)``: ``reg`` enters the loop as ``c`` plus the value of definition ``root``
        (``"const"``: the constant ``c``), followed through copies and adds of constants; None when
        it does not come from one such definition. Every definition on the way runs once before
        each entry into the loop (:meth:`_entered_once`) and after the one it reads, so two
        registers traced to one root hold values of the same execution of it."""
        defs = {d for d in self._start_defs(lp, reg) if d not in lp.iidset}
        if len(defs) != 1:
            return None
        d = defs.pop()
        return self._pre_def(d, 0, lp) if self._entered_once(d, lp) else None

    def _entered_once(self, d: int, lp) -> bool:
        """Definition ``d`` runs on every path into ``lp`` (its block dominates the header) and
        in no loop that does not also hold ``lp``: it ran last in the same pass over the code
        that enters the loop."""
        b = self.cfg.block_of[d]
        return self._dominates_block(b, lp.header) and all(
            lp.header in other.blocks for other in self.loops if b in other.blocks)

    def _pre_def(self, d: int, depth: int, lp):
        ins = self.cfg.instructions[d]
        if depth > 16 or ins.guard is not None:
            return None

        def source(src):  # the one definition ``d`` reads ``src`` from, when it runs before d each time
            if not src or opcodes.is_special_reg(src):
                return None
            defs = self.rd.reaching(d, src)
            if len(defs) != 1 or self._before(defs[0], d, lp) is not True or not self._entered_once(defs[0], lp):
                return None
            return self._pre_def(defs[0], depth + 1, lp)

        ops = ins.operands
        if ins.opcode == "mov" and len(ops) == 2 and len(ins.modifiers) == 1 and ins.modifiers[0] in _INT_TYPES:
            c = operand_facts.immediate(ops[1])
            if type(c) is int:
                return "const", c
            inner = source(operand_facts.reg_name(ops[1]))
            if inner is not None:
                return inner
        if ins.opcode in ("add", "sub") and len(ops) == 3 and len(ins.modifiers) == 1 \
                and ins.modifiers[0] in _INT_TYPES:
            c = operand_facts.immediate(ops[2])
            inner = source(operand_facts.reg_name(ops[1])) if type(c) is int else None
            if inner is not None:
                return inner[0], inner[1] + (c if ins.opcode == "add" else -c)
        return d, 0

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


def _count(init: int, step: int, bound: int, base: int, cmp: str, ty: str, stay_when: bool) -> int | None:
    """How many times the exit test runs per entry into the loop (= times the
    header runs: the test is in every iteration, as the only exit); the k-th
    test (from 0) compares ``init + k*step + base`` (:attr:`ExitTest.base`)."""
    bits, signed = _INT_TYPES[ty]

    def norm(v: int) -> int:
        v &= (1 << bits) - 1
        return v - (1 << bits) if signed and v >> (bits - 1) else v

    test = _CMP[cmp]
    v = init
    for k in range(1, MAX_CONSTANT_TRIP + 1):
        # the k-th execution of the test; the header has run k times
        if test(norm(v + base), norm(bound)) != stay_when:
            return k
        v += step
    return None


def loops_of(fn) -> tuple[CFG, LoopInfo]:
    """The CFG and loops of a function with a body."""
    cfg = CFG(fn)
    return cfg, find_loops(cfg)


__all__ = ["ExitTest", "Loop", "LoopInfo", "InductionVar", "TripCount", "Value", "find_loops", "loops_of", "MAX_CONSTANT_TRIP"]
