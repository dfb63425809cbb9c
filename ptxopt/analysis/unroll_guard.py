"""The check at the top of an unrolled trip that the next ``f - 1`` exit tests of a counted loop all
stay in the loop, as PTX lines derived from the loop facts (:class:`ptxopt.analysis.loops.ExitTest`).

One formula with two readers: the ``unroll`` and ``loop_version`` passes write it, and the footprint
analysis (:mod:`ptxopt.analysis.reroll`) recognises an unrolled loop only where its check is exactly
this one, so that a trip of ``f`` copies provably runs the original's next ``f`` iterations.

For a test that goes on while ``x CMP bound`` with ``x`` moving by a constant ``step`` and no wrap
between the first and the last compared value (ordered tests), the farthest test decides the nearer
ones; for a ``!=`` test, ``(bound - t0) > (f-1)*|step|`` unsigned says no test of the next ``f - 1``
reaches the bound."""

from __future__ import annotations

from ptxopt.analysis.loops import _INT_TYPES

#: the continuation test negated (a ``@!p`` branch, or a taken edge that leaves)
NEGATED = {"lt": "ge", "le": "gt", "gt": "le", "ge": "lt", "lo": "hs", "ls": "hi", "hi": "ls", "hs": "lo",
           "eq": "ne", "ne": "eq"}
ASCENDING = frozenset({"lt", "le", "lo", "ls"})
DESCENDING = frozenset({"gt", "ge", "hi", "hs"})


def add_line(ty: str, dst: str, src: str, c: int) -> str:
    return f"add.{ty} {dst}, {src}, {c};" if c >= 0 else f"sub.{ty} {dst}, {src}, {-c};"


def guard_lines(cfg, lp, f: int, pfx: str) -> tuple[list[str], list[str], str] | str:
    """``(lines, declarations, predicate)`` of the check (registers named ``pfx`` + ``0``/``1``/``p0``/
    ``p1``), or why the loop's test cannot be checked this way."""
    from ptxopt.ptx.emit import _op

    t = lp.test
    if t is None:
        return "the exit test is not an induction variable against an invariant"
    step = t.iv.step.const
    if step is None or step == 0:
        return f"the step is not a nonzero constant ({t.iv.step.describe()})"
    if t.base_steps != 0:
        return "the exit test's value holds a register step"
    bits, signed = _INT_TYPES[t.ty]
    upd = cfg.instructions[t.iv.update]
    if not (upd.modifiers[-1:] and _INT_TYPES.get(upd.modifiers[-1], (0,))[0] == bits):
        return "the induction variable's update has another width than its exit test"
    if (lp.barriers or lp.collectives) and not (t.iv.init.uniform and t.bound.uniform):
        return ("a barrier, warp collective or .sync.aligned instruction in a loop whose start or bound is not "
                "block-uniform")
    cmp = t.cmp if t.stay_when else NEGATED[t.cmp]
    span = (f - 1) * abs(step)
    if span >= 1 << (bits - 1):
        return f"{f - 1} steps of {step} overflow the {t.ty} exit test"
    if cmp == "eq":
        return "the loop goes on while its test is == (only ordered or != tests are unrolled)"
    if not (cmp == "ne" or (cmp in ASCENDING) == (step > 0)):
        return f"the exit test {cmp} does not match the step's direction ({step})"
    aty = ("s" if signed else "u") + str(bits)
    uty = "u" + str(bits)
    # the k-th test compares iv_top(k) + t.base (the loop facts, from def-use); the check at the top
    # of a trip reads iv_top(k) and looks at tests k .. k+f-2: from t0 = iv + base - step, one step at a time
    base = t.base - step
    t0, t1, q, q2 = f"{pfx}0", f"{pfx}1", f"{pfx}p0", f"{pfx}p1"
    decls = [f".reg .b{bits} {pfx}<2>;", f".reg .pred {pfx}p<2>;"]
    s = cfg.instructions[t.setp]
    bound = _op(s.operands[t.bound_index])
    lines = [add_line(aty, t0, t.iv.reg, base)]
    if cmp == "ne":
        a, b = (bound, t0) if step > 0 else (t0, bound)
        lines += [f"sub.{uty} {t1}, {a}, {b};", f"setp.gt.{uty} {q}, {t1}, {span};"]
    else:
        lines += [add_line(aty, t1, t0, (f - 1) * step), f"setp.{cmp}.{t.ty} {q}, {t1}, {bound};",
                  f"setp.{'ge' if step > 0 else 'le'}.{aty} {q2}, {t1}, {t0};",
                  f"and.pred {q}, {q}, {q2};"]
    return lines, decls, q


__all__ = ["ASCENDING", "DESCENDING", "NEGATED", "add_line", "guard_lines"]
