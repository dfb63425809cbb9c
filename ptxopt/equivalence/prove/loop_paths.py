"""Proving loop rewrites (unrolling) by bounded path execution.

The block matcher (:mod:`.match`) proves two functions equivalent when their
blocks correspond one to one. Unrolling a loop by ``k`` keeps the CFG's
shape but not its blocks: one unrolled iteration is ``k`` original ones, so
no block pair matches. This module proves such pairs by running loops out,
into the shared value graph (:mod:`.values`), in one of two ways:

* **a one-block loop as a region** (:func:`prove_loop_block`, called by the
  block matcher for the loop's block when the CFG shapes agree, as after
  ``unroll``): from every entry from outside, both kernels run the whole
  loop and must leave the same state; every other block is matched as
  usual. Its exact statement is in the function's doc.
* **whole functions, path by path** (:func:`prove_paths`, when the block
  matcher fails otherwise, e.g. CFG shapes that differ), described below.

What is proved, exactly. A *path* is one run from the function's entry to a
``ret``/``exit``/``trap`` or the end of the body, as a sequence of blocks;
each executed into one continuous register map and one memory state
(:class:`~.memory_versions.MemoryState`: the same canonical store/load/event nodes
the block matcher compares). At a conditional branch (``@p bra``, ``@p
ret``...) the predicate's node is

* a **constant**: the integer value of ``p`` follows from constants alone
  (:class:`Constants`: ``mov``, the folded integer operators of
  :mod:`.values`, integer ``setp``, guarded writes whose guard is a
  constant) -- then only that edge exists for *every* input, and the path
  follows it;
* otherwise **open**: the original's paths fork on it (both edges are
  explored, at most :data:`MAX_PATHS` paths); the candidate may branch on an
  open predicate only when it is *the same node* the original decided on
  this path, and then takes the same edge. The same node is the same
  function of the inputs, so for any input both take the same edge.

For every path of the original (all combinations of open decisions, feasible
or not) the candidate's paired path must end the same way (the same
terminator opcode) with the same memory node (every ordering point, every
store, in an order that can only differ between disjoint stores), the same
warp-collective chain, the same ``.reg`` return values of a ``.func``, and
no access the original's path does not make (:func:`.match.fault_check`).
Then, for every input, both functions take paired paths and leave the same
observables: they are equivalent, under the prover's usual model
assumptions (see :mod:`ptxopt.equivalence.prove`).

The side conditions are therefore checked, not assumed: the trip count of
every loop of both kernels is whatever the constant evaluation of its exit
test gives on this path (a wrong bound, a wrong step, a dropped or changed
guard in the candidate changes its own path, and the observables at the end
say so); nothing reads the loop analysis's trip count. What is *not*
proved here: loops whose exit depends on an input (a runtime trip count
forks at every test, so the path budget runs out) and paths longer than
:data:`MAX_STEPS` instructions (:data:`TOTAL_STEPS` in all): those stay ``inconclusive`` (the interpreter
decides).

It is only tried where the block matcher failed and the original has a loop
with a constant trip count (:func:`ptxopt.analysis.loops.find_loops`), i.e.
for unrolling-shaped rewrites; the loop analysis only gates the attempt.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ptxopt.ptx import opcodes, operand_facts
from ptxopt.equivalence.prove.observables import BlockPair, return_registers
from ptxopt.equivalence.prove.smt.encode import _INT_CMP, _UNSIGNED_CMP
from ptxopt.equivalence.prove.symexec import BlockExecutor
from ptxopt.equivalence.prove.values import Graph

#: Most paths of the original explored (each open branch doubles them).
MAX_PATHS = 16
#: Most instructions executed on one path of one kernel.
MAX_STEPS = 40_000
#: Most instructions executed in one proof, all paths of both kernels together (a bound on its time:
#: about 10 us an instruction).
TOTAL_STEPS = 120_000

# The integer types a constant is evaluated in: (bits, signed).
_INT = {f"{k}{w}": (w, k == "s") for k in "bus" for w in (8, 16, 32, 64)}
# ``setp``'s integer comparisons, by the SMT encoder's table (one place says
# which are signed): its operator names evaluated on Python ints.
_SMT_CMP = {"=": lambda a, b: a == b, "distinct": lambda a, b: a != b,
            "bvslt": lambda a, b: a < b, "bvsle": lambda a, b: a <= b, "bvsgt": lambda a, b: a > b,
            "bvsge": lambda a, b: a >= b, "bvult": lambda a, b: a < b, "bvule": lambda a, b: a <= b,
            "bvugt": lambda a, b: a > b, "bvuge": lambda a, b: a >= b}


class GiveUp(Exception):
    """The bounded execution cannot decide (the message says why)."""


class Constants:
    """Which value-graph nodes hold an integer known from constants alone.

    Evaluated one level at a time, as registers are written, so a counter
    chain of any length costs one step per write. ``None``: not known (never
    a guess). Values are unsigned at the producing instruction's width, as
    :meth:`Graph._fold` keeps them."""

    def __init__(self, g: Graph) -> None:
        self.g = g
        self.memo: dict[int, int | None] = {}

    def of(self, node: int) -> int | None:
        if node in self.memo:
            return self.memo[node]
        g = self.g
        v = g.int_value(node)
        if v is None:
            n = g.nodes[node]
            if n[0] == "op":
                v = self._op(n[1], n[2:])
            elif n[0] == "ite":
                gd = g.nodes[n[1]]
                p = self.memo.get(gd[1])
                if p is not None:  # the arm the guard picks (one level down: its operands are known by now)
                    v = self.of(n[2] if bool(p) != gd[2] else n[3])
        self.memo[node] = v
        return v

    def _op(self, key: str, args: tuple) -> int | None:
        vals = [self.memo.get(a) if self.g.int_value(a) is None else self.g.int_value(a) for a in args]
        if any(v is None for v in vals):
            return None
        name, *mods = key.split(".")
        t = mods[-1] if mods else ""
        if t not in _INT:
            return None
        bits, _signed_type = _INT[t]
        mask = (1 << bits) - 1
        if name == "mov" and len(mods) == 1 and len(vals) == 1:
            return vals[0] & mask
        if name == "setp" and len(mods) == 2 and len(vals) == 2 and mods[0] in _INT_CMP and bits >= 16:
            cmp = mods[0]
            fn = _INT_CMP[cmp] if t[0] == "s" else _UNSIGNED_CMP.get(cmp, _INT_CMP[cmp])
            if t[0] == "b" and cmp not in ("eq", "ne"):
                return None
            a, b = vals[0] & mask, vals[1] & mask
            if fn.startswith("bvs"):
                a, b = _signed(a, bits), _signed(b, bits)
            return int(_SMT_CMP[fn](a, b))
        if len(vals) == 2:
            folded = self.g.op(key, (self.g.const(vals[0]), self.g.const(vals[1])))
            return self.g.int_value(folded) if self.g.kind(folded) == "int" else None
        return None


def _signed(v: int, bits: int) -> int:
    return v - (1 << bits) if v >> (bits - 1) else v


@dataclass
class PathRun:
    """One path of one kernel: how it ended and what it left."""

    end: str  # the terminator's opcode (``ret``, ``exit``, ``trap``) or ``end`` (fell off the body)
    memory: int
    collectives: int
    regs: dict[str, int]
    accesses: list = field(default_factory=list)
    decisions: list[tuple[int, bool]] = field(default_factory=list)  # (predicate node, taken) in order
    open_points: int = 0  # how many of ``decisions`` were open (not constants)


class PathExecutor(BlockExecutor):
    """Executes a whole function along one path (see the module doc)."""

    def __init__(self, side, graph: Graph, oracle, constants: Constants, budget: list[int] | None = None) -> None:
        super().__init__(graph, oracle, side.exe.reg_bits)
        self.cfg = side.cfg
        self.k = constants
        self.budget = budget if budget is not None else [TOTAL_STEPS]  # shared by the executors of one proof

    def write(self, name: str, value: int, guard: int | None) -> None:
        super().write(name, value, guard)
        self.k.of(self.regs[name])

    def run_path(self, choose, start: int | None = None, region: frozenset[int] = frozenset(),
                 regs: dict[str, int] | None = None) -> PathRun:
        """Run from the entry; ``choose(pred_node, negated)`` decides every open
        branch (True: the branch is taken). With ``start``: run from that
        block's entry (its ``livein``/``entry`` nodes, the block matcher's
        hypothesis, with ``regs`` set first) until control leaves ``region``;
        the run then ends as ``leave:<block>``."""
        tag = "path" if start is None else start
        self.begin(tag, regs)  # registers read before any write: one livein node per name, both kernels
        decisions: list[tuple[int, bool]] = []
        opened = 0
        steps = 0
        blocks = self.cfg.blocks
        b = start or 0
        while True:
            if start is not None and b not in region:
                return self._done(f"leave:{b}", decisions, opened)
            if b >= len(blocks):
                return self._done("end", decisions, opened)
            blk = blocks[b]
            steps += len(blk.instructions)
            self.budget[0] -= len(blk.instructions)
            if steps > MAX_STEPS:
                raise GiveUp(f"a path runs more than {MAX_STEPS} instructions")
            if self.budget[0] < 0:
                raise GiveUp(f"the paths run more than {TOTAL_STEPS} instructions in all")
            ins = blk.instructions[-1] if blk.instructions else None
            term = ins if ins is not None and ins.opcode in opcodes.TERMINATORS else None
            for x in blk.instructions[:-1] if term is not None else blk.instructions:
                self._step(x)
            if term is None:
                b += 1
                continue
            if term.opcode == "brx":
                raise GiveUp("an indirect branch (brx.idx)")
            taken = True
            if term.guard is not None:
                p = self.reg(term.guard)
                c = self.k.of(p)
                if c is None:
                    taken = choose(p, term.guard_neg)
                    opened += 1
                    decisions.append((p, taken != term.guard_neg))
                else:
                    taken = bool(c) != term.guard_neg
            if not taken:
                b += 1
                continue
            if term.opcode != "bra":
                return self._done(term.opcode, decisions, opened)
            labels = operand_facts.facts(term).labels
            target = self.cfg.label_block.get(labels[0]) if labels else None
            if target is None:
                raise GiveUp(f"a branch to an unknown label ({labels[0] if labels else '?'})")
            b = target

    def _done(self, end: str, decisions, opened) -> PathRun:
        return PathRun(end, self.mem.state(), self.collectives(), dict(self.regs), self.accesses, decisions, opened)


def _original_paths(ex: PathExecutor) -> list[PathRun]:
    """Every path of the original, forking on open predicates (depth-first,
    by re-running with a forced prefix of decisions)."""
    out: list[PathRun] = []
    todo: list[list[bool]] = [[]]
    while todo:
        chooser = _Prefix(todo.pop())
        run = ex.run_path(chooser)
        forks = chooser.forks
        out.append(run)
        todo.extend(forks)
        if len(out) + len(todo) > MAX_PATHS:
            raise GiveUp(f"more than {MAX_PATHS} paths (a branch on an input inside a loop, or many guards)")
    return out


class _Prefix:
    """The original's ``choose`` for one run: the forced ``prefix`` of
    decisions first, then False, remembering each new open point (``forks``:
    the prefixes that take it the other way)."""

    def __init__(self, prefix: list[bool]) -> None:
        self.prefix = prefix
        self.made: list[bool] = []
        self.seen: dict[int, bool] = {}
        self.forks: list[list[bool]] = []

    def __call__(self, p: int, neg: bool) -> bool:
        if p in self.seen:  # a predicate decided earlier on this path holds the same value now
            return self.seen[p] != neg
        k = len(self.made)
        value = self.prefix[k] if k < len(self.prefix) else False
        if k >= len(self.prefix):
            self.forks.append([*self.made, True])
        self.made.append(value)
        self.seen[p] = value
        return value != neg


def decide_like(original: PathRun):
    """The candidate's ``choose``: an open predicate must be one the original
    decided on its paired path (the same node), and goes the same way."""
    decided = {}
    for p, value in original.decisions:
        decided.setdefault(p, value)

    def choose(p: int, neg: bool) -> bool:
        if p not in decided:
            raise GiveUp("the candidate branches on a condition that is neither a constant nor one the "
                         "original tests on the same path (a trip count or guard it cannot relate)")
        return decided[p] != neg
    return choose


def _compare(g: Graph, so, sc, ro: PathRun, rc: PathRun, assume_align: int, fault_check,
             ret_tag="path") -> str | None:
    if ro.end != rc.end:
        return f"the paths end differently ({ro.end} vs {rc.end})"
    if ro.collectives != rc.collectives:
        return "warp collectives differ (operands, order or how many times they run)"
    if ro.memory != rc.memory:
        eo, ec = g.nodes[ro.memory][1], g.nodes[rc.memory][1]
        if eo != ec:
            return "ordering points differ (how many, operands, or the memory before one)"
        return (f"the stores differ ({len(g.nodes[ro.memory][2] - g.nodes[rc.memory][2])} only in the original, "
                f"{len(g.nodes[rc.memory][2] - g.nodes[ro.memory][2])} only in the candidate)")
    if ro.end in ("ret", "end"):
        for r in return_registers(so.fn):
            live = g.node("livein", ret_tag, r)
            if ro.regs.get(r, live) != rc.regs.get(r, live):
                return f"the return register {r} differs"
    return fault_check(BlockPair(g, so, sc, None, ro, rc, assume_align, fault_check))


def prove_loop_block(so, sc, graph: Graph, oracle, b: int, assume_align: int, fault_check) -> tuple[bool, str]:
    """(proved, reason): block ``b``, a loop of one block (its own successor)
    in both kernels, whose single iterations do not correspond (unrolled),
    proved as a **region**: every entry into it from outside runs the whole
    loop to its exit and leaves the same state in both kernels.

    The block matcher's hypothesis holds at every entry from outside (the
    same value in every register live into ``b``, the same memory: the
    ``livein``/``entry`` nodes of ``b``); on top of it, a register whose
    value at the end of *every* outside predecessor of ``b`` is one constant
    (evaluated on the original's predecessor runs; the matcher separately
    shows the candidate's predecessors leave the same values) starts at that
    constant -- this is how the induction variable's start is known. Both
    kernels then run the loop from there (:class:`PathExecutor` on the region
    ``{b}``); every exit test must be a constant (no fork). Both must leave to
    the same block (or end the same way) with the same registers live there
    (and a ``.func``'s return registers), the same memory, ordering points
    and collectives, and no new access (:func:`.match.fault_check`). The
    back edge is internal to the region, so the matcher's check of ``b``
    against itself is replaced by this one; every other block is still
    matched as before."""
    blk = so.cfg.blocks[b]
    outside = [p for p in blk.preds if p != b]
    if b not in blk.succs or b not in sc.cfg.blocks[b].succs or not outside:
        return False, "not a loop of one block entered from outside"
    k = Constants(graph)
    known = entry_constants(so, graph, oracle, k, b, outside, sorted(so.live_in(b) | sc.live_in(b)))
    start = {r: graph.const(c) for r, c in known.items()}
    for r, node in start.items():
        k.memo[node] = known[r]

    def no_fork(p, neg):
        raise GiveUp("the loop's exit test is not a constant once the values every entry gives it are "
                     "known (a runtime trip count)")
    try:
        ro = PathExecutor(so, graph, oracle, k).run_path(no_fork, start=b, region=frozenset({b}), regs=start)
        rc = PathExecutor(sc, graph, oracle, k).run_path(no_fork, start=b, region=frozenset({b}), regs=start)
    except GiveUp as e:
        return False, str(e)
    if ro.end != rc.end:
        return False, f"the loops end differently ({ro.end} vs {rc.end})"
    if ro.end.startswith("leave:"):
        t = int(ro.end.split(":")[1])
        regs = sorted(so.live_in(t) | sc.live_in(t) | set(return_registers(so.fn))) if t < len(so.cfg.blocks) \
            else sorted(return_registers(so.fn))
        for r in regs:
            d = graph.node("livein", b, r)
            if ro.regs.get(r, d) != rc.regs.get(r, d):
                return False, (f"register {r} differs after the loop: {graph.show(ro.regs.get(r, d))} vs "
                               f"{graph.show(rc.regs.get(r, d))}")
    why = _compare(graph, so, sc, ro, rc, assume_align, fault_check, ret_tag=b)
    if why is not None:
        return False, why
    return True, f"the loop run out from its entry ({', '.join(f'{r}={c}' for r, c in sorted(known.items())) or 'no constants'})"


def entry_constants(so, graph: Graph, oracle, k: Constants, b: int, outside: list[int],
                    live: list[str]) -> dict[str, int]:
    """The registers of ``live`` that hold one and the same constant at the
    end of *every* block of ``outside`` (the original's predecessors of ``b``
    outside the loop), with those constants."""
    known: dict[str, int] | None = None
    for p in outside:
        vals = {}
        if p not in so.cfg.blocks[p].succs:  # (a loop's registers at its exit are not those of one run)
            # one run of block p: its terminator writes no register, so either decision leaves the same values
            run = PathExecutor(so, graph, oracle, k).run_path(lambda *_: False, start=p, region=frozenset({p}))
            for r in live:
                c = None if r not in run.regs else k.of(run.regs[r])
                if c is not None:
                    vals[r] = c
        known = vals if known is None else {r: c for r, c in vals.items() if known.get(r) == c}
    return known or {}


def worth_trying(so) -> bool:
    """Only for functions with a loop of constant trip count (see module doc)."""
    from ptxopt.analysis.loops import find_loops

    return any(lp.trip.kind == "constant" for lp in find_loops(so.cfg).loops)


@dataclass(frozen=True)
class OriginalPaths:
    """The original's half of a path proof, which depends on the original
    alone (its paths run first, on a fresh step budget): its paths, or why
    they cannot be run (``gave_up``), the constants known once they ran
    (:attr:`Constants.memo`, which the candidate's run continues from) and
    the steps they took of the proof's :data:`TOTAL_STEPS`. Remembered with
    the original (:attr:`ptxopt.equivalence.prove.original_memo.Original.paths`)
    so that a search's candidates do not run them again; read-only."""

    runs: tuple[PathRun, ...]
    gave_up: str | None
    constants: dict
    steps: int


def original_paths(so, graph: Graph, oracle) -> OriginalPaths:
    """Run every path of the original side ``so`` (see the module doc)."""
    k = Constants(graph)
    budget = [TOTAL_STEPS]
    try:
        runs = _original_paths(PathExecutor(so, graph, oracle, k, budget))
    except GiveUp as e:
        return OriginalPaths((), str(e), {}, TOTAL_STEPS - budget[0])
    return OriginalPaths(tuple(runs), None, dict(k.memo), TOTAL_STEPS - budget[0])


def prove_paths(so, sc, graph: Graph, oracle, assume_align: int, fault_check, memo=None) -> tuple[bool, str]:
    """(proved, reason): the bounded path proof of the module doc for the two
    sides (:class:`ptxopt.equivalence.prove.match._Side`) of one function.
    ``memo``: the original's :class:`~ptxopt.equivalence.prove.original_memo.Original`
    (``graph`` and ``oracle`` are its own), whose ``paths`` keeps
    :func:`original_paths` for the next candidate."""
    orig = memo.paths if memo is not None else None
    if orig is None:
        orig = original_paths(so, graph, oracle)
        if memo is not None:
            memo.paths = orig
    if orig.gave_up is not None:
        return False, orig.gave_up
    k = Constants(graph)
    k.memo.update(orig.constants)
    ec = PathExecutor(sc, graph, oracle, k, [TOTAL_STEPS - orig.steps])
    runs = orig.runs
    try:
        for i, ro in enumerate(runs):
            rc = ec.run_path(decide_like(ro))
            why = _compare(graph, so, sc, ro, rc, assume_align, fault_check)
            if why is not None:
                return False, f"path {i + 1} of {len(runs)}: {why}"
    except GiveUp as e:
        return False, str(e)
    forks = max((r.open_points for r in runs), default=0)
    return True, (f"every path executed whole ({len(runs)} path{'s' if len(runs) != 1 else ''}, loops run to "
                  f"their constant trip counts, {forks} open branch{'es' if forks != 1 else ''} on the longest)")


__all__ = [
    "MAX_PATHS",
    "MAX_STEPS",
    "Constants",
    "GiveUp",
    "OriginalPaths",
    "PathExecutor",
    "PathRun",
    "entry_constants",
    "original_paths",
    "prove_loop_block",
    "prove_paths",
    "worth_trying",
]
