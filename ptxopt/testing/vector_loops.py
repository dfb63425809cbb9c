"""Random row-per-thread loops over global arrays, and the oracle that runs
them: the interpreter on the original and on each ``loop_version`` result.

``loop_version`` merges each array's accesses of ``width`` iterations into
one vector access behind a runtime test; a test that misses a case makes the
fast copy fault (a misaligned vector) or read a value a store of the same
trip has not written yet. Each draw (a seeded ``random.Random``) is one
single-block counted loop of class :data:`CLASSES`' ``vector_rows``, with
the temptations mixed in:

* rows ``R`` elements apart, ``R`` a multiple of 4 (the fast copy runs) or, for
  some draws, odd: every other
  thread's row is misaligned for ``.v2``/``.v4`` at run time;
* a third array ``z = x + s`` elements, ``s`` a kernel input: at run time it
  is ``x`` itself, one element off, or far apart (aliasing unknown to the PTX);
* a store before a load of the same array, at constant element offsets
  0..2 (in-place updates, one slot ahead);
* the index form (``mul.wide.s32`` of the counter as nvcc writes it, sometimes
  ``mul.wide.u32``) or pointer induction
  variables, up- or down-counting, ``<`` or ``!=`` exit tests;
* sometimes a barrier (with a uniform trip count) or a strided walk: the pass
  must refuse those;
* nvcc's own unrolling: 2 or 4 consecutive elements of an array per
  iteration from one pointer (``[p]``, ``[p+4]`` ...), sometimes interleaved
  with another array's, the pointer advancing by all of them;
* sometimes (drawn apart, so the other draws of a seed stay as they were) a
  per-thread ring of two shared-memory slots: each iteration reads the value
  an earlier iteration staged there, then stages its own, so the fast copy
  must keep the shared accesses in place and in order in every copy
  (:func:`swap_shared` breaks that, and the oracle must catch it);
* sometimes (drawn apart too) an ``mma.sync.aligned`` in the body, with a
  uniform trip count and rows of an odd length (some threads' rows aligned,
  others' not): every thread of the warp must run that very instruction
  together, so a runtime test on per-thread rows must not send them to two
  copies of it (the pass refuses; the interpreter reports a divergent warp
  collective where a version splits them).

Each of :data:`THREADS` threads (32 with an ``mma``) runs ``n + tid``
iterations (``n`` only with a barrier or an ``mma``), so one launch covers
trip counts ``n .. n + 7``; :data:`INPUTS`
gives ``n`` 0, 1, 3 and 5 (trip counts 0 to 12) and ``s`` 0, 1, 2 and 16.
Oracle (:func:`check_vector_loop`): every result that changes the kernel must
store the same bytes for every input, and never fault where the original does
not; otherwise it is a *wrong version* (:class:`Wrong`).
``benchmarks/reports/loop_version_report.py`` runs the campaign, also against
rewrites with one runtime test removed (which it must catch);
``tests/testing/test_loop_version_fuzz.py`` a few seeds.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

CLASSES = ("vector_rows",)
WIDTHS = (2, 4)
THREADS = 8
INPUTS = ((0, 0), (1, 1), (3, 2), (5, 16), (3, 0), (1, 16))
MAX_STEPS = 400_000
HEAD = ".version 8.0\n.target sm_89\n.address_size 64\n"


@dataclass
class Wrong:
    width: int
    inputs: tuple[int, int]
    detail: str


@dataclass
class VectorLoop:
    seed: int
    what: str
    text: str
    row: int  # elements between rows
    threads: int = 8  # the launch's threads (THREADS; a warp's 32 where an mma needs a whole warp)


@dataclass
class VectorResult:
    loop: VectorLoop
    applied: list[int] = field(default_factory=list)
    refused: dict[int, list[str]] = field(default_factory=dict)
    wrong: list[Wrong] = field(default_factory=list)
    skipped: int = 0


def make_vector_loop(seed: int) -> VectorLoop:
    """The kernel drawn from ``seed`` (module doc)."""
    rng = random.Random(f"vector_rows:{seed}")
    pointer = rng.random() < 0.4
    barrier = rng.random() < 0.12
    stride = 1 if rng.random() < 0.9 else 3
    down = rng.random() < 0.3
    # nvcc's own unrolling: g consecutive elements of each array per iteration, one base register
    g = 1 if not pointer or rng.random() < 0.5 else rng.choice((2, 4))
    row = g * 16 + rng.choice((24, 28, 32, 25))  # mostly 16-byte aligned rows: the fast copy runs
    warp = random.Random(f"vector_rows:warp:{seed}").random() < 0.15
    threads = THREADS
    if warp:  # rows of an odd length: every other thread's row is misaligned, the others' aligned
        row, threads = g * 16 + 25, 32  # the mma's fragments come from a whole warp
    arrays = {"x": "%rd6", "y": "%rd7", "z": "%rd9"}
    n_acc = rng.randrange(2, 6) if g == 1 else rng.randrange(1, 3)
    accesses = []
    order = rng.sample("xyz", 3) * 2  # mostly one access kind per array; a repeat is a tempting duplicate
    for i in range(n_acc):
        arr = order[i] if rng.random() < 0.8 else rng.choice("xyz")
        st = rng.random() < 0.4
        off = rng.choice((0, 0, 0, 1, 2))
        accesses += [(arr, st, off + m) for m in range(g)]
    if g > 1 and rng.random() < 0.5:
        rng.shuffle(accesses)  # the members of an array interleaved with another's
    if rng.random() < 0.3:  # a store, then a load of what is the same array when s == 0
        arr = rng.choice("xy")
        pair = [(arr, True, m) for m in range(g)] + [("z" if arr == "x" else "y", False, m) for m in range(g)]
        at = rng.randrange(0, len(accesses) + 1)
        accesses[at:at] = pair
    if not any(st for _, st, _ in accesses):
        accesses += [("y", True, m) for m in range(g)]
    # nvcc widens a signed counter signed; unsigned widening of a signed-tested counter may wrap in a trip
    widen = "s32" if rng.random() < 0.8 else "u32"
    body, what = [], []
    vals = ["%r4"]
    ptr = {a: f"%rd{20 + i}" for i, a in enumerate("xyz")}
    for k, (arr, st, off) in enumerate(accesses):
        if pointer:
            base = ptr[arr]
        else:
            body += [f"mul.wide.{widen} %rd{30 + k}, %r4, {4 * stride};",
                     f"add.s64 %rd{40 + k}, {arrays[arr]}, %rd{30 + k};"]
            base = f"%rd{40 + k}"
        a = f"[{base}+{4 * off}]" if off else f"[{base}]"
        if st:
            v = rng.choice(vals)
            body += [f"add.u32 %r{60 + k}, {v}, {rng.randrange(1, 99)};", f"st.global.u32 {a}, %r{60 + k};"]
        else:
            body += [f"ld.global.u32 %r{60 + k}, {a};", f"xor.b32 %r7, %r7, %r{60 + k};"]  # every value observed
            vals.append(f"%r{60 + k}")
        what.append(f"{'st' if st else 'ld'} {arr}[i+{off}]")
    stage = random.Random(f"vector_rows:stage:{seed}").random() < 0.3
    if stage:  # read the slot an earlier iteration staged, then stage the last loaded value there
        body += ["and.b32 %r90, %r4, 1;", "shl.b32 %r90, %r90, 2;", "add.u32 %r91, %r92, %r90;",
                 "ld.shared.u32 %r93, [%r91];", "xor.b32 %r7, %r7, %r93;", f"st.shared.u32 [%r91], {vals[-1]};"]
        what.append("shared ring")
    if warp:  # a uniform operand (the counter), so the original's warp runs it together
        body.append("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%f0, %f1, %f2, %f3}, "
                    "{%r4, %r4, %r4, %r4}, {%r4, %r4}, {%f0, %f1, %f2, %f3};")
        what.append("mma")
    if barrier:
        body.insert(rng.randrange(0, len(body) + 1), "bar.sync 0;")
    if pointer:
        body += [f"add.s64 {ptr[a]}, {ptr[a]}, {4 * stride * g};" for a in "xyz"]
    if down:
        body += [f"add.s32 %r8, %r8, -{g};", f"add.s32 %r4, %r4, {g};", "setp.ne.s32 %p1, %r8, 0;"]
    else:
        body += [f"add.s32 %r4, %r4, {g};", f"setp.{rng.choice(('lt', 'ne'))}.s32 %p1, %r4, %r5;"]
    trip = "mov.u32 %r5, %r1;" if barrier or warp else "add.u32 %r5, %r1, %r2;"
    if g > 1:
        trip += f"\n\tmul.lo.u32 %r5, %r5, {g};"
    pre = ["ld.param.u64 %rd1, [x];", "ld.param.u64 %rd2, [y];", "ld.param.u64 %rd11, [out];",
           "ld.param.u32 %r1, [n];", "ld.param.u32 %r9, [s];", "cvta.to.global.u64 %rd3, %rd1;",
           "cvta.to.global.u64 %rd4, %rd2;", "mov.u32 %r2, %tid.x;", trip, f"mul.lo.u32 %r3, %r2, {row};",
           "mul.wide.u32 %rd5, %r3, 4;", "add.s64 %rd6, %rd3, %rd5;", "add.s64 %rd7, %rd4, %rd5;",
           "mul.wide.u32 %rd8, %r9, 4;", "add.s64 %rd9, %rd6, %rd8;", "mov.u32 %r4, 0;", "mov.u32 %r7, 0;",
           "mov.u32 %r8, %r5;", "mov.u64 %rd20, %rd6;", "mov.u64 %rd21, %rd7;", "mov.u64 %rd22, %rd9;",
           "setp.lt.s32 %p2, %r5, 1;", "@%p2 bra L_end;"]
    if warp:
        pre[-2:-2] = [f"mov.f32 %f{i}, 0f00000000;" for i in range(4)]
    if stage:
        pre[-2:-2] = ["mov.u32 %r92, stage;", "shl.b32 %r93, %r2, 3;", "add.u32 %r92, %r92, %r93;",
                      "st.shared.u32 [%r92], 0;", "st.shared.u32 [%r92+4], 0;"]
    post = (["mov.b32 %r94, %f0;", "xor.b32 %r7, %r7, %r94;"] if warp else []) + [
        "cvta.to.global.u64 %rd12, %rd11;", "mul.wide.u32 %rd13, %r2, 4;", "add.s64 %rd14, %rd12, %rd13;",
        "st.global.u32 [%rd14], %r7;", "ret;"]
    text = (HEAD + "\n.visible .entry k(.param .u64 x, .param .u64 y, .param .u64 out, .param .u32 n, "
            ".param .u32 s)\n{\n\t.reg .pred %p<4>;\n\t.reg .b32 %r<100>;\n\t.reg .b64 %rd<60>;\n"
            + ("\t.reg .f32 %f<4>;\n" if warp else "")
            + (f"\t.shared .align 8 .u32 stage[{2 * threads}];\n" if stage else "")
            + "".join(f"\t{l}\n" for l in pre) + "L_top:\n" + "".join(f"\t{l}\n" for l in body)
            + "\t@%p1 bra L_top;\nL_end:\n" + "".join(f"\t{l}\n" for l in post) + "}\n")
    form = f"{'pointer' if pointer else 'index'} form, {'down' if down else 'up'}, rows of {row}" + \
        (f", {g} elements per iteration" if g > 1 else "") + \
        (", barrier" if barrier else "") + (", uniform trips" if warp and not barrier else "") + \
        (f", stride {stride}" if stride != 1 else "")
    return VectorLoop(seed, f"{form}: {'; '.join(what)}", text, row, threads)


def _launch(module, loop: VectorLoop, n: int, s: int):
    import numpy as np

    from ptxopt.interp import run_kernel

    size = loop.threads * loop.row + 128
    rng = np.random.default_rng(n * 7 + s)
    x = rng.integers(0, 1 << 30, size, dtype=np.uint32)
    y = rng.integers(0, 1 << 30, size, dtype=np.uint32)
    out = np.zeros(loop.threads, dtype=np.uint32)
    r = run_kernel(module, "k", (1, 1, 1), (loop.threads, 1, 1),
                   {"x": x, "y": y, "out": out, "n": n, "s": s}, max_steps=MAX_STEPS)
    return np.concatenate([b.view(np.uint32).reshape(-1) for b in r.buffers if b is not None])


def check_vector_loop(loop: VectorLoop, widths=WIDTHS, rewrite=None) -> VectorResult:
    """Run the original and every ``loop_version`` result that changes it on
    :data:`INPUTS` (module doc). ``rewrite(text) -> text``, when given, edits each
    result first (a deliberately broken rewrite the oracle must catch)."""
    from ptxopt import emit, parse
    from ptxopt.interp import InterpError
    from ptxopt.passes.loop_version import LoopVersion

    res = VectorResult(loop)
    original = parse(loop.text)
    ref = {}
    for key in INPUTS:
        try:
            ref[key] = _launch(original, loop, *key)
        except InterpError:
            res.skipped += 1
    for w in widths:
        out, rep = LoopVersion(check="align", width=w).apply(original)
        if not rep.changed:
            res.refused[w] = [s.what for s in rep.refused]
            continue
        res.applied.append(w)
        text = emit(out)
        cand = parse(rewrite(text) if rewrite else text)
        for key, want in ref.items():
            try:
                got = _launch(cand, loop, *key)
            except InterpError as e:
                res.wrong.append(Wrong(w, key, f"the versioned kernel fails: {e}"))
                continue
            if (got != want).any():
                i = int((got != want).nonzero()[0][0])
                res.wrong.append(Wrong(w, key, f"word {i}: {int(want[i])} -> {int(got[i])}"))
    return res


def drop_guard_line(kind: str):
    """A rewrite that removes the runtime test's ``kind`` part (``align``: the alignment
    predicate, ``window``: the store-window predicates) from a ``loop_version`` result."""
    def rewrite(text: str) -> str:
        lines = text.split("\n")
        preds = set()
        for line in lines:
            w = line.split()
            if kind == "align" and w[:1] == ["setp.eq.b64"]:
                preds.add(w[1].rstrip(","))
            if kind == "window" and w[:1] and w[0] in ("setp.ne.s64", "setp.ge.u64"):
                preds.add(w[1].rstrip(","))
        return "\n".join(line for line in lines
                         if not (line.split()[:1] == ["and.pred"] and line.split()[-1].rstrip(";") in preds))
    return rewrite


def swap_shared(text: str) -> str:
    """A rewrite that stages before it reads in the fast copy's first shared pair (the first
    ``st.shared`` moved above the ``ld.shared`` before it): a reordering the oracle must catch."""
    lines = text.split("\n")
    ld = next((i for i, line in enumerate(lines) if "ld.shared" in line), None)
    st = next((i for i, line in enumerate(lines) if "st.shared" in line and ld is not None and i > ld), None)
    if ld is None or st is None:
        return text
    return "\n".join(lines[:ld] + [lines[st]] + lines[ld:st] + lines[st + 1:])


def campaign(seeds=range(40), rewrite=None) -> list[VectorResult]:
    return [check_vector_loop(make_vector_loop(s), rewrite=rewrite) for s in seeds]


__all__ = ["CLASSES", "INPUTS", "VectorLoop", "VectorResult", "Wrong", "campaign", "check_vector_loop",
           "drop_guard_line", "make_vector_loop", "swap_shared"]
