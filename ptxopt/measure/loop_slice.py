"""Loop trip counts at the *performance* launch, from the kernel's loop-control slice.

A loop's trip count is usually a function of the launch: a scalar bound
(``K``, ``n``), the grid and block sizes (grid-stride loops) and the block's
index (causal attention).  The check launch is sized for the interpreter
(``K=64``), so its counts value a 2048^3 matmul at 2 K-steps instead of 64.
Running the whole kernel at the performance size is out of reach for the
interpreter; running the part of it that decides the branches is not.

The **loop-control slice** keeps, of the loop-counting copy that
:func:`ptxopt.measure.measured_trips.instrument_loops` makes, only

* every instruction that defines a register some conditional branch (or a
  register in the slice) reads -- closed over register names, flow
  insensitive, so every definition of a loop-carried induction variable is in;
* the branches, labels, ``ret``/``exit`` and the loop counters themselves;
  a conditional branch from which no loop header can be reached (an
  epilogue's test) becomes ``ret``: it cannot change a trip count.

Stores, barriers and every load that is not a branch input go.  When a branch
input is itself computed from memory (a load other than ``ld.param``, an
atomic, a call, a clock) the trip count depends on data, not on the launch:
:class:`SliceError` says so and the caller keeps the check launch's counts.

The slice runs in the interpreter for **one warp** (the first, as the issue
model follows one warp) of up to three sample blocks (first, middle, last of
the performance grid), with the performance launch's scalars; ``%nctaid``,
``%ntid`` and ``%ctaid`` are replaced by the performance launch's values, so
no other block needs to run.  The counts are summed over the samples
(``iterations / entries`` is then the mean trip count per thread and entry,
as for the check-launch profile).  Limits: data-dependent bounds (refused,
above); a warp whose threads differ in trip count gets the mean, not the
slowest thread; blocks other than the sampled three are assumed alike.
"""

from __future__ import annotations

from dataclasses import replace

from ptxopt.support.session_state import Slot
from ptxopt.ptx.ir import Block, Imm, Instruction
from ptxopt.ptx.operand_facts import defs_uses, facts, reg_name

from ptxopt.measure.measured_trips import (BASE_REG, LoopProfile, LoopProfileError, counter_slots, instrument_loops,
                                           read_counts)

#: The slice's interpreter step budget (per sample block); a slice that needs more is refused.
MAX_SLICE_STEPS = 2_000_000

#: Special registers the slice gets as constants from the performance launch.
_LAUNCH_SREGS = ("%ntid", "%nctaid", "%ctaid")
_CONTROL = ("bra", "ret", "exit", "trap")


class SliceError(LoopProfileError):
    """The loops' trip counts cannot be derived for the performance launch; the message says why."""


def _instructions(block: Block):
    for it in block.items:
        if type(it) is Block:
            yield from _instructions(it)
        elif type(it) is Instruction:
            yield it


def _is_counter(ins: Instruction) -> bool:
    if ins.opcode == "red":
        return BASE_REG in defs_uses(ins)[1]
    return ins.opcode == "ld" and BASE_REG in defs_uses(ins)[0]


def _slice_regs(instructions, idle: frozenset = frozenset()) -> set[str]:
    """Registers the branches depend on (closure over definitions); ``idle``
    holds the ids of branches that cannot lead to a loop (left out)."""
    need: set[str] = set()
    for ins in instructions:
        if ins.opcode in _CONTROL and ins.guard is not None and id(ins) not in idle:
            need.add(ins.guard.lstrip("!"))
    defs_of: dict[str, list[Instruction]] = {}
    for ins in instructions:
        for d in defs_uses(ins)[0]:
            defs_of.setdefault(d, []).append(ins)
    todo = list(need)
    while todo:
        r = todo.pop()
        for ins in defs_of.get(r, ()):
            for u in defs_uses(ins)[1]:
                if u not in need:
                    need.add(u)
                    todo.append(u)
    return need


def _keep(ins: Instruction, need: set[str]) -> bool:
    if ins.opcode in _CONTROL or _is_counter(ins):
        return True
    d = defs_uses(ins)[0]
    if not any(r in need for r in d):
        return False
    f = facts(ins)
    ok = f.role in ("pure", "collective") or (ins.opcode == "ld" and "param" in ins.modifiers)
    if not ok:
        raise SliceError(f"a loop bound depends on `{ins.opcode}.{'.'.join(ins.modifiers)}` "
                         "(memory or an ordered operation): the trip count depends on data, not on the launch")
    return True


def _constant_sregs(ins: Instruction, values: dict[str, int]) -> Instruction:
    """``ins`` with its top-level launch special-register operands as immediates."""
    sregs = [s for s in facts(ins).sregs if s.split(".")[0] in _LAUNCH_SREGS]
    if not sregs or not values:
        return ins
    ops = []
    for op in ins.operands:
        name = reg_name(op)
        ops.append(Imm(str(values[name])) if name in values else op)
    new = replace(ins, operands=tuple(ops))
    if any(s.split(".")[0] in _LAUNCH_SREGS for s in facts(new).sregs):
        raise SliceError(f"`{ins.opcode}` reads a launch special register inside a compound operand")
    return new


def _filter(block: Block, need: set[str], values: dict[str, int], idle: frozenset = frozenset()) -> Block:
    items = []
    for it in block.items:
        if type(it) is Block:
            items.append(_filter(it, need, values, idle))
        elif type(it) is Instruction:
            if id(it) in idle:
                items.append(Instruction("ret"))  # no loop lies beyond it: the slice may stop there
            elif _keep(it, need):
                items.append(_constant_sregs(it, values))
        else:
            items.append(it)  # labels, declarations, comments
    return Block(items, block.line)


def loop_control_slice(module, entry: str):
    """The loop-counting copy of ``entry`` cut to its loop-control slice
    (special registers still symbolic); returns ``(module, headers, need, idle)``."""
    inst, headers = instrument_loops(module, entry)
    if not headers:
        return inst, headers, set(), frozenset()
    fn = inst.function(entry)
    idle = _idle_branches(fn)
    need = _slice_regs(list(_instructions(fn.body)), idle)
    return inst, headers, need, idle


def _idle_branches(fn) -> frozenset:
    """Ids of the conditional branches from which no loop header can be reached (e.g. an epilogue's
    data-dependent test): they cannot change a trip count, so their inputs stay out of the slice."""
    from ptxopt.analysis.cfg import build_cfg

    cfg = build_cfg(fn)
    reach = {h for _, h in cfg.back_edges}
    work = list(reach)
    while work:
        for p in cfg.blocks[work.pop()].preds:
            if p not in reach:
                reach.add(p)
                work.append(p)
    return frozenset(id(ins) for b in cfg.blocks if b.index not in reach for ins in b.instructions
                     if ins.opcode in _CONTROL and ins.guard is not None)


def _warp_block(block) -> tuple[int, int, int]:
    """The launch shape that holds the block's first warp (rounded up to whole rows)."""
    bx, by, bz = block
    if bx * by * bz <= 32:
        return (bx, by, bz)
    if bx >= 32:
        return (32, 1, 1)
    if bx * by >= 32:
        return (bx, -(-32 // bx), 1)
    return (bx, by, -(-32 // (bx * by)))


_CACHE_SIZE = 256
#: printed slice (+ launch) -> counts, per evaluation session (:mod:`ptxopt.support.session_state`): a search's
#: candidates nearly always share their loop control
_CACHE = Slot("measure.loop_slice", dict)


def _scalar_slots(args) -> list[int]:
    import numpy as np

    return [i for i, a in enumerate(args) if not isinstance(a, np.ndarray) and a is not None]


def _samples(grid) -> list[tuple[int, int, int]]:
    firsts = (0, 0, 0)
    mid = tuple(g // 2 for g in grid)
    last = tuple(g - 1 for g in grid)
    out = []
    for s in (firsts, mid, last):
        if s not in out:
            out.append(s)
    return out


def performance_loop_profile(module, entry: str, performance, *, spec=None, geometry=None,
                             blocks: int | None = None, max_steps: int = MAX_SLICE_STEPS) -> LoopProfile:
    """Loop counts of ``entry`` at the ``performance`` launch (its scalars,
    grid and block), from the loop-control slice (module doc).

    ``spec`` or ``geometry`` give the check launch's buffers (the slice reads
    none of them, but every parameter needs an argument); ``blocks`` is the
    grid assumed when the performance launch has none. Raises
    :class:`SliceError` (data-dependent bounds, no grid, step budget) or the
    interpreter's error."""
    import numpy as np  # with the interpreter: trip_counts_for on a kernel without SASS loops needs neither

    from ptxopt.equivalence.interpret import TRIAL_PLAN, _args_for_geometry
    from ptxopt.interp import Program, run_kernel
    from ptxopt.interp.workload import make_args

    grid = performance.grid
    if grid is None:
        if not blocks:
            raise SliceError("the performance launch has no grid and none is assumed")
        grid = (int(blocks), 1, 1)
    block = tuple(performance.block)
    inst, headers, need, idle = loop_control_slice(module, entry)
    if not headers:
        return LoopProfile((), ())
    fn = inst.function(entry)
    body = fn.body
    scalars = dict(performance.scalars or {})

    flavour, _schedule = TRIAL_PLAN[0]
    if spec is not None:
        params = tuple(replace(p, value=scalars[p.name]) if p.role == "scalar" and p.name in scalars else p
                       for p in spec.params)
        base_args = list(make_args(replace(spec, params=params), 0, flavour))
    elif geometry is not None:
        geo = replace(geometry, scalars={**dict(geometry.scalars), **scalars})
        base_args, _ = _args_for_geometry(Program(inst), entry, geo, 0, flavour)
        base_args = list(base_args)[:-1]
    else:
        raise SliceError("no check launch to take the buffers from")

    from ptxopt.ptx.emit import emit_function

    total = np.zeros(counter_slots(len(headers)), dtype=np.int64)
    run_block = _warp_block(block)
    # blocks differ only when the slice reads %ctaid: else the first block stands for all
    symbolic = _filter(body, need, {}, idle)
    reads_cta = any(s.startswith("%ctaid") for ins in _instructions(symbolic) for s in facts(ins).sregs)
    for cta in _samples(grid) if reads_cta else [(0, 0, 0)]:
        values = {}
        for i, axis in enumerate("xyz"):
            values[f"%ntid.{axis}"] = block[i]
            values[f"%nctaid.{axis}"] = grid[i]
            values[f"%ctaid.{axis}"] = cta[i]
        fn.body = _filter(body, need, values, idle)
        text: list[str] = []
        emit_function(fn, text)
        key = ("\n".join(text), run_block, tuple(repr(base_args[i]) for i in _scalar_slots(base_args)),
               int(performance.shared_bytes), max_steps)
        cache = _CACHE.get()
        got = cache.get(key)
        if got is None:
            program = Program(inst)
            counts = np.zeros(counter_slots(len(headers)), dtype=np.uint32)
            try:
                res = run_kernel(program, entry, (1, 1, 1), run_block, base_args + [counts],
                                 performance.shared_bytes, seed=0, schedule="lockstep", max_steps=max_steps)
            finally:
                fn.body = body
            got = res.buffers[-1].astype(np.int64)
            if len(cache) >= _CACHE_SIZE:
                cache.pop(next(iter(cache)))
            cache[key] = got
        total += got
    fn.body = body
    from ptxopt.measure.measured_trips import loop_signatures

    return LoopProfile(read_counts(total, len(headers)), tuple(headers), loop_signatures(module, entry))





def _map(program, prof: LoopProfile) -> dict:
    """PTX loop counts onto SASS loops by structure (:func:`ptxopt.sim.trips.match_loops`)."""
    from ptxopt.sim.trips import trip_counts_from_loop_profile

    return trip_counts_from_loop_profile(program, prof.counts, signatures=prof.signatures)


#: The trip-count source of a kernel whose loops ran in the interpreter but whose counts could not be
#: mapped onto its SASS loops (:func:`trip_counts_for`).
UNKNOWN = "loop trips unknown"


def _ran(prof) -> bool:
    """Did the profile see a loop run (its counts were there to be mapped)?"""
    return prof is not None and any(c.iterations > 0 for c in prof.counts)


def _unknown_note(why: str, static_n: int) -> str:
    return (f"{UNKNOWN}: loops ran but their counts match no SASS loop ({why}); static fallback N={static_n} "
            "walked, NOT an estimate of these loops (a rewrite's estimate cannot be compared)")


def launch_only_check(module, entry: str, performance) -> tuple[dict | None, str]:
    """``({"geometry": ...}, "")`` standing in for a check launch when none is known, so the loop-control
    slice can run on the performance launch alone: the slice reads no buffer (:class:`SliceError` where a
    bound is loaded), so pointers get a token 4-byte buffer; every other parameter must be among the
    launch's scalars (a default would be a guess at a trip count).  ``(None, why)`` otherwise."""
    from ptxopt.equivalence.interpret import Geometry

    if performance.block is None:
        return None, "the performance launch has no block"
    try:
        fn = module.pick_entry(entry, "for the loop-control slice")
    except LookupError as e:
        return None, str(e)
    scalars = dict(performance.scalars or {})
    missing = [it.name for d in fn.params or () for it in d.items
               if (d.dtype or "").lstrip(".") not in ("u64", "b64", "s64") and it.name not in scalars]
    if missing:
        return None, f"no check launch, and the performance launch gives no value for {', '.join(missing)}"
    dim = tuple(performance.block) + (1,) * (3 - len(tuple(performance.block)))
    return {"geometry": Geometry(grid=(1, 1, 1), block=dim, buffer_bytes=4, scalars=scalars)}, ""


def trip_counts_for(program, module, entry: str, *, check: dict | None, performance=None,
                    blocks: int | None = None, static_n: int = 8,
                    synthesise: bool = True) -> tuple[dict, str, list[str]]:
    """``(trip_counts, source, notes)`` for :func:`ptxopt.sim.simulate`, one
    rule for every caller (the ``sim`` backend, ``ptxopt explain``):

    1. the **performance launch**'s counts from the loop-control slice
       (:func:`performance_loop_profile`), whatever the objective -- the user
       runs that launch, one warp or the whole grid;
    2. else the **check launch**'s counts (the interpreter on the whole kernel,
       :func:`ptxopt.measure.measured_trips.loop_profile`), said so with the reason;
    3. else the model's static fallback (``static:N``) -- with the source
       :data:`UNKNOWN` instead when a profile showed loops that ran but its
       counts could not be mapped onto the SASS loops (ptxas reshaped them past
       what :func:`ptxopt.sim.trips.match_loops` recognises): the static walk
       of such a kernel is no estimate of it, and a rewrite's must not be
       compared with its original's (the ``sim`` backend refuses it).

    ``check`` is the check launch's ``interp_kwargs()`` (``{"spec": ...}`` or
    ``{"geometry": ...}``), None when it cannot run: then, with ``synthesise``, the slice runs on
    the performance launch alone (:func:`launch_only_check`) -- a kernel from outside the corpus
    with a contract that gives the performance launch but no check launch."""
    from ptxopt.sim import sass_loops

    from ptxopt.measure.measured_trips import loop_profile

    if not any(lp.function == program.kernel for lp in sass_loops(program)):
        return {}, "none needed (no SASS loops)", []
    static = f"static:N={static_n}"
    notes: list[str] = []
    if module is not None and check is None and performance is not None and synthesise:
        check, why = launch_only_check(module, entry, performance)
        if check is None:
            notes.append(f"loop trips: not from the performance launch ({why})")
    if module is None or check is None:
        why = notes[-1].split("(", 1)[-1].rstrip(")") if notes else "no interpreter profile requested"
        return {}, static, notes + [f"loop trips: static fallback N={static_n} ({why})"]
    if performance is not None:
        prof = None
        try:
            prof = performance_loop_profile(module, entry, performance, blocks=blocks, **check)
            trips = _map(program, prof)
            per = ", ".join(f"{h} {c.trips_per_entry:g}" for h, c in zip(prof.headers, prof.counts))
            return trips, "performance launch", [
                f"loop trips at the performance launch (loop-control slice, first warp; mean per entry): {per}"]
        except Exception as e:  # SliceError, InterpError, ValueError (loop counts differ)
            why = str(e).splitlines()[0] if str(e) else type(e).__name__
            notes.append(f"loop trips: not from the performance launch ({why})")
            if isinstance(e, ValueError) and _ran(prof):
                # the check launch's counts (another size) would stand in for the same lost mapping
                return {}, UNKNOWN, notes + [_unknown_note(why, static_n)]
    prof = None
    try:
        prof = loop_profile(module, entry, **check)
        trips = _map(program, prof)
    except Exception as e:  # LoopProfileError, InterpError, ValueError (loop counts differ)
        why = str(e).splitlines()[0] if str(e) else type(e).__name__
        if isinstance(e, ValueError) and _ran(prof):
            return {}, UNKNOWN, notes + [_unknown_note(why, static_n)]
        return {}, static, notes + [f"loop trips: static fallback N={static_n} ({why})"]
    per = ", ".join(f"{h} {c.trips_per_entry:g}" for h, c in zip(prof.headers, prof.counts))
    where = "the check launch" + (", NOT the performance launch" if performance is not None else "")
    return trips, "interpreter", notes + [f"loop trips from the interpreter on {where} (mean per entry): {per}"]

__all__ = ["performance_loop_profile", "loop_control_slice", "trip_counts_for", "launch_only_check", "SliceError", "MAX_SLICE_STEPS", "UNKNOWN"]
