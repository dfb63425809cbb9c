"""Loop trip counts for the ``sim`` backend, measured by the interpreter.

The cycle model walks the SASS once and needs to know how often each loop
goes round (:mod:`ptxopt.sim.trips`).  The interpreter does not export block
execution counts, so this module makes the kernel count for itself: a copy of
the entry gets

* one extra parameter, ``.param .u64 __ptxopt_loop_counts`` (appended, so
  the other parameters keep their offsets), loaded once into
  ``%ptxopt_lc`` before the first label of the body;
* for loop *k* (natural loops of the PTX CFG, by header position -- the order
  :func:`ptxopt.sim.trips.trip_counts_from_loop_profile` expects):
  ``red.global.add.u32 [%ptxopt_lc+8k], 1`` as the first instruction of the
  header block (iterations), and ``red.global.add.u32 [%ptxopt_lc+8k+4], 1``
  on every back edge into the header (with the branch's guard, or the negated
  guard of a branch that falls through into the header), so
  ``entries = header count - back-edge count``;
* the loop's *work*: per signature class (:data:`ptxopt.sim.trips.SIGNATURE_CLASSES`),
  ``red.global.add.u32 [%ptxopt_lc+...], n`` at the start of every block of
  its own body holding ``n`` such instructions (guards ignored, as the issue
  model ignores them), so that a branch inside the loop -- ``unroll``'s
  guarded copies -- gets its rate (:func:`ptxopt.sim.trips.trip_counts_from_loop_profile`).

The copy runs once in the interpreter with the inputs of
:func:`ptxopt.equivalence.interpret.verify`'s first trial (seed 0, random inputs, lockstep);
every thread counts, so ``iterations / entries`` is the mean trip count per
thread per entry.  The model follows one warp and takes that mean as the
warp's trip count (a warp runs as long as its slowest thread: for loops whose
trip count differs between threads the estimate is low).

The counts are mapped onto the SASS loops by structure
(:func:`ptxopt.sim.trips.match_loops`, with :func:`loop_signatures`).  The
sim backend uses this check-launch profile only when the performance
launch's counts cannot be derived (:mod:`ptxopt.measure.loop_slice`); when
neither works -- the CFG is irreducible, a back edge is an indirect branch,
the original cannot be interpreted, no structural match -- the caller keeps
the model's static fallback (``static:N=8``) and says why.
"""

from __future__ import annotations

from dataclasses import dataclass

from ptxopt.ptx.ir import Addr, Comment, Decl, DeclItem, Imm, Instruction, Loc, Module, Raw, Reg, Sym
from ptxopt.sim.trips import LoopCount

COUNTS_PARAM = "__ptxopt_loop_counts"
BASE_REG = "%ptxopt_lc"


class LoopProfileError(Exception):
    """The loops of this kernel cannot be counted; the message says why."""


@dataclass(frozen=True)
class LoopProfile:
    counts: tuple[LoopCount, ...]  # per PTX loop, by header position
    headers: tuple[str, ...]  # header labels, for messages
    #: per PTX loop: its own body's instruction counts per signature class
    #: (:data:`ptxopt.sim.trips.SIGNATURE_CLASSES`), to match SASS loops by structure
    signatures: tuple[tuple[int, ...], ...] = ()


def loop_signatures(module: Module, entry: str) -> tuple[tuple[int, ...], ...]:
    """Per natural loop of ``entry`` (by header position, as :func:`instrument_loops` numbers them): the
    counts per signature class of the instructions in its body but in no loop nested inside it."""
    from ptxopt.analysis.cfg import build_cfg
    from ptxopt.sim.trips import SIGNATURE_CLASSES

    cfg = build_cfg(module.function(entry))
    out = []
    for own in _own_blocks(cfg):
        sig = [0] * len(SIGNATURE_CLASSES)
        for b in own:
            for c, k in _block_signature(cfg.blocks[b]).items():
                sig[c] += k
        out.append(tuple(sig))
    return tuple(out)


def _own_blocks(cfg) -> list[set[int]]:
    """Per natural loop, by header position: the blocks of its body that lie in no loop nested in it."""
    bodies: dict[int, set[int]] = {}
    for head, body in cfg.natural_loops():
        bodies.setdefault(head, set()).update(body)
    out = []
    for h in sorted(bodies):
        own = set(bodies[h])
        for h2, b2 in bodies.items():
            if h2 != h and h2 in bodies[h]:
                own -= b2
        out.append(own)
    return out


def _block_signature(block) -> dict[int, int]:
    """Signature class -> how many of the block's instructions are in it."""
    from ptxopt.sim.trips import ptx_signature_class

    sig: dict[int, int] = {}
    for ins in block.instructions:
        c = ptx_signature_class(ins.opcode, ins.modifiers)
        if c is not None:
            sig[c] = sig.get(c, 0) + 1
    return sig


def counter_slots(loops: int) -> int:
    """u32 counters the instrumented copy writes for ``loops`` loops (:func:`instrument_loops`)."""
    from ptxopt.sim.trips import SIGNATURE_CLASSES

    return loops * (2 + len(SIGNATURE_CLASSES))


def read_counts(got, loops: int) -> tuple[LoopCount, ...]:
    """The :class:`LoopCount` of each loop from the counter buffer (int64, summed over runs)."""
    from ptxopt.sim.trips import SIGNATURE_CLASSES

    nc = len(SIGNATURE_CLASSES)
    out = []
    for k in range(loops):
        iterations, back = int(got[2 * k]), int(got[2 * k + 1])
        w = 2 * loops + nc * k
        out.append(LoopCount(entries=max(iterations - back, 0), iterations=iterations,
                             work=tuple(int(x) for x in got[w:w + nc])))
    return tuple(out)


def loop_headers(module: Module, entry: str) -> int:
    """How many natural loops the entry has (0: nothing to count)."""
    from ptxopt.analysis.cfg import build_cfg

    cfg = build_cfg(module.function(entry))
    return len({h for _, h in cfg.back_edges})


def _counter(slot: int, guard: str | None = None, neg: bool = False, by: int = 1) -> Instruction:
    return Instruction("red", ("global", "add", "u32"),
                       (Addr(Reg(BASE_REG), 4 * slot), Imm(str(by))), guard, neg)


def instrument_loops(module: Module, entry: str) -> tuple[Module, list[str]]:
    """A copy of ``module`` whose ``entry`` counts loop iterations and back
    edges into ``__ptxopt_loop_counts``; returns it and the header labels."""
    from ptxopt.analysis.cfg import build_cfg, dominates
    from ptxopt.sim.trips import SIGNATURE_CLASSES

    m = module.copy()
    fn = m.function(entry)
    if COUNTS_PARAM in fn.param_names():
        raise LoopProfileError("the kernel already has a loop-count parameter")
    cfg = build_cfg(fn)
    if not cfg.back_edges:
        return m, []
    idom = cfg.dominators()

    headers = sorted({h for _, h in cfg.back_edges})
    for tail, head in cfg.back_edges:
        if tail in idom and not dominates(idom, head, tail):
            raise LoopProfileError("irreducible control flow (a loop with two entries)")
    slot = {h: k for k, h in enumerate(headers)}

    # (parent items, index, instruction, before?) insertions
    inserts: list[tuple[list, int, Instruction]] = []

    def parent(path):
        items = fn.body.items
        for i in path[:-1]:
            items = items[i].items
        return items, path[-1]

    for h in headers:
        hb = cfg.blocks[h]
        if not hb.instructions:
            raise LoopProfileError(f"loop header {hb.label} has no instructions")
        items, i = parent(cfg.sites[hb.start])
        inserts.append((items, i, _counter(2 * slot[h])))
    # the loop's work: per signature class, how many of its own body's instructions ran (a block's count
    # added on entry to the block, guards ignored as the issue model ignores them)
    nc = len(SIGNATURE_CLASSES)
    for k, own in enumerate(_own_blocks(cfg)):
        for b in sorted(own):
            blk = cfg.blocks[b]
            if not blk.instructions:
                continue
            for c, n in sorted(_block_signature(blk).items()):
                items, i = parent(cfg.sites[blk.start])
                inserts.append((items, i, _counter(2 * len(headers) + nc * k + c, by=n)))
    for tail, head in cfg.back_edges:
        tb, hb = cfg.blocks[tail], cfg.blocks[head]
        if not tb.instructions:
            raise LoopProfileError("empty latch block")
        last = tb.instructions[-1]
        last_iid = tb.start + len(tb.instructions) - 1
        items, i = parent(cfg.sites[last_iid])
        falls_into_head = tail + 1 == head and (last.opcode not in ("bra", "brx", "ret", "exit", "trap")
                                                or last.guard is not None)
        c = 2 * slot[head] + 1
        if last.opcode == "brx":
            raise LoopProfileError("a loop's back edge is an indirect branch (brx)")
        if last.opcode == "bra" and set(cfg.branch_targets(last) or ()) & set(hb.labels):
            if last.guard is None or falls_into_head:
                inserts.append((items, i, _counter(c)))
            else:
                inserts.append((items, i, _counter(c, last.guard, last.guard_neg)))
        elif falls_into_head:
            if last.opcode in ("bra", "ret", "exit", "trap"):  # guarded: falls through when false
                inserts.append((items, i, _counter(c, last.guard, not last.guard_neg)))
            else:
                inserts.append((items, i + 1, _counter(c)))
        else:
            raise LoopProfileError(f"cannot place a counter on the back edge into {hb.label}")

    # apply from the back so earlier indices stay valid
    for items, i, ins in sorted(inserts, key=lambda t: (id(t[0]), t[1]), reverse=True):
        items.insert(i, ins)

    # the parameter, the base register, and its load before the first label
    fn.params = tuple(fn.params or ()) + (Decl((".param", ".u64"), (DeclItem(COUNTS_PARAM),)),)
    body = fn.body.items
    first = 0
    while first < len(body) and type(body[first]) in (Decl, Comment, Loc, Raw):
        first += 1
    body.insert(first, Instruction("ld", ("param", "u64"), (Reg(BASE_REG), Addr(Sym(COUNTS_PARAM)))))
    body.insert(0, Decl((".reg", ".b64"), (DeclItem(BASE_REG),)))
    return m, [cfg.blocks[h].label or f"block{h}" for h in headers]


def loop_profile(module: Module, entry: str, *, spec=None, geometry=None, seed: int = 0,
                 max_steps: int | None = None) -> LoopProfile:
    """Run the instrumented kernel once and read its loop counts.

    ``spec`` (a corpus :class:`~ptxopt.kernels.corpus.KernelSpec`) or ``geometry``
    (a :class:`ptxopt.equivalence.interpret.Geometry`) says how to launch, as for
    :func:`ptxopt.equivalence.interpret.verify`.  Raises :class:`LoopProfileError` or the
    interpreter's error.
    """
    import numpy as np  # with the interpreter: a kernel without SASS loops never gets here

    from ptxopt.interp import Program, run_kernel
    from ptxopt.interp.workload import make_args
    from ptxopt.equivalence.interpret import TRIAL_PLAN, _args_for_geometry

    inst, headers = instrument_loops(module, entry)
    if not headers:
        return LoopProfile((), ())
    program = Program(inst)
    flavour, schedule = TRIAL_PLAN[0]
    run_seed = seed * 1000
    counts = np.zeros(counter_slots(len(headers)), dtype=np.uint32)
    if spec is not None:
        args = list(make_args(spec, run_seed, flavour)) + [counts]
        grid, block, shared = spec.launch.grid, spec.launch.block, spec.launch.shared_bytes
    else:
        args, _defaulted = _args_for_geometry(program, entry, geometry, run_seed, flavour)
        args = list(args)
        args[-1] = counts  # the instrumentation's counter buffer is the last parameter
        grid, block, shared = geometry.grid, geometry.block, geometry.shared_bytes
    kw = {} if max_steps is None else {"max_steps": max_steps}
    res = run_kernel(program, entry, grid, block, args, shared, seed=run_seed, schedule=schedule, **kw)
    got = res.buffers[-1].astype(np.int64)
    return LoopProfile(read_counts(got, len(headers)), tuple(headers), loop_signatures(module, entry))


__all__ = ["loop_profile", "loop_signatures", "instrument_loops", "counter_slots", "read_counts", "loop_headers",
           "LoopProfile", "LoopProfileError", "COUNTS_PARAM"]
