"""Branch sites, SASS loops, and the hook that turns loop counts into trip counts.

The issue model (:func:`ptxopt.sim.simulate`) needs the outcome of every
conditional branch it reaches.  Callers pass them as ``trip_counts`` keyed by
``(code section, byte offset)`` of the SASS branch; :func:`branch_sites`
lists the keys.  Without them the static fallback (``static:N=8``) applies.

Loop counts from the PTX interpreter
------------------------------------
:mod:`ptxopt.measure.measured_trips` (check launch) and :mod:`ptxopt.measure.loop_slice`
(performance launch) count, for every PTX loop in header order, how often it
was *entered* and how many *iterations* ran, and the loop's *signature*: its
own body's instructions per class of :data:`SIGNATURE_CLASSES` (global
loads/stores, shuffles, barriers, atomics, inner loops excluded).
:func:`trip_counts_from_loop_profile` maps them onto the SASS loops **by
structure** (:func:`match_loops`): an order-preserving alignment in which
each SASS loop is a k-fold unrolling of one PTX loop (its signature k times
the PTX loop's), several SASS loops may share one PTX loop (ptxas split it
into an unrolled main loop and a remainder) and a PTX loop may have none
(ptxas unrolled it fully).  A k-fold unrolled loop runs 1/k as many
iterations; a split loop's most unrolled part runs ``floor(T/k)`` and the
rest the remainder.  A loop's counted *work* (its signature-class
instructions that ran) gives the rate of the one branch inside a SASS loop
that picks between two paths through it (``unroll``'s guarded copies).
Loops are natural loops (:func:`ptxopt.sim.sass_decode.decode`).  Without signatures, or when no alignment exists, the
mapping is by position and refuses (``ValueError``) when the numbers of
loops differ; the caller then keeps the static fallback.  Limits: a loop
with no counted instruction matches any such loop with k=1; shared-memory
accesses are not counted (ptxas merges them into wider ones).

Merged arms: a PTX loop's static signature counts every arm of an if/else in
its body; when the arms do the same accesses (``loop_version``'s fast and slow
copies after ``split_ld`` made the fast copy's loads scalar again) ptxas merges
them and the SASS loop holds one arm.  So a PTX loop also matches through its
*per-iteration* signature, the counted work per iteration when that is whole
(:func:`_per_iteration`), where its static signature does not fit.

Trips unknown: an alignment that leaves a PTX loop that ran without any SASS
loop while giving a SASS loop the counts of a PTX loop that never ran has
lost the trips (the SASS loop would be walked about once where the PTX loop
ran thousands of times): :func:`trip_counts_from_loop_profile` refuses it
(``ValueError`` starting with :data:`TRIPS_UNKNOWN`) rather than return it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

from ptxopt.toolchain import SassListing

from ptxopt.sim.sass_decode import C_BRA, C_CALL, C_DIV, C_EXIT, C_NONE, Program, decode


@dataclass(frozen=True)
class BranchSite:
    """A conditional control transfer the walk needs an outcome for."""

    function: str
    offset: int
    text: str
    kind: str  # "back-edge", "loop-exit", "forward", "exit", "call", "divergence"
    target_offset: int | None
    loop_header: int | None  # for a back edge: offset of the loop header
    depth: int  # loop nesting depth of the site (0 = not in a loop)

    @property
    def key(self) -> tuple[str, int]:
        return (self.function, self.offset)


@dataclass(frozen=True)
class SassLoop:
    """A loop in the SASS: the back edge at ``branch_offset`` jumps to ``header_offset``."""

    function: str
    header_offset: int
    branch_offset: int
    depth: int  # 1 = outermost
    conditional: bool  # False: the back edge is unconditional; the loop ends through an exit branch
    exits: tuple[int, ...]  # offsets of its exit branches (only for unconditional back edges)

    @property
    def key(self) -> tuple[str, int]:
        """The trip-count key that controls this loop."""
        return (self.function, self.branch_offset)


@dataclass(frozen=True)
class LoopCount:
    """Execution counts of one PTX loop: times entered, and iterations in total."""

    entries: int
    iterations: int
    unroll: int = 1  # SASS iterations per ptxas-unrolled loop trip, if known
    #: per signature class (:data:`SIGNATURE_CLASSES`): the loop's own body's instructions that ran, in
    #: total (empty: not counted); gives the rate of a branch inside the loop (:func:`_inner_branch_rate`)
    work: tuple[int, ...] = ()

    @property
    def trips_per_entry(self) -> float:
        return self.iterations / self.entries / self.unroll if self.entries else 0.0


def _program(listing: SassListing | Program, kernel: str | None) -> Program:
    return listing if isinstance(listing, Program) else decode(listing, kernel)


def _bodies(p: Program) -> list[frozenset[int]]:
    """Per back edge: its natural loop's body (the decoder's), or the address range [header, branch]."""
    if p.loop_body:
        return list(p.loop_body)
    return [frozenset(range(p.target[b], b + 1)) for b in p.back_edges]


def _depth(p: Program, index: int) -> int:
    return sum(1 for body in _bodies(p) if index in body)


def sass_loops(listing: SassListing | Program, kernel: str | None = None) -> list[SassLoop]:
    """Loops (backward branches) of the listing, by header offset within each section."""
    p = _program(listing, kernel)
    loops = []
    for b in p.back_edges:
        ins = p.instructions[b]
        h = p.target[b]
        exits = tuple(p.instructions[i].offset for i in range(len(p)) if p.loop_of_exit[i] == b)
        loops.append(SassLoop(ins.function, p.instructions[h].offset, ins.offset, _depth(p, h),
                              p.conditional[b], exits))
    loops.sort(key=lambda lp: (lp.function != p.kernel, lp.function, lp.header_offset, -lp.branch_offset))
    return loops


def branch_sites(listing: SassListing | Program, kernel: str | None = None) -> list[BranchSite]:
    """Every conditional branch / guarded EXIT / guarded CALL / BRA.DIV: the trip_counts keys."""
    p = _program(listing, kernel)
    back = set(p.back_edges)
    out = []
    for i, ins in enumerate(p.instructions):
        c = p.ctrl[i]
        if c == C_DIV:
            kind = "divergence"
        elif not p.conditional[i] or c not in (C_BRA, C_EXIT, C_CALL):
            continue
        elif i in back:
            kind = "back-edge"
        elif p.loop_of_exit[i] >= 0:
            kind = "loop-exit"
        else:
            kind = {C_BRA: "forward", C_EXIT: "exit", C_CALL: "call"}[c]
        tgt = p.target[i]
        out.append(BranchSite(
            ins.function, ins.offset, ins.text, kind,
            p.instructions[tgt].offset if tgt >= 0 else None,
            p.instructions[tgt].offset if i in back else None,
            _depth(p, i),
        ))
    return out


#: Loop signatures: which PTX instructions become which SASS instructions one for one, by class.
#: A loop's *signature* counts its own body's instructions per class (inner loops excluded); a SASS
#: loop that is ptxas's k-fold unrolling of a PTX loop has k times its signature.  PTX: ``opcode``
#: with the state space among its modifiers (None: generic, no space written); SASS: base opcode.
#: Global accesses are counted: ptxas does not merge them (it cannot prove the wider alignment).
SIGNATURE_CLASSES: dict[str, tuple[tuple[tuple[str, str | None], ...], tuple[str, ...]]] = {
    "global load": ((("ld", "global"), ("ld", None), ("cp", "global")), ("LDG", "LD", "LDGSTS")),
    "global store": ((("st", "global"), ("st", None)), ("STG", "ST")),
    # shared-memory loads/stores are left out: ptxas merges neighbouring ones into wider accesses
    # (cuda_attention_small: 32 ld.shared.f32 -> 8 LDS.128), so their counts do not scale by k
    "shuffle": ((("shfl", None),), ("SHFL",)),
    "barrier": ((("bar", None), ("barrier", None)), ("BAR",)),
    "atomic": ((("atom", None), ("red", None)), ("ATOM", "ATOMG", "ATOMS", "RED")),
}
_SASS_CLASS = {op: i for i, (_, (_ptx, sass)) in enumerate(SIGNATURE_CLASSES.items()) for op in sass}
_SPACES = ("global", "shared", "local", "param", "const")


def ptx_signature_class(opcode: str, modifiers: Sequence[str]) -> int | None:
    """Index of a PTX instruction's signature class (:data:`SIGNATURE_CLASSES`), None: not counted."""
    space = next((m for m in modifiers if m in _SPACES), None)
    for i, (ptx, _sass) in enumerate(SIGNATURE_CLASSES.values()):
        for op, sp in ptx:
            if opcode != op:
                continue
            if op in ("ld", "st"):
                if sp == space or (sp is None and space is None):
                    return i
            elif op == "cp":  # cp.async.{ca,cg}.shared.global copies; not commit_group/wait_group
                if "async" in modifiers and "global" in modifiers:
                    return i
            elif sp is None or sp in modifiers:
                return i
    return None


def sass_signatures(listing: SassListing | Program, kernel: str | None = None) -> list[tuple[int, ...]]:
    """Per SASS loop of the kernel (:func:`sass_loops` order): its own body's counts per class."""
    p = _program(listing, kernel)
    loops = [lp for lp in sass_loops(p) if lp.function == p.kernel]
    index = {(ins.function, ins.offset): i for i, ins in enumerate(p.instructions)}
    body_of = dict(zip(p.back_edges, _bodies(p)))
    bodies = [body_of[index[(lp.function, lp.branch_offset)]] for lp in loops]
    out = []
    for body in bodies:
        inner = [b2 for b2 in bodies if b2 is not body and b2 < body]
        sig = [0] * len(SIGNATURE_CLASSES)
        for i in sorted(body):
            if any(i in b2 for b2 in inner):
                continue
            c = _SASS_CLASS.get(p.instructions[i].opcode.split(".")[0])
            if c is not None:
                sig[c] += 1
        out.append(tuple(sig))
    return out


def _unroll(sass_sig: Sequence[int], ptx_sig: Sequence[int]) -> int | None:
    """k with sass_sig == k * ptx_sig (k >= 1); 1 when both are empty; None: not an unrolling."""
    if not any(ptx_sig):
        return 1 if not any(sass_sig) else None
    ks = {s // q for s, q in zip(sass_sig, ptx_sig) if q}
    if len(ks) != 1:
        return None
    k = ks.pop()
    if k < 1 or any(s != k * q for s, q in zip(sass_sig, ptx_sig)):
        return None
    return k


#: The start of the message of the ``ValueError`` that says a candidate's loops could not be given trips.
TRIPS_UNKNOWN = "loop trips unknown"


def _per_iteration(count: LoopCount) -> tuple[int, ...] | None:
    """The PTX loop's counted work per iteration when it is whole in every class (None: not counted,
    never ran, or the iterations differ): the signature of the one arm ptxas keeps when it merges an
    if/else's arms that do the same accesses."""
    if not count.work or count.iterations <= 0 or any(w % count.iterations for w in count.work):
        return None
    sig = tuple(w // count.iterations for w in count.work)
    return sig if any(sig) else None


def _unroll_any(sass_sig: Sequence[int], ptx_sig: Sequence[int], alt: Sequence[int] | None) -> int | None:
    """k by the static signature, else by the per-iteration one (``alt``), else None."""
    k = _unroll(sass_sig, ptx_sig)
    if k is None and alt is not None:
        k = _unroll(sass_sig, alt)
    return k


def match_loops(sass_sigs: Sequence[Sequence[int]], ptx_sigs: Sequence[Sequence[int]],
                ptx_live: Sequence[bool] | None = None,
                per_iteration: Sequence[Sequence[int] | None] | None = None) -> list[tuple[int, int]]:
    """``(PTX loop index, unroll k)`` per SASS loop: an order-preserving alignment in which every SASS
    loop is a k-fold unrolling of one PTX loop (same signature up to k, the static one or else the
    loop's ``per_iteration`` one: ptxas merged an if/else's equal arms); several SASS loops may share one
    PTX loop (ptxas split it: main + remainder), and a PTX loop may have none (ptxas unrolled it fully).
    Fewest splits and unmatched live PTX loops win, then the smallest unroll factors.  Raises
    ``ValueError`` when no alignment exists."""
    n, m = len(sass_sigs), len(ptx_sigs)
    live = list(ptx_live) if ptx_live is not None else [True] * m
    alts = list(per_iteration) if per_iteration is not None else [None] * m
    if n == 0:
        return []
    ks = [[_unroll_any(sass_sigs[j], ptx_sigs[i], alts[i]) for i in range(m)] for j in range(n)]
    INF = (10**9, 10**9)
    # best[j][i] = (cost, sum of k), back pointer
    best = [[INF] * m for _ in range(n)]
    back = [[-1] * m for _ in range(n)]
    skipped = lambda a, b: sum(1 for x in range(a, b) if live[x])  # noqa: E731
    for i in range(m):
        if ks[0][i] is not None:
            best[0][i] = (skipped(0, i), ks[0][i])
    for j in range(1, n):
        for i in range(m):
            if ks[j][i] is None:
                continue
            for i2 in range(i + 1):
                if best[j - 1][i2] == INF:
                    continue
                c = best[j - 1][i2]
                cand = (c[0] + (1 if i2 == i else skipped(i2 + 1, i)), c[1] + ks[j][i])
                if cand < best[j][i]:
                    best[j][i], back[j][i] = cand, i2
    ends = [(best[n - 1][i][0] + skipped(i + 1, m), best[n - 1][i][1], i) for i in range(m) if best[n - 1][i] != INF]
    if not ends:
        raise ValueError(f"no structural match of {n} SASS loop(s) onto {m} PTX loop(s) "
                         f"(signatures SASS {list(map(tuple, sass_sigs))}, PTX {list(map(tuple, ptx_sigs))})")
    i = min(ends)[2]
    out = []
    for j in range(n - 1, -1, -1):
        out.append((i, ks[j][i]))
        i = back[j][i]
    return out[::-1]


def trip_counts_from_loop_profile(listing: SassListing | Program, profile: Sequence[LoopCount],
                                  kernel: str | None = None,
                                  signatures: Sequence[Sequence[int]] | None = None) -> dict[tuple[str, int], float]:
    """Map per-PTX-loop counts (source order) onto the kernel's SASS loops (header order).

    Returns a ``trip_counts`` mapping for :func:`ptxopt.sim.simulate`:
    for a loop with a conditional back edge, the back edge is taken
    ``trips_per_entry - 1`` times per entry; for a loop with an unconditional
    back edge, its (first) exit branch is taken on ``1/trips_per_entry`` of
    its executions.  Raises ``ValueError`` when the loop counts differ.
    """
    p = _program(listing, kernel)
    loops = [lp for lp in sass_loops(p) if lp.function == p.kernel]
    if signatures is not None:
        return _by_structure(p, loops, profile, signatures)
    if len(loops) != len(profile):
        raise ValueError(
            f"{len(profile)} PTX loop(s) but {len(loops)} SASS loop(s) in {p.kernel}: ptxas unrolled, "
            "split or added loops, so counts cannot be matched by position; keep the static fallback"
        )
    out: dict[tuple[str, int], float] = {}
    for lp, count in zip(loops, profile):
        trips = count.trips_per_entry
        if lp.conditional:
            out[lp.key] = max(trips - 1.0, 0.0)
        elif lp.exits:
            out[(lp.function, lp.exits[0])] = 1.0 / trips if trips > 0 else 1.0
    return _enter_loops(p, [lp for lp, c in zip(loops, profile) if c.entries and c.trips_per_entry >= 1], out)


def _successors(p: Program, i: int) -> tuple[int, ...]:
    """Where control may go after instruction ``i`` (flat indices; a call also returns)."""
    c = p.ctrl[i]
    if c == C_NONE or p.never[i]:
        return (i + 1,)
    if c == C_BRA:
        return (p.target[i], i + 1) if p.conditional[i] else (p.target[i],)
    if c == C_EXIT:
        return (i + 1,) if p.conditional[i] else ()
    if c in (C_CALL, C_DIV):
        return (p.target[i], i + 1)
    return ()


def _reaches(p: Program, start: int, goal: int, avoid: int, back: frozenset[int]) -> bool:
    """Is ``goal`` reachable from ``start`` without passing ``avoid`` or taking a back edge?"""
    seen, todo = {avoid}, [start]
    while todo:
        i = todo.pop()
        if i == goal:
            return True
        if i in seen or not 0 <= i < len(p):
            continue
        seen.add(i)
        todo.extend(s for s in _successors(p, i) if i not in back or s != p.target[i])
    return False


def _enter_loops(p: Program, running: Sequence[SassLoop], out: dict) -> dict:
    """Give the guards of the loops the profile says ran their outcome: a conditional forward branch
    with no count of its own, one of whose sides reaches a running loop's header (without taking a back
    edge) and the other does not, is taken towards the loop.  Without this the static fallback ("not
    taken") can pick the path that skips the loop -- nvcc's ``if (k > 0)`` guard before a K loop -- and
    the whole loop, with the trips the profile counted, is never walked."""
    if not running:
        return out
    back = frozenset(p.back_edges)
    by_offset = {(p.instructions[i].function, p.instructions[i].offset): i for i in range(len(p))}
    headers = [by_offset[(lp.function, lp.header_offset)] for lp in running
               if (lp.function, lp.header_offset) in by_offset]
    for i in range(len(p)):
        key = (p.instructions[i].function, p.instructions[i].offset)
        if p.ctrl[i] != C_BRA or not p.conditional[i] or p.never[i] or i in back or key in out \
                or p.loop_of_exit[i] >= 0:
            continue
        for h in headers:
            taken = _reaches(p, p.target[i], h, i, back)
            falls = _reaches(p, i + 1, h, i, back)
            if taken != falls:
                out[key] = 1.0 if taken else 0.0
                break
    return out


def _set_trips(out: dict, lp: SassLoop, trips: float) -> None:
    if lp.conditional:
        out[lp.key] = max(trips - 1.0, 0.0)
    elif lp.exits:
        out[(lp.function, lp.exits[0])] = 1.0 / trips if trips > 0 else 1.0


def _inner_branch_rate(p: Program, lp: SassLoop, count: LoopCount, visits: float) -> tuple[int, float] | None:
    """``(flat index, taken rate)`` of the one conditional branch inside the SASS loop ``lp`` that
    chooses between two paths through its own body (an if/else in the loop, e.g. unroll's guarded
    form: the copies run only when the guard holds), solved from the PTX loop's work: per loop entry
    the SASS loop runs ``visits`` iterations and, over them, the same signature-class instructions as
    the PTX loop (``count.work``), so ``visits * (A + r * D) = work`` where A is one iteration's
    signature with the branch not taken and A + D with it taken (the loop's exits on the way are passed:
    an iteration that goes round does not take them).  None: no such branch, more than one, another
    choice inside the loop on the way, no work counted, or no single rate in [0, 1] fits every class."""
    if not count.work or not count.entries or visits <= 0:
        return None
    by_key = {(ins.function, ins.offset): i for i, ins in enumerate(p.instructions)}
    b = by_key[(lp.function, lp.branch_offset)]
    body_of = dict(zip(p.back_edges, _bodies(p)))
    body = body_of[b]
    inner = [bd for e, bd in body_of.items() if e != b and bd < body]
    inner_edges = {e for e, bd in body_of.items() if bd < body}
    sites = [i for i in sorted(body) if p.ctrl[i] == C_BRA and p.conditional[i] and i not in body_of
             and not p.never[i] and p.target[i] in body and not any(i in bd for bd in inner)]
    if len(sites) != 1:
        return None
    site = sites[0]

    def iteration(taken: bool) -> list[int] | None:
        """Signature of one pass from the header to the back edge, ``site`` decided as given."""
        sig = [0] * len(SIGNATURE_CLASSES)
        i, steps = p.target[b], 0
        while steps <= 2 * len(body):
            steps += 1
            if i not in body:
                return None
            if not any(i in bd for bd in inner):
                c = _SASS_CLASS.get(p.instructions[i].opcode.split(".")[0])
                if c is not None:
                    sig[c] += 1
            if i == b:
                return sig
            c = p.ctrl[i]
            if c in (C_BRA, C_CALL, C_EXIT) and p.conditional[i] and not p.never[i] and i != site \
                    and i not in inner_edges and (c == C_EXIT or p.target[i] not in body):
                i += 1  # a way out of the loop (or a call that returns): an iteration goes on past it
            elif c == C_BRA and not p.never[i]:
                if i == site:
                    i = p.target[i] if taken else i + 1
                elif not p.conditional[i]:
                    i = p.target[i]
                elif i in inner_edges:
                    i += 1  # an inner loop's back edge: the walk past it (its work is the inner loop's)
                else:
                    return None  # another data-dependent choice: no single rate describes the loop
            elif c in (C_NONE, C_DIV) or (c == C_BRA and p.never[i]):
                i += 1
            else:
                return None
        return None

    a, t = iteration(False), iteration(True)
    if a is None or t is None or a == t:
        return None
    per = [w / count.entries / visits for w in count.work]
    rate = None
    for x, y, w in zip(a, t, per):
        d = y - x
        if d:
            r = (w - x) / d
            if rate is not None and abs(r - rate) > 1e-6:
                return None
            rate = r
        elif abs(w - x) > 1e-6 * max(1.0, w):
            return None
    if rate is None or not -1e-9 <= rate <= 1 + 1e-9:
        return None
    return site, 0.0 if rate <= 0 else min(rate, 1.0)


def _refuse_lost_trips(match: Sequence[tuple[int, int]], profile: Sequence[LoopCount]) -> None:
    """Raise ``ValueError`` (:data:`TRIPS_UNKNOWN`) when ``match`` gives a SASS loop the counts of a PTX
    loop that never ran while a PTX loop that ran has no SASS loop: the ran loop's trips are lost, and
    the walk would take its SASS loop about once (an estimate many times too fast, which a search takes
    for a gain).  A ran loop with no SASS loop is otherwise ptxas's full unrolling and stands."""
    used = {i for i, _k in match}
    lost = [i for i, c in enumerate(profile) if c.iterations > 0 and i not in used]
    dead = [i for i in used if profile[i].iterations == 0]
    if lost and dead:
        raise ValueError(f"{TRIPS_UNKNOWN}: PTX loop(s) {lost} ran but match no SASS loop, while SASS loop(s) "
                         f"match PTX loop(s) {sorted(dead)} that never ran (the structural match lost the trips)")


def _by_structure(p: Program, loops: list[SassLoop], profile: Sequence[LoopCount],
                  signatures: Sequence[Sequence[int]]) -> dict[tuple[str, int], float]:
    """Trip counts through :func:`match_loops`: a SASS loop that unrolls its PTX loop k-fold runs 1/k
    as many iterations; when ptxas split one PTX loop into several SASS loops, the most unrolled one
    runs ``floor(T / k)`` iterations per entry and the next ones the remainder (a loop given 0 still
    runs its body once if the walk reaches it: the guard that skips it has no count)."""
    if len(signatures) != len(profile):
        raise ValueError("one signature per PTX loop is needed")
    sass_sigs = sass_signatures(p)
    live = [c.iterations > 0 for c in profile]
    try:
        match = match_loops(sass_sigs, signatures, live, [_per_iteration(c) for c in profile])
    except ValueError:
        if len(loops) != len(profile):
            raise
        match = [(i, 1) for i in range(len(loops))]  # same number of loops: by position, as before
    _refuse_lost_trips(match, profile)
    out: dict[tuple[str, int], float] = {}
    groups: dict[int, list[tuple[SassLoop, int]]] = {}
    for lp, (i, k) in zip(loops, match):
        groups.setdefault(i, []).append((lp, k))
    running: list[SassLoop] = []  # loops the profile says ran at least one iteration per entry
    for i, members in groups.items():
        left = profile[i].trips_per_entry
        for lp, k in sorted(members, key=lambda t: -t[1]):
            if len(members) == 1:
                _set_trips(out, lp, left / k)
                if profile[i].entries and left / k >= 1:
                    running.append(lp)
                rate = _inner_branch_rate(p, lp, profile[i], left / k)
                if rate is not None:
                    out[(lp.function, p.instructions[rate[0]].offset)] = rate[1]
                continue
            n = math.floor(left / k + 1e-9)
            _set_trips(out, lp, float(n))
            if profile[i].entries and n >= 1:
                running.append(lp)
            left -= n * k
    return _enter_loops(p, running, out)
