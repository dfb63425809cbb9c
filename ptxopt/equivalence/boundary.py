"""Boundary scalars: extra launches whose integer scalars sit where a kernel's
comparisons flip.

A manifest fixes one value per scalar (``n = 1024``, ``cols = 512``), chosen
so that the kernel does all its work: every bounds check passes, every tail
loop is empty. A transformation that breaks the tail, or the path of a
thread beyond the data, is then never exercised. For a corpus launch
(:class:`~ptxopt.kernels.corpus.KernelSpec`) :func:`boundary_scalars` proposes up to
two more sets of integer scalars, each only *smaller* than the contract's
(buffers are sized for the contract's values, so a smaller size stays inside
them), and never breaking a divisibility the kernel was compiled for
(Triton's ``divisible_by_16``: then steps of 16):

* ``tail`` -- every integer scalar one below its contract value (16 below
  for a divisible one): partial tails, remainder loops, a last CTA or row
  that is not full;
* ``boundary`` -- every integer scalar at a boundary the kernel itself
  draws: an immediate it compares the scalar against directly
  (``setp.lt.s32 %p, %r_K, 1`` -> ``K = 1``), else the CTA's x extent minus
  one (``blockDim.x - 1``: one thread of each CTA past the data, the masked
  path of a kernel whose CTA covers a row), the smallest such below the
  contract value.

Each is run as one more launch (first seed, random inputs, lockstep) and
listed among the result's launches with its scalars and ``boundary`` kind.
Float scalars, pointers and scalars of non-integer type keep their values.
"""

from __future__ import annotations

from ptxopt.ptx.ir import iter_instructions
from ptxopt.ptx.operand_facts import address, immediate, reg_name

INT_DTYPES = frozenset({"u8", "s8", "u16", "s16", "b16", "u32", "s32", "b32", "u64", "s64", "b64"})


def compared_immediates(program, kernel: str) -> dict[str, set[int]]:
    """Per parameter name: the immediates the kernel compares it against
    directly (``setp`` on the register ``ld.param`` loaded it into, that
    register not written again)."""
    fn = program.entry(kernel)
    reg_of: dict[str, str] = {}
    redefined: set[str] = set()
    cmps: list[tuple[str, int]] = []
    for ins in iter_instructions(fn.body):
        ops = ins.operands
        dest = reg_name(ops[0]) if ops else None
        a = address(ins)
        if ins.opcode == "ld" and "param" in ins.modifiers and len(ops) == 2 and dest is not None \
                and a is not None and a.operand is ops[1] and a.kind == "sym" and not a.offset:
            if dest in reg_of:
                redefined.add(dest)
            reg_of[dest] = a.name
            continue
        if dest is not None and ins.opcode != "setp" and dest in reg_of:
            redefined.add(dest)
        if ins.opcode == "setp" and len(ops) >= 3:
            a, b = ops[1], ops[2]
            for r, c in ((a, b), (b, a)):
                name, value = reg_name(r), immediate(c)
                if name is not None and type(value) is int:
                    cmps.append((name, value))
    out: dict[str, set[int]] = {}
    for reg, c in cmps:
        if reg in reg_of and reg not in redefined:
            out.setdefault(reg_of[reg], set()).add(c)
    return out


def _legal(value: int, divisible: bool) -> int | None:
    if divisible:
        value -= value % 16
    return value if value >= 1 else None


def boundary_scalars(spec, program, kernel: str) -> list[tuple[str, dict[int, int], str]]:
    """``[(kind, {argument index: value}, what)]`` for the launches described
    in the module doc; empty when the kernel has no integer scalar or no
    value changes."""
    div = set(getattr(spec, "divisible_by_16", ()) or ())
    ints = [(i, p) for i, p in enumerate(spec.params)
            if p.role == "scalar" and p.dtype in INT_DTYPES and isinstance(p.value, int) and p.value >= 2]
    if not ints:
        return []
    imms = compared_immediates(program, kernel)
    bx = int(spec.launch.block[0])
    tail: dict[int, int] = {}
    bound: dict[int, int] = {}
    why: list[str] = []
    for i, p in ints:
        d = p.arg in div
        v = _legal(p.value - (16 if d else 1), d)
        if v is not None and v < p.value:
            tail[i] = v
        cands = sorted(c for c in imms.get(p.name, ()) if 1 <= c < p.value and _legal(c, d) == c)
        if cands:
            bound[i] = cands[0]
            why.append(f"{p.arg} = {cands[0]} (compared against)")
        else:
            b = _legal(bx - 1, d)
            if b is not None and b < p.value:
                bound[i] = b
                why.append(f"{p.arg} = {b} (blockDim.x - 1{', divisible by 16' if d else ''})")
    out = []
    if tail:
        out.append(("tail", tail, "every integer scalar one step below its contract value"))
    if bound and bound != tail:
        out.append(("boundary", bound, "; ".join(why)))
    return out




# ---------------------------------------------------------------------------
# Boundary trip counts: the loop rewrites' extra launches
# ---------------------------------------------------------------------------

#: Trip counts a loop rewrite is checked at: 0, 1, k-1, k, k+1, 2k+1 for
#: every unroll factor k in 2, 4, 8 (the rewrite's factor is not known here).
TRIP_TARGETS = (0, 1, 2, 3, 4, 5, 7, 8, 9, 15, 17)


def _loop_signature(cfg, lp) -> tuple:
    """What a rewrite of the loop's control changes: its blocks, exit tests
    and branches (hint, reorder and vectorize passes change none of these)."""
    ins = [cfg.instructions[i] for i in lp.iids]
    return (len(lp.blocks), sum(i.opcode == "setp" for i in ins), sum(i.opcode in ("bra", "brx") for i in ins))


def _loops_by_label(fn):
    from ptxopt.analysis.loops import loops_of

    cfg, info = loops_of(fn)
    out = {}
    for lp in info.loops:
        label = cfg.blocks[lp.header].label or f"block{lp.header}"
        out[label] = (cfg, lp, _loop_signature(cfg, lp))
    return out


def changed_loops(original_fn, candidate_fn) -> tuple[list, bool]:
    """``(loops, new)``: the original's loops (``(cfg, loop)``) whose control
    the candidate changed (its blocks, exit tests or branches, matched by
    header label), and whether the candidate has loops the original lacks."""
    if original_fn is None or candidate_fn is None or original_fn.body is None or candidate_fn.body is None:
        return [], False
    a, b = _loops_by_label(original_fn), _loops_by_label(candidate_fn)
    changed = [(cfg, lp) for lab, (cfg, lp, sig) in a.items() if lab not in b or b[lab][2] != sig]
    return changed, any(lab not in a for lab in b)


class _Eval:
    """Integer values of registers defined outside a loop, as functions of
    the kernel's parameters: each register followed through its single
    reaching definition (``ld.param``, ``mov``, ``cvt`` between integers,
    ``add``/``sub``/``mul.lo``/``shl``/``shr``/``and``/``or``/``min``/``max``/``neg``). None
    when a value depends on anything else (a thread index, memory, a merge)."""

    _OPS = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
            "shl": lambda a, b: a << min(b, 64), "shr": lambda a, b: a >> min(b, 64),
            "and": lambda a, b: a & b, "or": lambda a, b: a | b, "min": min, "max": max}

    def __init__(self, cfg) -> None:
        from ptxopt.analysis.defuse import reaching_definitions

        self.cfg = cfg
        self.rd = reaching_definitions(cfg)

    def entry_defs(self, lp, reg: str) -> set[int]:
        """Definitions of ``reg`` reaching the loop's header from outside."""
        out = set()
        for p in self.cfg.blocks[lp.header].preds:
            if p in lp.blocks:
                continue
            for d in self.rd.reach_out[p]:
                iid, r = self.rd.def_sites[d]
                if r == reg:
                    out.add(iid)
        return out

    def operand(self, op, at: int, env: dict, depth: int = 0):
        c = immediate(op)
        if type(c) is int:
            return c
        r = reg_name(op)
        if r is None:
            return None
        defs = self.rd.reaching(at, r)
        return self.at(defs[0], env, depth + 1) if len(defs) == 1 else None

    def at(self, iid: int, env: dict, depth: int = 0):
        """The value instruction ``iid`` writes, or None."""
        from ptxopt.analysis.loops import _INT_TYPES

        if depth > 24:
            return None
        ins = self.cfg.instructions[iid]
        if ins.guard is not None or not ins.operands:
            return None
        ty = next((m for m in ins.modifiers if m in _INT_TYPES), None)  # the destination's type
        if ty is None:
            return None
        bits, signed = _INT_TYPES[ty]

        def norm(v):
            v &= (1 << bits) - 1
            return v - (1 << bits) if signed and v >> (bits - 1) else v

        ops = ins.operands[1:]
        if ins.opcode == "ld" and "param" in ins.modifiers:
            a = address(ins)
            v = env.get(a.name) if a is not None and a.kind == "sym" and not a.offset else None
            return None if v is None else norm(v)
        vals = [self.operand(o, iid, env, depth) for o in ops]
        if any(v is None for v in vals):
            return None
        if ins.opcode in ("mov", "cvt") and len(vals) == 1:
            src = ins.modifiers[-1] if ins.opcode == "cvt" else ty
            if src not in _INT_TYPES:
                return None
            sb, ss = _INT_TYPES[src]
            v = vals[0] & ((1 << sb) - 1)
            v = v - (1 << sb) if ss and v >> (sb - 1) else v
            return norm(v)
        if ins.opcode == "neg" and len(vals) == 1:
            return norm(-vals[0])
        if ins.opcode in self._OPS and len(vals) == 2 and (ins.opcode != "mul" or "lo" in ins.modifiers):
            return norm(self._OPS[ins.opcode](*vals))
        return None


def for_trips(lp, start: int, bound: int, cap: int = max(TRIP_TARGETS) + 1, bottom: bool = True) -> int:
    """How many times the loop's body runs from ``start`` against ``bound``,
    counted as a ``for`` loop: the number of tests that stay in the loop,
    with a test at the bottom (``bottom``: the exit branch ends a latch) also
    taken once before the first iteration, on the value it would read one
    step earlier (0: a ``for`` loop would not run). The tested values are
    the loop facts' (:attr:`ptxopt.analysis.loops.ExitTest.base`): ``start +
    base + i*step`` at the ``i``-th test (at most ``cap``)."""
    from ptxopt.analysis.loops import _CMP, _INT_TYPES

    t = lp.test
    bits, signed = _INT_TYPES[t.ty]

    def norm(v: int) -> int:
        v &= (1 << bits) - 1
        return v - (1 << bits) if signed and v >> (bits - 1) else v

    x = start + t.base - (t.iv.step.const if bottom else 0)
    for j in range(cap):
        if _CMP[t.cmp](norm(x + j * t.iv.step.const), norm(bound)) != t.stay_when:
            return j
    return cap


#: The largest parameter value scanned for boundary trip counts when the launch gives none.
SCAN_LIMIT = 1 << 12


def trip_scalars(fn, original_changed: list, current: dict[str, int | None]) -> tuple[list, list[str]]:
    """Launch scalars putting every changed parameter-bound loop at the
    boundary trip counts :data:`TRIP_TARGETS`: ``([(what, {param: value})],
    problems)``, one launch per distinct value (``what``: ``"LABEL xN"``, the
    loop and its trip count). A loop qualifies when its step is a constant and its start
    and bound are computed (:class:`_Eval`) from one parameter and
    constants; values from 0 up to the parameter's ``current`` one (buffers
    are sized for it; :data:`SCAN_LIMIT` when unknown) are scanned for each
    target. ``problems`` names each changed loop whose trip count cannot be
    varied this way."""
    launches: dict[tuple, str] = {}  # (param, value) -> what it is ("L 3": loop L runs 3 times)
    problems = []
    for cfg, lp in original_changed:
        label = cfg.blocks[lp.header].label or f"block{lp.header}"
        if lp.trip.kind == "constant":
            continue  # one trip count only: every launch checks it
        t = lp.test
        params = lp.trip.params if lp.trip.kind == "parametric" else ()
        if t is None or len(params) != 1 or not t.iv.step.const:
            problems.append(f"loop {label}: trip count {lp.trip.describe()} is not bound by one parameter "
                            "with a constant step")
            continue
        name = params[0]
        ev = _Eval(cfg)
        inits = ev.entry_defs(lp, t.iv.reg)
        bound_op = cfg.instructions[t.setp].operands[t.bound_index]
        hi = current.get(name)
        hi = SCAN_LIMIT if hi is None else min(hi, SCAN_LIMIT)
        found = 0
        wanted = set(TRIP_TARGETS)
        for v in range(0, hi + 1):
            env = {name: v}
            start = ev.at(next(iter(inits)), env) if len(inits) == 1 else None
            bound = ev.operand(bound_op, t.setp, env)
            if start is None or bound is None:
                if v == 0:
                    break
                continue
            n = for_trips(lp, start, bound, bottom=cfg.block_of[t.branch] in lp.latches)
            if n in wanted:
                wanted.discard(n)
                launches.setdefault((name, v), f"{label} x{n}")
                found += 1
                if not wanted:
                    break
        if not found:
            problems.append(f"loop {label}: its start or bound is not computed from {name} and constants, "
                            f"or no value of {name} up to {hi} gives a boundary trip count")
    return [(what, {name: v}) for (name, v), what in launches.items()], problems


def loop_trip_plan(po, pt, kernel: str, current: dict[str, int | None]) -> tuple[list, list[str]]:
    """For a candidate that changed loops of ``kernel``: the trip-count
    launches (:func:`trip_scalars`) and the reasons some changed loop
    cannot be checked at its boundary trip counts (a loop with an unknown
    trip count, or new loops with no changed original one)."""
    fo, ft = po.entry(kernel), pt.entry(kernel)
    changed, new = changed_loops(fo, ft)
    if not changed and not new:
        return [], []
    if not changed:
        return [], ["the candidate has loops the original does not"]
    plan, problems = trip_scalars(fo, changed, current)
    return plan, problems


def trip_gap(po, pt, kernel: str, launches: list[dict]) -> tuple[str | None, str]:
    """``(gap, note)`` for an interpreter ``equal`` of a candidate: ``gap``
    says why the launches that ran do not check the loops the candidate
    changed at their boundary trip counts (then the verdict can be no more
    than ``inconclusive``), None when they do or no loop changed; ``note``
    names the trip-count launches that ran."""
    plan, problems = loop_trip_plan(po, pt, kernel, {})
    if problems:
        return "loop rewrite not proved and not checkable at boundary trip counts: " + "; ".join(problems), ""
    if not plan:
        return None, ""  # no loop changed, or only loops with one (constant) trip count
    ran = [l for l in launches if str(l.get("extra", "")).startswith("trip") and "skipped" not in l]
    if not ran:
        return ("loop rewrite not proved, and no launch at a boundary trip count ran (none planned for this "
                "launch, or the original failed in each)"), ""
    return None, "; boundary trip counts run: " + ", ".join(str(l["extra"]).split(":", 1)[0][len("trip "):]
                                                          for l in ran)


__all__ = ["boundary_scalars", "compared_immediates", "INT_DTYPES", "TRIP_TARGETS", "changed_loops",
           "for_trips", "trip_scalars", "loop_trip_plan", "trip_gap"]
