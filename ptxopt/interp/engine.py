"""The scheduler: which threads run which instruction next.

Divergence model: **minimum-PC scheduling over thread groups.** A function
activation keeps its threads in groups keyed by program counter (the index
of the next instruction in textual order). It always runs the group with the
smallest PC, for all of that group's threads at once, until the group splits
(a divergent branch), blocks (a barrier, a warp collective whose lanes are
not all present), or reaches the PC of another group, where the two merge.

Why this is correct and why it reconverges:

* Threads are independent except through memory, barriers and warp
  collectives, so any interleaving that respects those gives each thread the
  result the PTX semantics allow; running a group in lockstep is one such
  interleaving (the one "warp-synchronous" code expects).
* Running the lowest PC first means a group never overtakes another: when
  the lagging group reaches the PC where a group waits, they merge. For the
  code compilers emit (if/else with the join after both arms, loops whose
  exits jump forward), that PC is the immediate post-dominator of the branch,
  so threads reconverge exactly where a post-dominator reconvergence stack
  would put them, without building one. Loops: threads still iterating are at
  lower PCs than those that left, so they finish first and join at the exit.
* **Barriers** (``bar.sync``/``barrier.sync``): a group that reaches one waits;
  when no group can run any more, every barrier (by id) that is complete
  releases: without a thread count, *every live (non-exited) thread of the
  CTA* must wait at the same instruction (threads that exited do not count:
  kernels that ``return`` early before ``__syncthreads`` work on the
  hardware); with one (``bar.sync 1, 64``), exactly that many threads, at any
  instructions naming that barrier (warp-specialised producer/consumer code).
  Threads waiting at different ``__syncthreads``-style barriers, or at a
  barrier some live threads can never reach, are reported as a
  :class:`BarrierError` instead of a silent deadlock. Releasing only when
  nothing else can run is what makes this correct: every thread that can
  still arrive has arrived.
* **Warp collectives** (``shfl.sync``, ``vote.sync``, ``bar.warp.sync``,
  ``match``, ``redux``, ``ldmatrix``, ``mma``...): the lanes named by the
  membermask (all 32 for ``.aligned`` ones) that have not exited must be in
  the executing group. If some are elsewhere the group *parks* at the
  instruction; a group arriving at the same PC merges with it and retries;
  if nothing else can run, a :class:`WarpSyncError` names the missing lanes.
* **Calls** run the callee to completion for the calling group, with its own
  scheduler (recursion works); a barrier inside a callee completes only if
  every live thread of the CTA made the call.

Schedules: lockstep (above) is one legal interleaving; it also hides missing
barriers, because every thread finishes an instruction before any starts the
next. The *warp-serial* schedules (``Launch.warp_rank``) key groups by
``(warp rank, pc)`` instead of ``pc``: the minimum key is then "the earliest
warp's lowest PC", so each warp runs alone until it blocks at a barrier or
exits, warps in ascending or descending order. Lanes of a warp stay in
lockstep. A race-free kernel computes the same under every schedule;
verification runs both kinds.
"""

from __future__ import annotations

import heapq

import numpy as np

from ptxopt.support.cancel import POLL_STEPS
from ptxopt.support.cancel import check as check_cancel
from ptxopt.interp import limits
from ptxopt.interp.decode import BARRIER, BRANCH, BRX, CALL, COLLECTIVE, EXIT, RET, SIMPLE
from ptxopt.interp.errors import (BarrierError, InterpError, StepLimit, UnsupportedInstruction, WarpSyncError,
                                  describe)
from ptxopt.interp.device_memory import WINDOW, Region, round_up
from ptxopt.interp.cta_state import ALL, WARP, Frame, full_warps_check  # noqa: F401  (engine.full_warps_check)

MAX_CALL_DEPTH = 128


def run_entry(cta, dfn) -> None:
    """Run kernel ``dfn`` for every thread of ``cta``."""
    fr = new_frame(dfn, cta)
    try:
        run_function(fr, cta.all_idx)
    finally:
        free_frame(fr)


def new_frame(dfn, cta) -> Frame:
    """A frame with its ``.local`` and ``.param`` variables allocated (one row
    of bytes per thread) on the CTA's local/param stacks."""
    fr = Frame(dfn, cta)
    vars_ = list(dfn.frame_vars)
    vars_ += [(n, "param", _param_size(d), d.align or 1) for n, d in dfn.formals]
    vars_ += [(n, "param", _param_size(d), d.align or 1) for n, d in dfn.returns]
    local = sum(size for _, space, size, _ in vars_ if space == "local")
    if local:  # the thread's whole local stack: a recursion deepens it
        limits.check_local(cta.stack_top["local"] + local, dfn.name)
    for name, space, size, align in vars_:
        top = cta.stack_top[space]
        off = round_up(top, max(256, align))
        base = WINDOW[space] + 0x10000 + off
        region = Region(name, space, base, size, rows=cta.T, per_thread=True, fill=cta.fill)
        cta.mem.add(region)
        cta.stack_top[space] = off + size + 256
        fr.sym[name] = base
        fr.regions.append((region, top))
    return fr


def _param_size(decl) -> int:
    from ptxopt.interp.literals import decl_size

    return decl_size(decl, decl.items[0])


def free_frame(fr: Frame) -> None:
    cta = fr.cta
    for region, top in reversed(fr.regions):
        cta.mem.remove(region)
        cta.stack_top[region.space] = top
    fr.regions = []


class _Groups:
    """Thread groups of one activation keyed by PC, with a heap of PCs."""

    __slots__ = ("g", "heap", "parked", "waiting")

    def __init__(self):
        self.g: dict[int, np.ndarray] = {}
        self.heap: list[int] = []
        self.parked: set[int] = set()
        self.waiting: dict[int, np.ndarray] = {}  # barrier pc -> threads

    def add(self, pc: int, idx: np.ndarray) -> None:
        if len(idx) == 0:
            return
        old = self.g.get(pc)
        if old is None:
            self.g[pc] = idx
            heapq.heappush(self.heap, pc)
            return
        self.g[pc] = np.union1d(old, idx)
        if pc in self.parked:
            self.parked.discard(pc)
            heapq.heappush(self.heap, pc)

    def min_runnable(self) -> int | None:
        h = self.heap
        while h:
            pc = h[0]
            if pc in self.g and pc not in self.parked:
                return pc
            heapq.heappop(h)
        return None


PC_BITS = 32
PC_MASK = (1 << PC_BITS) - 1


def _start(gs: "_Groups", cta, pc: int, idx: np.ndarray) -> None:
    """Add threads at ``pc``: one group, or one per warp in a warp-serial
    schedule (the warp's rank in the schedule is the high part of the key,
    so the minimum key runs the earliest warp first)."""
    ranks = cta.thread_rank
    if ranks is not None:
        for t in idx:
            gs.add((int(ranks[t]) << PC_BITS) + pc, idx[idx == t])
        return
    order = cta.launch.warp_rank
    if order is None:
        gs.add(pc, idx)
        return
    warps = idx // WARP
    for w in np.unique(warps):
        gs.add((int(order[w]) << PC_BITS) + pc, idx[warps == w])


def run_function(fr: Frame, idx: np.ndarray) -> np.ndarray:
    """Run ``fr``'s function for threads ``idx`` (sorted linear indices);
    returns the threads that returned (not those that exited). An exception
    that is not an :class:`InterpError` (an operand form an opcode
    implementation did not expect) becomes an :class:`UnsupportedInstruction`
    naming the instruction, never a traceback."""
    try:
        return _run_function(fr, idx)
    except InterpError:
        raise
    except (KeyboardInterrupt, MemoryError):
        raise
    except Exception as e:
        ins = None
        tb = e.__traceback__
        while tb is not None:
            if tb.tb_frame.f_code is _run_function.__code__:
                pc = tb.tb_frame.f_locals.get("pc")
                if isinstance(pc, int) and 0 <= pc < len(fr.fn.code):
                    ins = fr.fn.code[pc].ins
                break
            tb = tb.tb_next
        where = describe(ins) if ins is not None else fr.fn.name
        raise UnsupportedInstruction(f"{where}: not supported (the interpreter failed on it: "
                                     f"{type(e).__name__}: {e})") from e


def _poll(cta, limit: int, st) -> int:
    """At a backward branch once ``cta.steps`` passed the last poll: raise
    :class:`StepLimit` past the step budget, let :func:`ptxopt.support.cancel.check`
    stop a run past its time limit or in an ending process; else the step
    count of the next poll.  Kept off the hot path: one comparison per
    backward branch, as before."""
    if cta.steps > limit:
        raise StepLimit(f"step limit of {limit} exceeded (endless loop?) at {describe(st.ins)}")
    check_cancel()
    return min(limit, cta.steps + POLL_STEPS)


def _run_function(fr: Frame, idx: np.ndarray) -> np.ndarray:
    """:func:`run_function` without the conversion of unexpected exceptions.

    Groups are keyed by ``base + pc``: ``base`` is 0 in the lockstep schedule
    and the warp's rank (shifted) in a warp-serial one."""
    cta = fr.cta
    code = fr.fn.code
    T = cta.T
    regs = fr.r
    gs = _Groups()
    _start(gs, cta, 0, idx)
    returned: list[np.ndarray] = []
    limit = cta.launch.max_steps
    poll = min(limit, cta.steps + POLL_STEPS)  # next backward branch past this: _poll (budget, stop, time limit)
    branches = cta.launch.branches  # coverage, when tracked
    fname = fr.fn.name
    executed = cta.launch.executed  # coverage: pc -> ran with a true guard in some thread
    ex = None
    if executed is not None:
        ex = executed.get(fname)
        if ex is None:
            ex = executed[fname] = np.zeros(len(code), dtype=bool)
    serial = cta.thread_rank is not None
    strict = cta.launch.strict_steps
    while True:
        if strict and cta.clock > limit:
            raise StepLimit(f"step limit of {limit} exceeded at a switch of thread group in {fname}")
        key = gs.min_runnable()
        if key is None:
            if gs.parked and serial and _gather_parked(gs):
                continue
            if gs.waiting:
                _release_barrier(fr, code, gs)
                continue
            if gs.parked:
                _collective_deadlock(cta, code, gs)
            break
        heapq.heappop(gs.heap)
        idx = gs.g.pop(key)
        pc = key & PC_MASK
        base = key - pc
        sel = ALL if len(idx) == T else idx
        while True:
            st = code[pc]
            k = st.kind
            cta.steps += 1
            cta.thread_steps += len(idx)
            if k == SIMPLE:
                if ex is not None and not ex[pc]:
                    ex[pc] = _guard_holds(regs, st, sel)
                st.run(fr, sel)
                pc += 1
                if base + pc in gs.g:
                    idx, sel = _merge(gs, base + pc, idx, T)
                continue
            if k == BRANCH:
                if st.guard is None:
                    new = st.target
                    if ex is not None:
                        ex[pc] = True
                else:
                    p = regs[st.guard][sel]
                    if st.neg:
                        p = ~p
                    if p.all():
                        new = st.target
                        if ex is not None:
                            ex[pc] = True
                        if branches is not None:
                            branches[(fname, pc)] = branches.get((fname, pc), 0) | 1
                    elif not p.any():
                        new = pc + 1
                        if branches is not None:
                            branches[(fname, pc)] = branches.get((fname, pc), 0) | 2
                    else:
                        if ex is not None:
                            ex[pc] = True
                        if branches is not None:
                            branches[(fname, pc)] = 3
                        gs.add(base + st.target, idx[p])
                        gs.add(base + pc + 1, idx[~p])
                        break
                if new <= pc and cta.steps > poll:
                    poll = _poll(cta, limit, st)
                pc = new
                if base + pc in gs.g:
                    idx, sel = _merge(gs, base + pc, idx, T)
                m = gs.min_runnable()
                if m is not None and m < base + pc:
                    gs.add(base + pc, idx)
                    break
                continue
            # the remaining kinds honour their guard here
            if st.guard is not None:
                p = regs[st.guard][sel]
                if st.neg:
                    p = ~p
                if not p.all():
                    if not p.any():
                        pc += 1
                        if base + pc in gs.g:
                            idx, sel = _merge(gs, base + pc, idx, T)
                        continue
                    gs.add(base + pc + 1, idx[~p])
                    idx = idx[p]
                    sel = ALL if len(idx) == T else idx
            if ex is not None:
                ex[pc] = True
            if k == RET or k == EXIT:
                if k == EXIT or fr.fn.is_entry:
                    _exit_threads(cta, idx)
                else:
                    returned.append(idx)
                break
            if k == BARRIER:
                if st.aux.fast and len(idx) == cta.n_alive and not gs.waiting:
                    st.aux.barrier_id(fr, sel, idx)
                    if st.run is not None:
                        st.run(fr, sel, idx)
                    if cta.mem.race is not None:
                        cta.mem.race.barrier()  # a new barrier interval
                    if cta.mem.shared_reads is not None:
                        cta.mem.shared_reads.barrier(idx, True)
                    pc += 1
                    if base + pc in gs.g:
                        idx, sel = _merge(gs, base + pc, idx, T)
                    continue
                old = gs.waiting.get(base + pc)
                gs.waiting[base + pc] = idx if old is None else np.union1d(old, idx)
                break
            if k == COLLECTIVE:
                missing = st.aux(fr, sel, idx)
                if missing is not None and len(missing):
                    gs.g[base + pc] = idx
                    gs.parked.add(base + pc)
                    break
                st.run(fr, sel)
                pc += 1
                if serial and len(idx) > 1:
                    _start(gs, cta, pc, idx)  # the lanes went on together only for the collective
                    break
                if base + pc in gs.g:
                    idx, sel = _merge(gs, base + pc, idx, T)
                continue
            if k == CALL:
                idx = _call(fr, st, idx, sel)
                if len(idx) == 0:
                    break
                sel = ALL if len(idx) == T else idx
                pc += 1
                if base + pc in gs.g:
                    idx, sel = _merge(gs, base + pc, idx, T)
                continue
            if k == BRX:
                targets = st.run(fr, sel)
                for t in np.unique(targets):
                    gs.add(base + int(t), idx[targets == t])
                break
            raise InterpError(f"{describe(st.ins)}: unknown step kind {k}")
    if not returned:
        return np.zeros(0, dtype=np.intp)
    if len(returned) == 1:
        return returned[0]
    return np.unique(np.concatenate(returned))


def _guard_holds(regs, st, sel) -> bool:
    """Whether a straight-line step's guard holds for some thread of ``sel``
    (coverage: the instruction really ran)."""
    ins = st.ins
    if ins is None or not ins.guard or st.guard is None:
        return True
    p = regs[st.guard][sel]
    return bool((~p).any() if st.neg else p.any())


def _gather_parked(gs: _Groups) -> bool:
    """Thread-serial schedules: threads run one at a time, so the lanes of a
    warp collective arrive in different groups (keys differ in their rank).
    When nothing else can run, merge the groups parked at the same
    instruction into the earliest one and let it retry; False when there was
    nothing to merge."""
    by_pc: dict[int, list[int]] = {}
    for key in gs.parked:
        by_pc.setdefault(key & PC_MASK, []).append(key)
    merged = False
    for keys in by_pc.values():
        if len(keys) < 2:
            continue
        keys.sort()
        first = keys[0]
        idx = np.unique(np.concatenate([gs.g.pop(k) for k in keys]))
        for k in keys:
            gs.parked.discard(k)
        gs.g[first] = idx
        heapq.heappush(gs.heap, first)
        merged = True
    return merged


def _merge(gs: _Groups, key: int, idx: np.ndarray, T: int):
    other = gs.g.pop(key)
    gs.parked.discard(key)
    idx = np.union1d(idx, other)
    return idx, (ALL if len(idx) == T else idx)


def _exit_threads(cta, idx: np.ndarray) -> None:
    live = idx[cta.alive[idx]]
    cta.alive[live] = False
    cta.n_alive -= len(live)


def _release_barrier(fr: Frame, code, gs: _Groups) -> None:
    """Every group is blocked and some wait at barriers: release each barrier
    (by id) that is complete, or report why none ever will be.

    A barrier without a thread count needs every live thread of the CTA, at
    the same instruction; one with a count (``bar.sync 1, 64``) needs exactly
    that many threads, which may wait at different instructions (named
    barriers of warp-specialised kernels)."""
    cta = fr.cta
    by_id: dict[int, list[int]] = {}
    for key, idx in gs.waiting.items():
        st = code[key & PC_MASK]
        sel = ALL if len(idx) == cta.T else idx
        by_id.setdefault(st.aux.barrier_id(fr, sel, idx), []).append(key)
    released = False
    problem = None
    for bid, keys in sorted(by_id.items()):
        keys.sort()
        pcs = sorted({k & PC_MASK for k in keys})
        st = code[pcs[0]]
        counts = {code[p].aux.count for p in pcs}
        total = sum(len(gs.waiting[k]) for k in keys)
        if len(counts) > 1:
            problem = BarrierError(f"{describe(st.ins)}: barrier {bid} is used with different thread "
                                   f"counts ({sorted(c for c in counts if c is not None)})")
            continue
        count = counts.pop()
        if count is None and len(pcs) > 1:
            lines = ", ".join(f"line {code[p].ins.line}" for p in pcs)
            problem = BarrierError(f"threads of CTA {tuple(cta.ctaid)} wait at different barriers "
                                   f"({lines}); every thread must reach the same barrier")
            continue
        need = cta.n_alive if count is None else count
        if total != need:
            who = "live threads" if count is None else f"threads (count operand {count})"
            problem = BarrierError(f"{describe(st.ins)}: only {total} of {need} {who} of CTA "
                                   f"{tuple(cta.ctaid)} arrive; the others have returned from a call "
                                   "or wait elsewhere (divergent barrier)")
            continue
        everyone = np.unique(np.concatenate([gs.waiting[k] for k in keys]))
        esel = ALL if len(everyone) == cta.T else everyone
        if st.run is not None:
            st.run(fr, esel, everyone)
        for key in keys:
            gs.add(key + 1, gs.waiting.pop(key))
        if cta.mem.shared_reads is not None:
            cta.mem.shared_reads.barrier(everyone, len(everyone) == cta.n_alive)
        released = True
    if released:
        if cta.mem.race is not None:
            cta.mem.race.barrier()  # a new barrier interval
        return
    if gs.parked:
        other = min(gs.parked) & PC_MASK
        st = code[min(gs.waiting) & PC_MASK]
        raise BarrierError(f"{describe(st.ins)}: deadlock: threads wait at this barrier while others "
                           f"wait at a warp collective (line {code[other].ins.line})")
    raise problem


def _collective_deadlock(cta, code, gs: _Groups) -> None:
    key = min(gs.parked)
    st = code[key & PC_MASK]
    idx = gs.g[key]
    raise WarpSyncError(f"{describe(st.ins)}: threads {_thread_list(cta, idx)} wait for lanes of their "
                        "warp that never execute this instruction (divergent warp collective)")


def _thread_list(cta, idx) -> str:
    shown = ", ".join(f"tid={cta.tid_of(int(t))}" for t in idx[:4])
    return shown + (" ..." if len(idx) > 4 else "")


def _call(fr: Frame, st, idx: np.ndarray, sel) -> np.ndarray:
    """Run the callee for ``idx``; returns the threads that came back."""
    cta = fr.cta
    callee, bind, unbind = st.aux
    depth = getattr(cta, "depth", 0)
    if depth >= MAX_CALL_DEPTH:
        raise InterpError(f"{describe(st.ins)}: call depth exceeds {MAX_CALL_DEPTH}")
    dfn = cta.program.decoded(callee)
    cf = new_frame(dfn, cta)
    cta.depth = depth + 1
    try:
        bind(fr, cf, sel)
        back = run_function(cf, idx)
        if len(back):
            bsel = ALL if len(back) == cta.T else back
            unbind(fr, cf, bsel)
    finally:
        cta.depth = depth
        free_frame(cf)
    return back
