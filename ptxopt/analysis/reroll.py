"""Read an unrolled counted loop as the loop it was unrolled from, for the analyses that count
iterations (:mod:`ptxopt.analysis.global_footprint`).

An unrolled loop runs ``f`` copies of its body per trip and tests its exit once per trip (or per
copy on a one-iteration path), so its induction variables move by different amounts on different
paths and one predicate is written by every copy: no trip count in terms of the loop's own trips.
Every copy does the same thing as one iteration of the original, though, so where the loop provably
runs exactly the original's sequence of iterations its accesses are the original loop's, and the
analysis can count them on the rolled loop. Two shapes are recognised, each only where that holds:

* **Guarded** (``L: check; @!q bra L_last; body x (f-1); L_last: body; @p bra L``): ``check`` must be
  exactly :func:`ptxopt.analysis.unroll_guard.guard_lines` of the rolled loop's exit test (derived
  here from the rolled loop's own facts), whose ``q`` holds only when the next ``f - 1`` tests all
  stay in the loop; its registers are read nowhere else and ``L_last`` is branched to only by it.
* **Exact** (``L: body x f; @p bra L``): the rolled loop's trip count is a constant that ``f``
  divides, so the dropped tests never ended the loop.

The copies are compared as printed instructions. Nothing else is assumed of the code: a loop of
another shape is left as it is (and the analysis says why it has no trip count)."""

from __future__ import annotations

from dataclasses import dataclass

from ptxopt.ptx.ir import Block, Comment, Instruction, Label, Loc


@dataclass(frozen=True)
class Rerolled:
    """``fn`` with its unrolled loops rolled back, and per instruction of the original (iid, in
    textual order) the iid of the instruction of ``fn`` it repeats (None: the unroll check)."""

    fn: object
    iid_map: tuple
    loops: tuple[str, ...]  # the rolled loops' labels


def rerolled(fn) -> Rerolled | None:
    """``fn`` with every recognised unrolled loop rolled back (module doc), or None when there is none."""
    n = sum(1 for _ in fn.instructions())
    mapping = list(range(n))
    labels = []
    cur = fn
    for _ in range(64):
        got = _roll_one(cur)
        if got is None:
            break
        cur, step, label = got
        mapping = [None if m is None else step[m] for m in mapping]
        labels.append(label)
    if not labels:
        return None
    return Rerolled(cur, tuple(mapping), tuple(labels))


def _text(ins) -> str:
    from ptxopt.ptx.emit import format_instruction

    return format_instruction(ins).strip()


def _semantic(items) -> list | None:
    """The instructions of a run of top-level statements, or None when it holds anything but
    instructions, comments and debug locations."""
    out = []
    for s in items:
        if type(s) is Instruction:
            out.append(s)
        elif type(s) not in (Comment, Loc):
            return None
    return out


def _count(items) -> int:
    c = 0
    for s in items:
        if type(s) is Instruction:
            c += 1
        elif type(s) is Block:
            c += _count(s.items)
    return c


def _with_items(fn, items):
    new = fn.copy()
    new.body = Block(list(items), fn.body.line)
    return new


def _roll_one(fn):
    """One unrolled loop of ``fn`` rolled back: ``(new fn, old iid -> new iid, label)``, or None."""
    from ptxopt.analysis.loops import loops_of

    cfg, info = loops_of(fn)
    items = fn.body.items
    for lp in info.loops:
        hdr = cfg.blocks[lp.header]
        if hdr.label is None:
            continue
        a = next((k for k, s in enumerate(items) if type(s) is Label and s.name == hdr.label), None)
        if a is None:
            continue
        latch_ins = [cfg.blocks[t].instructions[-1] for t in lp.latches if cfg.blocks[t].instructions]
        if len(latch_ins) != 1:
            continue
        c = next((k for k, s in enumerate(items) if s is latch_ins[0]), None)
        if c is None or c <= a:
            continue
        got = _guarded(fn, cfg, items, a, c, hdr.label) or _exact(fn, items, a, c, hdr.label)
        if got is not None:
            return got
    return None


def _rolled_loop(new_fn, label: str):
    from ptxopt.analysis.loops import loops_of

    cfg, info = loops_of(new_fn)
    lp = next((x for x in info.loops if cfg.blocks[x.header].label == label), None)
    if lp is None or lp.blocks != frozenset({lp.header}):
        return cfg, None
    return cfg, lp


def _guarded(fn, cfg, items, a: int, c: int, label: str):
    b = next((k for k in range(a + 1, c) if type(items[k]) is Label), None)
    if b is None:
        return None
    last = items[b].name
    head, body = _semantic(items[a + 1:b]), _semantic(items[b + 1:c])
    if head is None or not body or any(type(s) is Label for s in items[b + 1:c]):
        return None
    m = len(body)
    body_text = [_text(x) for x in body]
    for f in (2, 4, 8, 16, 3, 5, 6, 7):
        k = len(head) - 1 - (f - 1) * m
        if k not in (3, 5):
            continue
        br = head[k]
        if br.opcode != "bra" or br.guard is None or not br.guard_neg or _target(br) != last:
            continue
        if [_text(x) for x in head[k + 1:]] != body_text * (f - 1):
            continue
        check = head[:k]
        dst = _dest(check[0])
        if dst is None or not dst.endswith("0"):
            continue
        pfx = dst[:-1]
        new_items = items[:a + 1] + items[b + 1:]
        new_fn = _with_items(fn, new_items)
        rcfg, rlp = _rolled_loop(new_fn, label)
        if rlp is None:
            continue
        from ptxopt.analysis.unroll_guard import guard_lines

        want = guard_lines(rcfg, rlp, f, pfx)
        if type(want) is str or br.guard != want[2] or [_norm(x) for x in want[0]] != [_text(x) for x in check]:
            continue
        # the check's registers are its own, and L_last is reached only from the check
        temps = {pfx + s for s in ("0", "1", "p0", "p1")}
        check_ids = {id(x) for x in check} | {id(br)}
        if any(id(ins) not in check_ids and (set(cfg.du[i][1]) & temps or set(cfg.du[i][0]) & temps)
               for i, ins in enumerate(cfg.instructions)):
            continue
        if any(id(ins) != id(br) and _target(ins) == last for ins in cfg.instructions):
            continue
        s0 = _count(items[:a + 1])
        n1 = len(head)
        step = {}
        for i in range(len(cfg.instructions)):
            if i < s0:
                step[i] = i
            elif i <= s0 + k:
                step[i] = None
            elif i < s0 + n1:
                step[i] = s0 + (i - s0 - k - 1) % m
            else:
                step[i] = i - n1
        return new_fn, [step[i] for i in range(len(cfg.instructions))], label
    return None


def _exact(fn, items, a: int, c: int, label: str):
    seg = _semantic(items[a + 1:c])
    if seg is None or not seg:
        return None
    texts = [_text(x) for x in seg]
    for f in (8, 4, 2, 16, 3, 5, 6, 7):
        if len(seg) % f:
            continue
        m = len(seg) // f
        if texts != texts[:m] * f:
            continue
        new_items = items[:a + 1] + items[a + 1 + _span(items, a + 1, (f - 1) * m):]
        new_fn = _with_items(fn, new_items)
        _, rlp = _rolled_loop(new_fn, label)
        if rlp is None or rlp.trip.kind != "constant" or not rlp.trip.value or rlp.trip.value % f:
            continue
        s0 = _count(items[:a + 1])
        drop = (f - 1) * m
        n = _count(items)
        out = [i if i < s0 else (s0 + (i - s0) % m if i < s0 + f * m else i - drop) for i in range(n)]
        return new_fn, out, label
    return None


def _span(items, start: int, count: int) -> int:
    """How many statements from ``start`` hold the first ``count`` instructions."""
    seen, k = 0, start
    while seen < count:
        if type(items[k]) is Instruction:
            seen += 1
        k += 1
    return k - start


def _target(ins) -> str | None:
    if getattr(ins, "opcode", None) != "bra" or not ins.operands:
        return None
    return getattr(ins.operands[0], "name", None)


def _dest(ins) -> str | None:
    from ptxopt.ptx import operand_facts

    return operand_facts.reg_name(ins.operands[0]) if ins.operands else None


def _norm(line: str) -> str:
    from ptxopt.ptx.parser import parse

    text = ".version 8.0\n.target sm_89\n.address_size 64\n.visible .entry _u()\n{\n" + line + "\n}\n"
    return _text(parse(text, "<reroll>").entries[0].body.items[0])


__all__ = ["Rerolled", "rerolled"]
