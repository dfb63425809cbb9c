"""Random counted loops in the shapes compilers write, and the oracle that
runs them: the interpreter on the original and on each ``unroll`` result.

The loop facts (:mod:`ptxopt.analysis.loops`) must say which value the exit
test reads in every iteration; a shape they model wrongly makes ``unroll``
write a loop that runs a different number of iterations. Each class draws
one such shape from a seeded ``random.Random`` (type, step, offsets, where
the test sits, the compare), in a single-block loop (the form ``unroll``
rewrites):

``phi_copy``        LLVM's copy of a loop phi: ``add x, i, S; mov i, x;``
                    the test on ``x`` or on ``i``
``test_before``     the test before the update (on ``i`` or ``i + C``)
``test_after``      the test after the update, also on ``x = i + C``
                    computed *before* the update (``add x, i, C; add i, i, S;
                    setp x``: old ``i`` plus ``C``, not new ``i`` plus ``C``)
``previous_value``  the test reads ``x`` written later in the body: the
                    previous iteration's value, and on the first iteration
                    the value from before the loop -- consistent, or
                    different for one input word (``a == MAGIC``)
``preloop_input``   the start read from an input
``unsigned_wrap``   a ``u32`` start near ``2**32`` (or ``s32`` near
                    ``2**31``) and a ``!=`` test across the wrap
``step``            steps 2, 3, 5, 7 with ``<``, ``<=``, ``!=`` tests
``down_count``      a decreasing IV (``sub``, or ``add`` of a negative step)
                    with ``>``, ``>=``, ``!=`` tests
``nested``          one of the shapes above inside an outer counted loop

The bound is ``n + %tid.x`` scaled onto the tested sequence (or, for some
draws, a constant), so one launch of 17 threads runs trip counts 0..16 at
once (more with ``n > 0``). The oracles (:func:`check_shape`): every
``unroll`` result (:data:`PIPELINES`) that changes the kernel must store the
same bytes as the original for every input (:data:`INPUTS`); a difference is
a *wrong unroll*. Where the loop facts give a constant trip count, it must be
the number of iterations the interpreter counted (a *wrong trip count*,
pipeline ``"trip count"``). A launch the original cannot finish (a step
limit) is skipped. ``benchmarks/reports/fuzz_loop_shapes.py`` runs the campaign;
``tests/testing/test_loop_shapes.py`` a few seeds per class.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

CLASSES = ("phi_copy", "test_before", "test_after", "previous_value", "preloop_input", "unsigned_wrap", "step",
           "down_count", "nested")
PIPELINES = ("unroll_2", "unroll_4", "unroll{factor=8}")
FACTORS = {"unroll_2": 2, "unroll_4": 4, "unroll{factor=8}": 8}
#: the input word for which a ``previous_value`` shape's pre-loop value differs
MAGIC = 0x5EED
#: ``(n, a)`` launch inputs (17 threads each: trip counts from ``n`` to ``n + 16``)
INPUTS = ((0, 0), (0, 3), (0, MAGIC), (5, 1))
THREADS = 17
MAX_STEPS = 200_000

HEAD = ".version 8.0\n.target sm_89\n.address_size 64\n"


@dataclass
class Shape:
    cls: str
    seed: int
    what: str
    text: str


@dataclass
class Wrong:
    pipeline: str
    inputs: tuple[int, int]
    detail: str


@dataclass
class ShapeResult:
    shape: Shape
    applied: list[str] = field(default_factory=list)
    refused: dict[str, list[str]] = field(default_factory=dict)  # pipeline -> the pass's reasons
    wrong: list[Wrong] = field(default_factory=list)
    skipped: int = 0  # launches the original could not finish


def _m32(v: int) -> int:
    return v & 0xFFFFFFFF


def _loop(rng: random.Random, cls: str, iv: str, x: str, p: str, label: str, ind: str) -> tuple[list, list, str]:
    """``(pre, body, what)``: the lines before the loop (start, bound into ``%r3``) and the loop's
    lines (label to branch) of one single-block counted loop of class ``cls`` over ``iv``."""
    ty = "s32"
    down = cls == "down_count" or (cls in ("phi_copy", "test_before", "test_after", "previous_value") and
                                   rng.random() < 0.25)
    s = rng.choice((2, 3, 5, 7)) if cls == "step" else rng.choice((1, 1, 2, 3))
    c = rng.choice((1, 2, -1, 3))
    if cls == "unsigned_wrap":
        ty = rng.choice(("u32", "s32"))
        start = (0xFFFFFFF0 if ty == "u32" else 0x7FFFFFF0) + rng.randrange(0, 12)
        cmps = ("ne",)
    else:
        ty = rng.choice(("s32", "u32")) if not down else "s32"
        start = rng.randrange(0, 4) + (40 if down else 0)
        cmps = ("gt", "ge", "ne") if down else ("lt", "le", "ne")
    cmp = rng.choice(cmps)
    step = -s if down else s
    form = {"phi_copy": "phi", "test_before": "before", "test_after": "after", "previous_value": "prev"}.get(cls)
    if form is None:
        form = rng.choice(("phi", "before", "after", "after_x", "prev"))
    if cls == "test_after":
        form = rng.choice(("after", "after_x", "after_x2"))
    pre: list[str] = []
    from_input = cls == "preloop_input" or (cls == "previous_value" and rng.random() < 0.3)
    if from_input:
        pre.append(f"and.b32 {iv}, %r21, 7;")
        if down:
            pre.append(f"add.s32 {iv}, {iv}, 40;")
    else:
        pre.append(f"mov.u32 {iv}, {_m32(start)};")
    upd = (f"add.{ty} {iv}, {iv}, {step};" if not down or rng.random() < 0.5
           else f"sub.{ty} {iv}, {iv}, {s};")
    work = [f"mul.lo.u32 %r12, {iv}, 7;", "xor.b32 %r10, %r10, %r12;", "add.u32 %r11, %r11, 1;"]
    rng.shuffle(work)
    body: list[str]
    # base: the tested value is the IV at the top of the iteration plus ``base``
    if form == "phi":
        on_x = rng.random() < 0.6
        body = [f"add.{ty} {x}, {iv}, {step};"] + work + [f"mov.b32 {iv}, {x};",
                                                         f"setp.{cmp}.{ty} {p}, {x if on_x else iv}, %r3;"]
        base, what = step, f"add x, i, {step}; mov i, x; setp {cmp} {'x' if on_x else 'i'}"
    elif form == "before":
        on_x = rng.random() < 0.5
        body = ([f"add.{ty} {x}, {iv}, {c};"] if on_x else []) + \
            [f"setp.{cmp}.{ty} {p}, {x if on_x else iv}, %r3;"] + work + [upd]
        base, what = (c if on_x else 0), f"setp {cmp} {'i+' + str(c) if on_x else 'i'}; update {step}"
    elif form == "after":
        body = work + [upd, f"setp.{cmp}.{ty} {p}, {iv}, %r3;"]
        base, what = step, f"update {step}; setp {cmp} i"
    elif form == "after_x":
        body = [f"add.{ty} {x}, {iv}, {c};"] + work + [upd, f"setp.{cmp}.{ty} {p}, {x}, %r3;"]
        base, what = c, f"add x, i, {c}; update {step}; setp {cmp} x (old i + {c})"
    elif form == "after_x2":
        body = work + [upd, f"add.{ty} {x}, {iv}, {c};", f"setp.{cmp}.{ty} {p}, {x}, %r3;"]
        base, what = step + c, f"update {step}; add x, i, {c}; setp {cmp} x (new i + {c})"
    else:  # prev: the test reads x, written after it
        late = rng.random() < 0.5  # x = new i + C, or old i + C
        body = [f"setp.{cmp}.{ty} {p}, {x}, %r3;"] + work + \
            ([upd, f"add.{ty} {x}, {iv}, {c};"] if late else [f"add.{ty} {x}, {iv}, {c};", upd])
        base = c if late else c - step
        fit = rng.random() < 0.6
        delta = rng.choice((1, 2, -1, 5)) * (abs(step) if cmp == "ne" else 1)  # != : still reaches the bound
        if fit:
            pre.append(f"add.{ty} {x}, {iv}, {base};")
            how = "x before the loop fits"
        elif rng.random() < 0.5:
            pre += [f"add.{ty} {x}, {iv}, {base};", f"setp.eq.u32 %p7, %r21, {MAGIC};",
                    f"@%p7 add.{ty} {x}, {x}, {delta};"]
            how = f"x before the loop is off by {delta} when a == {MAGIC:#x}"
        else:
            pre.append(f"add.{ty} {x}, {iv}, {base + delta};")
            how = f"x before the loop is off by {delta}"
        what = f"setp {cmp} x; x = {'new' if late else 'old'} i + {c}; update {step}; {how}"
    # the bound: the tested sequence reaches it after m = n + tid tests (ordered tests: +-1 jitter)
    jit = 0 if cmp == "ne" else rng.choice((0, 0, 1, -1))
    const = cls not in ("preloop_input", "unsigned_wrap") and not from_input and rng.random() < 0.5
    if const:  # a constant trip count: the exact form when 2, 4 or 8 divides it
        m = rng.randrange(0, 17)
        pre.append(f"mov.u32 %r3, {_m32(start + base + m * step + jit)};")
        what += f"; constant bound (m = {m})"
    else:
        pre += ["add.u32 %r13, %r20, %r22;", f"mul.lo.u32 %r13, %r13, {_m32(step)};",
                f"add.u32 %r13, %r13, {iv};", f"add.u32 %r3, %r13, {_m32(base + jit)};"]
    if form == "prev" and not any(l.startswith("add") and l.split()[1].rstrip(",") == x for l in pre):
        pre.append(f"mov.u32 {x}, 0;")
    lines = [f"{label}:"] + [ind + l for l in body] + [f"{ind}@{p} bra {label};"]
    return pre, lines, f"{ty} {what}"


def make_shape(cls: str, seed: int) -> Shape:
    """The kernel of class ``cls`` drawn from ``seed`` (module doc)."""
    rng = random.Random(f"{cls}:{seed}")
    inner_cls = rng.choice(CLASSES[:-1]) if cls == "nested" else cls
    pre, loop, what = _loop(rng, inner_cls, "%r1", "%r2", "%p1", "L_in", "\t")
    body = ["ld.param.u64 %rd1, [out];", "ld.param.u32 %r20, [n];", "ld.param.u32 %r21, [a];",
            "cvta.to.global.u64 %rd2, %rd1;", "mov.u32 %r22, %tid.x;", "mov.u32 %r10, 0;", "mov.u32 %r11, 0;",
            "mov.u32 %r12, 0;", "mov.u32 %r2, 0;"]
    text_loop = [("\t" + l if not l.endswith(":") else l) for l in pre] + loop
    if cls == "nested":
        outer = rng.randrange(2, 4)
        text_loop = ["\tmov.u32 %r5, 0;", "L_out:"] + text_loop + \
            ["\tadd.u32 %r10, %r10, %r1;", "\tadd.s32 %r5, %r5, 1;", f"\tsetp.lt.s32 %p2, %r5, {outer};",
             "\t@%p2 bra L_out;"]
        what = f"{outer} x [{inner_cls}: {what}]"
    tail = ["mul.wide.u32 %rd3, %r22, 16;", "add.s64 %rd4, %rd2, %rd3;", "st.global.u32 [%rd4], %r10;",
            "st.global.u32 [%rd4+4], %r11;", "st.global.u32 [%rd4+8], %r1;", "st.global.u32 [%rd4+12], %r2;",
            "ret;"]
    text = (HEAD + "\n.visible .entry k(.param .u64 out, .param .u32 n, .param .u32 a)\n{\n"
            "\t.reg .pred %p<8>;\n\t.reg .b32 %r<24>;\n\t.reg .b64 %rd<8>;\n"
            + "".join(f"\t{l}\n" for l in body) + "".join(f"{l}\n" for l in text_loop)
            + "".join(f"\t{l}\n" for l in tail) + "}\n")
    return Shape(cls, seed, what, text)


def _launch(module, n: int, a: int):
    import numpy as np

    from ptxopt.interp import run_kernel

    out = np.zeros(THREADS * 4, dtype=np.uint32)
    r = run_kernel(module, "k", (1, 1, 1), (THREADS, 1, 1), {"out": out, "n": n, "a": a}, max_steps=MAX_STEPS)
    return r.buffers[0]


def check_shape(shape: Shape, pipelines=PIPELINES) -> ShapeResult:
    """Run the original and every ``unroll`` result that changes it on :data:`INPUTS` (module doc)."""
    from ptxopt import emit, parse
    from ptxopt.interp import InterpError
    from ptxopt.passes.unroll import Unroll

    res = ShapeResult(shape)
    original = parse(shape.text)
    ref = {}
    for n, a in INPUTS:
        try:
            ref[(n, a)] = _launch(original, n, a)
        except InterpError:
            res.skipped += 1
    # the loop facts' constant trip count against the iterations the interpreter counted (%r11)
    from ptxopt.analysis.loops import loops_of

    _, info = loops_of(original.entries[0])
    if shape.cls != "nested" and len(info.loops) == 1 and info.loops[0].trip.kind == "constant":
        for key, got in ref.items():
            if int(got[1]) != info.loops[0].trip.value:
                res.wrong.append(Wrong("trip count", key, f"the loop facts say {info.loops[0].trip.value} "
                                                          f"iterations, the interpreter ran {int(got[1])}"))
                break
    for pipe in pipelines:
        out, rep = Unroll(factor=FACTORS[pipe]).apply(original)
        refused = [s.what for s in rep.refused]
        if not rep.changed or emit(out) == emit(original):
            res.refused[pipe] = refused
            continue
        res.applied.append(pipe)
        cand = parse(emit(out))
        for key, want in ref.items():
            try:
                got = _launch(cand, *key)
            except InterpError as e:
                res.wrong.append(Wrong(pipe, key, f"the unrolled kernel fails: {e}"))
                continue
            if (got != want).any():
                i = int((got != want).nonzero()[0][0])
                res.wrong.append(Wrong(pipe, key, f"out[{i}] (thread {i // 4}) {int(want[i])} -> {int(got[i])}"))
    return res


def campaign(classes=CLASSES, seeds=range(10)) -> dict[str, list[ShapeResult]]:
    return {cls: [check_shape(make_shape(cls, s)) for s in seeds] for cls in classes}


__all__ = ["CLASSES", "INPUTS", "MAGIC", "PIPELINES", "Shape", "ShapeResult", "Wrong", "campaign", "check_shape",
           "make_shape"]
